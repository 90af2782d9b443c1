"""Helpers of the reliability tests (issue 15): running entry points, reading their one-line errors,
snapshots of folders (to prove nothing was written), a small pipeline workspace built through the
real stages."""

# ruff: noqa: E501 (the case tables keep one case per line, as they are read)

from __future__ import annotations

import hashlib
import importlib
import io
import logging
import os
import re
import signal
import subprocess
import sys
from contextlib import contextmanager, redirect_stderr
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent.parent
SAMPLES = ROOT / "corpora" / "samples"

#: what a run leaves beside an output while it works: staging, set-aside copies, locks
LEFTOVER = re.compile(r"^\..*(\.staging-|\.old-|\.lock$)")


def run_module(
    module: str, args: list[str], cwd=ROOT, env: dict | None = None, **kwargs
) -> subprocess.CompletedProcess:
    """``python -m module args`` in a fresh process, stdout and stderr captured as text."""
    return subprocess.run(
        [sys.executable, "-m", module, *map(str, args)],
        cwd=cwd,
        env={**os.environ, "PYTHONDONTWRITEBYTECODE": "1", **(env or {})},
        capture_output=True,
        text=True,
        **kwargs,
    )


def entry(module: str):
    """The ``main(argv) -> exit status`` of ``pipeline`` (the command line) or a stage module."""
    if module == "pipeline":
        from pipeline.cli import main

        return main
    return importlib.import_module(module).main


@contextmanager
def restored_process_state():
    """Entry points install SIGTERM/SIGHUP handlers and configure logging: undone after an
    in-process call, so the test process keeps its own."""
    handlers = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGHUP)}
    root = logging.getLogger()
    saved = (root.handlers[:], root.level)
    mask = os.umask(0)
    os.umask(mask)
    try:
        yield
    finally:
        for s, h in handlers.items():
            signal.signal(s, h)
        root.handlers[:] = saved[0]
        root.setLevel(saved[1])
        os.umask(mask)


def call(module: str, args: list) -> tuple[int, str]:
    """An entry point run in this process: (exit status, stderr)."""
    err = io.StringIO()
    with restored_process_state(), redirect_stderr(err):
        try:
            rc = entry(module)([str(a) for a in args])
        except SystemExit as exc:  # argparse's own exits
            rc = exc.code if isinstance(exc.code, int) else 1
    return rc, err.getvalue()


def error_line(rc: int, stderr: str) -> str:
    """The one line of a refusal: exit status 2, stderr exactly one line ``error: ...``, no traceback."""
    lines = stderr.splitlines()
    assert rc == 2, f"exit status {rc}, stderr:\n{stderr}"
    assert "Traceback" not in stderr, stderr
    assert len(lines) == 1, f"expected one line on stderr, got {len(lines)}:\n{stderr}"
    assert lines[0].startswith("error: "), lines[0]
    return lines[0]


def snapshot(*folders) -> dict:
    """Every path under ``folders`` (hidden ones too) with its kind, mode and content digest."""
    out = {}
    for folder in map(Path, folders):
        if not folder.exists() and not folder.is_symlink():
            out[str(folder)] = None
            continue
        for path in [folder, *sorted(folder.rglob("*"))] if folder.is_dir() else [folder]:
            if path.is_symlink():
                out[str(path)] = ("link", os.readlink(path))
            elif path.is_dir():
                out[str(path)] = ("dir", path.stat().st_mode & 0o777)
            else:
                out[str(path)] = ("file", path.stat().st_mode & 0o777, hashlib.sha256(path.read_bytes()).hexdigest())
    return out


def leftovers(*folders) -> list[str]:
    """Staging folders and files, set-aside copies and lock files under ``folders``."""
    return sorted(str(p) for folder in folders for p in Path(folder).rglob(".*") if LEFTOVER.match(p.name))


def modes(folder) -> dict[str, set[str]]:
    """{'0o644': {files...}, ...} of everything under ``folder``."""
    out: dict[str, set[str]] = {}
    for path in Path(folder).rglob("*"):
        out.setdefault(oct(path.stat().st_mode & 0o777), set()).add(str(path.relative_to(folder)))
    return out


# ------------------------------------------------------------------------------- the workspace


WORDS = "water world word ward wart sell cell sail sale tale tail talk walk"


def base_params(src: Path) -> dict:
    """Params of a small pipeline over the English samples (every section a stage reads)."""
    return {
        "corpora": {
            "talks": {"reader": "text", "lang": "en", "input": str(src / "talks.txt")},
            "asr": {"reader": "transcript", "lang": "en", "input": str(src / "talks_asr.txt")},
        },
        "alignments": {
            "aligned": {"ref": "talks", "hyp": "asr", "lang": "en", "pair_by": "file", "pairs": str(src / "pairs.tsv")}
        },
        "confusables": {"talks": {"lang": "en", "corpus": "talks", "k": 2}},
        "datasets": {
            "ds": {
                "corpora": ["talks"],
                "split": {"ratios": {"train": 0.6, "dev": 0.2, "test": 0.2}, "seed": 3},
                "oversample": {"question_share": 0.05},
                "sequences": {"vocab_size": 150, "max_len": 32},
                "export": {"formats": ["tsv", "nemo", "hf"]},
            }
        },
    }


def write_params(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False), encoding="utf-8")
    return path


def stage_commands(ws: Path) -> dict[str, list]:
    """The stages' command lines over the workspace ``ws``, as dvc.yaml writes them."""
    p = ["--params", ws / "params.yaml", "-q"]
    seg, ds = ws / "data" / "segments", ws / "data" / "datasets" / "ds"
    return {
        "ingest-talks": ["stages.ingest", "talks", *p, "--out", seg / "talks.parquet", "--stats", ws / "data/stats/talks.json"],
        "ingest-asr": ["stages.ingest", "asr", *p, "--out", seg / "asr.parquet", "--stats", ws / "data/stats/asr.json"],
        "align": [
            "stages.align", "aligned", *p, "--ref", seg / "talks.parquet", "--hyp", seg / "asr.parquet",
            "--out", seg / "aligned.parquet", "--report", ws / "data/alignment/aligned.json",
        ],
        "confusables": [
            "stages.confusables", "talks", *p, "--vocab", seg / "talks.parquet",
            "--out", ws / "lexicons/confusables/talks.parquet", "--report", ws / "data/confusables/talks.json",
        ],
        "split": [
            "stages.split", "ds", *p, "--segments-dir", seg, "--out", ds / "split.parquet",
            "--report", ds / "split_report.json",
        ],
        "oversample": [
            "stages.oversample", "ds", *p, "--in", ds / "split.parquet", "--out", ds / "oversampled.parquet",
            "--augmented", ds / "augmented.parquet", "--report", ds / "oversample_report.json",
        ],
        "sequences": [
            "stages.sequences", "ds", *p, "--in", ds / "oversampled.parquet", "--out", ds / "sequences.parquet",
            "--tokenizer", ds / "tokenizer", "--report", ds / "report.json",
            "--reports", ds / "split_report.json", ds / "oversample_report.json",
        ],
        "export": ["stages.export", "ds", *p, "--in", ds / "oversampled.parquet", "--out", ds / "export"],
        "audit": ["stages.audit", *p, "--data-dir", ws / "data", "--out", ws / "reports"],
    }  # fmt: skip


def build_workspace(ws: Path) -> Path:
    """Sources, params and every stage's outputs under ``ws``, built by the stages themselves (in
    this process, under its umask)."""
    src = ws / "src"
    src.mkdir(parents=True)
    for name in ("talks.txt", "talks_asr.txt"):
        (src / name).write_bytes((SAMPLES / "en" / name).read_bytes())
    # the transcript is of the first talk: the samples' pairs file says so
    (src / "pairs.tsv").write_bytes((SAMPLES / "en" / "talks_pairs.tsv").read_bytes())
    (src / "words.txt").write_text("\n".join(WORDS.split()) + "\n", encoding="utf-8")
    write_params(ws / "params.yaml", base_params(src))
    for name, command in stage_commands(ws).items():
        rc, err = call(command[0], command[1:])
        assert rc == 0, f"{name}: {err}"
    return ws
