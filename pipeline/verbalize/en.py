"""English: cardinals, decimals, ordinals, currency, percentages (US style, no "and").

123.5 -> one hundred twenty three point five; 21st -> twenty first; $3.50 -> three
dollars fifty cents; 5% -> five percent; 10,000 -> ten thousand.
"""

from __future__ import annotations

import pynini
from pynini.lib import pynutil

from .builders import group_cardinal, not_input, tsv_dict, tsv_map, two_digits

GRAMMARS = ("cardinal", "decimal", "ordinal", "currency", "percent", "year", "decade")


def build(folder) -> dict[str, pynini.Fst]:
    digit = tsv_map(folder / "digits.tsv")
    digit_1_9 = (pynini.union(*"123456789") @ digit).optimize()
    teens = tsv_map(folder / "teens.tsv")
    ties = tsv_map(folder / "ties.tsv")
    one_to_99 = (digit_1_9 | teens | ties + (pynutil.delete("0") | pynutil.insert(" ") + digit_1_9)).optimize()
    two = two_digits(one_to_99, digit_1_9)
    hundreds = (digit_1_9 + pynutil.insert(" hundred") + (pynutil.delete("00") | pynutil.insert(" ") + two)).optimize()
    group_1_999 = (one_to_99 | hundreds).optimize()
    group_3 = (hundreds | pynutil.delete("0") + two).optimize()
    magnitudes = {0: (group_1_999, group_3)}
    for power, (word,) in tsv_dict(folder / "magnitudes.tsv").items():
        magnitudes[int(power)] = (group_1_999 + pynutil.insert(f" {word}"), group_3 + pynutil.insert(f" {word}"))
    positive = (group_cardinal(group_1_999, magnitudes) | pynini.cross("0", "zero")).optimize()
    minus = pynini.cross("-", "minus ").ques
    cardinal = (minus + positive).optimize()

    digits_spoken = (digit + (pynutil.insert(" ") + digit).closure()).optimize()
    decimal = (minus + (positive | pynutil.insert("zero")) + pynini.cross(".", " point ") + digits_spoken).optimize()

    # ordinal: the cardinal with its last word replaced (one -> first, twenty -> twentieth)
    last_word = tsv_map(folder / "ordinals.tsv")
    words = pynini.union(*"abcdefghijklmnopqrstuvwxyz ").closure()
    to_ordinal = (words + pynini.accep(" ")).ques + last_word
    suffix = pynutil.delete(pynini.union("st", "nd", "rd", "th"))
    ordinal = ((positive + suffix) @ to_ordinal.optimize()).optimize()

    currencies = []
    for symbol, fields in tsv_dict(folder / "currency.tsv").items():
        one, many, minor_one, minor_many = (fields + [""] * 4)[:4]
        major = pynini.cross("1", f"one {one}") | not_input(positive, "1") + pynutil.insert(f" {many}")
        amount = major
        if minor_one:
            minor = pynini.cross("01", f"one {minor_one}") | not_input(two, "01") + pynutil.insert(f" {minor_many}")
            amount = major + (pynutil.delete(".") + (pynutil.delete("00") | pynutil.insert(" ") + minor)).ques
        currencies.append(pynutil.delete(symbol) + amount)
    currency = pynini.union(*currencies).optimize()

    percent = ((positive | decimal) + pynini.cross("%", " percent")).optimize()

    # years as spoken: 1990 -> nineteen ninety, 1905 -> nineteen oh five, 1900 -> nineteen
    # hundred, 2015 -> twenty fifteen (2000-2009 are read as cardinals)
    century = (pynini.union(*"1") + pynini.union(*"123456789") | pynini.accep("2") + pynini.union(*"0123456789")) @ two
    second_pair = (
        pynini.cross("00", "hundred")
        | pynini.cross("0", "oh ") + digit_1_9
        | (pynini.union(*"123456789") + pynini.union(*"0123456789")) @ two
    )
    year = (century + pynutil.insert(" ") + second_pair).optimize()
    year = (
        pynini.difference(
            pynini.union(*"0123456789").closure(4, 4),
            pynini.union("2000", "2001", "2002", "2003", "2004", "2005", "2006", "2007", "2008", "2009"),
        )
        @ year
    ).optimize()
    # decades: 1970s -> nineteen seventies, '90s / 90s -> nineties
    tens = (pynini.union(*"123456789") + pynini.accep("0")) @ two
    # plural of the last word: nineteen seventy -> seventies, hundred -> hundreds, ten -> tens
    sigma = pynini.union(*"abcdefghijklmnopqrstuvwxyz ").closure()
    add_s = pynini.cdrewrite(pynutil.insert("s"), pynini.union(*"abcdefghijklmnopqrstuvwxz"), "[EOS]", sigma)
    y_to_ies = pynini.cdrewrite(pynini.cross("y", "ies"), "", "[EOS]", sigma)
    decade = (((year | pynutil.delete("'").ques + tens) + pynutil.delete("s")) @ add_s @ y_to_ies).optimize()
    return {
        "cardinal": cardinal,
        "decimal": decimal,
        "ordinal": ordinal,
        "currency": currency,
        "percent": percent,
        "year": year,
        "decade": decade,
    }
