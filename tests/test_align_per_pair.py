"""Each document pair of an alignment is checked on its own: a pair above max_wer is not aligned
(the run fails, or with force the pair is left out, counted and named), and a pairing by ids
made from positions in a file is named.  Files written as a user would: the sample talks as the
reference, a transcript of the first and third talks."""

import json
import re

import pyarrow.compute as pc
import pytest
from support.reliability import SAMPLES, call, error_line, write_params

from pipeline.engine import reading

TALKS = (SAMPLES / "en" / "talks.txt").read_text(encoding="utf-8")


def transcript(paragraph: str) -> str:
    """What an ASR system writes for a talk: lowercase words, no marks (apostrophes kept)."""
    return " ".join(re.sub(r"[^\w' ]", " ", paragraph.lower()).split()) + "\n"


@pytest.fixture
def user_files(tmp_path):
    """talks.txt (three talks, blank-line separated) and asr/talks.txt: the first and third talk."""
    talks = TALKS.strip().split("\n\n")
    assert len(talks) == 3
    (tmp_path / "ref").mkdir()
    (tmp_path / "asr").mkdir()
    (tmp_path / "ref" / "talks.txt").write_text(TALKS, encoding="utf-8")
    (tmp_path / "asr" / "talks.txt").write_text(transcript(talks[0]) + "\n" + transcript(talks[2]), encoding="utf-8")
    return tmp_path


def align_argv(folder, *extra, name="out"):
    return [
        "align", "-q", "--ref", folder / "ref" / "talks.txt", "--ref-reader", "text",
        "--hyp", folder / "asr" / "talks.txt", "--hyp-reader", "transcript", "--doc-boundary", "blank_line",
        "--lang", "en", *extra, "--out", folder / f"{name}.parquet", "--report", folder / f"{name}.json",
    ]  # fmt: skip


def labels_by_word(dataset) -> dict[str, list[str]]:
    table = reading.read_segments(dataset)
    out: dict[str, list[str]] = {}
    words, labels = (pc.list_flatten(table[c]).to_pylist() for c in ("words", "labels"))
    for word, label in zip(words, labels):
        out.setdefault(word, []).append(label)
    return out


def check_forced_by_order(folder, report: dict, out) -> None:
    """The first talk aligned right, the second reference talk not put on the third talk's words."""
    assert [(d["reference"], d["hypothesis"]) for d in report["over_max_wer"]] == [("talks#1", "talks#1")]
    assert report["over_max_wer"][0]["wer"] > 0.5
    assert report["documents"] == 1 and report["per_document"][0]["wer"] < 0.1
    assert report["skipped"] == [
        {"side": "reference", "id": "talks#2", "reason": "beyond the hypothesis's 2 documents"}
    ]
    table = reading.read_segments(out)
    assert set(table["doc_id"].to_pylist()) == {"talks#0"}  # the mispaired transcript is left out
    labels = labels_by_word(out)
    assert labels["from"] == ["QUESTION"]  # "where your tap water comes from?"
    assert "vaccinated" not in labels  # a word of the third talk: not aligned onto the second


def test_a_pair_above_max_wer_fails_the_command_naming_it(user_files):
    line = error_line(*call("pipeline", align_argv(user_files, "--pair-by", "order")))
    assert "the reference has 3 documents and the hypothesis 2" in line  # the counts first
    # two files of one name: ids talks#0, talks#1 on both sides, so by id the second reference
    # talk meets the third talk's transcript
    rc, err = call("pipeline", align_argv(user_files, "--pair-by", "id"))
    line = error_line(rc, err)
    assert "1 document pair(s) above max_wer 0.5" in line and "'talks#1' vs 'talks#1'" in line
    assert "--force" in line
    assert not (user_files / "out.parquet").exists() and not (user_files / "out.json").exists()


def test_forced_by_order_the_mispaired_talk_is_left_out_and_named(user_files):
    rc, err = call("pipeline", align_argv(user_files, "--pair-by", "order", "--force"))
    assert rc == 0, err
    report = json.loads((user_files / "out.json").read_text())
    check_forced_by_order(user_files, report, user_files / "out.parquet")
    warned = [line for line in err.splitlines() if "above max_wer" in line]
    assert len(warned) == 1 and "'talks#1' vs 'talks#1'" in warned[0] and warned[0].startswith("warning: ")


def test_a_pairs_file_aligns_the_third_talk_with_its_transcript(user_files):
    pairs = user_files / "pairs.tsv"
    pairs.write_text("talks#0\ttalks#0\ntalks#2\ttalks#1\n", encoding="utf-8")
    rc, err = call("pipeline", align_argv(user_files, "--pairs", pairs))
    assert rc == 0, err
    report = json.loads((user_files / "out.json").read_text())
    assert report["over_max_wer"] == [] and report["documents"] == 2
    labels = labels_by_word(user_files / "out.parquet")
    assert labels["from"] == ["QUESTION"] and labels["sentimental"] == ["QUESTION"]
    assert labels["absolutely"] == ["PERIOD"]  # "Absolutely!"


def test_ids_made_from_positions_are_named_when_pairing_by_id(user_files):
    rc, err = call("pipeline", align_argv(user_files, "--pair-by", "id", "--force"))
    assert rc == 0, err
    report = json.loads((user_files / "out.json").read_text())
    positional = [w for w in report["warnings"] if "ids made from positions" in w]
    assert len(positional) == 1 and "'talks#0', 'talks#1'" in positional[0]
    assert any("ids made from positions" in line for line in err.splitlines())
    # the positional pairing put the second reference talk against the third: left out, named
    assert [(d["reference"], d["hypothesis"]) for d in report["over_max_wer"]] == [("talks#1", "talks#1")]


def test_the_stage_checks_each_pair_too(user_files):
    ref, asr = user_files / "ref" / "talks.txt", user_files / "asr" / "talks.txt"
    params = {
        "corpora": {
            "talks": {"reader": "text", "lang": "en", "input": str(ref)},
            "asr": {"reader": "transcript", "lang": "en", "input": str(asr), "doc_boundary": "blank_line"},
        },
        "alignments": {"aligned": {"ref": "talks", "hyp": "asr", "lang": "en", "pair_by": "order", "force": True}},
    }
    path = write_params(user_files / "params.yaml", params)
    seg = user_files / "segments"
    for name in ("talks", "asr"):
        rc, err = call("stages.ingest", [name, "--params", path, "-q", "--out", seg / f"{name}.parquet",
                                         "--stats", seg / f"{name}.json"])  # fmt: skip
        assert rc == 0, err
    argv = ["aligned", "--params", path, "-q", "--ref", seg / "talks.parquet", "--hyp", seg / "asr.parquet"]
    rc, err = call("stages.align", [*argv, "--out", seg / "aligned.parquet", "--report", seg / "aligned.json"])
    assert rc == 0, err
    check_forced_by_order(user_files, json.loads((seg / "aligned.json").read_text()), seg / "aligned.parquet")
    # unforced, by id (both files are talks.txt): the mispaired talks fail the stage
    params["alignments"]["aligned"].update(force=False, pair_by="id")
    write_params(path, params)
    line = error_line(*call("stages.align", [*argv, "--out", seg / "a2.parquet", "--report", seg / "a2.json"]))
    assert "above max_wer 0.5" in line and "'talks#1' vs 'talks#1'" in line
