"""English (US style, no "and"): what a reader says for written numbers.

Cardinals to 10^21 (``-5`` -> minus five, ``0042`` -> zero zero four two), decimals,
ordinals, money with scale words and codes (``$45 billion`` -> forty five billion dollars,
``$0.02`` -> two cents, ``us$5``, ``tk 25 lakh``), percentages, years (``1990`` and ``in
1990`` -> nineteen ninety, ``2010-2012``, ``340 a.d.``), decades (``1990s``, ``'90s``),
dates (``july 25 2012``, ``25 july 2012``, ``25/07/2012``, ``2012-07-25``), times (``1.59
p.m.`` -> one fifty nine p m, ``1:01:01`` -> one hour one minute one second), measures
(``22 ft`` -> twenty two feet), fractions (``3/4``, ``1 1/2``), telephone numbers (digit
by digit), ranges (``10-15`` -> ten to fifteen) and words with digits (``30-day``,
``co2``).  Left as written and counted: numeric dates whose day and month could be swapped
(``05/06/2012``) and ``x/y`` that is no proper fraction (``9/11``, ``24/7``).
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
    pluralize_last,
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
    "date:numeric_ambiguous",
    "time",
    "money",
    "year",
    "decade",
    "phone",
    "measure",
    "percent",
    "fraction",
    "fraction:ambiguous",
    "range",
    "ordinal",
    "decimal",
    "cardinal",
    "compound",
)
LEFT = ("date:numeric_ambiguous", "fraction:ambiguous")
ALT = ()
MAX_WORDS = 4


def starters(folder) -> set[str]:
    """Words a group may start with before its number (``in`` 1990, ``july`` 25, ``us$`` 5)."""
    currency = [c for c in tsv_dict(folder / "currency.tsv") if not any(ch.isdigit() for ch in c)]
    return {*tsv_words(folder / "year_context.tsv"), *tsv_words(folder / "months.tsv"), *currency}


def _numbers(folder):
    w = words_tsv(folder)
    digit = tsv_map(folder / "digits.tsv")
    digit_1_9 = (NONZERO @ digit).optimize()
    teens = tsv_map(folder / "teens.tsv")
    ties = tsv_map(folder / "ties.tsv")
    one_to_99 = (digit_1_9 | teens | ties + (pynutil.delete("0") | pynutil.insert(" ") + digit_1_9)).optimize()
    two = two_digits(one_to_99, digit_1_9)
    hundreds = (
        digit_1_9 + pynutil.insert(f" {w['hundred']}") + (pynutil.delete("00") | pynutil.insert(" ") + two)
    ).optimize()
    group_1_999 = (one_to_99 | hundreds).optimize()
    group_3 = (hundreds | pynutil.delete("0") + two).optimize()
    magnitudes = {0: (group_1_999, group_3)}
    for power, (word,) in tsv_dict(folder / "magnitudes.tsv").items():
        magnitudes[int(power)] = (group_1_999 + pynutil.insert(f" {word}"), group_3 + pynutil.insert(f" {word}"))
    positive = group_cardinal(group_1_999, magnitudes)
    zero = pynini.cross("0", w["zero"])
    # 1,500 is also said "fifteen hundred": a reading alignment may use, never the spoken one
    hundreds_style = (
        (NONZERO + pynutil.delete(",").ques + NONZERO) @ one_to_99
        + pynutil.insert(f" {w['hundred']}")
        + (pynutil.delete("00") | pynutil.insert(" ") + two)
    )
    cardinal = signed(positive | zero, w["minus"]) | pynutil.add_weight(hundreds_style, 0.5)
    return {
        "w": w,
        "digit": digit,
        "two": two,
        "one_to_99": one_to_99,
        "positive": positive,
        "cardinal": with_leading_zeros(cardinal, digit),
        "decimal": decimal_number(positive | zero, None, w["point"], digit, w["minus"]),
        "digits": digit_string(digit),
    }


def _ordinal(folder, positive):
    """21st -> twenty first: the cardinal with its last word made ordinal; the suffix must fit the number."""
    to_ordinal = _to_ordinal_word(folder)
    num = pynini.union(DIGIT, ",").closure()
    not_teen = (num + pynini.difference(DIGIT, "1")).ques
    fits = (not_teen + "1st" | not_teen + "2nd" | not_teen + "3rd" | num + "1" + DIGIT + "th" | num + "th").optimize()
    fits = pynini.difference(fits, not_teen + pynini.union("1th", "2th", "3th")).optimize()
    suffix = pynutil.delete(pynini.union("st", "nd", "rd", "th"))
    zero = pynini.cross("0", "zero")
    return (fits @ (((positive | zero) + suffix) @ to_ordinal)).optimize()


def _year_words(numbers):
    """1990 -> nineteen ninety, 1905 -> nineteen oh five, 1900 -> nineteen hundred, 2015 -> twenty fifteen.

    1000, 2000-2009 and 2100 on are read as cardinals; 2010-2099 also as ``two thousand
    ten`` (a weighted second reading), and every year as its cardinal after those.
    """
    two, w, positive = numbers["two"], numbers["w"], numbers["positive"]
    digit_1_9 = NONZERO @ numbers["digit"]
    second_pair = (
        pynini.cross("00", w["hundred"]) | pynini.cross("0", f"{w['oh']} ") + digit_1_9 | (NONZERO + DIGIT) @ two
    )
    pairs = ((pynini.accep("1") + DIGIT | "20") @ two) + pynutil.insert(" ") + second_pair
    pairs = not_input(pairs, ["1000", *[f"200{d}" for d in range(10)]])
    cardinal_years = pynini.union("1000", *[f"200{d}" for d in range(10)]) @ positive
    later = (pynini.accep("20") + NONZERO + DIGIT) @ positive
    earlier = pynini.difference(pynini.accep("1") + DIGIT**3, "1000") @ positive
    return (
        pairs | cardinal_years | pynutil.add_weight(later, 0.3) | pynutil.add_weight(earlier.optimize(), 0.6)
    ).optimize()


def _short_year(numbers):
    """Two-digit years of numeric dates: 98 -> ninety eight, 05 -> oh five."""
    return (
        pynini.cross("0", f"{numbers['w']['oh']} ") + (NONZERO @ numbers["digit"])
        | (NONZERO + DIGIT) @ numbers["two"]
        | pynini.cross("00", f"{numbers['w']['oh']} {numbers['w']['oh']}")
    ).optimize()


def _day(numbers, to_ordinal_word):
    """1-31, with or without a leading zero or an ordinal suffix, as an ordinal."""
    plain = (pynutil.delete("0").ques + number_range(1, 9)) | number_range(10, 31)
    suffixed = plain + pynutil.delete(pynini.union("st", "nd", "rd", "th")).ques
    return (suffixed @ ((numbers["positive"]) @ to_ordinal_word)).optimize()


def build(folder) -> dict[str, pynini.Fst]:
    numbers = _numbers(folder)
    w, positive, decimal = numbers["w"], numbers["positive"], numbers["decimal"]
    plain_number = signed(positive | pynini.cross("0", w["zero"]), w["minus"])
    amount = (plain_number | decimal).optimize()
    ordinal = _ordinal(folder, positive)
    year_words = _year_words(numbers)
    year4 = (pynini.accep("1") + DIGIT**3 | "20" + DIGIT**2) @ year_words
    year = _year(folder, numbers, year_words, year4)
    decade = _decade(numbers, year_words)
    date, date_ambiguous = _dates(folder, numbers, year_words, year4)
    time = _time(folder, numbers)
    money = _money(folder, numbers)
    percent = _percent(numbers, amount)
    fractions = _fractions(folder, numbers)
    measure = _measure(folder, numbers, amount, fractions)
    phone = _phone(numbers)
    range_ = _range(numbers, time, decade)
    compound = _compound(numbers, ordinal, decade)
    return {
        "date": date,
        "date:numeric_ambiguous": date_ambiguous,
        "time": time,
        "money": money,
        "year": year,
        "decade": decade,
        "phone": phone,
        "measure": measure,
        "percent": percent,
        "fraction": fractions["fraction"],
        "fraction:ambiguous": fractions["fraction:ambiguous"],
        "range": range_,
        "ordinal": ordinal,
        "decimal": decimal,
        "cardinal": numbers["cardinal"],
        "compound": compound,
    }


def _to_ordinal_word(folder) -> pynini.Fst:
    """Words of a cardinal with the last one made ordinal: twenty one -> twenty first."""
    last_word = tsv_map(folder / "ordinals.tsv")
    word_chars = pynini.union(*"abcdefghijklmnopqrstuvwxyz ").closure()
    return ((word_chars + pynini.accep(" ")).ques + last_word).optimize()


def _year(folder, numbers, year_words, year4) -> pynini.Fst:
    """in 1990, 1990 and 1991, 2010-2012, a bare 1100-2099, 340 a.d."""
    w, positive, two = numbers["w"], numbers["positive"], numbers["two"]
    context = accep_any(tsv_words(folder / "year_context.tsv"))
    joiner = accep_any(tsv_words(folder / "year_joiners.tsv"))
    year_chain = year4 + (SEP + joiner + SEP + year4).ques
    to = f" {w['to']} "
    year_range = year4 + pynini.cross(DASHES, to) + (year4 | (DIGIT**2) @ _short_year(numbers))
    # a bare 1100-2099 without a comma is a year too: edited text writes quantities as 1,500,
    # and where it does not, "fifteen hundred" is still how most say it
    bare = (pynini.accep("1") + NONZERO + DIGIT**2 | "20" + DIGIT**2) @ year_words
    # 340 a.d. -> three forty a d, 500 bc -> five hundred b c
    era = tsv_map(folder / "eras.tsv")
    digit_1_9 = NONZERO @ numbers["digit"]
    three_digit_year = (
        digit_1_9
        + pynutil.insert(" ")
        + (pynini.cross("00", w["hundred"]) | pynini.cross("0", f"{w['oh']} ") + digit_1_9 | (NONZERO + DIGIT) @ two)
    )
    era_year = year4 | three_digit_year | (NONZERO + DIGIT.ques) @ positive
    return (context + SEP + year_chain | year_range | bare | era_year + SEP + era).optimize()


def _decade(numbers, year_words) -> pynini.Fst:
    """1990s -> nineteen nineties, '90s -> nineties."""
    plural = pluralize_last("abcdefghijklmnopqrstuvwxyz '")
    apostrophe_s = pynutil.delete(pynini.union("s", "'s"))
    decade_year = ((pynini.accep("1") + DIGIT**2 | "20" + DIGIT) + "0") @ year_words
    tens = (NONZERO + "0") @ numbers["two"]
    decade = ((decade_year | pynutil.delete("'").ques + tens) + apostrophe_s) @ plural
    return decade.optimize()


def _dates(folder, numbers, year_words, year4) -> tuple[pynini.Fst, pynini.Fst]:
    """Dates in words and numeric dates; and the numeric dates whose day and month could be swapped."""
    w, positive = numbers["w"], numbers["positive"]
    to_ordinal_word = _to_ordinal_word(folder)
    months = tsv_map(folder / "months.tsv")
    day = _day(numbers, to_ordinal_word)
    of_month = pynutil.insert(f"{w['of']} ") + months
    month_day = months + SEP + day
    date_words = (
        month_day + SEP + year4
        | month_day
        | day + SEP + of_month + SEP + year4
        | day + SEP + of_month
        | months + SEP + year4
        # jan-15-2020, jan-15
        | months + pynini.cross("-", " ") + day + (pynini.cross("-", " ") + year4).ques
    )
    month_number = pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 12)
    month_name = (month_number @ tsv_map(folder / "month_numbers.tsv")).optimize()
    day_num = (pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 31)) @ (positive @ to_ordinal_word)
    big_day = number_range(13, 31) @ (positive @ to_ordinal_word)
    sep = pynini.union("/", "-", ".")
    any_year = year4 | (DIGIT**2) @ _short_year(numbers)
    dsep = pynutil.delete(sep) + pynutil.insert(" ")
    # 25/07/2012 (day first, unambiguous), 07/25/2012 (month first), 2012-07-25 (ISO)
    iso = _iso(year_words, month_name, day_num, sep)
    numeric = (
        big_day + dsep + pynutil.insert(f"{w['of']} ") + month_name + dsep + any_year
        | month_name + dsep + big_day + dsep + any_year
        | iso
    )
    date = (date_words | numeric).optimize()
    small_day = (pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 12)) @ (positive @ to_ordinal_word)
    return date, (month_name + dsep + small_day + dsep + any_year).optimize()


def _time(folder, numbers) -> pynini.Fst:
    """Clock times (1.59 p.m., 14:00) and clock times with seconds read as durations (1:01:01)."""
    w, positive, digit, two = numbers["w"], numbers["positive"], numbers["digit"], numbers["two"]
    # "a m" as most normalizers write it; "am" (as the IWSLT ASR does) a reading for alignment
    am_pm = tsv_dict(folder / "am_pm.tsv")
    ampm = pynini.string_map([(k, v[0]) for k, v in am_pm.items()]) | pynutil.add_weight(
        pynini.string_map([(k, v[0].replace(" ", "")) for k, v in am_pm.items()]), 0.4
    )
    hour24 = (pynutil.delete("0").ques + number_range(0, 9) | number_range(10, 23)) @ (
        positive | pynini.cross("0", w["zero"])
    )
    hour12 = (pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 12)) @ positive
    minutes = (pynini.cross("0", f"{w['oh']} ") + (NONZERO @ digit) | (pynini.union(*"12345") + DIGIT) @ two).optimize()
    glue_or_sep = pynutil.insert(" ") | SEP
    with_ampm = glue_or_sep + ampm
    clock = (
        hour24 + pynutil.delete(":") + (pynini.cross("00", f" {w['oclock']}") | pynutil.insert(" ") + minutes)
        | hour12
        + pynutil.delete(pynini.union(":", "."))
        + (pynutil.delete("00") | pynutil.insert(" ") + minutes)
        + with_ampm
        | hour12 + with_ampm
    )
    time = clock.optimize()
    # 1:01:01 -> one hour one minute one second (a clock time with seconds is a duration when read)
    return (
        time
        | _unit_count(numbers, 2, "hour", "hours")
        + pynini.cross(":", " ")
        + _unit_count(numbers, 2, "minute", "minutes")
        + pynini.cross(":", " ")
        + _unit_count(numbers, 2, "second", "seconds")
        + with_ampm.ques
    ).optimize()


def _unit_count(numbers, n_digits: int, one: str, many: str) -> pynini.Fst:
    """0-59 (up to ``n_digits`` digits) and its unit: ``01`` -> one hour, ``5`` -> five hours."""
    amount_ = (pynutil.delete("0").ques + number_range(0, 9) | number_range(10, 59)) @ (
        numbers["positive"] | pynini.cross("0", numbers["w"]["zero"])
    )
    amount_ = (DIGIT**n_digits | DIGIT) @ amount_
    return pynini.cross(pynini.union("1", "01"), f"one {one}") | not_input(amount_, ["1", "01"]) + pynutil.insert(
        f" {many}"
    )


def _money(folder, numbers) -> pynini.Fst:
    """$45 billion, $0.02, us$5, tk 25 lakh, and ranges of them ($5-$10)."""
    w = numbers["w"]
    scales = tsv_rows(folder / "scales.tsv")
    scale_word = pynini.string_map([(r[0], r[1]) for r in scales])
    glued_scale = pynini.string_map([(r[0], r[1]) for r in scales if r[2] == "yes"])
    integer = numbers["positive"] | pynini.cross("0", w["zero"])
    currencies = []
    for units, symbol_fst in currency_groups(folder / "currency.tsv", 4):
        said = _currency_amount(numbers, integer, units, scale_word, glued_scale)
        currencies.append((pynutil.delete(symbol_fst) + (SEP | pynutil.insert("")) + said).optimize())
    money_one = pynini.union(*currencies).optimize()
    return (money_one | money_one + pynini.cross(DASHES, f" {w['to']} ") + money_one).optimize()


def _currency_amount(numbers, integer, units, scale_word, glued_scale) -> pynini.Fst:
    """An amount of one currency (its unit words ``units``: one, many, minor one, minor many) in words."""
    one, many, minor_one, minor_many = units
    decimal, two = numbers["decimal"], numbers["two"]
    number_chars = pynini.union(*"0123456789,").closure()
    major = pynini.cross("1", f"one {one}") | not_input(integer, "1") + pynutil.insert(f" {many}")
    scale = pynutil.insert(" ") + glued_scale | SEP + scale_word
    # $2.5 million, $45 billion: the amount, the scale word, then the currency
    said = major | (integer | decimal) + scale + pynutil.insert(f" {many}")
    if not minor_one:
        return said | (number_chars + "." + DIGIT.plus) @ decimal + pynutil.insert(f" {many}")
    minor = pynini.cross("01", f"one {minor_one}") | not_input(two, "01") + pynutil.insert(f" {minor_many}")
    # $20.5 is twenty dollars fifty cents, as $20.50
    tens_of_cents = (NONZERO + pynutil.insert("0")) @ minor
    cents = pynutil.delete(".") + (
        pynutil.delete(pynini.union("00", "0")) | pynutil.insert(" ") + (minor | tens_of_cents)
    )
    only_cents = pynutil.delete("0").ques + pynutil.delete(".") + (not_input(minor, "00") | tens_of_cents)
    said |= major + cents | only_cents
    # £1.111: a decimal number of pounds
    return said | (number_chars + "." + DIGIT ** (3, 30)) @ decimal + pynutil.insert(f" {many}")


def _percent(numbers, amount) -> pynini.Fst:
    """5%, 5 %, 5-10%."""
    percent_word, to = numbers["w"]["percent"], f" {numbers['w']['to']} "
    return (
        amount + (pynini.cross("%", f" {percent_word}") | SEP + pynini.cross("%", percent_word))
        | amount + pynini.cross(DASHES, to) + amount + pynini.cross("%", f" {percent_word}")
    ).optimize()


def _fractions(folder, numbers) -> dict[str, pynini.Fst]:
    """``fraction`` (3/4, ¾, 1 1/2) and ``fraction:ambiguous`` (an ``x/y`` that is no proper fraction);
    ``text`` (a written fraction) and ``with_a`` (``and a half``) for the measures."""
    w, positive = numbers["w"], numbers["positive"]
    denominators = tsv_rows(folder / "fractions.tsv")
    proper = []
    for d, one_form, many_form in denominators:
        for n in range(1, int(d)):
            spoken = f"one {one_form}" if n == 1 else f"{_plain(numbers, n)} {many_form}"
            proper.append((f"{n}/{d}", spoken))
    proper_fraction = pynini.string_map(proper).optimize()
    with_a = pynini.string_map(
        [(f"1/{d}", f"{w['and']} a {one_form}") for d, one_form, _ in denominators]
        + [
            (f"{n}/{d}", f"{w['and']} {_plain(numbers, n)} {many}")
            for d, _, many in denominators
            for n in range(2, int(d))
        ]
    )
    vulgar = tsv_map(folder / "vulgar_fractions.tsv")
    fraction_text = vulgar | (DIGIT + "/" + DIGIT.plus)
    fraction = (
        fraction_text @ proper_fraction
        | positive + (pynutil.insert(" ") + vulgar @ with_a | SEP + fraction_text @ with_a)
    ).optimize()
    slash_pair = (DIGIT ** (1, 3) + "/" + DIGIT ** (1, 3)) @ (
        positive + pynini.cross("/", " ") + (positive | pynini.cross("0", w["zero"]))
    )
    proper_inputs = (fraction_text @ proper_fraction).project("input").rmepsilon()
    ambiguous_inputs = pynini.difference(
        slash_pair.copy().project("input").rmepsilon().optimize(), proper_inputs.optimize()
    )
    ambiguous = (ambiguous_inputs.optimize() @ slash_pair).optimize()
    return {"fraction": fraction, "fraction:ambiguous": ambiguous, "text": fraction_text, "with_a": with_a}


def _measure(folder, numbers, amount, fractions) -> pynini.Fst:
    """22 ft, 5km, 2.5kg, 100 million kg, 4 1/2 lbs, 2-3 mins, 5 sq km."""
    units = tsv_rows(folder / "units.tsv")
    scales = tsv_rows(folder / "scales.tsv")
    singular = pynini.string_map([(r[0], r[1]) for r in units])
    plural_unit = pynini.string_map([(r[0], r[2]) for r in units])
    glued_singular = pynini.string_map([(r[0], r[1]) for r in units if r[3] == "yes"])
    glued_plural = pynini.string_map([(r[0], r[2]) for r in units if r[3] == "yes"])
    one = pynini.cross("1", "one")
    many_amount = (
        not_input(amount, "1", "0123456789,.-\u2212")
        | amount + SEP + pynini.string_map([(r[0], r[1]) for r in scales if r[2] == "no"])
        | amount + pynini.cross(DASHES, f" {numbers['w']['to']} ") + amount
        | numbers["positive"] + SEP + fractions["text"] @ fractions["with_a"]
    )
    square = pynini.cross("sq", "") + SEP + pynutil.insert("square ")
    return (
        one + (pynutil.insert(" ") + glued_singular | SEP + square.ques + singular)
        | many_amount + (pynutil.insert(" ") + glued_plural | SEP + square.ques + plural_unit)
    ).optimize()


def _phone(numbers) -> pynini.Fst:
    """Telephone numbers: digit by digit, groups kept apart by the marker only where words end."""
    w, digit = numbers["w"], numbers["digit"]
    spoken_digits = digit_string(digit)
    oh_digits = digit_string(pynini.cross("0", w["oh"]) | (NONZERO @ digit))
    read = spoken_digits | pynutil.add_weight(oh_digits, 0.3)

    def run(n_digits):
        return (DIGIT**n_digits) @ read

    dash = pynini.cross(pynini.union("-", "."), " ")
    national = (
        run(3) + dash + run(4)
        | run(3) + dash + run(3) + dash + run(4)
        | run(1) + dash + run(3) + dash + run(3) + dash + run(4)
        | run(3) + SEP + run(3) + dash + run(4)
        # a trunk 0, then groups (01711-123456, 02-9876543)
        | (pynini.accep("0") + DIGIT ** (1, 4)) @ read + (dash | SEP) + DIGIT ** (5, 8) @ read
    )
    country = pynini.cross("+", f"{w['plus']} ") + (DIGIT ** (1, 3)) @ read
    intl_group = (DIGIT ** (1, 8)) @ read
    joint = pynini.cross("-", " ") | SEP | pynutil.insert(" ")
    international = country + joint + intl_group + (joint + intl_group) ** (0, 3)
    digits_only = pynini.union("+", "-", " ", *"0123456789").closure()
    enough = (pynini.union("+", "").ques + (pynini.union("-", " ").ques + DIGIT) ** (8, 15)).optimize()
    international = pynini.intersect(digits_only, enough).optimize() @ international
    return (national | international).optimize()


def _range(numbers, time, decade) -> pynini.Fst:
    """10-15 -> ten to fifteen, and ranges of times and decades."""
    w = numbers["w"]
    to = f" {w['to']} "
    range_number = signed(numbers["positive"] | pynini.cross("0", w["zero"]), w["minus"]) | numbers["decimal"]
    return (
        range_number + pynini.cross(DASHES, to) + range_number
        | time + pynini.cross(DASHES, to) + time
        | decade + pynini.cross(DASHES, to) + decade
    ).optimize()


def _compound(numbers, ordinal, decade) -> pynini.Fst:
    """30-day, mid-90s, co2, i-94, 21st-century: letters kept, numbers spoken, hyphens gone."""
    letters = pynutil.add_weight((LOWER | "'").plus, 0.1)
    integer = numbers["positive"] | pynini.cross("0", numbers["w"]["zero"])
    number_piece = (
        (DIGIT ** (1, 4)) @ with_leading_zeros(integer, numbers["digit"]) | ordinal | decade | numbers["decimal"]
    )
    space = pynutil.insert(" ")
    starts_with_letters = letters + (space + number_piece + space + letters).closure() + (space + number_piece).ques
    starts_with_number = number_piece + (space + letters + space + number_piece).closure() + (space + letters).ques
    piece = starts_with_letters | starts_with_number
    pieces = piece + (pynini.cross(DASHES, " ") + piece).closure()
    chars = pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789'-.", "\u2013").closure()
    shape = pynini.intersect(chars + DIGIT + chars, chars + LOWER + chars)
    no_edge_dash = pynini.difference(
        chars, pynini.union(DASHES + chars, chars + DASHES, chars + DASHES + DASHES + chars)
    )
    return (pynini.intersect(shape, no_edge_dash).optimize() @ pieces).optimize()


def _plain(numbers, n: int) -> str:
    """Words of a small cardinal, for building string maps."""
    return (pynini.accep(str(n)) @ numbers["positive"]).string()


def _iso(year_words, month_name, day_num, sep) -> pynini.Fst:
    """2012-07-25 -> july twenty fifth twenty twelve: one branch per year (1900-2099), the year said last."""
    month_day = (month_name + pynutil.delete(sep) + pynutil.insert(" ") + day_num).optimize()
    branches = []
    for y in range(1900, 2100):
        said = pynini.shortestpath(pynini.accep(str(y)) @ year_words).project("output").rmepsilon().string()
        branches.append(pynutil.delete(f"{y}") + pynutil.delete(sep) + month_day + pynutil.insert(f" {said}"))
    return pynini.union(*branches).optimize()
