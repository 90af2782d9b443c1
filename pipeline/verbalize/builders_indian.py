"""Cardinals in the Indian numbering system (thousand, lakh, crore, arab), shared by Hindi and Bangla."""

from __future__ import annotations

import pynini
from pynini.lib import pynutil

from .builders import DIGIT, tsv_dict, tsv_map


def indian_cardinal(folder) -> pynini.Fst:
    """1,23,45,678 -> crore, lakh, thousand, hundreds; native or ASCII digits; commas anywhere."""
    numbers = tsv_map(folder / "numbers.tsv")  # "0".."99"
    one_to_99 = (
        pynini.difference(pynini.union(*"0123456789") | pynini.union(*"123456789") + DIGIT, "0") @ numbers
    ).optimize()
    two = (
        pynutil.delete("0") + pynini.union(*"123456789") @ numbers | (pynini.union(*"123456789") + DIGIT) @ numbers
    ).optimize()
    hundreds_word = tsv_map(folder / "hundreds.tsv")
    hundreds = (hundreds_word + (pynutil.delete("00") | pynutil.insert(" ") + two)).optimize()
    below_1000 = (one_to_99 | hundreds).optimize()
    three = (hundreds | pynutil.delete("0") + two).optimize()  # exactly three digits, not 000
    tail3 = pynutil.delete("000") | pynutil.insert(" ") + three
    magnitude = {int(k): v[0] for k, v in tsv_dict(folder / "magnitudes.tsv").items()}
    # each magnitude above thousand takes two digits: the tail below it is 2 digits longer each step
    number = below_1000
    tail = tail3
    for level in sorted(magnitude):
        word = magnitude[level]
        number |= one_to_99 + pynutil.insert(f" {word}") + tail
        # the same magnitude inside a longer number: two digits, possibly 00 (silent)
        tail = (pynutil.delete("00") | pynutil.insert(" ") + two + pynutil.insert(f" {word}")) + tail
    zero = pynini.accep("0") @ numbers
    number = (number | zero).optimize()
    native = tsv_map(folder / "digits_native.tsv")
    to_ascii = (native | DIGIT | pynutil.delete(",")).closure()
    return (to_ascii @ number).optimize()
