"""pynini building blocks shared by the language grammars.

Every class grammar reads a *group*: one or more words joined by single spaces (the
spoken step's view of ``$45 billion`` is ``$45 billion``) and writes the spoken words
with ``|`` where each input word ends (``forty five | billion dollars``), so the
caller knows which output word carries each input word's punctuation label.
"""

from __future__ import annotations

from pathlib import Path

import pynini
from pynini.lib import pynutil

from pipeline.text.lexicon import read_tsv_rows

DIGIT = pynini.union(*"0123456789")
NONZERO = pynini.union(*"123456789")
LOWER = pynini.union(*"abcdefghijklmnopqrstuvwxyz")
#: between two input words: the output marks where the first one ended
SEP = pynini.cross(" ", " | ")
#: the minus signs written before numbers (ASCII hyphen, Unicode minus)
MINUS_SIGNS = pynini.union("-", "\u2212")
#: hyphen and en dash between the two ends of a range
DASHES = pynini.union("-", "\u2013")


def tsv_map(path: Path, columns: tuple[int, int] = (0, 1)) -> pynini.Fst:
    """A string map from two columns of a lexicon TSV."""
    a, b = columns
    pairs = [(fields[a], fields[b] if len(fields) > b else "") for _, fields in read_tsv_rows(path, a + 1)]
    return pynini.string_map(pairs).optimize()


def tsv_dict(path: Path) -> dict[str, list[str]]:
    return {fields[0]: fields[1:] for _, fields in read_tsv_rows(path, 1)}


def tsv_rows(path: Path) -> list[list[str]]:
    return [fields for _, fields in read_tsv_rows(path, 1)]


def currency_groups(path: Path, units: int) -> list[tuple[tuple[str, ...], pynini.Fst]]:
    """The currency table's symbols grouped by their unit words (the first ``units`` columns after
    the symbol, padded with ""): symbols with the same units share one amount grammar
    (``₹``, ``rs``, ``rs.`` -> rupees).  Each group: (unit words, the union of its symbols)."""
    by_units: dict[tuple[str, ...], list[str]] = {}
    for symbol, fields in tsv_dict(path).items():
        by_units.setdefault(tuple([*fields, *[""] * units][:units]), []).append(symbol)
    return [(words, pynini.union(*[pynini.escape(s) for s in symbols])) for words, symbols in by_units.items()]


def tsv_words(path: Path) -> list[str]:
    """The first column of a lexicon TSV (one word or phrase per line)."""
    return [fields[0] for _, fields in read_tsv_rows(path, 1)]


def words_tsv(folder: Path) -> dict[str, str]:
    """``words.tsv``: role -> the word the language uses for it."""
    return {role: (fields[0] if fields else "") for role, fields in tsv_dict(folder / "words.tsv").items()}


def accep_any(words) -> pynini.Fst:
    """Any of the given strings, as written."""
    return pynini.union(*[pynini.escape(w) for w in words]).optimize()


def group_cardinal(group_1_999: pynini.Fst, magnitudes: dict[int, tuple[pynini.Fst, pynini.Fst]]) -> pynini.Fst:
    """Cardinals written in three-digit groups, with an optional ``,`` between groups.

    ``group_1_999`` maps 1-999 (no leading zero) to words.  ``magnitudes`` maps a
    power of 1000 (0 for the units group) to two FSTs: the group when it leads the
    number (1-999, e.g. ``2`` -> ``two thousand``) and the group when it follows
    another (three digits, not ``000``: ``002`` -> ``two thousand``).
    """
    comma = pynutil.delete(",").ques
    number = group_1_999
    for power in sorted(p for p in magnitudes if p > 0):
        tail = pynini.accep("")
        for lower in range(power - 1, -1, -1):
            tail = tail + comma + (pynutil.delete("000") | pynutil.insert(" ") + magnitudes[lower][1])
        number = number | (magnitudes[power][0] + tail)
    return number.optimize()


def two_digits(one_to_99: pynini.Fst, digit_1_9: pynini.Fst) -> pynini.Fst:
    """Exactly two digits, not ``00``: ``07`` -> seven, ``42`` -> forty two."""
    return (pynutil.delete("0") + digit_1_9 | (NONZERO + DIGIT) @ one_to_99).optimize()


def not_input(fst: pynini.Fst, excluded, alphabet: str = "0123456789,.") -> pynini.Fst:
    """``fst`` restricted to inputs other than ``excluded`` (a string or a list of strings)."""
    sigma = pynini.union(*alphabet).closure()
    excluded = [excluded] if isinstance(excluded, str) else list(excluded)
    return (pynini.difference(sigma, pynini.union(*excluded)).optimize() @ fst).optimize()


def digit_string(digit: pynini.Fst, min_digits: int = 1) -> pynini.Fst:
    """Digits read one by one: ``042`` -> zero four two."""
    return (digit + (pynutil.insert(" ") + digit).closure(min_digits - 1)).optimize()


def number_range(low: int, high: int, width: int | None = None) -> pynini.Fst:
    """The decimal strings of low..high (zero-padded to ``width`` if given)."""
    return pynini.union(*[str(n).zfill(width or 0) for n in range(low, high + 1)]).optimize()


def with_leading_zeros(fst: pynini.Fst, digit: pynini.Fst) -> pynini.Fst:
    """``fst`` plus digit strings that start with 0 (``0001``, ``05``), read digit by digit."""
    zero_led = (pynini.accep("0") + DIGIT.plus) @ digit_string(digit)
    return (fst | zero_led).optimize()


def signed(positive: pynini.Fst, minus_word: str) -> pynini.Fst:
    """An optional minus sign read as ``minus_word``."""
    return (pynini.cross(MINUS_SIGNS, f"{minus_word} ").ques + positive).optimize()


def decimal_number(
    integer: pynini.Fst, zero_word: str | None, point_word: str, digit: pynini.Fst, minus_word: str
) -> pynini.Fst:
    """``12.05`` -> integer, the point word, the digits one by one.

    ``.5`` reads the integer as ``zero_word``, or (None) starts at the point word.
    """
    point = pynini.cross(".", f" {point_word} ")
    if zero_word is None:
        bare = pynini.cross(".", f"{point_word} ")
        return signed((integer + point | bare) + digit_string(digit), minus_word)
    return signed((integer | pynutil.insert(zero_word)) + point + digit_string(digit), minus_word)


def pluralize_last(sigma_chars: str) -> pynini.Fst:
    """English plural of the last word: seventy -> seventies, hundred -> hundreds, six -> sixes."""
    sigma = pynini.union(*sigma_chars).closure()
    y_to_ies = pynini.cdrewrite(pynini.cross("y", "ies"), "", "[EOS]", sigma)
    x_to_xes = pynini.cdrewrite(pynutil.insert("e"), "x", "s[EOS]", sigma)
    add_s = pynini.cdrewrite(pynutil.insert("s"), pynini.difference(LOWER, "y"), "[EOS]", sigma)
    return (add_s @ y_to_ies @ x_to_xes).optimize()
