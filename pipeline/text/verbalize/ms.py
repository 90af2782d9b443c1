"""Malay (Rao 2022's normalization to mimic ASR): what a reader says for written numbers.

Cardinals to 10^21 (``-5`` -> negatif lima, ``007`` -> kosong kosong tujuh), decimals,
ordinals (``ke-3`` -> ketiga), money with scale words (``RM2.5 bilion`` -> dua perpuluhan
lima bilion ringgit, ``RM3.50`` -> tiga ringgit lima puluh sen), percentages, phone
numbers (digit by digit), dates (``26/4/2018``, ``12 mac 2019``: years are read as
cardinals, dua ribu lapan belas), decades (``1990-an`` -> seribu sembilan ratus sembilan
puluhan), times (``pukul 2.30`` -> pukul dua tiga puluh), measures, ranges (``10-15``
-> sepuluh hingga lima belas), words with digits (``covid-19``) and web addresses
(``www.bernama.com`` -> www titik bernama titik com).  Left as written and counted:
times with seconds and ``x/y`` without a year (``10/4``, ``1/100``: a date or a fraction).
"""

from __future__ import annotations

import pynini
from pynini.lib import pynutil

from pipeline.text.verbalize.builders import (
    DASHES,
    DIGIT,
    LOWER,
    NONZERO,
    SEP,
    accep_any,
    currency_groups,
    decimal_number,
    digit_string,
    group_cardinal,
    not_input,
    number_range,
    signed,
    tsv_dict,
    tsv_map,
    tsv_rows,
    tsv_words,
    two_digits,
    with_leading_zeros,
    words_tsv,
)

GRAMMARS = (
    "date",
    "time",
    "time:seconds",
    "money",
    "phone",
    "url",
    "decade",
    "measure",
    "percent",
    "ordinal",
    "range",
    "decimal",
    "cardinal",
    "compound",
)
LEFT = ("time:seconds",)
ALT = ()
MAX_WORDS = 4


def starters(folder) -> set[str]:
    """Words a group may start with before its number (``pukul`` 2.30, ``mac`` 2019, ``rm`` 5)."""
    currency = [c for c in tsv_dict(folder / "currency.tsv") if not any(ch.isdigit() for ch in c)]
    return {*tsv_words(folder / "clock_words.tsv"), *tsv_words(folder / "months.tsv"), *currency}


def build(folder) -> dict[str, pynini.Fst]:
    w = words_tsv(folder)
    numbers = _numbers(folder, w)
    integer, decimal, amount = numbers["integer"], numbers["decimal"], numbers["amount"]
    to = f" {w['to']} "
    # ke-3 / ke3 -> ketiga; ke-1 -> pertama
    prefix = pynutil.delete("ke") + pynutil.delete("-").ques
    ordinal = (
        prefix
        + (pynini.cross("1", w["first"]) | pynutil.insert(w["ordinal_prefix"]) + not_input(numbers["positive"], "1"))
    ).optimize()
    percent = (
        amount + (pynini.cross("%", f" {w['percent']}") | SEP + pynini.cross("%", w["percent"]))
        | amount + pynini.cross(DASHES, to) + amount + pynini.cross("%", f" {w['percent']}")
    ).optimize()
    time, time_seconds = _times(folder, w, numbers)
    # measures: 5km, 5 kg, 30°c
    units = tsv_rows(folder / "units.tsv")
    unit = pynini.string_map([(r[0], r[1]) for r in units])
    glued_unit = pynini.string_map([(r[0], r[1]) for r in units if r[2] == "yes"])
    measure = (amount + (pynutil.insert(" ") + glued_unit | SEP + unit)).optimize()
    range_number = signed(integer, w["minus"]) | decimal
    range_ = (range_number + pynini.cross(DASHES, to) + range_number).optimize()
    return {
        "date": _date(folder, numbers),
        "time": time,
        "time:seconds": time_seconds,
        "money": _money(folder, w, numbers),
        "phone": _phone(w, numbers),
        "url": _url(w).optimize(),
        "decade": _decade(w, numbers),
        "measure": measure,
        "percent": percent,
        "ordinal": ordinal,
        "range": range_,
        "decimal": decimal,
        "cardinal": numbers["cardinal"],
        "compound": _compound(numbers),
    }


def _numbers(folder, w) -> dict[str, pynini.Fst]:
    """Cardinals (sebelas, seratus, seribu: the ``one`` forms of ``w``), decimals and their pieces."""
    digit = tsv_map(folder / "digits.tsv")
    digit_1_9 = (NONZERO @ digit).optimize()
    digit_2_9 = (pynini.union(*"23456789") @ digit).optimize()
    teens = (
        pynini.cross("10", w["ten"])
        | pynini.cross("11", w["eleven"])
        | (pynutil.delete("1") + digit_2_9 + pynutil.insert(f" {w['teen']}"))
    )
    tens = digit_1_9 + pynutil.insert(f" {w['tens']}") + (pynutil.delete("0") | pynutil.insert(" ") + digit_1_9)
    tens = (pynini.union(*"23456789") + DIGIT) @ tens
    one_to_99 = (digit_1_9 | teens | tens).optimize()
    two = two_digits(one_to_99, digit_1_9)
    hundred_word = pynini.cross("1", w["hundred_one"]) | digit_2_9 + pynutil.insert(f" {w['hundred']}")
    hundreds = (hundred_word + (pynutil.delete("00") | pynutil.insert(" ") + two)).optimize()
    group_1_999 = (one_to_99 | hundreds).optimize()
    group_3 = (hundreds | pynutil.delete("0") + two).optimize()
    magnitudes = {0: (group_1_999, group_3)}
    for power, (word, word_one) in tsv_dict(folder / "magnitudes.tsv").items():
        lead = pynini.cross("1", word_one) | not_input(group_1_999, "1") + pynutil.insert(f" {word}")
        lower = pynini.cross("001", word_one) | not_input(group_3, "001") + pynutil.insert(f" {word}")
        magnitudes[int(power)] = (lead.optimize(), lower.optimize())
    positive = group_cardinal(group_1_999, magnitudes)
    zero = pynini.cross("0", w["zero"])
    integer = (positive | zero).optimize()
    cardinal = with_leading_zeros(signed(integer, w["minus"]), digit)
    decimal = decimal_number(integer, w["zero"], w["point"], digit, w["minus"])
    amount = (signed(integer, w["minus"]) | decimal).optimize()
    return {
        "digit": digit,
        "digit_1_9": digit_1_9,
        "two": two,
        "positive": positive,
        "integer": integer,
        "cardinal": cardinal,
        "decimal": decimal,
        "amount": amount,
    }


def _money(folder, w, numbers) -> pynini.Fst:
    """RM5, RM 2.50, rm2.5 bilion, AS$3 juta -> the amount, any scale word, the currency; and ranges."""
    integer, decimal, two = numbers["integer"], numbers["decimal"], numbers["two"]
    scales = tsv_rows(folder / "scales.tsv")
    scale_word = pynini.string_map([(r[0], r[1]) for r in scales])
    glued_scale = pynini.string_map([(r[0], r[1]) for r in scales if r[2] == "yes"])
    number_chars = pynini.union(*"0123456789,").closure()
    other_decimals = pynini.difference(number_chars + "." + DIGIT.plus, number_chars + "." + DIGIT**2).optimize()
    currencies = []
    for (major, minor), symbol_fst in currency_groups(folder / "currency.tsv", 2):
        said = integer + pynutil.insert(f" {major}")
        said |= (
            (integer | decimal) + (pynutil.insert(" ") + glued_scale | SEP + scale_word) + pynutil.insert(f" {major}")
        )
        if minor:
            cents = pynutil.delete(".") + (
                pynutil.delete("00") | pynutil.insert(" ") + two + pynutil.insert(f" {minor}")
            )
            said |= integer + pynutil.insert(f" {major}") + cents
            said |= pynutil.delete("0").ques + pynutil.delete(".") + not_input(two, "00") + pynutil.insert(f" {minor}")
            said |= other_decimals @ decimal + pynutil.insert(f" {major}")
        else:
            said |= (number_chars + "." + DIGIT.plus) @ decimal + pynutil.insert(f" {major}")
        currencies.append((pynutil.delete(symbol_fst) + (SEP | pynutil.insert("")) + said).optimize())
    money_one = pynini.union(*currencies).optimize()
    return (money_one | money_one + pynini.cross(DASHES, f" {w['to']} ") + money_one).optimize()


def _phone(w, numbers) -> pynini.Fst:
    """A leading 0 or +, digits in groups split by hyphens or spaces, read digit by digit."""
    spoken_digits = digit_string(numbers["digit"])
    group = DIGIT ** (2, 11) @ spoken_digits
    hyphen = pynini.cross("-", " ")
    groups = group + ((hyphen | SEP) + group).closure(0, 3)
    local = (pynini.accep("0") + DIGIT.plus + pynini.union(*"0123456789- ").closure()) @ groups
    international = pynini.cross("+", f"{w['plus']} ") + groups
    length_ok = pynini.union("+", "").ques + pynini.union(*"0123456789- ").closure()
    enough_digits = (pynini.union("+", "").ques + (pynini.union("-", " ").ques + DIGIT) ** (9, 15)).optimize()
    return (pynini.intersect(length_ok, enough_digits).optimize() @ (local | international)).optimize()


def _date(folder, numbers) -> pynini.Fst:
    """Day/month/year (or with - or .), 12 mac 2019, 12 mac, mac 2019; years are cardinals."""
    positive = numbers["positive"]
    month_number = pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 12)
    month_name = (month_number @ tsv_map(folder / "month_numbers.tsv")).optimize()
    months = tsv_map(folder / "months.tsv")
    day = (pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 31)) @ positive
    year = (pynini.union(*"12") + DIGIT**3) @ positive
    sep = pynutil.delete(pynini.union("/", "-", ".")) + pynutil.insert(" ")
    numeric = day + sep + month_name + sep + year
    return (numeric | day + SEP + months + SEP + year | day + SEP + months | months + SEP + year).optimize()


def _times(folder, w, numbers) -> tuple[pynini.Fst, pynini.Fst]:
    """pukul 2.30 (petang), 10.00 pagi, 14:30 -> hour, minutes (kosong lima for 05), no ".00";
    and times with seconds."""
    integer, two = numbers["integer"], numbers["two"]
    hour = (pynutil.delete("0").ques + number_range(0, 9) | number_range(10, 24)) @ integer
    minutes = (
        pynini.cross("0", f"{w['zero']} ") + numbers["digit_1_9"] | (pynini.union(*"12345") + DIGIT) @ two
    ).optimize()
    clock = hour + pynutil.delete(pynini.union(".", ":")) + (pynutil.delete("00") | pynutil.insert(" ") + minutes)
    clock_word = accep_any(tsv_words(folder / "clock_words.tsv"))
    day_part = accep_any(tsv_words(folder / "time_of_day.tsv"))
    colon_clock = hour + pynutil.delete(":") + (pynutil.delete("00") | pynutil.insert(" ") + minutes)
    time = (
        clock_word + SEP + (clock | hour) + (SEP + day_part).ques
        | clock + SEP + day_part
        | hour + (SEP | pynutil.insert(" ")) + day_part
        | colon_clock
    ).optimize()
    seconds = (pynini.union(*"012345") + DIGIT) @ (two | pynini.cross("00", w["zero"]))
    time_seconds = (hour + pynini.cross(":", " ") + minutes + pynini.cross(":", " ") + seconds).optimize()
    return time, time_seconds


def _decade(w, numbers) -> pynini.Fst:
    """1990-an -> seribu sembilan ratus sembilan puluhan, 80-an -> lapan puluhan."""
    suffix = w["decade_suffix"]
    decade_number = ((pynini.union(*"12") + DIGIT**2 | NONZERO) + "0") @ numbers["positive"]
    decade = (decade_number + pynini.cross(pynini.union("-an", "an", "an"), suffix)).optimize()
    return ((pynini.union(*"12") + DIGIT**2 + "0" | NONZERO + "0") + pynini.union("-an", "an")) @ decade


def _compound(numbers) -> pynini.Fst:
    """covid-19, pru-14, 1malaysia: letters kept, numbers spoken."""
    letters = pynutil.add_weight(LOWER.plus, 0.1)
    number_piece = DIGIT ** (1, 4) @ with_leading_zeros(numbers["integer"], numbers["digit"])
    space = pynutil.insert(" ")
    starts_with_letters = letters + (space + number_piece + space + letters).closure() + (space + number_piece).ques
    starts_with_number = number_piece + (space + letters + space + number_piece).closure() + (space + letters).ques
    piece = starts_with_letters | starts_with_number
    pieces = piece + (pynini.cross(DASHES, " ") + piece).closure()
    chars = pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789-", "\u2013").closure()
    shape = pynini.intersect(chars + DIGIT + chars, chars + LOWER + chars)
    return (shape.optimize() @ pieces).optimize()


def _url(w) -> pynini.Fst:
    """www.example.com -> www titik example titik com."""
    label = pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789-").closure(1)
    scheme = pynutil.delete(pynini.union("http://", "https://")).ques
    url = (
        scheme + label + (pynini.cross(".", f" {w['dot']} ") + label).closure(1) + pynutil.delete("/").ques
    ).optimize()
    return (
        pynini.union("www.", "http://", "https://")
        + pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789-./:").closure()
    ) @ url
