"""Issue 15: nothing lost, nothing silent.  Every case of the issue through the public entry points
(the command line and the stages' ``main``, in this process or in a fresh one): what is kept, what
is counted (in the stats JSON), and what is refused: exit status 2, exactly one line on stderr
naming the file, line or key, no traceback, and nothing written (no output, no staging, no lock).

The walk at the end runs every command and every stage with a bad input of each class."""

# ruff: noqa: E501 (the case tables keep one case per line, as they are read)

from __future__ import annotations

import contextlib
import errno
import glob
import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import pyarrow.parquet as pq
import pytest
import yaml
from support.reliability import (
    ROOT,
    SAMPLES,
    base_params,
    build_workspace,
    call,
    error_line,
    leftovers,
    modes,
    run_module,
    snapshot,
    stage_commands,
    write_params,
)

from pipeline.engine import reading, writing


@pytest.fixture(scope="module")
def ws(tmp_path_factory):
    """Sources, params and the outputs of every stage, built by the stages (read-only for the tests)."""
    return build_workspace(tmp_path_factory.mktemp("ws"))


def seg(ws: Path, name: str) -> Path:
    return ws / "data" / "segments" / f"{name}.parquet"


def ds(ws: Path) -> Path:
    return ws / "data" / "datasets" / "ds"


def ingest(tmp: Path, reader: str, lang: str, content: bytes | str, name: str = "in.txt", *extra) -> tuple[dict, dict]:
    """``punct-corpora ingest`` of one file holding ``content``: (segment columns, stats)."""
    source = tmp / name
    source.write_bytes(content.encode() if isinstance(content, str) else content)
    out, stats = tmp / f"{source.stem}.parquet", tmp / f"{source.stem}.stats.json"
    argv = ["ingest", "-q", "--reader", reader, "--lang", lang, "--corpus", "c", source]
    rc, err = call("pipeline", [*argv, "--out", out, "--stats", stats, *extra])
    assert rc == 0, err
    return reading.read_segments(out).to_pydict(), json.loads(stats.read_text())


def params_with(ws: Path, tmp: Path, edit=None, name: str = "params.yaml") -> Path:
    """The workspace's params with ``edit(data)`` applied, written under ``tmp``."""
    data = yaml.safe_load((ws / "params.yaml").read_text())
    if edit is not None:
        edit(data)
    return write_params(tmp / name, data)


@contextlib.contextmanager
def holding(path: Path):
    """Another run writing ``path`` right now: an open output transaction of the library."""
    other = writing.Outputs()
    other.dataset(path) if path.is_dir() or path.suffix in ("", ".parquet") else other.file(path)
    try:
        yield
    finally:
        other.abort()
        other.close()


def full_disk(monkeypatch) -> None:
    """Every Parquet and text write fails as on a full disk, with the errors the libraries raise
    (Arrow words the errno in its message; Python sets it)."""

    def parquet(*args, **kwargs):
        raise OSError("Error writing bytes to file. Detail: [errno 28] No space left on device")

    def text(self, *args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(pq, "write_table", parquet)
    monkeypatch.setattr(Path, "write_text", text)


# ============================================================ data lost or changed without a count


@pytest.mark.parametrize(
    "command",
    ["ingest", "ingest --engine", "align", "confusables", "export"],
)
def test_out_naming_an_existing_folder_is_refused_and_the_folder_kept(command, ws, tmp_path):
    foreign = tmp_path / "mine"
    (foreign / "inner").mkdir(parents=True)
    (foreign / "inner" / "thesis.txt").write_text("years of work")
    before = snapshot(tmp_path, ws)
    args = {
        "ingest": ["ingest", "--reader", "text", "--lang", "en", "--corpus", "c", ws / "src/talks.txt"],
        "ingest --engine": [
            "ingest", "--engine", "local", "--workers", "2", "--shard-lines", "5",
            "--reader", "text", "--lang", "en", "--corpus", "c", ws / "src/talks.txt",
        ],
        "align": [
            "align", "--ref", ws / "src/talks.txt", "--ref-reader", "text", "--hyp", ws / "src/talks_asr.txt",
            "--hyp-reader", "transcript", "--lang", "en", "--pairs", ws / "src/pairs.tsv", "--report", tmp_path / "r.json",
        ],
        "confusables": ["confusables", "--lang", "ms", "--vocab", ws / "src/words.txt"],
        "export": ["export", "--format", "tsv", ds(ws) / "oversampled.parquet"],
    }[command]  # fmt: skip
    line = error_line(*call("pipeline", [args[0], "-q", *args[1:], "--out", foreign]))
    assert f"{foreign}: exists and is a folder this tool did not write" in line
    assert snapshot(tmp_path, ws) == before


def test_an_earlier_output_of_the_same_kind_is_replaced_and_no_other(ws, tmp_path):
    out, stats = tmp_path / "talks.parquet", tmp_path / "talks.json"
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", ws / "src/talks.txt"]
    assert call("pipeline", [*argv, "--out", out, "--stats", stats])[0] == 0
    first = snapshot(out)
    (tmp_path / "short.txt").write_text("One line only.\n")
    argv[-1] = tmp_path / "short.txt"
    assert call("pipeline", [*argv, "--out", out, "--stats", stats])[0] == 0  # replaced whole
    assert reading.read_segments(out)["words"].to_pylist() == [["one", "line", "only"]]
    assert snapshot(out) != first and not leftovers(tmp_path)
    # a stats file never replaces a dataset folder, a dataset never replaces a foreign file
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", [*argv, "--out", tmp_path / "other.parquet", "--stats", out]))
    assert str(out) in line and "not replaced" in line
    (tmp_path / "notes.txt").write_text("keep me")
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", [*argv, "--out", tmp_path / "notes.txt"]))
    assert "notes.txt: exists and is not an output of this kind" in line
    assert snapshot(tmp_path) == before


def test_a_transcript_keeps_every_word_in_order_whatever_its_script(tmp_path):
    hyp = "আমি satisfied হয়েছি 70a বার\nআবার বলো\n"
    table, stats = ingest(tmp_path, "transcript", "bn", hyp, "hyp.txt")
    assert table["words"] == [line.split() for line in hyp.splitlines()]
    assert {label for row in table["labels"] for label in row} == {"O"}
    assert stats["dropped"] == {} and stats["words"] == 7


def test_the_aligned_output_has_the_hypothesis_words(tmp_path):
    (tmp_path / "ref.txt").write_text("আমি খুব satisfied হয়েছি, 70a বার।\nআবার বলো?\n")
    (tmp_path / "hyp.txt").write_text("আমি satisfied হয়েছি 70a বার আবার বলো\n")
    argv = ["align", "-q", "--ref", tmp_path / "ref.txt", "--ref-reader", "text", "--hyp", tmp_path / "hyp.txt"]
    argv += ["--hyp-reader", "transcript", "--lang", "bn", "--pair-by", "order", "--force"]
    rc, err = call("pipeline", [*argv, "--out", tmp_path / "out.parquet", "--report", tmp_path / "r.json"])
    assert rc == 0, err
    out = reading.read_segments(tmp_path / "out.parquet")
    words = [w for row in out["words"].to_pylist() for w in row]
    assert words == ["আমি", "satisfied", "হয়েছি", "70a", "বার", "আবার", "বলো"]
    labels = [label for row in out["labels"].to_pylist() for label in row]
    assert labels.count("QUESTION") == 1 and labels[-1] == "QUESTION"


def test_ted_xml_keeps_text_after_inline_elements_and_counts_segments_outside_documents(tmp_path):
    xml = (
        '<mteval><srcset><seg id="0">An orphan.</seg>'
        '<doc docid="t1"><seg id="1">Before <i>inner</i> after, end.</seg><seg id="2"><b>Bold</b> tail?</seg></doc>'
        "</srcset></mteval>"
    )
    table, stats = ingest(tmp_path, "ted_xml", "en", xml, "talk.xml")
    assert table["words"] == [["before", "inner", "after", "end"], ["bold", "tail"]]
    assert table["labels"] == [["O", "O", "COMMA", "PERIOD"], ["O", "QUESTION"]]
    assert stats["dropped"] == {"segment_outside_any_document": 1}


def six_documents(tmp_path: Path) -> Path:
    """A corpus of six documents of two sentences each, as a segment dataset."""
    text = "\n\n".join(f"Document {i} opens here. It ends now." for i in range(6)) + "\n"
    (tmp_path / "six.txt").write_text(text)
    out = tmp_path / "segments" / "six.parquet"
    rc, err = call("pipeline", ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "six",
                                tmp_path / "six.txt", "--out", out])  # fmt: skip
    assert rc == 0, err
    return out


@pytest.mark.parametrize(
    ("split", "reason", "left_out"),
    [
        ({"counts": {"train": 1, "dev": 1, "test": 1}}, "documents_beyond_counts", 3),
        ({"ratios": {"train": 1.0}, "min_sentences": 2}, "documents_with_too_few_sentences_dropped", 6),
    ],
)
def test_a_split_reports_every_document_it_leaves_out(split, reason, left_out, tmp_path):
    six_documents(tmp_path)
    params = write_params(
        tmp_path / "params.yaml",
        {
            "corpora": {"six": {"reader": "text", "lang": "en", "input": str(tmp_path / "six.txt")}},
            "datasets": {"d": {"corpora": ["six"], "split": split}},
        },
    )
    argv = ["d", "--params", params, "-q", "--segments-dir", tmp_path / "segments"]
    rc, err = call("stages.split", [*argv, "--out", tmp_path / "split.parquet", "--report", tmp_path / "r.json"])
    assert rc == 0, err
    report = json.loads((tmp_path / "r.json").read_text())
    kept = set(reading.read_segments(tmp_path / "split.parquet")["doc_id"].to_pylist())
    assert report[reason] == left_out
    assert len(kept) + report[reason] == 6


def test_a_nul_byte_becomes_a_space_counted_and_the_mark_before_it_kept(tmp_path):
    table, stats = ingest(tmp_path, "text", "en", b"Hello,\x00 world.\x07\n")
    assert table["words"] == [["hello", "world"]]
    assert table["labels"] == [["COMMA", "PERIOD"]]
    assert stats["control_characters_made_spaces"] == 2


@pytest.mark.parametrize("reader", ["text", "transcript"])
def test_cr_only_line_endings_end_lines_and_documents(reader, tmp_path):
    table, stats = ingest(
        tmp_path, reader, "en", b"First one.\rSecond one.\r\rThird one.\r", "mac.txt", "--doc-boundary", "blank_line"
    )
    assert table["words"] == [["first", "one"], ["second", "one"], ["third", "one"]]
    assert table["doc_id"] == ["mac#0", "mac#0", "mac#1"]
    assert stats["lines"] == 4 and stats["blank_lines"] == 1


def test_tsv_with_cr_only_line_endings(tmp_path):
    table, stats = ingest(tmp_path, "tsv", "en", b"a\tO\rb\tPERIOD\rc\tQUESTION\r", "mac.tsv")
    assert table["words"] == [["a", "b"], ["c"]]
    assert stats["lines"] == 3


def test_a_tsv_word_with_spaces_stays_one_word_counted(tmp_path):
    table, stats = ingest(tmp_path, "tsv", "en", "new york\tO\nis\tO\nbig\tPERIOD\n", "words.tsv")
    assert table["words"] == [["newyork", "is", "big"]]
    assert table["labels"] == [["O", "O", "PERIOD"]]
    assert stats["words_with_spaces_joined"] == 1


def test_a_control_character_inside_a_tsv_word_is_counted(tmp_path):
    table, stats = ingest(tmp_path, "tsv", "en", b"ne\x00w\tO\nyork\tPERIOD\n", "words.tsv")
    assert table["words"] == [["new", "york"]]  # the word count of the source is kept
    assert stats["control_characters_made_spaces"] == 1
    assert stats["words_with_spaces_joined"] == 1


def test_news_text_given_as_a_list_of_paragraphs_is_kept_and_counted(tmp_path):
    articles = [
        {"url": "u1", "news": "A", "text": ["Satu perenggan di sini.", "Perenggan kedua ada."]},
        {"url": "u2", "news": "A", "text": "Teks biasa."},
    ]
    table, stats = ingest(tmp_path, "news_json", "ms", json.dumps(articles), "news.json")
    assert table["words"] == [["satu", "perenggan", "di", "sini"], ["perenggan", "kedua", "ada"], ["teks", "biasa"]]
    assert stats["texts_given_as_paragraph_lists"] == 1
    assert stats["articles_kept"] == 2 and stats["dropped"] == {}


def test_what_a_directory_input_holds_but_is_not_read_is_counted(tmp_path):
    folder = tmp_path / "corpus"
    (folder / "nested").mkdir(parents=True)
    (folder / "a.txt").write_text("Read me.\n")
    (folder / "nested" / "b.txt").write_text("Not read.\n")
    (folder / "broken.txt").symlink_to(tmp_path / "nowhere.txt")
    (folder / ".hidden.txt").write_text("Hidden.\n")
    os.mkfifo(folder / "pipe.txt")
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    rc, err = call("pipeline", ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", folder,
                                "--out", out, "--stats", stats])  # fmt: skip
    assert rc == 0, err
    assert reading.read_segments(out)["words"].to_pylist() == [["read", "me"]]
    assert json.loads(stats.read_text())["dropped"] == {
        "input_entry_skipped:broken_link": 1,
        "input_entry_skipped:hidden_file": 1,
        "input_entry_skipped:not_a_regular_file": 1,
        "input_entry_skipped:subdirectory": 1,
    }


@pytest.mark.parametrize("where", ["the input file", "the input folder", "inside the input folder", "stats"])
def test_an_output_that_is_an_input_is_refused(where, tmp_path):
    folder = tmp_path / "corpus"
    folder.mkdir()
    (folder / "a.txt").write_text("Precious text.\n")
    source = folder if where != "the input file" else folder / "a.txt"
    out, stats = {
        "the input file": (folder / "a.txt", tmp_path / "s.json"),
        "the input folder": (folder, tmp_path / "s.json"),
        "inside the input folder": (folder / "out.parquet", tmp_path / "s.json"),
        "stats": (tmp_path / "out.parquet", folder / "a.txt"),
    }[where]
    before = snapshot(tmp_path)
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", source]
    line = error_line(*call("pipeline", [*argv, "--out", out, "--stats", stats]))
    assert "is also an input" in line or "lies inside an input" in line
    assert snapshot(tmp_path) == before


# ============================================================================ typos and wrong types


def _set(path: str, value):
    def edit(data):
        node = data
        *parents, last = path.split(".")
        for key in parents:
            node = node.setdefault(key, {})
        node[last] = value

    return edit


TYPOS = [
    ("ingest", _set("corpora.talks.doc_boundry", "line"), "corpora.talks.doc_boundry: unknown key; did you mean 'doc_boundary'?"),
    ("align", _set("alignments.aligned.polcy", "nearest"), "alignments.aligned.polcy: unknown key; did you mean 'policy'?"),
    ("align", _set("alignments.aligned.max_wr", 0.3), "alignments.aligned.max_wr: unknown key; did you mean 'max_wer'?"),
    ("confusables", _set("confusables.talks.min_cout", 2), "confusables.talks.min_cout: unknown key; did you mean 'min_count'?"),
    ("confusables", _set("confusables.talks.k", "three"), "confusables.talks.k: input should be a valid integer (got 'three')"),
    ("split", _set("datasets.ds.split.sed", 3), "datasets.ds.split.sed: unknown key; did you mean 'seed'?"),
    ("ingest", _set("engine.shard_line", 10), "engine.shard_line: unknown key; did you mean 'shard_lines'?"),
    ("split", _set("datasets.ds.split.ratios", {"train": 0.8, "dve": 0.2}), "datasets.ds.split.ratios.dve: the key 'dve' is not one of"),
    ("split", _set("datasets.ds.split.ratios", {"train": -1, "dev": 0.5}), "datasets.ds.split.ratios.train: input should be greater than or equal to 0 (got -1)"),
    ("split", _set("datasets.ds.split.ratios", {"train": "0.8", "dev": 0.2}), "datasets.ds.split.ratios.train: input should be a valid number (got '0.8')"),
    ("oversample", _set("datasets.ds.oversample.question_shar", 0.1), "datasets.ds.oversample.question_shar: unknown key; did you mean 'question_share'?"),
    ("sequences", _set("datasets.ds.sequences.max_length", 32), "datasets.ds.sequences.max_length: unknown key; did you mean 'max_len'?"),
    ("export", _set("datasets.ds.export.format", ["tsv"]), "datasets.ds.export.format: unknown key; did you mean 'formats'?"),
    ("audit", _set("engine.worker", 2), "engine.worker: unknown key; did you mean 'workers'?"),
]  # fmt: skip


@pytest.mark.parametrize(("stage", "edit", "message"), TYPOS, ids=[f"{s}:{m.split(':')[0]}" for s, _, m in TYPOS])
def test_a_params_typo_is_one_line_naming_the_file_and_key(stage, edit, message, ws, tmp_path):
    params = params_with(ws, tmp_path, edit)
    command = stage_commands(ws)[stage if stage != "ingest" else "ingest-talks"]
    command = [params if a == ws / "params.yaml" else a for a in command]
    for flag in ("--out", "--stats", "--report", "--augmented", "--tokenizer"):
        if flag in command:
            command[command.index(flag) + 1] = tmp_path / f"output{flag}"
    before = snapshot(tmp_path, ws)
    line = error_line(*call(command[0], command[1:]))
    if message.endswith("?"):
        assert line == f"error: {params}: {message}"
    else:
        assert line.startswith(f"error: {params}: {message}")
    assert snapshot(tmp_path, ws) == before


def test_a_params_file_that_is_not_yaml_names_the_line(ws, tmp_path):
    (tmp_path / "params.yaml").write_text("corpora:\n  talks: [\n")
    line = error_line(*call("stages.split", ["ds", "--params", tmp_path / "params.yaml", "--out", tmp_path / "o",
                                             "--report", tmp_path / "r.json"]))  # fmt: skip
    assert line.startswith(f"error: {tmp_path / 'params.yaml'}:3: not valid YAML")


def test_a_params_file_with_invalid_utf8_names_the_file(ws, tmp_path):
    (tmp_path / "params.yaml").write_bytes(b"corpora:\n  t\xffalks: {}\n")
    line = error_line(*call("stages.split", ["ds", "--params", tmp_path / "params.yaml", "--out", tmp_path / "o",
                                             "--report", tmp_path / "r.json"]))  # fmt: skip
    assert str(tmp_path / "params.yaml") in line


@pytest.mark.parametrize(
    ("options", "message"),
    [
        (["--reader", "tsv", "--doc-boundary", "line"], "--doc-boundary: not an option of reader 'tsv'"),
        (["--reader", "text", "--option", "doc_boundry=line"], "--option doc_boundry: not an option of reader 'text'; did you mean 'doc_boundary'?"),
        (["--reader", "text", "--option", "quoting=tsv"], "quoting: 'tsv' is not one of 'none' or 'csv'"),
        (["--reader", "txt"], "--reader: 'txt' is not a reader; did you mean 'text'?"),
        (["--reader", "text", "--workers", "-1"], "--workers: input should be greater than or equal to 0 (got -1)"),
        (["--reader", "text", "--engine", "local", "--shard-lines", "0"], "--shard-lines: input should be greater than or equal to 1 (got 0)"),
        (["--reader", "text", "--bogus"], "unrecognized arguments: --bogus"),
        (["--reader", "text", "--engine", "spark"], "argument --engine: invalid choice: 'spark'"),
    ],
)  # fmt: skip
def test_a_command_line_option_is_checked_like_a_param(options, message, ws, tmp_path):
    argv = ["ingest", "--lang", "en", "--corpus", "c", *options, ws / "src/talks.txt", "--out", tmp_path / "o.parquet"]
    line = error_line(*call("pipeline", argv))
    assert message in line
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (["confusables", "--lang", "ms", "--k", "0"], "--k: input should be greater than or equal to 1 (got 0)"),
        (
            ["confusables", "--lang", "ms", "--min-count", "0"],
            "--min-count: input should be greater than or equal to 1",
        ),
        (["align", "--max-wer", "-1"], "--max-wer: input should be greater than or equal to 0 (got -1.0)"),
        (["audit", "--workers", "-2"], "--workers: input should be greater than or equal to 0 (got -2)"),
        (["export", "--format", "xml"], "argument --format: invalid choice: 'xml'"),
    ],
)
def test_every_command_checks_its_options(command, message, ws, tmp_path):
    rest = {
        "confusables": ["--vocab", ws / "src/words.txt", "--out", tmp_path / "c.parquet"],
        "align": ["--ref", ws / "src/talks.txt", "--ref-reader", "text", "--hyp", ws / "src/talks_asr.txt",
                  "--hyp-reader", "transcript", "--lang", "en", "--out", tmp_path / "a", "--report", tmp_path / "a.json"],
        "audit": [seg(ws, "talks"), "--out", tmp_path / "audit"],
        "export": [seg(ws, "talks"), "--out", tmp_path / "export"],
    }[command[0]]  # fmt: skip
    line = error_line(*call("pipeline", [*command, *rest]))
    assert message in line
    assert list(tmp_path.iterdir()) == []


# ====================================================== tracebacks where one line and exit 2 are promised


@pytest.mark.parametrize("source", ["missing", "folder without files", "file inside a file"])
def test_ingest_on_the_engine_with_a_bad_input_is_one_line(source, tmp_path):
    (tmp_path / "empty").mkdir()
    (tmp_path / "empty" / "sub").mkdir()
    (tmp_path / "file.txt").write_text("x\n")
    path = {
        "missing": tmp_path / "nope.txt",
        "folder without files": tmp_path / "empty",
        "file inside a file": tmp_path / "file.txt" / "x.txt",
    }[source]
    before = snapshot(tmp_path)
    argv = ["ingest", "-q", "--engine", "local", "--workers", "2", "--reader", "text", "--lang", "en", "--corpus", "c"]
    line = error_line(*call("pipeline", [*argv, path, "--out", tmp_path / "o.parquet", "--stats", tmp_path / "o.json"]))
    assert str(path) in line
    assert snapshot(tmp_path) == before


def test_dataset_stage_errors_are_one_line(ws, tmp_path):
    # a corpus of the dataset that was never ingested
    argv = ["ds", "--params", ws / "params.yaml", "--segments-dir", tmp_path / "segments"]
    line = error_line(*call("stages.split", [*argv, "--out", tmp_path / "o", "--report", tmp_path / "r.json"]))
    assert f"{tmp_path / 'segments' / 'talks.parquet'}: input does not exist" in line
    # ratios that sum to nothing
    params = params_with(ws, tmp_path, _set("datasets.ds.split.ratios", {"train": 0, "dev": 0}))
    argv = ["ds", "--params", params, "--segments-dir", ws / "data" / "segments"]
    line = error_line(*call("stages.split", [*argv, "--out", tmp_path / "o", "--report", tmp_path / "r.json"]))
    assert "datasets.ds.split: split ratios must have a positive sum" in line
    # a dataset name not in the params
    argv = ["nosuch", "--params", ws / "params.yaml", "--in", ds(ws) / "split.parquet"]
    line = error_line(*call("stages.oversample", [*argv, "--out", tmp_path / "o", "--augmented", tmp_path / "a",
                                                  "--report", tmp_path / "r.json"]))  # fmt: skip
    assert "datasets.nosuch: no such dataset" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["params.yaml"]


def test_punctuate_with_a_missing_model_folder_is_one_line(tmp_path):
    (tmp_path / "in.txt").write_text("hello world\n")
    proc = run_module("pipeline", ["punctuate", "--model", tmp_path / "no-model", tmp_path / "in.txt"])
    line = error_line(proc.returncode, proc.stderr)
    assert str(tmp_path / "no-model") in line
    assert proc.stdout == ""


@pytest.mark.parametrize("command", ["ingest", "ingest --engine", "align", "confusables", "split"])
def test_a_full_disk_is_one_line_naming_the_output_and_leaves_nothing(command, ws, tmp_path, monkeypatch):
    out, report = tmp_path / "out.parquet", tmp_path / "out.json"
    source = [
        "--reader",
        "text",
        "--lang",
        "en",
        "--corpus",
        "c",
        ws / "src/talks.txt",
        "--out",
        out,
        "--stats",
        report,
    ]
    module, argv = {
        "ingest": ("pipeline", ["ingest", *source]),
        "ingest --engine": ("pipeline", ["ingest", "--engine", "local", "--workers", "2", "--shard-lines", "7", *source]),
        "align": ("pipeline", ["align", "--ref", ws / "src/talks.txt", "--ref-reader", "text",
                               "--hyp", ws / "src/talks_asr.txt", "--hyp-reader", "transcript", "--lang", "en",
                               "--pairs", ws / "src/pairs.tsv", "--out", out, "--report", report]),
        "confusables": ("pipeline", ["confusables", "--lang", "ms", "--vocab", ws / "src/words.txt", "--out", out,
                                     "--report", report]),
        "split": ("stages.split", ["ds", "--params", ws / "params.yaml", "--segments-dir", ws / "data/segments",
                                   "--out", out, "--report", report]),
    }[command]  # fmt: skip
    before = snapshot(tmp_path, ws)
    full_disk(monkeypatch)
    line = error_line(*call(module, ["-q", *argv] if module != "pipeline" else [argv[0], "-q", *argv[1:]]))
    assert "no space left on the device" in line
    assert str(out) in line or str(report) in line
    assert ".staging-" not in line
    assert snapshot(tmp_path, ws) == before


@pytest.mark.slow
def test_two_sharded_runs_writing_the_same_output(big_corpus, tmp_path):
    """The second run is refused while the first writes (no ENOTEMPTY, no mixed output); the first
    completes untouched."""
    out = tmp_path / "big.parquet"
    first = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *sharded_ingest(big_corpus, out)],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        wait_for(lambda: glob.glob(f"{tmp_path}/.big.parquet.staging-{first.pid}-*/part-*"))
        os.kill(first.pid, signal.SIGSTOP)
        second = run_module("pipeline", sharded_ingest(big_corpus, out))
        line = error_line(second.returncode, second.stderr)
        assert line == f"error: {out}: another run is writing it now"
    finally:
        os.kill(first.pid, signal.SIGCONT)
    assert first.wait(timeout=120) == 0, first.stderr.read()
    assert reading.read_manifest(out)["rows"] == reading.read_segments(out).num_rows > 100_000
    assert not leftovers(tmp_path)


# ================================================================================= leftovers, kills


@pytest.fixture(scope="module")
def big_corpus(tmp_path_factory) -> Path:
    """A text corpus of 250,000 lines (about 17 MB): a sharded ingest of it takes seconds."""
    path = tmp_path_factory.mktemp("big") / "big.txt"
    sentences = [line for line in (SAMPLES / "en" / "talks.txt").read_text().splitlines() if line]
    with open(path, "w", encoding="utf-8") as handle:
        for i in range(250_000):
            handle.write(sentences[i % len(sentences)] + ("\n\n" if i % 40 == 39 else "\n"))
    return path


def sharded_ingest(source: Path, out: Path, *more) -> list:
    return ["ingest", "-q", "--engine", "local", "--workers", "2", "--shard-lines", "10000", "--reader", "text",
            "--lang", "en", "--corpus", "big", source, "--out", out, *more]  # fmt: skip


def wait_for(condition, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = condition()
        if found:
            return found
        time.sleep(0.02)
    raise AssertionError("timed out")


def children(pid: int) -> list[int]:
    found = []
    for task in os.listdir(f"/proc/{pid}/task"):
        with contextlib.suppress(FileNotFoundError):
            found += [int(c) for c in Path(f"/proc/{pid}/task/{task}/children").read_text().split()]
    return found


def alive(pid: int) -> bool:
    """A process that runs (a zombie waiting for its reaper does not)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def start_and_stop(big_corpus: Path, tmp_path: Path, sig: int) -> tuple[subprocess.Popen, list[int]]:
    """A sharded ingest (2 pool workers) stopped by ``sig`` once it has written parts."""
    out = tmp_path / "big.parquet"
    proc = subprocess.Popen(
        [sys.executable, "-m", "pipeline", *sharded_ingest(big_corpus, out, "--stats", tmp_path / "big.json")],
        cwd=ROOT,
        stderr=subprocess.PIPE,
        text=True,
    )
    wait_for(lambda: glob.glob(f"{tmp_path}/.big.parquet.staging-{proc.pid}-*/part-*"))
    workers = wait_for(lambda: len(children(proc.pid)) == 2 and children(proc.pid))
    os.kill(proc.pid, sig)
    proc.wait(timeout=60)
    return proc, workers


@pytest.mark.slow
def test_a_killed_run_leaves_staging_the_next_run_removes_and_no_worker(big_corpus, tmp_path):
    proc, workers = start_and_stop(big_corpus, tmp_path, signal.SIGKILL)
    assert proc.returncode == -signal.SIGKILL
    wait_for(lambda: not any(alive(w) for w in workers), timeout=10)  # pool workers die with their driver
    left = leftovers(tmp_path)
    assert any(".big.parquet.staging-" in p for p in left) and any(".big.json.staging-" in p for p in left)
    assert not (tmp_path / "big.parquet").exists() and not (tmp_path / "big.json").exists()
    # the next run writing the same outputs removes what the killed one left
    (tmp_path / "small.txt").write_text("A small corpus.\n")
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", tmp_path / "small.txt"]
    rc, err = call("pipeline", [*argv, "--out", tmp_path / "big.parquet", "--stats", tmp_path / "big.json"])
    assert rc == 0, err
    assert not leftovers(tmp_path)


@pytest.mark.slow
def test_sigterm_ends_a_run_cleanly(big_corpus, tmp_path):
    proc, workers = start_and_stop(big_corpus, tmp_path, signal.SIGTERM)
    stderr = proc.stderr.read()
    assert proc.returncode == 128 + signal.SIGTERM
    assert error_line(2, stderr) == "error: terminated by SIGTERM"
    assert not any(alive(w) for w in workers)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # no output, no staging, no lock


@pytest.mark.parametrize("failure", ["writing the stats", "putting the stats in place"])
def test_a_dataset_and_its_stats_are_promoted_together(failure, ws, tmp_path, monkeypatch):
    out, stats = tmp_path / "talks.parquet", tmp_path / "talks.json"
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c"]
    assert call("pipeline", [*argv, ws / "src/talks.txt", "--out", out, "--stats", stats])[0] == 0
    before = snapshot(tmp_path)
    (tmp_path / "other.txt").write_text("Another text.\n")
    if failure == "writing the stats":
        write_text = Path.write_text

        def fail(self, *args, **kwargs):
            if ".talks.json.staging-" in self.name:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
            return write_text(self, *args, **kwargs)

        monkeypatch.setattr(Path, "write_text", fail)
    else:
        replace = os.replace

        def fail(source, target):
            if ".talks.json.staging-" in str(source):
                raise OSError(errno.EIO, os.strerror(errno.EIO))
            return replace(source, target)

        monkeypatch.setattr(os, "replace", fail)
    line = error_line(*call("pipeline", [*argv, tmp_path / "other.txt", "--out", out, "--stats", stats]))
    assert str(stats) in line
    monkeypatch.undo()
    (tmp_path / "other.txt").unlink()
    assert snapshot(tmp_path) == before  # the earlier dataset and stats, untouched


def test_scratch_a_run_discards_is_removed_and_nothing_outside_its_scratch(tmp_path):
    out, mine = tmp_path / "x.json", tmp_path / "mine.txt"
    mine.write_text("not the run's")
    with writing.Outputs() as outputs:
        staged = outputs.file(out)
        scratch = outputs.scratch(out)
        (scratch / "sent").mkdir()
        (scratch / "sent" / "00000.bin").write_bytes(b"copies")
        (scratch / "one.bin").write_bytes(b"one")
        (scratch / "bucket.arrow").write_bytes(b"still read")
        outputs.discard(scratch / "sent", scratch / "one.bin", scratch / "never-made")
        for path in (mine, scratch / ".." / "mine.txt", scratch, tmp_path):  # outside it, or itself
            with pytest.raises(ValueError, match="not in a scratch folder"):
                outputs.discard(path)
        for thread in outputs.discarding:
            thread.join()
        assert sorted(p.name for p in scratch.iterdir()) == ["bucket.arrow"]
        staged.write_text("{}")
    assert not scratch.exists() and out.read_text() == "{}" and mine.read_text() == "not the run's"


# ==================================================================================== permissions


CLI_OUTPUTS = {
    "ingest": lambda ws, t: ["ingest", "--reader", "text", "--lang", "en", "--corpus", "c", ws / "src/talks.txt",
                             "--out", t / "segments.parquet", "--stats", t / "stats.json"],
    "ingest --engine": lambda ws, t: ["ingest", "--engine", "local", "--workers", "2", "--shard-lines", "9",
                                      "--reader", "text", "--lang", "en", "--corpus", "c", ws / "src/talks.txt",
                                      "--out", t / "sharded.parquet"],
    "align": lambda ws, t: ["align", "--ref", ws / "src/talks.txt", "--ref-reader", "text",
                            "--hyp", ws / "src/talks_asr.txt", "--hyp-reader", "transcript", "--lang", "en",
                            "--pairs", ws / "src/pairs.tsv", "--out", t / "aligned.parquet",
                            "--report", t / "aligned.json"],
    "confusables": lambda ws, t: ["confusables", "--lang", "ms", "--vocab", ws / "src/words.txt",
                                  "--out", t / "conf.parquet", "--report", t / "conf.json"],
    "export": lambda ws, t: ["export", "--format", "hf", ds(ws) / "oversampled.parquet", "--out", t / "hf"],
    "audit": lambda ws, t: ["audit", seg(ws, "talks"), "--out", t / "audit"],
}  # fmt: skip


@pytest.mark.slow
@pytest.mark.parametrize(("umask", "file_mode", "dir_mode"), [(0o022, "0o644", "0o755"), (0o077, "0o600", "0o700")])
def test_outputs_honour_the_umask(umask, file_mode, dir_mode, ws, tmp_path):
    """Every file and folder a command or stage writes has the mode any tool gives under the umask."""
    old = os.umask(umask)
    try:
        stages = build_workspace(tmp_path / "stages")
        cli = tmp_path / "cli"
        cli.mkdir()
        for name, argv in CLI_OUTPUTS.items():
            rc, err = call("pipeline", argv(ws, cli))
            assert rc == 0, f"{name}: {err}"
    finally:
        os.umask(old)
    checked, wrong = 0, []
    for folder in (stages / "data", stages / "reports", stages / "lexicons", cli):
        for mode, paths in modes(folder).items():
            for path in paths:
                checked += 1
                if mode != (dir_mode if (folder / path).is_dir() else file_mode):
                    wrong.append(f"{mode} {folder.name}/{path}")
    assert not wrong, wrong
    assert checked > 80 and (stages / "data/datasets/ds/tokenizer/tokenizer.json").exists()
    assert not leftovers(tmp_path)


# ================================================================ the walk: every command x every class


@dataclass
class Command:
    """One command line of the walk: its slots (inputs and outputs by name) and how they make argv."""

    module: str
    defaults: callable
    argv: callable
    inputs: tuple[str, ...]
    outputs: tuple[str, ...]
    malformed: tuple  # (slot overrides (tmp -> dict), what the line says)
    bad_option: tuple  # (slot overrides, what the line says)
    text_input: bool = False
    primary: callable = field(default=lambda s: Path(s["out"]))


def _link(target: Path, at: Path) -> None:
    """``at`` standing for ``target`` (a missing target: nothing there; a link: the same link)."""
    at.parent.mkdir(parents=True, exist_ok=True)
    if target.is_symlink():
        at.symlink_to(os.readlink(target))
    elif target.exists():
        at.symlink_to(target.resolve())


def _stage_ingest_argv(ws, t, s):
    def edit(data):
        data["corpora"]["talks"].update(input=str(s["input"]), reader=s["reader"])
        if s.get("edit"):
            s["edit"](data)

    params = params_with(ws, t, edit, "ingest-params.yaml")
    return ["talks", "--params", params, "-q", "--out", s["out"], "--stats", s["stats"]]


def _stage_params(ws, t, s):
    return params_with(ws, t, s["edit"], "stage-params.yaml") if s.get("edit") else ws / "params.yaml"


def _segments_dir(ws, t, s):
    folder = t / "segments"
    if not folder.exists():
        _link(s["talks"], folder / "talks.parquet")
    return folder


def _data_dir(ws, t, s):
    data = t / "data"
    if not data.exists():
        _link(s["talks"], data / "segments" / "talks.parquet")
        for name in ("asr", "aligned"):
            _link(seg(ws, name), data / "segments" / f"{name}.parquet")
        _link(ws / "data" / "alignment", data / "alignment")
        _link(ws / "data" / "datasets", data / "datasets")
    return data


GARBAGE = {"input": lambda t: t / "garbage.parquet"}

WALK = {
    "punct-corpora ingest": Command(
        "pipeline",
        lambda ws, t: {"input": ws / "src/talks.txt", "reader": "text", "out": t / "out.parquet", "stats": t / "out.json", "extra": []},
        lambda ws, t, s: ["ingest", "-q", "--reader", s["reader"], "--lang", "en", "--corpus", "c", s["input"],
                          "--out", s["out"], "--stats", s["stats"], *s["extra"]],
        ("input",), ("out", "stats"),
        ({"input": lambda t: t / "bad.tsv", "reader": lambda t: "tsv"}, r"bad\.tsv:2: unknown label 'WHAT'"),
        ({"reader": lambda t: "tsv", "extra": lambda t: ["--doc-boundary", "line"]}, "--doc-boundary: not an option of reader 'tsv'"),
        text_input=True,
    ),
    "punct-corpora ingest --engine": Command(
        "pipeline",
        lambda ws, t: {"input": ws / "src/talks.txt", "reader": "text", "out": t / "out.parquet", "stats": t / "out.json", "extra": []},
        lambda ws, t, s: ["ingest", "-q", "--engine", "local", "--workers", "2", "--shard-lines", "7", "--reader",
                          s["reader"], "--lang", "en", "--corpus", "c", s["input"], "--out", s["out"], "--stats", s["stats"], *s["extra"]],
        ("input",), ("out", "stats"),
        ({"input": lambda t: t / "bad.tsv", "reader": lambda t: "tsv"}, r"bad\.tsv:2: unknown label 'WHAT'"),
        ({"extra": lambda t: ["--option", "quotes=csv"]}, "--option quotes: not an option of reader 'text'"),
        text_input=True,
    ),
    "punct-corpora audit": Command(
        "pipeline",
        lambda ws, t: {"input": seg(ws, "talks"), "out": t / "audit", "extra": []},
        lambda ws, t, s: ["audit", "-q", s["input"], "--out", s["out"], *s["extra"]],
        ("input",), ("out",),
        (GARBAGE, "garbage.parquet: not a readable Parquet file"),
        ({"extra": lambda t: ["--workers", "-1"]}, "--workers: input should be greater than or equal to 0"),
        primary=lambda s: Path(s["out"]) / "audit.json",
    ),
    "punct-corpora align": Command(
        "pipeline",
        lambda ws, t: {"ref": ws / "src/talks.txt", "ref_reader": "text", "hyp": ws / "src/talks_asr.txt",
                       "out": t / "al.parquet", "report": t / "al.json", "extra": []},
        lambda ws, t, s: ["align", "-q", "--ref", s["ref"], "--ref-reader", s["ref_reader"], "--hyp", s["hyp"],
                          "--hyp-reader", "transcript", "--lang", "en", "--pairs", ws / "src/pairs.tsv", "--out", s["out"],
                          "--report", s["report"], *s["extra"]],
        ("ref", "hyp"), ("out", "report"),
        ({"ref": lambda t: t / "bad.xml", "ref_reader": lambda t: "ted_xml"}, r"bad\.xml:1: not well-formed XML"),
        ({"extra": lambda t: ["--policy", "guereiro"]}, "argument --policy: invalid choice: 'guereiro'"),
        text_input=True,
    ),
    "punct-corpora confusables": Command(
        "pipeline",
        lambda ws, t: {"vocab": ws / "src/words.txt", "out": t / "c.parquet", "report": t / "c.json", "extra": []},
        lambda ws, t, s: ["confusables", "-q", "--lang", "ms", "--vocab", s["vocab"], "--k", "2", "--out", s["out"],
                          "--report", s["report"], *s["extra"]],
        ("vocab",), ("out", "report"),
        ({"vocab": lambda t: t / "garbage.parquet"}, "garbage.parquet: not a readable Parquet file"),
        ({"extra": lambda t: ["--k", "0"]}, "--k: input should be greater than or equal to 1 (got 0)"),
        text_input=True,
    ),
    "punct-corpora export": Command(
        "pipeline",
        lambda ws, t: {"input": ds(ws) / "oversampled.parquet", "out": t / "export", "format": "tsv"},
        lambda ws, t, s: ["export", "-q", "--format", s["format"], s["input"], "--out", s["out"]],
        ("input",), ("out",),
        (GARBAGE, "garbage.parquet: not a readable Parquet file"),
        ({"format": lambda t: "csv"}, "argument --format: invalid choice: 'csv'"),
    ),
    "stages.ingest": Command(
        "stages.ingest",
        lambda ws, t: {"input": ws / "src/talks.txt", "reader": "text", "out": t / "out.parquet", "stats": t / "out.json"},
        _stage_ingest_argv,
        ("input",), ("out", "stats"),
        ({"input": lambda t: t / "bad.tsv", "reader": lambda t: "tsv"}, r"bad\.tsv:2: unknown label 'WHAT'"),
        ({"edit": lambda t: _set("corpora.talks.doc_boundry", "line")}, "corpora.talks.doc_boundry: unknown key; did you mean 'doc_boundary'?"),
        text_input=True,
    ),
    "stages.align": Command(
        "stages.align",
        lambda ws, t: {"ref": seg(ws, "talks"), "hyp": seg(ws, "asr"), "out": t / "al.parquet", "report": t / "al.json"},
        lambda ws, t, s: ["aligned", "--params", _stage_params(ws, t, s), "-q", "--ref", s["ref"], "--hyp", s["hyp"],
                          "--out", s["out"], "--report", s["report"]],
        ("ref", "hyp"), ("out", "report"),
        ({"ref": lambda t: t / "garbage.parquet"}, "garbage.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("alignments.aligned.polcy", "nearest")}, "alignments.aligned.polcy: unknown key; did you mean 'policy'?"),
    ),
    "stages.confusables": Command(
        "stages.confusables",
        lambda ws, t: {"vocab": seg(ws, "talks"), "out": t / "c.parquet", "report": t / "c.json"},
        lambda ws, t, s: ["talks", "--params", _stage_params(ws, t, s), "-q", "--vocab", s["vocab"], "--out", s["out"],
                          "--report", s["report"]],
        ("vocab",), ("out", "report"),
        ({"vocab": lambda t: t / "garbage.parquet"}, "garbage.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("confusables.talks.min_cout", 2)}, "confusables.talks.min_cout: unknown key; did you mean 'min_count'?"),
    ),
    "stages.split": Command(
        "stages.split",
        lambda ws, t: {"talks": seg(ws, "talks"), "out": t / "split.parquet", "report": t / "split.json"},
        lambda ws, t, s: ["ds", "--params", _stage_params(ws, t, s), "-q", "--segments-dir", _segments_dir(ws, t, s),
                          "--out", s["out"], "--report", s["report"]],
        ("talks",), ("out", "report"),
        ({"talks": lambda t: t / "garbage.parquet"}, "talks.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("datasets.ds.split.sed", 3)}, "datasets.ds.split.sed: unknown key; did you mean 'seed'?"),
    ),
    "stages.oversample": Command(
        "stages.oversample",
        lambda ws, t: {"input": ds(ws) / "split.parquet", "out": t / "o.parquet", "augmented": t / "a.parquet", "report": t / "o.json"},
        lambda ws, t, s: ["ds", "--params", _stage_params(ws, t, s), "-q", "--in", s["input"], "--out", s["out"],
                          "--augmented", s["augmented"], "--report", s["report"]],
        ("input",), ("out", "augmented", "report"),
        (GARBAGE, "garbage.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("datasets.ds.oversample.question_shar", 0.1)}, "did you mean 'question_share'?"),
    ),
    "stages.sequences": Command(
        "stages.sequences",
        lambda ws, t: {"input": ds(ws) / "oversampled.parquet", "out": t / "s.parquet", "tokenizer": t / "tok", "report": t / "s.json"},
        lambda ws, t, s: ["ds", "--params", _stage_params(ws, t, s), "-q", "--in", s["input"], "--out", s["out"],
                          "--tokenizer", s["tokenizer"], "--report", s["report"], "--reports", ds(ws) / "split_report.json"],
        ("input",), ("out", "tokenizer", "report"),
        (GARBAGE, "garbage.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("datasets.ds.sequences.max_length", 32)}, "did you mean 'max_len'?"),
    ),
    "stages.export": Command(
        "stages.export",
        lambda ws, t: {"input": ds(ws) / "oversampled.parquet", "out": t / "export"},
        lambda ws, t, s: ["ds", "--params", _stage_params(ws, t, s), "-q", "--in", s["input"], "--out", s["out"]],
        ("input",), ("out",),
        (GARBAGE, "garbage.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("datasets.ds.export.format", ["tsv"])}, "did you mean 'formats'?"),
    ),
    "stages.audit": Command(
        "stages.audit",
        lambda ws, t: {"talks": seg(ws, "talks"), "out": t / "reports"},
        lambda ws, t, s: ["--params", _stage_params(ws, t, s), "-q", "--data-dir", _data_dir(ws, t, s), "--out", s["out"]],
        ("talks",), ("out",),
        ({"talks": lambda t: t / "garbage.parquet"}, "talks.parquet: not a readable Parquet file"),
        ({"edit": lambda t: _set("engine.shard_line", 10)}, "engine.shard_line: unknown key; did you mean 'shard_lines'?"),
        primary=lambda s: Path(s["out"]) / "audit.json",
    ),
}  # fmt: skip

CLASSES = (
    "missing",
    "directory",
    "unreadable",
    "invalid_utf8",
    "malformed",
    "bad_option",
    "foreign_out",
    "out_is_input",
    "lock",
    "enospc",
)
WALK_CASES = [
    (name, klass) for name, cmd in WALK.items() for klass in CLASSES if klass != "invalid_utf8" or cmd.text_input
]


def bad_inputs(t: Path) -> None:
    """The bad inputs of every class, under ``t``."""
    (t / "folder" / "sub").mkdir(parents=True)
    (t / "broken").symlink_to(t / "nowhere")
    (t / "bad_utf8.txt").write_bytes(b"Good line.\nBad \xff byte.\n")
    (t / "bad.tsv").write_text("a\tO\nb\tWHAT\n")
    (t / "bad.xml").write_text('<mteval><doc docid="1"><seg>open</doc></mteval>')
    (t / "garbage.parquet").write_text("not a parquet file\n")


def prepare_case(name: str, klass: str, ws: Path, t: Path) -> tuple[list, dict, str, str]:
    """(argv, slots, what the line must match, what path it must name) of one case of the walk."""
    cmd = WALK[name]
    bad_inputs(t)
    s = cmd.defaults(ws, t)
    first_in, first_out = cmd.inputs[0], cmd.outputs[0]
    expect, named = {
        "missing": (r"does not exist|No such file", "missing"),
        "directory": (r"no input files|holds no part-\*\.parquet|is a directory", "folder"),
        "unreadable": (r"broken symbolic link", "broken"),
        "invalid_utf8": (r"invalid UTF-8 at byte offset 15 \(line 2\)", "bad_utf8.txt"),
        "foreign_out": (r"exists and is a folder this tool did not write.*not replaced", None),
        "out_is_input": (r"is also an input|lies inside an input", None),
        "lock": (r"another run is writing it now", None),
        "enospc": (r"no space left on the device", None),
    }.get(klass, (None, None))
    if klass in ("missing", "directory", "unreadable", "invalid_utf8"):
        s[first_in] = {"missing": t / "missing", "directory": t / "folder", "unreadable": t / "broken",
                       "invalid_utf8": t / "bad_utf8.txt"}[klass]  # fmt: skip
    elif klass in ("malformed", "bad_option"):
        overrides, expect = cmd.malformed if klass == "malformed" else cmd.bad_option
        s.update({key: make(t) for key, make in overrides.items()})
        expect = re.escape(expect) if klass == "bad_option" or "\\" not in expect else expect
    elif klass == "foreign_out":
        foreign = cmd.primary(s)  # an existing folder at the output path, holding someone's files
        (foreign / "inner").mkdir(parents=True)
        (foreign / "inner" / "keep.txt").write_text("someone's work")
        named = str(foreign)
    elif klass == "out_is_input":
        s[first_out] = s[first_in]
        named = str(s[first_in])
    elif klass in ("lock", "enospc"):
        named = str(cmd.primary(s)) if klass == "lock" else None
    if named in ("missing", "folder", "broken", "bad_utf8.txt") and first_in == "talks":
        named = "talks.parquet"  # the stage reads the corpus from a folder of corpora
    argv = cmd.argv(ws, t, s)
    return argv, s, expect, named


@pytest.mark.parametrize(("name", "klass"), WALK_CASES, ids=[f"{n}:{k}" for n, k in WALK_CASES])
def test_walk_every_command_with_a_bad_input_of_each_class(name, klass, ws, tmp_path, monkeypatch):
    cmd = WALK[name]
    argv, s, expect, named = prepare_case(name, klass, ws, tmp_path)
    with contextlib.ExitStack() as stack:
        if klass == "lock":
            stack.enter_context(holding(cmd.primary(s)))
        before = snapshot(tmp_path, ws)
        if klass == "enospc":
            full_disk(monkeypatch)
        line = error_line(*call(cmd.module, argv))
        assert re.search(expect, line), line
        if named:
            assert named in line, line
        if klass == "enospc":
            assert ".staging-" not in line
            assert any(str(s[o]) in line or str(cmd.primary(s)) in line for o in cmd.outputs), line
        assert snapshot(tmp_path, ws) == before


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a file of mode 000: the broken link case covers unreadable")
@pytest.mark.parametrize("name", ["punct-corpora ingest", "punct-corpora audit", "stages.align"])
def test_walk_a_file_without_read_permission(name, ws, tmp_path):
    cmd = WALK[name]
    s = cmd.defaults(ws, tmp_path)
    locked = tmp_path / "locked.parquet"
    locked.write_bytes(Path(s[cmd.inputs[0]]).read_bytes() if Path(s[cmd.inputs[0]]).is_file() else b"x")
    locked.chmod(0)
    s[cmd.inputs[0]] = locked
    before = snapshot(tmp_path)
    line = error_line(*call(cmd.module, cmd.argv(ws, tmp_path, s)))
    assert str(locked) in line and "ermission denied" in line
    assert snapshot(tmp_path) == before


@pytest.mark.slow
@pytest.mark.parametrize("name", list(WALK))
def test_walk_a_write_the_disk_refuses_in_a_real_process(name, ws, tmp_path):
    """The file-size limit (RLIMIT_FSIZE 0) makes every write of every writer (Arrow, Python, the
    tokenizers' Rust) fail in the kernel, as a full disk does: one line, exit 2, nothing left."""
    import resource

    cmd = WALK[name]
    s = cmd.defaults(ws, tmp_path)
    argv = cmd.argv(ws, tmp_path, s)
    before = snapshot(tmp_path, ws)
    proc = run_module(cmd.module, argv, preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0)))
    line = error_line(proc.returncode, proc.stderr)
    assert ".staging-" not in line
    assert snapshot(tmp_path, ws) == before


def test_walk_the_train_stage_with_a_missing_dataset(tmp_path):
    model = {"model_type": "bert", "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2}
    params = write_params(
        tmp_path / "params.yaml",
        {**base_params(tmp_path), "train": {"t": {"dataset": "ds", "lang": "en", "config": model}}},
    )
    argv = ["t", "--params", params, "--data-dir", tmp_path / "data", "--models-dir", tmp_path / "m"]
    proc = run_module("stages.train", [*argv, "--reports-dir", tmp_path / "r"])
    line = error_line(proc.returncode, proc.stderr)
    assert f"{tmp_path / 'data' / 'datasets' / 'ds'}: dataset folder does not exist" in line
