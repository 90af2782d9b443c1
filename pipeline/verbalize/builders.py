"""pynini building blocks shared by the language grammars."""

from __future__ import annotations

from pathlib import Path

import pynini
from pynini.lib import pynutil

from ..lexicon import read_tsv_rows

DIGIT = pynini.union(*"0123456789")


def tsv_map(path: Path, columns: tuple[int, int] = (0, 1)) -> pynini.Fst:
    """A string map from two columns of a lexicon TSV."""
    a, b = columns
    pairs = [(fields[a], fields[b] if len(fields) > b else "") for _, fields in read_tsv_rows(path, a + 1)]
    return pynini.string_map(pairs).optimize()


def tsv_dict(path: Path) -> dict[str, list[str]]:
    return {fields[0]: fields[1:] for _, fields in read_tsv_rows(path, 1)}


def spaced(*parts: pynini.Fst) -> pynini.Fst:
    """Concatenate parts that each produce words, with one space between them."""
    out = parts[0]
    for part in parts[1:]:
        out = out + pynutil.insert(" ") + part
    return out


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
    return (pynutil.delete("0") + digit_1_9 | (pynini.union(*"123456789") + DIGIT) @ one_to_99).optimize()


def not_input(fst: pynini.Fst, excluded: str, alphabet: str = "0123456789,.") -> pynini.Fst:
    """``fst`` restricted to inputs other than ``excluded``."""
    sigma = pynini.union(*alphabet).closure()
    return (pynini.difference(sigma, pynini.accep(excluded)).optimize() @ fst).optimize()
