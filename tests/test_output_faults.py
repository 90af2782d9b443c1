"""Faults of the environment, not bugs: a closed pipe on stdout ends quietly with the status a shell
shows for ``cat`` (141); a full disk on stdout is one line naming <stdout>, and a command whose
files were already in place says so; a file name too long, an absolute --glob, a missing optional
extra, a dataset folder without sequences and a YAML boolean key are each one line with exit 2,
no traceback, nothing half-written."""

import json
import signal
import subprocess
import sys

import pytest
import yaml
from support.reliability import ROOT, SAMPLES, call, error_line, leftovers, snapshot
from support.training import TINY

from pipeline.errors import ParamsError

TALK = "so we went to the talk and it was good how are you\nfine thanks\n"


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text(TALK * 50, encoding="utf-8")
    return path


def to_dev_full(args):
    with open("/dev/full", "w") as full:
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", *map(str, args)],
            cwd=ROOT,
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
        )
    return proc.returncode, proc.stderr


def to_closed_pipe(args):
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *map(str, args)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    proc.stdout.close()  # the reader is gone before the first line: `| head -c0`
    stderr = proc.stderr.read()
    return proc.wait(), stderr


def test_punctuate_into_a_closed_pipe_ends_quietly_as_cat(tiny_models, text):
    rc, stderr = to_closed_pipe(["punctuate", "-q", "--model", tiny_models / "onnx", text])
    assert (rc, stderr) == (128 + signal.SIGPIPE, "")
    # the status a shell reports for a coreutils writer in the same place
    shell = subprocess.run(["bash", "-c", "yes | head -c0; echo ${PIPESTATUS[0]}"], capture_output=True, text=True)
    assert shell.stdout.strip() == str(rc)


def test_punctuate_onto_a_full_disk_is_one_line(tiny_models, text):
    rc, stderr = to_dev_full(["punctuate", "--model", tiny_models / "onnx", text])
    line = error_line(rc, "\n".join(s for s in stderr.splitlines() if not s.startswith("punctuate: ")))
    assert line == "error: <stdout>: cannot write (No space left on device)"


def test_audit_markdown_onto_a_full_disk_says_its_files_are_in_place(tmp_path):
    dataset, out = tmp_path / "talks", tmp_path / "audit"
    assert (
        call(
            "pipeline",
            [
                "ingest",
                "-q",
                "--reader",
                "text",
                "--lang",
                "en",
                "--corpus",
                "talks",
                "--out",
                dataset,
                SAMPLES / "en/talks.txt",
            ],
        )[0]
        == 0
    )
    line = error_line(*to_dev_full(["audit", "-q", "--markdown", "--out", out, dataset]))
    assert line == f"error: <stdout>: cannot write (No space left on device); the audit's files in {out} are in place"
    assert (out / "audit.json").is_file() and (out / "table1.md").is_file() and not leftovers(tmp_path)
    rc, stderr = to_closed_pipe(["audit", "-q", "--markdown", "--out", out, dataset])
    assert (rc, stderr) == (141, "")


@pytest.mark.parametrize("option", ["--out", "--stats"])
def test_a_name_too_long_for_the_file_system_is_one_line(tmp_path, option):
    source = SAMPLES / "en/talks.txt"
    long = tmp_path / ("x" * 300 + ".json")
    args = {"--out": tmp_path / "ds", "--stats": tmp_path / "stats.json", option: long}
    before = snapshot(tmp_path)
    rc, stderr = call(
        "pipeline",
        [
            "ingest",
            "--reader",
            "text",
            "--lang",
            "en",
            "--corpus",
            "c",
            "--out",
            args["--out"],
            "--stats",
            args["--stats"],
            source,
        ],
    )
    line = error_line(rc, stderr)
    assert "x" * 300 in line and line.endswith(": File name too long")
    assert snapshot(tmp_path) == before  # nothing written, nothing left behind


def test_an_absolute_glob_inside_the_folder_is_read_and_one_outside_refused(tmp_path):
    inputs = tmp_path / "in"
    inputs.mkdir()
    (inputs / "a.txt").write_text("Hello there. How are you?\n", encoding="utf-8")
    (inputs / "b.md").write_text("Not this one.\n", encoding="utf-8")
    base = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", "--stats", tmp_path / "stats.json"]
    assert call("pipeline", [*base, "--out", tmp_path / "ds", "--glob", f"{inputs}/*.txt", inputs]) == (0, "")
    stats = json.loads((tmp_path / "stats.json").read_text())
    assert (stats["files"], stats["words"]) == (1, 5)  # a.txt alone
    rc, stderr = call("pipeline", [*base, "--out", tmp_path / "ds2", "--glob", "/etc/*.txt", inputs])
    assert "absolute pattern must lie inside the input folder" in error_line(rc, stderr)
    assert not (tmp_path / "ds2").exists()


NO_TORCH = """
import sys
sys.modules["torch"] = None  # an install without the train extra: `import torch` fails
from pipeline import cli
sys.exit(cli.main(sys.argv[1:]))
"""


def test_a_missing_extra_names_the_install(tiny_models, tmp_path, text):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    commands = [
        ["export-model", "--model", tiny_models / "ckpt", "--format", "onnx", "--out", tmp_path / "exported"],
        ["punctuate", "--model", tiny_models / "ckpt", text],
        ["train", "--config", config, "--dataset", tmp_path, "--out", tmp_path / "model"],
    ]
    for args in commands:
        proc = subprocess.run(
            [sys.executable, "-c", NO_TORCH, *map(str, args)], cwd=ROOT, capture_output=True, text=True
        )
        line = error_line(proc.returncode, proc.stderr)
        assert line == "error: this needs torch, which is not installed: pip install 'punct-corpora[train]'", args
        assert proc.stdout == ""
    assert sorted(p.name for p in tmp_path.iterdir()) == ["talk.txt", "tiny.yaml"]
    proc = subprocess.run(
        [sys.executable, "-c", NO_TORCH, "punctuate", "-q", "--model", tiny_models / "onnx", text],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0 and proc.stderr == "" and len(proc.stdout.splitlines()) == 100


def test_train_on_a_folder_without_sequences_says_so(tmp_path):
    config = tmp_path / "tiny.yaml"
    config.write_text(yaml.safe_dump(TINY))
    (tmp_path / "data").mkdir()
    line = error_line(
        *call("pipeline", ["train", "--config", config, "--dataset", tmp_path / "data", "--out", tmp_path / "m"])
    )
    assert line == f"error: {tmp_path / 'data'}: not a dataset folder of the sequences stage (no sequences.parquet)"
    assert not (tmp_path / "m").exists()


def test_a_yaml_boolean_key_is_shown_as_written(tmp_path):
    from pipeline import params

    path = tmp_path / "params.yaml"
    path.write_text(f"corpora:\n  true:\n    reader: text\n    lang: en\n    input: {SAMPLES / 'en/talks.txt'}\n")
    with pytest.raises(ParamsError, match=r"params\.yaml: corpora\.true: a key YAML reads as a boolean: quote it"):
        params.load(path)
