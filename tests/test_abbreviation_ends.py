"""An abbreviation's period that also ends a sentence: read from the next word where the source
shows it, counted under its reason where it cannot; the Indic titles keep their period."""

import json

import pyarrow.compute as pc
import pytest
from support.reliability import call, write_params

from pipeline.engine import reading
from pipeline.text.labelling import label_lines
from pipeline.text.languages import get_language


def labelled(text: str, lang: str = "en"):
    language = get_language(lang)
    out = label_lines(language.normalize_text(text), language)
    return [list(zip(w, l)) for w, l in zip(out.words.to_pylist(), out.labels.to_pylist())], out.stats


@pytest.mark.parametrize(
    ("text", "word", "label"),
    [
        ("I live in the U.S. It is big.", "u.s.", "PERIOD"),  # a capital after it: a new sentence
        ("We left at 10 a.m. The bus was late.", "a.m.", "PERIOD"),
        ("They work for Acme Inc. Their boss is kind.", "inc.", "PERIOD"),  # a listed abbreviation
        ("In the U.S. we take pictures.", "u.s.", "O"),  # a lowercase word: the sentence goes on
        ("Today she is Dr. Mary Wanjiru.", "dr.", "O"),  # a title: the capital is the name's
        ("It was George W. Bush.", "w.", "O"),  # a capital initial: the same
        ("Smith vs. Jones was heard.", "vs.", "O"),
        ("Born in the U.S.? Yes.", "u.s.", "QUESTION"),  # another mark says it already
    ],
)
def test_the_next_word_tells_a_sentence_end(text, word, label):
    lines, _ = labelled(text)
    assert dict(lines[0])[word] == label


def test_each_case_the_source_cannot_tell_is_counted_under_its_reason():
    lines, stats = labelled(
        "I live in the U.S. It is big.\n"  # resolved: PERIOD
        "i live in the u.s. it is big.\n"  # lowercased source: no case to read
        "We met on Jan. 5 in the morning.\n"  # a digit next: no case to read
        "They all moved to the U.S.\n"  # nothing after it on the line
    )
    assert [dict(line).get(w) for line, w in zip(lines, ["u.s.", "u.s.", "jan.", "u.s."])] == [
        "PERIOD",
        "O",
        "O",
        "O",
    ]
    assert stats == {
        "abbreviation_sentence_ends": 1,
        "abbreviation_end_unresolved:uncased_line": 1,
        "abbreviation_end_unresolved:next_word_uncased": 1,
        "abbreviation_end_unresolved:line_end": 1,
    }


@pytest.mark.parametrize(
    ("lang", "rel", "line", "title"),
    [
        ("hi", "indic/flores/hin_Deva.devtest", 2, "डॉ."),  # डॉ. एहुड उर, ...
        ("hi", "indic/flores/hin_Deva.devtest", 98, "डॉ."),  # डॉ. टोनी मोल ने ...
        ("mr", "indic/flores/mar_Deva.devtest", 100, "डॉ."),  # डॉ. मोल यांना ...
        ("bn", "indic/ntrex/newstest2019-ref.ben.txt", 37, "রেভ."),  # রেভ. ডেভিড জনসন, ...
    ],
)
def test_indic_titles_keep_their_period_in_real_sentences(shared, lang, rel, line, title):
    text = (shared / rel).read_text(encoding="utf-8").splitlines()[line - 1]
    assert text.startswith(title + " ")
    lines, stats = labelled(text, lang)
    words = lines[0]
    assert words[0] == (title, "O")  # the title, not a sentence end
    assert words[1][0] != ""  # the name follows it
    assert sum(label != "O" for _, label in words) >= 1  # the sentence's own marks stay
    assert stats == {}  # before a name: nothing left to resolve


def test_marathi_shri_in_real_sentences(shared):
    """NTREX Marathi ('"..., " श्री. अॅडम्स म्हणाले.' and others): श्री. is a title, O, its period kept."""
    lines = (shared / "indic/ntrex/newstest2019-ref.mar.txt").read_text(encoding="utf-8").splitlines()
    found = [line for line in lines if " श्री. " in line]
    assert found
    for text in found:
        words = labelled(text, "mr")[0][0]
        assert ("श्री.", "O") in words
        assert "श्री" not in [w for w, _ in words]


def test_ingest_command_and_stage_label_and_count_abbreviation_ends(tmp_path):
    text = tmp_path / "mine.txt"
    text.write_text("I live in the U.S. It is big.\nWe came at 10 a.m. The bus was late.\n", encoding="utf-8")
    out, stats = tmp_path / "cli.parquet", tmp_path / "cli.json"
    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "mine", text, "--out", out]
    rc, err = call("pipeline", [*argv, "--stats", stats])
    assert rc == 0, err
    rows = reading.read_segments(out)
    words, marks = (pc.list_flatten(rows[column]).to_pylist() for column in ("words", "labels"))
    labels = dict(zip(words, marks))
    assert labels["u.s."] == labels["a.m."] == "PERIOD"
    assert json.loads(stats.read_text())["abbreviation_sentence_ends"] == 2

    params = write_params(
        tmp_path / "params.yaml", {"corpora": {"mine": {"reader": "text", "lang": "en", "input": str(text)}}}
    )
    stage_out, stage_stats = tmp_path / "stage.parquet", tmp_path / "stage.json"
    rc, err = call("stages.ingest", ["mine", "--params", params, "-q", "--out", stage_out, "--stats", stage_stats])
    assert rc == 0, err
    assert reading.read_segments(stage_out)["labels"].to_pylist() == rows["labels"].to_pylist()
    assert json.loads(stage_stats.read_text()) == json.loads(stats.read_text())
