"""The documentation a user learns from: the README's walk-through covers every step, the docs site
builds, the generated pages match the code and the saved results, and every reader, stage and
command is documented.  Every example of the README and the docs runs in test_doc_examples.py."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
README = ROOT / "README.md"


def _prose() -> dict[Path, str]:
    """README, changelog and every hand-written docs page (not the generated reference)."""
    pages = {README: README.read_text(encoding="utf-8"), ROOT / "CHANGELOG.md": (ROOT / "CHANGELOG.md").read_text()}
    for path in sorted(DOCS.rglob("*.md")):
        if "reference" not in path.relative_to(DOCS).parts:
            pages[path] = path.read_text(encoding="utf-8")
    return pages


def walkthrough() -> str:
    """The fenced bash block that follows the ``<!-- walk-through -->`` marker in README.md."""
    text = README.read_text(encoding="utf-8")
    found = re.search(r"<!-- walk-through -->\s*```bash\n(.*?)\n```", text, re.S)
    assert found, "README.md has no ```bash block after <!-- walk-through -->"
    return found.group(1)


def test_readme_is_short():
    assert len(README.read_text(encoding="utf-8").splitlines()) <= 160


def test_readme_names_the_two_commands_and_what_make_test_leaves_out():
    text = README.read_text(encoding="utf-8")
    for needed in ("make repro", "make test", "make test SLOW=1", "slow"):
        assert needed in text, needed


def test_walkthrough_covers_every_step():
    script = walkthrough()
    for step in (
        "punct-corpora ingest",
        "punct-corpora audit",
        "punct-corpora align",
        "--format nemo",
        "--format hf",
        "params.yaml",
        "dvc repro",
    ):
        assert step in script, step


def test_mkdocs_builds_strict(tmp_path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    run = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "-q", "-d", str(tmp_path / "site")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    assert run.returncode == 0, run.stderr[-3000:]
    assert (tmp_path / "site" / "reference" / "params" / "index.html").exists()
    assert (tmp_path / "site" / "guides" / "walkthrough" / "index.html").exists()


def test_walkthrough_page_goes_from_raw_files_to_punctuated_text():
    """The walk-through page runs every step, each command followed by its output."""
    page = (DOCS / "guides" / "walkthrough.md").read_text(encoding="utf-8")
    for step in (
        "punct-corpora ingest",
        "punct-corpora align",
        "punct-corpora split",
        "oversample:",
        "sequences:",
        "python -m stages.dvc_yaml",
        "dvc repro",
        "punct-corpora train",
        "punct-corpora export-model",
        "punct-corpora punctuate",
    ):
        assert step in page, step
    assert page.count("<!-- example: output -->") >= 7
    assert "docs/guides/walkthrough.md" in README.read_text(encoding="utf-8")
    assert "guides/walkthrough.md" in (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    assert "guides/walkthrough.md" in (DOCS / "index.md").read_text(encoding="utf-8")


def test_docs_extra_and_make_docs():
    """`pip install -e ".[docs]"` installs what mkdocs.yml names, and `make docs` builds strictly."""
    import tomllib

    extras = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]["optional-dependencies"]
    names = {re.split(r"[<>=!~ ]", requirement)[0] for requirement in extras["docs"]}
    assert {"mkdocs", "mkdocs-material", "pymdown-extensions"} <= names
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert re.search(r"^docs:.*\n\t.*mkdocs build --strict", makefile, re.M)


def test_reference_matches_the_code():
    run = subprocess.run(
        [sys.executable, str(DOCS / "gen_reference.py"), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


def test_reference_covers_every_params_key_and_option():
    sys.path.insert(0, str(DOCS))
    try:
        import gen_reference
    finally:
        sys.path.remove(str(DOCS))
    from pipeline import params as P
    from pipeline.cli import build_parser

    params_page = (DOCS / "reference" / "params.md").read_text(encoding="utf-8")
    for model, prefix in (
        (P.EngineParams, "engine"),
        (P.AlignmentParams, "alignments.NAME"),
        (P.ConfusablesParams, "confusables.NAME"),
        (P.SplitParams, "datasets.NAME.split"),
        (P.SequencesParams, "datasets.NAME.sequences"),
    ):
        for key in model.model_fields:
            assert f"`{prefix}.{key}`" in params_page, f"{prefix}.{key}"
    from pipeline.params import TrainParams

    for key in TrainParams.model_fields:
        assert f"`train.NAME.{key}`" in params_page, key
    cli_page = (DOCS / "reference" / "cli.md").read_text(encoding="utf-8")
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name, command in commands.items():
        assert f"### punct-corpora {name}" in cli_page, name
        for action in command._actions:
            if action.__class__.__name__ == "_HelpAction":
                continue  # every command's --help, said once at the top of the page
            for option in action.option_strings:
                assert f"`{option}`" in cli_page, f"{name} {option}"
    for stage in gen_reference.STAGES:
        assert f"### python -m stages.{stage}" in cli_page, stage
    # a new stage module must be added to the generator's list
    modules = {p.stem for p in (ROOT / "stages").glob("*.py") if p.stem not in ("__init__", "common")}
    assert modules == set(gen_reference.STAGES)


def test_benchmarks_page_matches_the_saved_results():
    run = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "report.py"), "--check"], cwd=ROOT, capture_output=True, text=True
    )
    assert run.returncode == 0, run.stderr


def test_docs_speak_to_users_not_of_past_work():
    banned = re.compile(
        r"\bsessions?\b|issue #|\bissue'?s? target|earlier runs?|previous runs?|this run met|a decision for the team"
        r"|\bphase of the machine|two sessions ago",
        re.I,
    )
    for path, text in _prose().items():
        found = banned.search(text)
        assert found is None, f"{path.relative_to(ROOT)}: {found.group(0)!r}"


def test_every_reader_stage_and_command_is_documented():
    from pipeline.cli import build_parser
    from pipeline.ingest import readers

    prose = "\n".join(text for path, text in _prose().items() if path.parent != ROOT)
    own_corpus = (DOCS / "guides" / "own-corpus.md").read_text(encoding="utf-8")
    for reader in readers():
        assert f"`{reader}`" in own_corpus, f"reader {reader} is not in guides/own-corpus.md"
    for module in sorted((ROOT / "stages").glob("*.py")):
        if module.stem not in ("__init__", "common"):
            assert f"stages.{module.stem}" in prose, f"stage {module.stem}"
    parser = build_parser()
    commands = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices
    for name in commands:
        assert f"punct-corpora {name}" in prose, f"command {name}"
