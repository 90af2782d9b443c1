"""Every example of the README and the docs site runs as written.

Each fenced block of every page is one of:

- a command (```sh, ```bash, ```console: its ``$ `` lines) or a Python example (```python): run, in
  page order, in a temporary copy of the project's samples (one copy per page). Placeholders a
  reader sees (``<your-talks.txt>``) are replaced by sample files (``PLACEHOLDERS``); an unknown
  one fails.
- shown, not run: ```text (output, a file's content), ```yaml and ```toml (files; YAML must parse),
  ```mermaid. A ```text block right after ``<!-- example: output -->`` is the output of the block
  before it: each of its lines (``...`` stands for lines left out) must be a line of that output,
  in order (durations aside).
- a command that is not run: ``<!-- example: not run, REASON -->`` on the line before its fence.

A page's examples may go on from another page's (``<!-- examples: after guides/walkthrough.md -->``);
a page whose examples train or run the DVC pipeline says ``<!-- examples: slow -->`` and runs in the
slow test. A failure names the page and the line of the block's fence. The counts of examples run,
shown and not run are printed at the end of the module.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]

RUN = {"sh", "bash", "console", "python"}
SHOWN = {"text", "yaml", "toml", "mermaid"}

#: what a reader's own file becomes in the test: a sample of the same kind
PLACEHOLDERS = {
    "<your-talks.txt>": "corpora/samples/en/talks.txt",
    "<your-talks-asr.txt>": "corpora/samples/en/talks_asr.txt",
    "<your-pairs.tsv>": "corpora/samples/en/talks_pairs.tsv",
    "<your-ted.xml>": "corpora/samples/en/talks.xml",
    "<your-news-folder>": "corpora/samples/ms",
    "<your-transcript.txt>": "corpora/samples/en/talks_asr.txt",
}
PLACEHOLDER = re.compile(r"<[a-z][a-z0-9_.-]*>")

#: what an example's copy holds: the tracked files a user's clone has that the examples read
#: (the samples, the lexicons, the code DVC's stages run and depend on, both params files)
COPIED = ("corpora", "lexicons", "pipeline", "stages", "real", ".dvc")
COPIED_FILES = (".dvcignore", "params.yaml", "dvc.yaml", "pyproject.toml", "Makefile")

FENCE = re.compile(r"^```(\S*)[^\n]*\n(.*?)^```[ \t]*$", re.M | re.S)
MARKER = re.compile(r"<!--\s*example:\s*(.*?)\s*-->\s*$")
DIRECTIVE = re.compile(r"<!--\s*examples:\s*(.*?)\s*-->")
DURATION = re.compile(r"\b\d+(\.\d+)? ?(s|ms|min)\b|\b\d+(\.\d+)? words/s\b")


@dataclass(frozen=True)
class Block:
    page: Path
    line: int  # of the opening fence, 1-based
    lang: str
    text: str
    marker: str  # "", "output" or "not run, REASON"

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"


def blocks(page: Path) -> list[Block]:
    text = page.read_text(encoding="utf-8")
    found = []
    for match in FENCE.finditer(text):
        line = text.count("\n", 0, match.start()) + 1
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        marker = MARKER.search(before)
        found.append(Block(page, line, match.group(1), match.group(2), marker.group(1) if marker else ""))
    return found


def directives(page: Path) -> dict[str, str]:
    """``slow`` and ``after PAGE`` of the page's ``<!-- examples: ... -->`` comments."""
    found: dict[str, str] = {}
    for match in DIRECTIVE.finditer(page.read_text(encoding="utf-8")):
        for part in match.group(1).split(";"):
            key, _, value = part.strip().partition(" ")
            found[key] = value.strip()
    return found


def check(block: Block) -> str:
    """``run``, ``shown`` or ``not run``; a block none of these is an error naming its place."""
    if block.lang not in RUN | SHOWN:
        raise AssertionError(f"{block.where}: a ```{block.lang} block: use one of {sorted(RUN | SHOWN)}")
    if block.marker.startswith("not run"):
        reason = block.marker.removeprefix("not run").strip(" ,:")
        assert block.lang in RUN, f"{block.where}: only a command can be marked 'not run'"
        assert reason, f"{block.where}: 'not run' needs its reason"
        return "not run"
    assert block.marker in ("", "output"), f"{block.where}: unknown marker {block.marker!r}"
    if block.marker == "output":
        assert block.lang == "text", f"{block.where}: an output is a ```text block"
    if block.lang == "yaml":
        try:
            yaml.safe_load(block.text)
        except yaml.YAMLError as exc:
            raise AssertionError(f"{block.where}: the YAML does not parse: {exc}") from None
    if block.lang in SHOWN:
        return "shown"
    for name in PLACEHOLDER.findall(script(block)):
        assert name in PLACEHOLDERS, f"{block.where}: placeholder {name} has no sample (PLACEHOLDERS)"
    return "run"


def script(block: Block) -> str:
    if block.lang != "console":
        return block.text
    commands, going_on = [], False
    for line in block.text.splitlines():
        if line.startswith("$ ") or going_on:
            commands.append(line[2:] if line.startswith("$ ") and not going_on else line)
            going_on = line.endswith("\\")
    return "\n".join(commands)


def substituted(text: str) -> str:
    return PLACEHOLDER.sub(lambda m: PLACEHOLDERS.get(m.group(0), m.group(0)), text)


def _all() -> dict[Path, list[Block]]:
    return {page: blocks(page) for page in PAGES}


def _runs(block: Block) -> bool:
    return block.lang in RUN and not block.marker.startswith("not run")


def _pages_with_examples(slow: bool) -> list[Path]:
    """The pages with a block to run (a block wrongly marked fails test_every_block_is_run_shown_or_marked)."""
    return [p for p, found in _all().items() if any(map(_runs, found)) and ("slow" in directives(p)) == slow]


COUNTS: Counter = Counter()


@pytest.fixture(scope="module", autouse=True)
def _report(request):
    """Prints the counts after the module's tests, past the output capture (so without ``-s`` too)."""
    yield
    if COUNTS:
        line = ", ".join(f"{n} {what}" for what, n in sorted(COUNTS.items()))
        capture = request.config.pluginmanager.getplugin("capturemanager")
        with capture.global_and_fixture_disabled():
            print(f"\ndocs examples: {line}")


def test_every_block_is_run_shown_or_marked():
    """Every fence of every page is classified; none is left out without a marker and its reason."""
    kinds = Counter()
    for found in _all().values():
        for block in found:
            kinds[check(block)] += 1
    assert kinds["run"] >= 15, kinds  # the parser finds the pages' fences
    for what, n in kinds.items():
        COUNTS[f"{'to run' if what == 'run' else what} (all pages)"] = n
    for page in PAGES:
        after = directives(page).get("after")
        if after:
            assert (ROOT / "docs" / after).is_file(), f"{page.relative_to(ROOT)}: after {after}: no such page"
            if "slow" in directives(ROOT / "docs" / after):
                assert "slow" in directives(page), f"{page.relative_to(ROOT)}: goes on from a slow page, so is slow"


def _environment() -> dict[str, str]:
    bin_dir = Path(sys.executable).parent
    env = {
        **os.environ,
        "PATH": f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}",
        "DVC_NO_ANALYTICS": "1",
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "PYTHONHASHSEED": "0",
        "PYTHONUNBUFFERED": "1",  # the output shown on a page is in a terminal's order
    }
    for command in ("punct-corpora", "dvc", "python"):
        if shutil.which(command, path=env["PATH"]) is None:
            pytest.skip(f"the examples need the {command} command on PATH (make setup)")
    return env


def _fresh_copy(target: Path) -> Path:
    target.mkdir(parents=True)
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--", *COPIED, *COPIED_FILES], cwd=ROOT, capture_output=True, check=True
    ).stdout
    for name in listed.decode().split("\0"):
        if name and (ROOT / name).is_file():
            (target / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, target / name)
    # a clone's state: DVC runs in a git repository, and `git checkout FILE` gives back the samples'
    subprocess.run(["git", "init", "-q"], cwd=target, check=True)
    git = ["git", "-c", "user.name=docs", "-c", "user.email=docs@example.invalid", "-c", "commit.gpgsign=false"]
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run([*git, "commit", "-q", "-m", "samples"], cwd=target, check=True)
    return target


def _same_lines(shown: str, output: str) -> str | None:
    """None when every shown line (``...`` aside) is a line of the output, in order; else the first one missing."""
    actual = [DURATION.sub("N s", line).strip() for line in re.split(r"[\r\n]+", output)]
    at = 0
    for line in shown.splitlines():
        want = DURATION.sub("N s", line).strip()
        if not want or want == "...":
            continue
        try:
            at = actual.index(want, at) + 1
        except ValueError:
            return line
    return None


def run_page(page: Path, copy: Path, env: dict[str, str]) -> None:
    env = {**env, "PYTHONPATH": str(copy)}  # the copy's pipeline, stages and readers, not this checkout's
    last_output = None
    for block in blocks(page):
        kind = check(block)
        COUNTS["run" if kind == "run" else f"{kind}, on pages run"] += 1
        if kind == "shown" and block.marker == "output":
            assert last_output is not None, f"{block.where}: an output with no command before it"
            missing = _same_lines(block.text, last_output)
            assert missing is None, f"{block.where}: shown output line {missing!r} not in:\n{last_output[-3000:]}"
            COUNTS["outputs checked"] += 1
        if kind != "run":
            continue
        code = substituted(script(block))
        command = [sys.executable, "-c", code] if block.lang == "python" else ["bash", "-euo", "pipefail", "-c", code]
        # one stream, in the order a terminal shows it
        run = subprocess.run(command, cwd=copy, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        last_output = run.stdout
        if os.environ.get("PUNCT_DOCS_SHOW"):  # to write a page's output blocks: pytest -s
            print(f"--- {block.where}\n{last_output}")
        assert run.returncode == 0, f"{block.where}: exit status {run.returncode}\n{last_output[-3000:]}"


_DONE: dict[Path, Path] = {}


def _copy_after(page: Path, tmp_factory, env) -> Path:
    """A copy holding what the examples of the pages this one goes on from left (each run once)."""
    after = directives(page).get("after")
    if not after:
        return _fresh_copy(tmp_factory.mktemp(page.stem) / "repo")
    before = ROOT / "docs" / after
    if before not in _DONE:  # stored once its examples all ran, so a failure is reported once per test
        done = _copy_after(before, tmp_factory, env)
        run_page(before, done, env)
        _DONE[before] = done
    copy = tmp_factory.mktemp(page.stem) / "repo"
    shutil.copytree(_DONE[before], copy, symlinks=True)
    return copy


def _ids(pages):
    return [str(p.relative_to(ROOT)) for p in pages]


@pytest.mark.parametrize("page", _pages_with_examples(slow=False), ids=_ids(_pages_with_examples(slow=False)))
def test_examples_run(page, tmp_path_factory):
    env = _environment()
    run_page(page, _copy_after(page, tmp_path_factory, env), env)


@pytest.mark.slow
@pytest.mark.parametrize("page", _pages_with_examples(slow=True), ids=_ids(_pages_with_examples(slow=True)))
def test_slow_examples_run(page, tmp_path_factory):
    """Pages whose examples train a model or run the DVC pipeline."""
    env = _environment()
    if page in _DONE:  # already run as the start of another page
        return
    copy = _copy_after(page, tmp_path_factory, env)
    run_page(page, copy, env)
    _DONE[page] = copy
