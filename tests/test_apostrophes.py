"""Typographic apostrophes (issue 34 item 5): ``i’ve`` and ``i've`` are one word after
normalization, counted; ``drivers’`` keeps its apostrophe like ``students'``; a closing quote
stays a quote."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pytest
from support.corpora import has_real_corpora

from pipeline.ingest import ingest_table
from pipeline.text.normalize import clean_lines


def clean(*lines: str) -> tuple[list[str], int]:
    counts: Counter = Counter()
    out = clean_lines(pa.array(list(lines), pa.string()), counts=counts).to_pylist()
    return out, counts["apostrophes_made_ascii"]


@pytest.mark.parametrize(
    "written,expected",
    [
        ("i\u2019ve", "i've"),  # right single quotation mark: what news sites write
        ("don\u02bct", "don't"),  # modifier letter apostrophe
        ("don`t", "don't"),  # grave accent on a keyboard without an apostrophe key
        ("don\u00b4t", "don't"),  # acute accent, likewise
        ("rock\u2018n\u2019roll", "rock'n'roll"),  # left quote turned the wrong way by autocorrect
        ("it\u2032s", "it's"),  # prime between letters
        ("l\u2019\u00e9t\u00e9", "l'\u00e9t\u00e9"),  # accented letters are letters
        ("a\u2019b\u2019c\u2019d", "a'b'c'd"),  # every one of a run
    ],
)
def test_apostrophes_between_letters_become_ascii(written, expected):
    out, made = clean(written)
    assert out == [expected]
    assert made == expected.count("'")


def test_a_word_final_apostrophe_is_kept_and_a_closing_quote_stays_a_quote():
    out, made = clean(
        "the drivers\u2019 cars",  # no opening quote before it: a possessive
        "\u2018the drivers\u2019 he said",  # closes the quote opened earlier in the line
        "\u2018I\u2019ve\u2019 she wrote",  # the in-word one made ASCII, the closing one kept
    )
    assert out == ["the drivers' cars", "\u2018the drivers\u2019 he said", "\u2018I've\u2019 she wrote"]
    assert made == 2


def test_what_is_not_between_letters_is_left_alone():
    lines = ["5\u203211 and 40\u2032 north", "\u2019tis the \u201990s", "plain ascii's", "`code` here"]
    out, made = clean(*lines)
    assert out == lines
    assert made == 0


def test_typographic_and_ascii_apostrophes_give_the_same_words_and_keep_possessives(tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text(
        "I\u2019ve seen the drivers\u2019 cars, and I've seen the students' union.\n\u2018The drivers\u2019 he said.\n",
        encoding="utf-8",
    )
    table, report = ingest_table("text", path, "en", "talk")
    first, second = table["words"].to_pylist()
    assert first[0] == first[6] == "i've"
    assert "drivers'" in first and "students'" in first
    assert second == ["the", "drivers", "he", "said"]  # the quotes are quotes, not part of a word
    assert report["apostrophes_made_ascii"] == 2


def test_chinese_quotes_stay_quotes_and_a_latin_name_keeps_its_apostrophe(tmp_path):
    """Between two Chinese characters ‘…’ are quotes, never apostrophes; in a Latin name inside
    Mandarin text the apostrophe is made ASCII and the name stays one word (no word "'")."""
    out, made = clean("他要求\u2018彻底重写\u2019保守党的环境法案", "米克\u00b7奥弗林（Mick O\u2019flynn）表示")
    assert out == ["他要求\u2018彻底重写\u2019保守党的环境法案", "米克\u00b7奥弗林（Mick O'flynn）表示"]
    assert made == 1
    path = tmp_path / "zh.txt"
    text = "他要求\u2018彻底重写\u2019保守党的环境法案。\n主任（Mick O\u2019flynn）表示：选中。\n"
    path.write_text(text, encoding="utf-8")
    table, report = ingest_table("text", path, "zh", "zh")
    first, second = table["words"].to_pylist()
    assert first == ["他", "要求", "彻底", "重写", "保守党", "的", "环境", "法案"]
    assert "O'flynn" in second and "'" not in second
    assert report["apostrophes_made_ascii"] == 1


def _word_final_by_characters(line: str) -> str:
    """The word-final rule read character by character (what the scan over quotes must give)."""
    import unicodedata

    from pipeline.text.normalize import _CJK_CHAR

    out, open_quotes = [], 0
    for i, char in enumerate(line):
        if char == "\u2018":
            open_quotes += 1
        elif char in "\u2019\u02bc":
            before = line[i - 1] if i > 0 else ""
            after_word = bool(before) and (
                (before.isalnum() and not _CJK_CHAR.match(before)) or unicodedata.category(before).startswith("M")
            )
            if after_word and (char == "\u02bc" or not open_quotes):
                char = "'"
            elif char == "\u2019" and open_quotes:
                open_quotes -= 1
        out.append(char)
    return "".join(out)


def _apostrophes_by_re2(lines: list[str]) -> list[str]:
    """What the RE2 patterns say (the specification that the Python scan follows)."""
    import pyarrow.compute as pc

    from pipeline.text import normalize

    fixed = pa.array(lines, pa.string())
    for _ in range(2):
        fixed = pc.replace_substring_regex(fixed, normalize._IN_WORD_RE, r"\1'\2")
    final = pc.match_substring_regex(fixed, normalize._WORD_FINAL_RE).to_pylist()
    return [_word_final_by_characters(line) if f else line for line, f in zip(fixed.to_pylist(), final)]


def test_apostrophe_scan_does_what_the_re2_patterns_do(shared):
    """The Python scan that rewrites apostrophes against the RE2 patterns it stands for, on every
    line of the real English, Bangla and Indic text that holds an apostrophe and on 30,000 random
    strings of letters (Latin, Devanagari, CJK, a modifier letter), marks, digits, spaces, quotes
    and every apostrophe."""
    import random

    from pipeline.text.normalize import APOSTROPHES, ascii_apostrophes

    real = set()
    for folder in ("iwslt_en", "iwslt_en_raw", "indic", "iwslt_zh"):
        for path in sorted((shared / folder).rglob("*")):
            if path.is_file() and not path.name.startswith("LICENSE"):
                real.update(
                    line for line in path.read_text(encoding="utf-8").split("\n") if set(line) & set(APOSTROPHES)
                )
    pool = list(APOSTROPHES) + list('ab Z9 ."') + ["\u00e9", "\u0915", "\u093e", "\u094d", "\u0301", "\u02b0"]
    pool += ["\u4e2d", "\u3042", "\ud55c", "\u0995", "\u09bc", "\u0627", "\u064e"]
    rng = random.Random(44)
    made = ["".join(rng.choice(pool) for _ in range(rng.randint(1, 9))) for _ in range(30_000)]
    lines = sorted(real) + made
    assert len(real) > (300 if has_real_corpora() else 20)
    counts: Counter = Counter()
    out = ascii_apostrophes(pa.array(lines, pa.string()), counts).to_pylist()
    expected = _apostrophes_by_re2(lines)
    assert [(a, b) for a, b, c in zip(lines, out, expected) if b != c] == []
    assert counts["apostrophes_made_ascii"] == sum(a.count("'") - b.count("'") for a, b in zip(out, lines))


def test_lines_whose_marks_are_all_quotes_come_back_as_they_are():
    """Lines found for a quote that is no apostrophe are given back themselves, uncounted; beside a
    line that changes, only that one is rewritten and counted."""
    from pipeline.text.normalize import ascii_apostrophes

    quotes = pa.array(["he said \u2018yes\u2019 to it", "\u2018\u0915\u2019 and `", "plain"], pa.string())
    counts: Counter = Counter()
    assert ascii_apostrophes(quotes, counts) is quotes and not counts
    mixed = pa.array(["he said \u2018yes\u2019", "don\u2019t stop", "plain"], pa.string())
    assert ascii_apostrophes(mixed, counts).to_pylist() == ["he said \u2018yes\u2019", "don't stop", "plain"]
    assert counts == {"apostrophes_made_ascii": 1}
