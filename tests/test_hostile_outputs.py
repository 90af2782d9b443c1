"""Outputs against a hostile user (issue 32): the same file spelled another way, outputs of another
kind, a user's own files at an output path, and runs killed in the middle of putting outputs in place.

Every input here is written in the test, the way a user would get it wrong."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pytest
from support.reliability import ROOT, call, error_line, leftovers, snapshot

from pipeline import errors
from pipeline.engine import location, writing

TEXT = "Hello there, how are you?\nFine, thanks. And you?\n"


def ingest_argv(source, out, stats=None) -> list:
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "c", source, "--out", out]
    return argv + (["--stats", stats] if stats is not None else [])


@pytest.fixture
def corpus(tmp_path) -> Path:
    path = tmp_path / "corpus.txt"
    path.write_text(TEXT, encoding="utf-8")
    return path


def all_left(tmp_path) -> list[str]:
    """Staging, set-aside copies, locks and journals anywhere under ``tmp_path``."""
    return leftovers(tmp_path) + sorted(str(p) for p in tmp_path.rglob("*journal*"))


# ================================================================================== path identity


@pytest.mark.parametrize("spelling", ["file_url", "symlink", "dotdot", "trailing_slash", "hard_link"])
def test_stats_spelled_as_the_input_another_way_is_refused(spelling, corpus, tmp_path):
    (tmp_path / "sub").mkdir()
    source, stats = corpus, corpus
    if spelling == "file_url":
        source = f"file://{corpus}"
    elif spelling == "symlink":
        stats = tmp_path / "link.txt"
        stats.symlink_to(corpus)
    elif spelling == "dotdot":
        stats = tmp_path / "sub" / ".." / corpus.name
    elif spelling == "trailing_slash":
        source = f"{tmp_path}/"  # the folder of inputs, the stats inside it
    elif spelling == "hard_link":
        stats = tmp_path / "hard.txt"
        os.link(corpus, stats)
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ingest_argv(source, tmp_path / "out.parquet", stats)))
    assert "is also an input" in line or "lies inside an input" in line, line
    assert snapshot(tmp_path) == before and corpus.read_text(encoding="utf-8") == TEXT


def test_an_output_given_as_a_file_url_is_the_local_path(corpus, tmp_path):
    line = error_line(*call("pipeline", ingest_argv(corpus, tmp_path / "out.parquet", f"file://{corpus}")))
    assert f"{corpus}: is also an input" in line
    assert corpus.read_text(encoding="utf-8") == TEXT


@pytest.mark.parametrize("where", ["same", "same_slash", "inside", "around"])
def test_two_outputs_of_one_run_that_are_one_path_are_refused_up_front(where, corpus, tmp_path):
    out = tmp_path / "out.parquet"
    stats = {
        "same": out,
        "same_slash": f"{out}/",
        "inside": out / "stats.json",
        "around": tmp_path,
    }[where]
    if where == "around":
        out, stats = tmp_path / "nest" / "out.parquet", tmp_path / "nest"
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ingest_argv(corpus, out, stats)))
    assert "is also an output" in line and "another run" not in line, line
    assert snapshot(tmp_path) == before  # refused before anything was written


def test_two_outputs_are_checked_before_any_work(tmp_path):
    with pytest.raises(errors.OutputError, match="is also an output"), writing.Outputs() as outputs:
        outputs.dataset(tmp_path / "x")
        outputs.file(tmp_path / "x" / ".." / "x")
    assert list(tmp_path.iterdir()) == []


# ========================================================================================== kinds


def test_a_dataset_replaces_only_a_dataset_of_its_kind(corpus, tmp_path):
    export = tmp_path / "export"
    export.mkdir()
    (export / "train.tsv").write_text("words\tlabels\n")
    (export / location.MANIFEST).write_text(json.dumps({"kind": "export-tsv"}))
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ingest_argv(corpus, export)))
    assert f"{export}: holds an output of another kind (export-tsv, not segments): not replaced" in line
    assert snapshot(tmp_path) == before
    # without a kind given up front, the manifest written decides at commit
    with pytest.raises(errors.OutputError, match="another kind"), writing.Outputs() as outputs:
        folder = outputs.dataset(export)
        writing.write_manifest(folder, {"kind": "segments", "parts": 0})
    assert snapshot(tmp_path) == before
    assert not all_left(tmp_path)


def test_a_dataset_of_the_same_kind_is_replaced(corpus, tmp_path):
    out = tmp_path / "out.parquet"
    for text in (TEXT, "Only one line.\n"):
        corpus.write_text(text, encoding="utf-8")
        assert call("pipeline", ingest_argv(corpus, out))[0] == 0
    assert json.loads((out / location.MANIFEST).read_text())["rows"] == 1
    assert not all_left(tmp_path)


def test_a_single_file_output_replaces_only_a_file_this_tool_wrote(corpus, tmp_path):
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    notes = tmp_path / "notes.json"
    notes.write_text("my notes")
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ingest_argv(corpus, out, notes)))
    assert line == f"error: {notes}: exists and is not an output of this tool: not replaced; " + (
        "choose another output path or remove it yourself"
    )
    assert snapshot(tmp_path) == before
    # an earlier stats file of ours is replaced, and carries a marker with its sha256
    assert call("pipeline", ingest_argv(corpus, out, stats))[0] == 0
    assert call("pipeline", ingest_argv(corpus, out, stats))[0] == 0
    marker = json.loads((tmp_path / ".stats.json.punct").read_text())
    assert len(marker["sha256"]) == 64
    # once the user edits it, it is theirs: not replaced
    stats.write_text(stats.read_text() + " ")
    line = error_line(*call("pipeline", ingest_argv(corpus, out, stats)))
    assert "stats.json: exists and is not an output of this tool" in line
    # a part file of a dataset (unmarked: not a single-file output of this tool) is not replaced either
    part = out / "part-00000.parquet"
    line = error_line(*call("pipeline", ingest_argv(corpus, tmp_path / "o2.parquet", part)))
    assert "part-00000.parquet: exists and is not an output of this tool" in line
    assert not all_left(tmp_path)


def test_a_lone_parquet_of_an_earlier_version_is_still_replaced(tmp_path):
    """The one case kept without a marker: a Parquet file whose schema metadata names this tool."""
    target = tmp_path / "conf.parquet"
    table = pa.table({"word": ["a"]}).replace_schema_metadata({"schema": "punct-confusables/1"})
    import pyarrow.parquet as pq

    pq.write_table(table, target)
    writing.write_table(pa.table({"word": ["b"]}), target)
    assert pq.read_table(target)["word"].to_pylist() == ["b"]
    other = tmp_path / "other.parquet"
    pq.write_table(pa.table({"word": ["a"]}), other)
    with pytest.raises(errors.OutputError, match="not an output of this tool"):
        writing.write_table(pa.table({"word": ["b"]}), other)


# ============================================================================ promotion and kills

RUN = """
import os, signal, sys
from pathlib import Path
from pipeline.engine import writing

base, tag, kill_at = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
calls = 0
real = os.replace


def replace(source, target):
    global calls
    calls += 1
    if calls == kill_at:
        os.kill(os.getpid(), signal.SIGKILL)
    return real(source, target)


os.replace = replace
with writing.Outputs() as outputs:
    folder = outputs.dataset(base / "data.parquet", kind="test")
    (folder / "part-00000.txt").write_text(tag)
    writing.write_manifest(folder, {"kind": "test", "tag": tag})
    writing.write_text_in_place(tag, outputs.file(base / "stats.json"))
print(calls)
"""


def run_outputs(base: Path, tag: str, kill_at: int = 0) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-c", RUN, str(base), tag, str(kill_at)],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
    )


def write_outputs(base: Path, tag: str) -> None:
    with writing.Outputs() as outputs:
        folder = outputs.dataset(base / "data.parquet", kind="test")
        (folder / "part-00000.txt").write_text(tag)
        writing.write_manifest(folder, {"kind": "test", "tag": tag})
        writing.write_text_in_place(tag, outputs.file(base / "stats.json"))


def state(base: Path) -> tuple[str, str]:
    """(the dataset's tag, the stats' tag), each checked whole."""
    data = base / "data.parquet"
    tag = (data / "part-00000.txt").read_text()
    assert json.loads((data / location.MANIFEST).read_text())["tag"] == tag
    return tag, (base / "stats.json").read_text()


class Killed(BaseException):
    """What a kill looks like from inside: nothing after it runs in the killed frame."""


@pytest.mark.slow
def test_a_failed_rerun_after_a_kill_leaves_all_old_or_all_new(tmp_path):
    first = run_outputs(tmp_path / "count", "old")
    assert first.returncode == 0, first.stderr
    run_outputs(tmp_path / "count", "old")
    renames = int(run_outputs(tmp_path / "count", "new").stdout)  # journals, renames, done journals
    assert renames >= 8
    for k in range(1, renames + 1):
        base = tmp_path / f"k{k}"
        assert run_outputs(base, "old").returncode == 0
        killed = run_outputs(base, "new", kill_at=k)
        assert killed.returncode == -signal.SIGKILL, (k, killed.stderr)
        # the next run meets the journal, finishes or undoes the promotion, then fails on bad input
        with pytest.raises(errors.InputError), writing.Outputs() as outputs:
            outputs.dataset(base / "data.parquet", kind="test")
            outputs.file(base / "stats.json")
            raise errors.InputError("bad input")
        assert state(base) in {("old", "old"), ("new", "new")}, k
        assert not all_left(base), (k, all_left(base))
        write_outputs(base, "again")  # and both are still outputs a later run replaces
        assert state(base) == ("again", "again")


@pytest.mark.parametrize("error", [Killed, OSError])
def test_a_failure_at_any_rename_of_a_promotion_rolls_back(error, tmp_path, monkeypatch):
    write_outputs(tmp_path, "old")
    real = os.replace
    calls = []

    def count(source, target):
        calls.append(source)
        return real(source, target)

    monkeypatch.setattr(os, "replace", count)
    write_outputs(tmp_path, "old")
    renames = len(calls)
    for k in range(1, renames + 1):
        calls.clear()

        def fail(source, target, k=k):
            calls.append(source)
            if len(calls) == k:
                raise error(5, "Input/output error") if error is OSError else error()
            return real(source, target)

        monkeypatch.setattr(os, "replace", fail)
        with pytest.raises((Killed, errors.OutputError)) as raised:
            write_outputs(tmp_path, "new")
        monkeypatch.setattr(os, "replace", real)
        if error is OSError:
            assert ".staging-" not in str(raised.value) and "cannot put the output in place" in str(raised.value)
        # the journal is written first, so a failure at its last steps leaves the new outputs whole
        assert state(tmp_path) in {("old", "old"), ("new", "new")}, k
        assert not all_left(tmp_path), (k, all_left(tmp_path))
        write_outputs(tmp_path, "old")


def test_a_set_aside_copy_of_an_earlier_version_is_restored_not_deleted(tmp_path):
    """A run of an earlier version killed between its renames left only ``.NAME.old-PID``: a rerun
    that fails on bad input puts it back instead of deleting it."""
    write_outputs(tmp_path, "old")
    os.replace(tmp_path / "data.parquet", tmp_path / ".data.parquet.old-99999")
    with pytest.raises(errors.InputError), writing.Outputs() as outputs:
        outputs.dataset(tmp_path / "data.parquet", kind="test")
        raise errors.InputError("bad input")
    assert state(tmp_path) == ("old", "old")
    assert not all_left(tmp_path)


# ==================================================================== manifests checked on read


@pytest.fixture
def dataset(tmp_path) -> Path:
    """A segment dataset of three parts, written by ingest."""
    sources = []
    for n in range(3):  # a file is a document: three documents, three shards
        sources.append(tmp_path / f"src{n}.txt")
        sources[-1].write_text("".join(f"Line {n} {i}, here. Is it?\n" for i in range(3)), encoding="utf-8")
    out = tmp_path / "ds.parquet"
    argv = ["ingest", "-q", "--engine", "local", "--workers", "1", "--shard-lines", "3", "--reader", "text",
            "--lang", "en", "--corpus", "c", *sources, "--out", out]  # fmt: skip
    rc, err = call("pipeline", argv)
    assert rc == 0, err
    assert sorted(p.name for p in out.glob("part-*")) == [f"part-0000{i}.parquet" for i in range(3)]
    return out


def audit_line(tmp_path, *datasets) -> str:
    return error_line(*call("pipeline", ["audit", "-q", *datasets, "--out", tmp_path / "audit"]))


def test_an_export_over_a_dataset_of_another_kind_is_refused_before_reading(dataset, tmp_path):
    """The kind is checked when the output is declared: the damaged input is never read, so the
    refusal is about the output (at commit it would be the input's error, after the work)."""
    (dataset / "part-00001.parquet").unlink()
    target = tmp_path / "segments.parquet"
    assert call("pipeline", ingest_argv(tmp_path / "src0.txt", target))[0] == 0
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ["export", "-q", dataset, "--format", "tsv", "--out", target]))
    assert f"{target}: holds an output of another kind (segments, not export-tsv): not replaced" in line
    assert snapshot(tmp_path) == before


def test_a_dataset_read_whole_passes_the_check(dataset, tmp_path):
    from pipeline.engine.dataset import checked_parts

    assert [p.name for p in checked_parts(dataset)] == [f"part-0000{i}.parquet" for i in range(3)]
    assert call("pipeline", ["audit", "-q", dataset, "--out", tmp_path / "audit"])[0] == 0


def test_a_deleted_part_is_named(dataset, tmp_path):
    (dataset / "part-00001.parquet").unlink()
    line = audit_line(tmp_path, dataset)
    assert f"{dataset / 'part-00001.parquet'}: missing: the manifest (_punct.json) lists 3 parts" in line


@pytest.mark.parametrize(
    "argv",
    [
        ["export", "{dataset}", "--format", "tsv", "--out", "{out}"],
        ["export", "{dataset}", "--format", "hf", "--out", "{out}"],
        ["confusables", "--lang", "en", "--vocab", "{dataset}", "--out", "{out}.parquet"],
        ["split", "{dataset}", "--out", "{out}", "--report", "{out}.json"],
    ],
    ids=["export-tsv", "export-hf", "confusables", "split"],
)
def test_every_reader_of_a_dataset_checks_its_parts(argv, dataset, tmp_path):
    (dataset / "part-00001.parquet").unlink()
    argv = [a.format(dataset=dataset, out=tmp_path / "out") for a in argv]
    line = error_line(*call("pipeline", [argv[0], "-q", *argv[1:]]))
    assert f"{dataset / 'part-00001.parquet'}: missing: the manifest (_punct.json) lists 3 parts" in line
    assert not list(tmp_path.glob("out*"))


def test_an_extra_part_is_named(dataset, tmp_path):
    (dataset / "part-00003.parquet").write_bytes((dataset / "part-00000.parquet").read_bytes())
    line = audit_line(tmp_path, dataset)
    assert f"{dataset / 'part-00003.parquet'}: a part the manifest (_punct.json) does not list" in line


def test_a_part_copied_over_another_is_a_count_mismatch(dataset, tmp_path):
    (dataset / "part-00002.parquet").unlink()
    import pyarrow.parquet as pq

    table = pq.read_table(dataset / "part-00000.parquet")
    pq.write_table(pa.concat_tables([table, table]), dataset / "part-00002.parquet")
    line = audit_line(tmp_path, dataset)
    assert f"{dataset}: its parts hold" in line and "rows, its manifest (_punct.json) says 9" in line


def test_a_part_of_another_schema_is_named(dataset, tmp_path):
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"doc_id": ["x"] * 3, "text": ["a"] * 3}), dataset / "part-00001.parquet")
    line = audit_line(tmp_path, dataset)
    assert f"{dataset / 'part-00001.parquet'}: columns differ from part-00000.parquet's" in line


@pytest.mark.parametrize("spelling", ["slash", "symlink", "dotdot"])
def test_the_same_dataset_twice_is_refused(spelling, dataset, tmp_path):
    other = {
        "slash": f"{dataset}/",
        "symlink": tmp_path / "link.parquet",
        "dotdot": tmp_path / "sub" / ".." / dataset.name,
    }[spelling]
    if spelling == "symlink":
        other.symlink_to(dataset)
    (tmp_path / "sub").mkdir()
    line = audit_line(tmp_path, dataset, other)
    assert f"{other}: the same dataset as {dataset}, given twice" in line
    assert not (tmp_path / "audit").exists()


# ================================================================== errors that say what and where


def test_a_damaged_page_names_the_file(dataset, tmp_path):
    part = dataset / "part-00001.parquet"
    data = bytearray(part.read_bytes())
    for at in range(8, len(data) // 2):  # the pages (the footer, at the end, stays readable)
        data[at] ^= 0x5A
    part.write_bytes(bytes(data))
    line = audit_line(tmp_path, dataset)
    assert f"{part}: " in line and ".staging-" not in line, line


def test_a_table_of_another_schema_is_one_line(tmp_path):
    import pyarrow.parquet as pq

    foreign = tmp_path / "foreign.parquet"
    pq.write_table(pa.table({"doc_id": ["a", "b"], "text": ["x", "y"]}), foreign)
    line = audit_line(tmp_path, foreign)
    assert line.startswith(f"error: {foreign}: ") and "KeyError" not in line, line


def test_a_file_name_that_is_not_utf8_is_named_and_only_it_left_out(tmp_path, caplog):
    folder = tmp_path / "in"
    folder.mkdir()
    (folder / "good.txt").write_text("Hello there.\n")
    bad = os.fsdecode(bytes(folder) + b"/bad\xff.txt")
    Path(bad).write_text("Not read.\n")
    out, stats = tmp_path / "o.parquet", tmp_path / "o.json"
    rc, err = call("pipeline", ["ingest", "--reader", "text", "--lang", "en", "--corpus", "c", folder, "--out", out,
                                "--stats", stats])  # fmt: skip
    assert rc == 0, err
    assert f"{folder}/bad\\xff.txt: file name is not valid UTF-8: not read" in err
    assert json.loads(stats.read_text())["dropped"]["input_entry_skipped:name_not_utf8"] == 1  # counted
    line = error_line(*call("pipeline", ingest_argv(bad, tmp_path / "o2.parquet")))
    assert line == f"error: {folder}/bad\\xff.txt: file name is not valid UTF-8: rename it"


def test_deeply_nested_json_is_one_line(tmp_path):
    news = tmp_path / "news.json"
    news.write_text("[" * 200_000 + "]" * 200_000)
    argv = ["ingest", "-q", "--reader", "news_json", "--lang", "bn", "--corpus", "c", news,
            "--out", tmp_path / "o.parquet"]  # fmt: skip
    line = error_line(*call("pipeline", argv))
    assert f"{news}" in line and "nested too deeply" in line, line


def test_a_short_write_names_the_output_not_its_staging(tmp_path):
    target = tmp_path / "audit" / "x.parquet"
    with pytest.raises(errors.OutputError) as raised, writing.Outputs() as outputs:
        outputs.file(target)
        raise OSError("4511 requested and 125 written")  # Arrow's words for a full disk, no errno
    assert str(raised.value) == f"{target}: cannot write (short write, 125 of 4511 bytes: the disk may be full)"
    assert not (tmp_path / "audit").exists()


def test_invalid_bytes_on_stdin_give_the_byte_offset():
    import io

    from pipeline.engine import reading

    assert reading.read_stdin(io.BytesIO("Héllo\n".encode())) == "Héllo\n"
    with pytest.raises(errors.InputError, match=r"^<stdin>: invalid UTF-8 at byte offset 9 \(line 2\)"):
        reading.read_stdin(io.BytesIO(b"Hello.\nA \xff broken line\n"))


def test_a_name_with_glob_characters_touches_only_its_own_leftovers(tmp_path):
    """``x[1].json``'s stale staging pattern must not match ``.x1.json.staging-…`` (another output's)."""
    other = tmp_path / ".x1.json.staging-1-keep"
    other.write_text("another run's staging")
    writing.write_text("mine", tmp_path / "x[1].json")
    assert (tmp_path / "x[1].json").read_text() == "mine" and other.read_text() == "another run's staging"
