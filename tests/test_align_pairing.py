"""Alignment a user can drive: each side a file read by a reader (with its options) or a segment
dataset; documents paired by id, by order or by a pairs file; every document left unpaired on
either side counted in the report and warned about; the command line and the stage on one code
path.  The files are written as a user would write them (a reference and its transcript)."""

import json

import pytest
from support.datasets import write_dataset

from pipeline import cli
from pipeline import params as P
from pipeline.align.datasets import align_datasets
from pipeline.align.pairing import AlignmentError, pair, read_pairs
from pipeline.align.tables import align_tables
from pipeline.engine import reading
from pipeline.errors import InputError, ParamsError
from pipeline.labels import LABELS
from pipeline.schema import segments_table
from stages import align as align_stage

#: a reference of two paragraphs (two documents by blank line) and its unpunctuated transcript
REFERENCE = (
    "Good morning, everyone. Today I want to talk about water.\n"
    "Have you ever wondered where it comes from?\n\n"
    "Most of us haven't. We turn the tap, and it simply flows.\n"
)
TRANSCRIPT = (
    "good morning everyone today i want to talk about water have you ever wondered where it comes from "
    "most of us haven't we turn the tap and it simply flows\n"
)


@pytest.fixture
def user_files(tmp_path):
    (tmp_path / "en_ref.txt").write_text(REFERENCE, encoding="utf-8")
    (tmp_path / "en_asr.txt").write_text(TRANSCRIPT, encoding="utf-8")
    return tmp_path


def run_align(folder, capsys, *extra, ref=None, hyp=None):
    ref = ref or ["--ref", folder / "en_ref.txt", "--ref-reader", "text"]
    hyp = hyp or ["--hyp", folder / "en_asr.txt", "--hyp-reader", "transcript"]
    argv = ["align", "-q", *ref, *hyp, "--lang", "en", *extra]
    argv += ["--out", folder / "out.parquet", "--report", folder / "report.json"]
    capsys.readouterr()
    rc = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    report = json.loads((folder / "report.json").read_text()) if rc == 0 else None
    return rc, err, report


def test_unpaired_ids_name_both_sides_and_suggest_pairing_by_order(user_files, capsys):
    rc, err, _ = run_align(user_files, capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "hypothesis ids 'en_asr'" in err and "'en_ref#0', 'en_ref#1'" in err and "--pair-by order" in err
    assert not (user_files / "out.parquet").exists() and not (user_files / "report.json").exists()


def test_by_order_different_counts_are_refused_or_forced_and_counted(user_files, capsys):
    rc, err, _ = run_align(user_files, capsys, "--pair-by", "order")
    assert rc == 2 and "the reference has 2 documents and the hypothesis 1" in err and "--force" in err
    # the first paragraph against the whole transcript: WER 0.56, within --max-wer 1
    rc, err, report = run_align(user_files, capsys, "--pair-by", "order", "--force", "--max-wer", "1")
    assert rc == 0
    assert report["documents"] == 1 and report["unpaired_reference"] == 1 and report["unpaired_hypothesis"] == 0
    assert report["skipped"] == [
        {"side": "reference", "id": "en_ref#1", "reason": "beyond the hypothesis's 1 documents"}
    ]
    assert report["warnings"][0].startswith("1 reference document(s) not aligned") and "en_ref#1" in err


def test_reader_options_make_one_document_of_the_reference(user_files, capsys):
    """--doc-boundary file reads the reference as one document: it pairs with the transcript and
    every hypothesis word is in the output, in order, with the reference's marks."""
    rc, err, report = run_align(user_files, capsys, "--doc-boundary", "file")
    assert rc == 0, err
    assert report["documents"] == 1 and report["unpaired_reference"] == 0 and report["skipped"] == []
    assert report["wer"]["wer"] == 0.0 and report["marks"]["transferred"] == report["marks"]["reference"] == 7
    out = reading.read_segments(user_files / "out.parquet")
    words = [w for row in out["words"].to_pylist() for w in row]
    assert words == TRANSCRIPT.split()
    labels = [label for row in out["labels"].to_pylist() for label in row]
    assert labels[words.index("everyone")] == "PERIOD" and labels[words.index("from")] == "QUESTION"
    # the same option given as a reader option of one side, and a wrong one named with its flag
    rc, err, again = run_align(user_files, capsys, "--ref-option", "doc_boundary=file")
    assert rc == 0 and again == report
    rc, err, _ = run_align(user_files, capsys, "--ref-option", "doc_bondary=file")
    assert rc == 2 and err.strip() == "error: --ref-option doc_bondary: not an option of reader 'text'"


def test_segment_datasets_on_either_side_give_the_same_alignment(user_files, capsys):
    for name, reader, boundary in (("ref", "text", "file"), ("hyp", "transcript", "file")):
        source = user_files / ("en_ref.txt" if name == "ref" else "en_asr.txt")
        argv = ["ingest", "-q", "--reader", reader, "--lang", "en", "--corpus", source.stem, str(source)]
        assert cli.main([*argv, "--doc-boundary", boundary, "--out", str(user_files / f"{name}.parquet")]) == 0
    rc, _, from_files = run_align(user_files, capsys, "--doc-boundary", "file")
    from_files_out = reading.read_segments(user_files / "out.parquet")
    rc, err, from_datasets = run_align(
        user_files, capsys, ref=["--ref", user_files / "ref.parquet"], hyp=["--hyp", user_files / "hyp.parquet"]
    )
    assert rc == 0, err
    assert from_datasets == from_files
    assert reading.read_segments(user_files / "out.parquet").equals(from_files_out)
    # a file without a reader is not taken for a dataset
    rc, err, _ = run_align(user_files, capsys, ref=["--ref", user_files / "en_ref.txt"])
    assert rc == 2 and "--ref-reader: " in err and "not a segment dataset" in err


def test_a_pairs_file_pairs_documents_of_other_names(user_files, capsys):
    (user_files / "pairs.tsv").write_text("# reference\thypothesis\nen_ref#1\ten_asr\n")
    rc, err, _ = run_align(user_files, capsys, "--pairs", user_files / "pairs.tsv")
    assert rc == 2 and "WER" in err  # the second paragraph is not the whole transcript
    (user_files / "pairs.tsv").write_text("en_ref#0 en_asr\n")
    rc, err, report = run_align(user_files, capsys, "--pairs", user_files / "pairs.tsv", "--force", "--max-wer", "1")
    assert rc == 0 and report["documents"] == 1 and report["unpaired_reference"] == 1
    assert report["skipped"][0]["id"] == "en_ref#1" and "not in the pairs file" in report["skipped"][0]["reason"]
    assert "warning: 1 reference document(s) not aligned" in err
    rc, err, _ = run_align(user_files, capsys, "--pairs", user_files / "pairs.tsv", "--pair-by", "order")
    assert rc == 2 and err.strip() == "error: --pairs: pairs is read with pair_by file only (pair_by is order)"


def test_pair_by_each_rule():
    refs, hyps = ["a", "b", "c"], ["b", "a"]
    assert pair(refs, hyps).pairs == [("b", "b"), ("a", "a")]
    assert pair(refs, hyps).unpaired_reference == ["c"]
    assert pair(["x"], ["y"]).pairs == [("x", "y")]  # one document a side: a file and its transcript
    with pytest.raises(AlignmentError) as error:
        pair(refs, ["a", "zzz", "yyy"])
    message = str(error.value)
    assert "2 of 3 hypothesis document(s)" in message and "'zzz', 'yyy'" in message and "'b', 'c'" in message
    forced = pair(refs, ["a", "zzz"], force=True)
    assert forced.pairs == [("a", "a")] and forced.unpaired_hypothesis == ["zzz"]
    assert forced.report()["skipped"][-1] == {
        "side": "hypothesis",
        "id": "zzz",
        "reason": "no document of the same id on the other side",
    }
    assert pair(refs, ["p", "q", "r"], "order").pairs == [("a", "p"), ("b", "q"), ("c", "r")]
    with pytest.raises(ParamsError):
        pair(refs, hyps, "file")


def test_a_pairs_file_is_checked_line_by_line(tmp_path):
    path = tmp_path / "pairs.tsv"
    path.write_text("a\tx\nb\n")
    with pytest.raises(InputError, match=r"pairs.tsv:2: expected two columns"):
        read_pairs(path)
    path.write_text("a\tx\nb\tx\n")
    with pytest.raises(InputError, match=r"pairs.tsv:2: hypothesis document 'x' already paired on line 1"):
        read_pairs(path)
    path.write_text("a\tx\nnope\ty\n")
    with pytest.raises(InputError, match=r"1 reference id\(s\) that are no reference document: 'nope'"):
        pair(["a", "b"], ["x", "y"], "file", path)


def _sides(tmp_path):
    ref = segments_table(
        "ref",
        "en",
        ["talk_a", "talk_b"],
        [0, 0],
        [["hello", "there", "friend"], ["how", "are", "you"]],
        [["O", "COMMA", "PERIOD"], ["O", "O", "QUESTION"]],
        vocabulary=LABELS,
    )
    hyp = segments_table(
        "asr",
        "en",
        ["asr_2", "asr_1", "asr_9"],
        [0, 0, 0],
        [["how", "are", "you"], ["hello", "there", "friend"], ["stray", "words"]],
        [["O"] * 3, ["O"] * 3, ["O"] * 2],
        vocabulary=LABELS,
    )
    write_dataset(ref, tmp_path / "ref.parquet")
    write_dataset(hyp, tmp_path / "hyp.parquet")
    (tmp_path / "pairs.tsv").write_text("talk_a\tasr_1\ntalk_b\tasr_2\n")
    return ref, hyp


def test_forced_unpaired_hypothesis_documents_are_left_out_and_counted(tmp_path):
    ref, hyp = _sides(tmp_path)
    args = (tmp_path / "ref.parquet", tmp_path / "hyp.parquet", tmp_path / "out", tmp_path / "r.json")
    with pytest.raises(AlignmentError, match="asr_9"):
        align_datasets(*args, lang="en", pair_by="file", pairs_file=tmp_path / "pairs.tsv")
    report = align_datasets(*args, lang="en", pair_by="file", pairs_file=tmp_path / "pairs.tsv", force=True)
    out = reading.read_segments(tmp_path / "out")
    assert out["doc_id"].to_pylist() == ["asr_2", "asr_1"]
    assert out["labels"].to_pylist() == [["O", "O", "QUESTION"], ["O", "COMMA", "PERIOD"]]
    assert report["unpaired_hypothesis"] == 1 and report["skipped"][0]["id"] == "asr_9"
    assert "left out of the output" in report["warnings"][0]
    # the in-memory alignment pairs and reports the same
    table_out, table_report = align_tables(
        ref, hyp, pair_by="file", pairs_file=tmp_path / "pairs.tsv", force=True, corpus="aligned"
    )
    assert table_report["skipped"] == report["skipped"] and table_out["labels"].equals(out["labels"])


def test_the_stage_takes_pair_by_file_and_pairs_as_params_keys(tmp_path, capsys):
    _sides(tmp_path)
    params = tmp_path / "params.yaml"
    entry = "alignments:\n  al:\n    ref: r\n    hyp: h\n    lang: en\n    pair_by: file\n"
    corpora = "corpora:\n  r: {reader: text, lang: en, input: x}\n  h: {reader: transcript, lang: en, input: y}\n"
    params.write_text(corpora + entry)
    args = [
        "al",
        "--params",
        str(params),
        "--ref",
        str(tmp_path / "ref.parquet"),
        "--hyp",
        str(tmp_path / "hyp.parquet"),
    ]
    args += ["--out", str(tmp_path / "out"), "--report", str(tmp_path / "r.json")]
    capsys.readouterr()
    assert align_stage.main(args) == 2
    assert "pair_by file needs pairs" in capsys.readouterr().err
    params.write_text(corpora + entry + f"    pairs: {tmp_path / 'pairs.tsv'}\n    force: true\n")
    assert align_stage.main(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["pairs"] == 2 and report["unpaired_hypothesis"] == 1
    assert "asr_9" in capsys.readouterr().err
    # the command line on the same datasets: the same report and output (one code path)
    stage_out = reading.read_segments(tmp_path / "out")
    argv = ["align", "-q", "--ref", tmp_path / "ref.parquet", "--hyp", tmp_path / "hyp.parquet", "--lang", "en"]
    argv += ["--pairs", tmp_path / "pairs.tsv", "--force", "--corpus", "al"]
    argv += ["--out", tmp_path / "cli_out", "--report", tmp_path / "cli.json"]
    assert cli.main([str(a) for a in argv]) == 0
    assert json.loads((tmp_path / "cli.json").read_text()) == report
    assert reading.read_segments(tmp_path / "cli_out").equals(stage_out)


def test_the_samples_alignment_params_pair_by_their_file(root):
    params = P.load(root / "params.yaml", [])
    entry = params.alignments["en_talks_asr_aligned"]
    assert entry.pair_by == "file" and read_pairs(root / entry.pairs) == [("talks#0", "talks_asr")]
