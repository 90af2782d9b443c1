import json
import subprocess
import sys

import pytest

from pipeline.cli import build_parser, main

COMMANDS = ["ingest", "audit", "align", "confusables", "export", "punctuate"]


@pytest.mark.parametrize("command", COMMANDS)
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        main([command, "--help"])
    assert exc.value.code == 0
    assert "usage: punct-corpora " + command in capsys.readouterr().out


def test_commands_listed():
    assert set(COMMANDS) <= set(build_parser()._subparsers._group_actions[0].choices)


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
