"""A corpus in another script than its language's is refused with the share and the script seen
(an option takes it as it is); an alignment's lang is the language of the datasets it aligns.
Files written as a user would: the sample talk, ingested under the wrong --lang."""

import json

import pytest
from support.reliability import SAMPLES, call, error_line, snapshot, write_params

from pipeline.engine import reading

TALK = (SAMPLES / "en" / "talks.txt").read_text(encoding="utf-8").split("\n\n")[0] + "\n"


@pytest.fixture
def talk(tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text(TALK, encoding="utf-8")
    return path


def ingest_argv(path, lang, out, *extra, reader="text"):
    return ["ingest", "-q", "--reader", reader, "--lang", lang, "--corpus", "talk", path, "--out", out, *extra]


@pytest.mark.parametrize(("lang", "script"), [("hi", "Devanagari"), ("bn", "Bengali"), ("zh", "Han")])
def test_ingest_refuses_text_in_another_script_naming_share_and_script(tmp_path, talk, lang, script):
    before = snapshot(tmp_path)
    line = error_line(*call("pipeline", ingest_argv(talk, lang, tmp_path / "out.parquet")))
    assert line.startswith(f"error: {talk}: 9")  # 9x% of the words
    assert f"are in another script than {script} (lang '{lang}'), all of them Latin" in line
    assert "--allow-other-script" in line
    assert snapshot(tmp_path) == before  # nothing written


def test_a_transcript_and_a_tsv_are_checked_too(tmp_path):
    for reader, name in (("transcript", "talks_asr.txt"), ("tsv", "labelled.tsv")):
        line = error_line(*call("pipeline", ingest_argv(SAMPLES / "en" / name, "hi", tmp_path / "o", reader=reader)))
        assert "100% of the words" in line and "all of them Latin" in line


def test_the_option_ingests_it_as_it_is_and_the_stats_count_it(tmp_path, talk):
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    rc, err = call("pipeline", ingest_argv(talk, "hi", out, "--allow-other-script", "--stats", stats))
    assert rc == 0, err
    report = json.loads(stats.read_text())
    # Hindi drops words of another script (counted), and the count says which script
    assert report["dropped"]["word_in_other_script"] == report["other_script_words:Latin"] > 100
    # in English the same text is kept whole, nothing in another script
    rc, err = call("pipeline", ingest_argv(talk, "en", tmp_path / "en.parquet", "--stats", tmp_path / "en.json"))
    assert rc == 0, err
    assert not [k for k in json.loads((tmp_path / "en.json").read_text()) if k.startswith("other_script_words")]


def test_a_few_words_of_another_script_are_fine(tmp_path):
    path = tmp_path / "mixed.txt"
    path.write_text("मैंने iPhone खरीदा और वह अच्छा है।\n", encoding="utf-8")
    stats = tmp_path / "stats.json"
    rc, err = call("pipeline", ingest_argv(path, "hi", tmp_path / "out.parquet", "--stats", stats))
    assert rc == 0, err
    assert json.loads(stats.read_text())["other_script_words:Latin"] == 1


#: Hindi with words of another script: glued to marks, an initialism, a capitalized name, a digit
MIXED = "\n".join(
    ["मैंने iPhone, Apple से खरीदा।", "वह U.S. गया और NASA (space) देखा?", "2024 में \u201cहमने\u201d Paris देखा, café भी।", ""]
)


def _kept_other_script_words(out) -> dict:
    """The ``other_script_words`` counts of the words an ingest kept, read from its Parquet output."""
    import pyarrow.compute as pc

    from pipeline.engine.step import Counts
    from pipeline.ingest import _count_other_scripts
    from pipeline.text.languages import get_language

    counts = Counts()
    words = pc.list_flatten(reading.read_segments(out)["words"]).combine_chunks()
    _count_other_scripts(pc.dictionary_encode(words.cast("string")), get_language("hi").scripts, counts)
    return dict(counts.stats)


def test_the_text_reader_keeps_no_word_of_another_script_where_the_language_drops_them(tmp_path):
    # the ingest does not look at the text reader's kept words again (it declares drops_other_scripts):
    # none is in another script, and the stats count the dropped ones by script
    path = tmp_path / "mixed.txt"
    path.write_text(MIXED, encoding="utf-8")
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    rc, err = call("pipeline", ingest_argv(path, "hi", out, "--stats", stats))
    assert rc == 0, err
    assert _kept_other_script_words(out) == {}
    report = json.loads(stats.read_text())
    assert report["dropped"]["word_in_other_script"] == report["other_script_words:Latin"] == 7


def test_a_transcript_keeps_words_of_another_script_and_counts_them(tmp_path):
    # the transcript reader keeps every word: the ingest counts the kept ones in another script
    path = tmp_path / "mixed.txt"
    path.write_text(MIXED, encoding="utf-8")
    out, stats = tmp_path / "out.parquet", tmp_path / "stats.json"
    rc, err = call("pipeline", ingest_argv(path, "hi", out, "--stats", stats, reader="transcript"))
    assert rc == 0, err
    report = json.loads(stats.read_text())
    assert "word_in_other_script" not in report.get("dropped", {})
    assert report["other_script_words:Latin"] == _kept_other_script_words(out)["other_script_words:Latin"] == 7


def test_the_stage_refuses_and_its_params_key_allows(tmp_path, talk):
    entry = {"reader": "text", "lang": "hi", "input": str(talk)}
    params = write_params(tmp_path / "params.yaml", {"corpora": {"talk": entry}})
    argv = ["talk", "--params", params, "-q", "--out", tmp_path / "o.parquet", "--stats", tmp_path / "o.json"]
    line = error_line(*call("stages.ingest", argv))
    assert "all of them Latin" in line and "allow_other_script: true" in line
    write_params(params, {"corpora": {"talk": {**entry, "allow_other_script": True}}})
    rc, err = call("stages.ingest", argv)
    assert rc == 0, err
    # the key is checked by the same schema as any other
    write_params(params, {"corpora": {"talk": {**entry, "allow_other_script": "yes"}}})
    line = error_line(*call("stages.ingest", argv))
    assert "allow_other_script" in line


def test_align_refuses_a_lang_other_than_the_datasets(tmp_path, talk):
    asr = SAMPLES / "en" / "talks_asr.txt"
    ref, hyp = tmp_path / "ref.parquet", tmp_path / "hyp.parquet"
    assert call("pipeline", ingest_argv(talk, "en", ref, "--doc-boundary", "file"))[0] == 0
    assert call("pipeline", ingest_argv(asr, "en", hyp, reader="transcript"))[0] == 0
    argv = ["align", "-q", "--ref", ref, "--hyp", hyp, "--out", tmp_path / "a.parquet", "--report", tmp_path / "a.json"]
    line = error_line(*call("pipeline", [*argv, "--lang", "hi"]))
    assert line == (
        f"error: lang 'hi' differs from the reference dataset {ref}, whose rows are in 'en' (its lang column): "
        "align it with the language it was ingested in"
    )
    assert not (tmp_path / "a.parquet").exists()
    rc, err = call("pipeline", [*argv, "--lang", "en"])
    assert rc == 0, err
    assert reading.read_segments(tmp_path / "a.parquet").num_rows > 0
    # the stage reads the same datasets with its entry's lang
    corpora = {
        "talk": {"reader": "text", "lang": "en", "input": str(talk), "doc_boundary": "file"},
        "asr": {"reader": "transcript", "lang": "en", "input": str(asr)},
    }
    entry = {"ref": "talk", "hyp": "asr", "lang": "hi"}
    params = write_params(tmp_path / "params.yaml", {"corpora": corpora, "alignments": {"aligned": entry}})
    stage = ["aligned", "--params", params, "-q", "--ref", ref, "--hyp", hyp]
    line = error_line(*call("stages.align", [*stage, "--out", tmp_path / "s.parquet", "--report", tmp_path / "s.json"]))
    assert "lang 'hi' differs from the reference dataset" in line


def test_align_refuses_datasets_of_two_languages(tmp_path, talk):
    ref, hyp = tmp_path / "ref.parquet", tmp_path / "hyp.parquet"
    assert call("pipeline", ingest_argv(talk, "en", ref, "--doc-boundary", "file"))[0] == 0
    asr = SAMPLES / "en" / "talks_asr.txt"
    assert call("pipeline", ingest_argv(asr, "ms", hyp, reader="transcript"))[0] == 0  # Latin too: accepted
    argv = ["align", "-q", "--ref", ref, "--hyp", hyp, "--out", tmp_path / "a.parquet", "--report", tmp_path / "a.json"]
    line = error_line(*call("pipeline", [*argv, "--lang", "en"]))
    assert "lang 'en' differs from the hypothesis dataset" in line and "'ms'" in line
