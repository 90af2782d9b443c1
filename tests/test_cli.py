import argparse
import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.cli import build_parser, main

COMMANDS = [
    "ingest",
    "audit",
    "align",
    "confusables",
    "split",
    "oversample",
    "sequences",
    "export",
    "train",
    "punctuate",
    "export-model",
]
#: every stage module with a command line (dvc_yaml writes dvc.yaml; common is shared code)
STAGES = sorted(
    p.stem
    for p in (Path(__file__).resolve().parent.parent / "stages").glob("*.py")
    if p.stem not in ("__init__", "common", "dvc_yaml")
)


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: punct-corpora " + command in capsys.readouterr().out


def test_commands_listed():
    assert set(COMMANDS) <= set(build_parser()._subparsers._group_actions[0].choices)


def test_a_command_builds_only_its_own_options():
    """A command's parser lists every command but holds only its own options, so punctuate's
    start-up imports no params schema, reader or pandas; the command is found after -v/-q."""
    code = """
import sys
from pipeline import cli
parser = cli.build_parser(cli._command_of(["-q", "punctuate", "--model", "m"]))
args = parser.parse_args(["-q", "punctuate", "--model", "m", "--window", "30"])
assert (args.window, args.overlap, args.quiet) == (30, 50, True), args
choices = parser._subparsers._group_actions[0].choices
assert set(choices) == set(cli.COMMANDS) and not choices["ingest"]._option_string_actions.get("--reader")
heavy = ("pipeline.params", "pipeline.ingest", "pydantic", "pandas", "yaml")
print(sorted(m for m in sys.modules if m in heavy))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"
    from pipeline.cli import _command_of

    assert _command_of(["-v", "ingest", "--reader", "punctuate"]) == "ingest"
    assert _command_of(["--help"]) is None and _command_of(["no-such-command"]) is None


def test_ingest_then_audit(tmp_path, root):
    out = tmp_path / "talks.parquet"
    rc = main(
        [
            "ingest",
            "--reader",
            "text",
            "--lang",
            "en",
            "--corpus",
            "talks",
            str(root / "corpora/samples/en/talks.txt"),
            "--out",
            str(out),
            "--stats",
            str(tmp_path / "s.json"),
        ]
    )
    assert rc == 0 and out.exists()
    stats = json.loads((tmp_path / "s.json").read_text())
    assert stats["words"] > 200 and stats["blank_lines"] == 2
    assert main(["audit", str(out), "--out", str(tmp_path / "rep")]) == 0
    result = json.loads((tmp_path / "rep" / "audit.json").read_text())
    assert list(result) == ["talks"]
    entry = result["talks"]
    assert {"words", "labels", "sentence_length"} <= set(entry)  # the stable keys of issue 2
    assert set(entry["labels"]) == {"O", "COMMA", "PERIOD", "QUESTION"}
    assert sum(entry["labels"].values()) == entry["words"] == stats["words"]
    assert entry["labels"]["QUESTION"] >= 5
    assert entry["sentence_length"]["mean"] > 3 and entry["sentence_length"]["std"] > 0


def test_bad_input_is_one_line_error_not_traceback(tmp_path):
    bad = tmp_path / "bad.tsv"
    bad.write_text("a\tO\nb\tWHAT\n")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "pipeline",
            "ingest",
            "--reader",
            "tsv",
            "--lang",
            "en",
            "--corpus",
            "x",
            str(bad),
            "--out",
            str(tmp_path / "x.parquet"),
        ],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr
    assert f"{bad}:2: unknown label 'WHAT'" in proc.stderr
    assert not (tmp_path / "x.parquet").exists()


def test_an_install_without_readers_is_told_what_to_install(tmp_path, monkeypatch, capsys):
    """No reader registered (the project not installed): one line and exit 2, not an internal error."""
    from pipeline import ingest

    monkeypatch.setattr(ingest, "entry_points", lambda group: [])
    ingest.readers.cache_clear()
    try:
        argv = ["ingest", "--reader", "text", "--lang", "en", "--corpus", "x", str(tmp_path / "in.txt")]
        assert main([*argv, "--out", str(tmp_path / "x.parquet")]) == 2
    finally:
        ingest.readers.cache_clear()
    err = capsys.readouterr().err
    assert "no corpus readers are registered" in err and "pip install -e ." in err
    assert "internal error" not in err and "Traceback" not in err


def _subparsers(parser):
    """``parser`` and every subcommand's parser beneath it, with their names."""
    yield parser.prog, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from _subparsers(sub)


def _parsers():
    yield from _subparsers(build_parser())
    for stage in STAGES:
        yield f"stages.{stage}", importlib.import_module(f"stages.{stage}").build_parser()


def test_every_option_has_help():
    """Every option and argument of every command and stage says what it is for (the reference and
    --help are written from these)."""
    missing = [
        f"{prog}: {action.option_strings or action.dest}"
        for prog, parser in _parsers()
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction) and not action.help
    ]
    assert not missing, missing


@pytest.mark.parametrize(
    ("command", "shown"),
    [
        ("confusables", ["--k K", "(default: 3)", "(default: 1)"]),
        ("align", ["(default: 0.5)", "(default: guerreiro)", "(default: id)"]),
        ("punctuate", ["(default: 200)", "(default: 50)", "(default: auto)"]),
        ("split", ["(default: 0)", "(default: local)"]),
        ("train", ["(default: the dataset's)"]),
        ("ingest", ["(default: 100000)"]),
    ],
)
def test_help_shows_the_schema_defaults(command, shown, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    text = " ".join(capsys.readouterr().out.split())  # the help wraps lines
    for item in shown:
        assert item in text, (item, text)
    assert "(default: None)" not in text


@pytest.mark.parametrize("where", ["before", "after"])
def test_verbose_anywhere_shows_the_traceback_of_an_internal_error(where, monkeypatch, tmp_path, capsys):
    import pipeline.operations.export as export

    def broken(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr(export, "export", broken)
    argv = ["export", "--format", "tsv", str(tmp_path / "in.parquet"), "--out", str(tmp_path / "out")]
    assert main(argv) == 1
    err = capsys.readouterr().err
    assert "internal error: RuntimeError: a bug" in err and "rerun with -v" in err and "Traceback" not in err
    assert main(["-v", *argv] if where == "before" else [*argv, "-v"]) == 1
    err = capsys.readouterr().err
    assert "Traceback (most recent call last)" in err and 'raise RuntimeError("a bug")' in err


def test_make_clean_removes_only_what_the_pipeline_regenerates(root, tmp_path):
    """Outputs go; tracked files (committed metrics) and a user's own untracked files stay."""
    repo = tmp_path / "repo"
    repo.mkdir()
    for name in ("Makefile", ".gitignore"):
        (repo / name).write_text((root / name).read_text())
    kept = ["real/reports/audit.json", "reports/audit.json", "notes.txt", "data.md"]
    gone = ["data/segments/x.parquet/part-00000.parquet", "reports/audit.html", "real/data/a.json", "models/t/m.bin"]
    for name in kept + gone:
        (repo / name).parent.mkdir(parents=True, exist_ok=True)
        (repo / name).write_text(name)
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=repo, check=True)
    subprocess.run([*git, "add", "Makefile", ".gitignore", *kept[:2]], cwd=repo, check=True)
    subprocess.run([*git, "commit", "-qm", "x"], cwd=repo, check=True)
    proc = subprocess.run(["make", "clean"], cwd=repo, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert all((repo / name).exists() for name in kept)
    assert not any((repo / name).exists() for name in gone)
