"""Every grammar class against its test-case file (lexicons/<lang>/verbalize/<class>.cases: written~spoken).

Inputs are words as the spoken step sees them, separated by spaces; an empty expected
side means the words are left as written (and counted as such).
"""

import importlib
import unicodedata
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pytest

from pipeline.labels import LABELS, PAPERS
from pipeline.schema import segments_table
from pipeline.text.lexicon import LEXICON_DIR
from pipeline.text.spoken import speak_table
from pipeline.text.verbalize import NoGrammarError, available, get_verbalizer, label_positions, read_cases

CASE_FILES = sorted(LEXICON_DIR.glob("*/verbalize/*.cases"))
NFC = lambda s: unicodedata.normalize("NFC", s)  # noqa: E731


def families(lang: str) -> list[str]:
    """The class families (``date`` for ``date`` and ``date:numeric_ambiguous``) a language's grammars define."""
    module = importlib.import_module(f"pipeline.text.verbalize.{lang}")
    out = []
    for name in module.GRAMMARS:
        family = name.split(":")[0]
        if name not in module.ALT and family not in out:
            out.append(family)
    return out


def check_source(words: list[str], spoken) -> None:
    """Every input word's label lands on exactly one output word, in order."""
    assert len(spoken.source) == len(spoken.words)
    carried = [i for i in spoken.source if i >= 0]
    assert carried == list(range(len(words)))
    if words:
        assert spoken.source[-1] == len(words) - 1  # the last word's label ends the sequence


def test_every_class_has_at_least_30_cases():
    for lang in available():
        for family in families(lang):
            path = LEXICON_DIR / lang / "verbalize" / f"{family}.cases"
            assert path.exists(), f"no test cases for {lang}/{family}"
            assert len(read_cases(path)) >= 30, path


def test_every_case_file_belongs_to_a_class():
    for path in CASE_FILES:
        assert path.stem in families(path.parts[-3]), path


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_cases(path: Path):
    lang, family = path.parts[-3], path.stem
    verbalizer = get_verbalizer(lang)
    failures = []
    for lineno, written, spoken in read_cases(path):
        words = written.split()
        result = verbalizer.speak(words)
        check_source(words, result)
        got = " ".join(result.words)
        where = f"{path.name}:{lineno}: {written!r}"
        if spoken:
            if got != NFC(spoken):
                failures.append(f"{where} -> {got!r}, expected {spoken!r}")
            elif not any(k == f"spoken:{family}" for k in result.counts):
                failures.append(f"{where} read as {dict(result.counts)}, not as {family}")
            # a class grammar alone reads a single word the same way
            if len(words) == 1 and verbalizer.verbalize(written, family) != NFC(spoken):
                failures.append(f"{where}: grammar {family!r} alone gives {verbalizer.verbalize(written, family)!r}")
        else:
            if result.words != words:
                failures.append(f"{where} -> {got!r}, expected it left as written")
            elif not any(k.startswith("left_written:") for k in result.counts):
                failures.append(f"{where} left as written but not counted: {dict(result.counts)}")
    assert not failures, "\n".join(failures)


def test_documented_examples():
    assert get_verbalizer("en").verbalize("123.5") == "one hundred twenty three point five"
    assert get_verbalizer("ms").verbalize("123.5") == "seratus dua puluh tiga perpuluhan lima"
    assert get_verbalizer("hi").verbalize("123") == "एक सौ तेईस"
    assert get_verbalizer("bn").verbalize("১২৩") == NFC("একশ তেইশ")


@pytest.mark.parametrize(
    "lang, words, expected",
    [
        # the issue's cases, one per class
        ("en", "in 1990", "in nineteen ninety"),
        ("en", "2012", "twenty twelve"),
        ("en", "2000s", "two thousands"),
        ("en", "$45 billion", "forty five billion dollars"),
        ("en", "$2.5 million", "two point five million dollars"),
        ("en", "us$5", "five us dollars"),
        ("en", "$0.02", "two cents"),
        ("en", "0001", "zero zero zero one"),
        ("en", "1.59 p.m.", "one fifty nine p m"),
        ("en", "july 25 2012", "july twenty fifth twenty twelve"),
        ("en", "1000000000000000", "one quadrillion"),
        ("hi", "-100", "माइनस एक सौ"),
        ("hi", "०५", "शून्य पाँच"),
        ("hi", "95", "पंचानबे"),
        ("hi", "9157114007", "नौ एक पाँच सात एक एक चार शून्य शून्य सात"),
        ("hi", "1000000000000000", "एक पद्म"),
        ("bn", "-5", "মাইনাস পাঁচ"),
        ("bn", "1000000009", "একশ কোটি নয়"),
        ("bn", "1000000000000000", "দশ কোটি কোটি"),
        ("ms", "pukul 2.30", "pukul dua tiga puluh"),
        ("ms", "1000000000000000", "sekuadrilion"),
        ("ms", "rm2.5 bilion", "dua perpuluhan lima bilion ringgit"),
    ],
)
def test_issue_examples(lang, words, expected):
    assert " ".join(get_verbalizer(lang).speak(words.split()).words) == NFC(expected)


def test_labels_go_where_each_word_ends():
    spoken = get_verbalizer("en").speak(["he", "paid", "$45", "billion", "on", "july", "25", "2012"])
    said = ["he", "paid", "forty", "five", "billion", "dollars", "on", "july", "twenty", "fifth", "twenty", "twelve"]
    assert spoken.words == said
    # $45 ends at "five", billion (the group's last word) at "dollars"; 25 at "fifth"
    assert [spoken.words[j] for j, i in enumerate(spoken.source) if i >= 0] == [
        "he",
        "paid",
        "five",
        "dollars",
        "on",
        "july",
        "fifth",
        "twelve",
    ]
    assert spoken.counts == Counter({"spoken:money": 1, "spoken:date": 1})


def test_a_group_never_outputs_fewer_words_than_it_reads():
    assert label_positions([["one"], [], ["two"]]) is None
    assert label_positions([[], ["forty", "five", "dollars"]]) == [0, 2]
    assert label_positions([["forty", "five"], ["billion", "dollars"]]) == [1, 3]
    assert label_positions([["a"], [], []]) is None


def test_every_number_left_written_is_counted():
    spoken = get_verbalizer("en").speak(["after", "9/11", "and", "37.after", "it", "05/06/2012"])
    assert spoken.words == ["after", "9/11", "and", "37.after", "it", "05/06/2012"]
    assert spoken.counts == Counter(
        {
            "left_written:fraction:ambiguous": 1,
            "left_written:unrecognized": 1,
            "left_written:date:numeric_ambiguous": 1,
        }
    )


@pytest.mark.parametrize("lang", ["en", "ms"])
def test_a_number_with_symbols_outside_the_grammar_is_left_written_and_counted(lang):
    """Brackets, a backslash, a currency sign no grammar knows, a letter of another script: no
    grammar reads them (an empty lattice, not an exception), so the word stays written and counted."""
    words = ["5[2]", "7\\8", "9¤", "3ж"]
    spoken = get_verbalizer(lang).speak(words)
    assert spoken.words == words
    assert spoken.counts == Counter({"left_written:unrecognized": len(words)})


def test_groups_stop_at_sentence_ends():
    verbalizer = get_verbalizer("en")
    assert verbalizer.speak(["$5", "million"]).words == ["five", "million", "dollars"]
    # "$5." ends a sentence: "million" starts the next one
    assert verbalizer.speak(["$5", "million"], stops={0}).words == ["five", "dollars", "million"]


def test_readings_offer_what_alignment_may_need():
    verbalizer = get_verbalizer("en")
    assert verbalizer.readings("2012")[:2] == ["twenty twelve", "two thousand twelve"]
    assert "sixteen hundred sixty seven" in verbalizer.readings("1,667")
    # left as written, but alignment may still find it said
    assert verbalizer.readings("9/11") == ["nine eleven"]
    assert verbalizer.readings("hello") == []


def test_speak_table_moves_labels_with_the_words():
    table = segments_table(
        "c",
        "en",
        ["d", "d"],
        [0, 1],
        [["it", "cost", "$45", "billion"], ["no", "numbers", "here"]],
        [["O", "O", "O", "PERIOD"], ["O", "O", "QUESTION"]],
        vocabulary=LABELS,
    )
    out, counts = speak_table(table, get_verbalizer("en"), PAPERS)
    assert out["words"].to_pylist()[0] == ["it", "cost", "forty", "five", "billion", "dollars"]
    assert out["labels"].to_pylist()[0] == ["O", "O", "O", "O", "O", "PERIOD"]
    assert out["labels"].to_pylist()[1] == ["O", "O", "QUESTION"]
    assert counts["spoken:money"] == 1 and counts["words_spoken"] == 1
    # a PERIOD inside what would be one group keeps the groups apart
    table = segments_table("c", "en", ["d"], [0], [["$5", "million"]], [["PERIOD", "O"]], vocabulary=LABELS)
    out, _ = speak_table(table, get_verbalizer("en"), PAPERS)
    assert out["words"].to_pylist() == [["five", "dollars", "million"]]
    assert out["labels"].to_pylist() == [["O", "PERIOD", "O"]]
    empty = table.slice(0, 0)
    assert speak_table(empty, get_verbalizer("en"), PAPERS)[0].num_rows == 0
    assert isinstance(out, pa.Table)


def test_hindi_and_bangla_number_words_are_spelled_as_elsewhere():
    # 95: पंचानबे, as Hindi word lists and inverse normalizers spell it (not पचानबे)
    hi = get_verbalizer("hi")
    assert hi.verbalize("95") == "पंचानबे"
    assert "पचानबे" not in (LEXICON_DIR / "hi/verbalize/numbers.tsv").read_text(encoding="utf-8")


def test_grammars_are_cached(tmp_path, monkeypatch):
    from pipeline.text import verbalize

    monkeypatch.setenv("PUNCT_CACHE_DIR", str(tmp_path))
    verbalize.get_verbalizer.cache_clear()
    try:
        get_verbalizer("ms")  # the quickest to build
        assert list(tmp_path.glob("grammars/ms-*/cardinal.fst"))
    finally:
        verbalize.get_verbalizer.cache_clear()


def test_unknown_language():
    with pytest.raises(NoGrammarError, match="no verbalization grammar for language 'xx'"):
        get_verbalizer("xx")
