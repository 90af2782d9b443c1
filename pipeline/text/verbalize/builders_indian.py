"""Grammars for Hindi and Bangla: the Indian numbering system and the classes built on it.

Cardinals in lakh and crore (``1,23,45,678``; ASCII or native digits: the caller makes
native digits ASCII); above the crore either more two-digit groups (Hindi: arab, kharab,
nil, padma, shankh) or the number of crores said as a number (Bangla: একশ কোটি, এক
হাজার কোটি).  Every file named here is a word list in the language's
``lexicons/<lang>/verbalize/`` folder; a class whose list is missing is not built.
"""

from __future__ import annotations

from pathlib import Path

import pynini
from pynini.lib import pynutil

from pipeline.text.verbalize.builders import (
    DASHES,
    DIGIT,
    NONZERO,
    SEP,
    accep_any,
    currency_groups,
    decimal_number,
    digit_string,
    number_range,
    signed,
    tsv_dict,
    tsv_map,
    tsv_rows,
    tsv_words,
    with_leading_zeros,
    words_tsv,
)

DEVANAGARI = (0x0900, 0x097F)
BENGALI = (0x0980, 0x09FF)
#: the colon of clock times; the Indic normalizer writes it as a visarga after native digits (५ः१२)
COLON = pynini.union(":", "\u0903", "\u0983")


def script_letters(block: tuple[int, int]) -> pynini.Fst:
    """The letters and signs of a Unicode block, digits excepted, and the zero-width joiners."""
    lo, hi = block
    chars = [chr(c) for c in range(lo, hi + 1) if not chr(c).isdigit()] + ["\u200c", "\u200d"]
    return pynini.union(*chars).optimize()


def valid_commas() -> pynini.Fst:
    """Digits with commas where Indian (1,23,45,678) or Western (12,345,678) grouping puts them, or none."""
    indian = DIGIT ** (1, 2) + ("," + DIGIT**2).closure() + "," + DIGIT**3
    western = DIGIT ** (1, 3) + ("," + DIGIT**3).plus
    return (DIGIT.plus | indian | western).optimize()


def indian_cardinal(folder: Path, crores_as_number: bool = False) -> dict[str, pynini.Fst]:
    """1,23,45,678 -> crore, lakh, thousand, hundreds (ASCII digits, commas where grouping puts them).

    Returns ``positive`` (1 and up), ``one_to_99`` and ``two`` (exactly two digits, not 00).
    """
    numbers = tsv_map(folder / "numbers.tsv")  # "0".."99"
    one_to_99 = (pynini.difference(DIGIT | NONZERO + DIGIT, "0") @ numbers).optimize()
    two = (pynutil.delete("0") + NONZERO @ numbers | (NONZERO + DIGIT) @ numbers).optimize()
    hundreds_word = tsv_map(folder / "hundreds.tsv")
    hundreds = (hundreds_word + (pynutil.delete("00") | pynutil.insert(" ") + two)).optimize()
    below_1000 = (one_to_99 | hundreds).optimize()
    three = (hundreds | pynutil.delete("0") + two).optimize()  # exactly three digits, not 000
    tail = pynutil.delete("000") | pynutil.insert(" ") + three
    magnitude = {int(k): v[0] for k, v in tsv_dict(folder / "magnitudes.tsv").items()}
    # each magnitude above thousand takes two digits: the tail below it is 2 digits longer each step
    number = below_1000
    for level in sorted(magnitude):
        word = magnitude[level]
        top_tail = tail
        number |= one_to_99 + pynutil.insert(f" {word}") + tail
        # the same magnitude inside a longer number: two digits, possibly 00 (silent)
        tail = (pynutil.delete("00") | pynutil.insert(" ") + two + pynutil.insert(f" {word}")) + tail
    number = number.optimize()
    if crores_as_number:
        # 1000000009 -> একশ কোটি নয়: the digits before the last seven are themselves a number
        top = magnitude[max(magnitude)]
        lead = (NONZERO + DIGIT ** (2, 6)) @ number
        crores = lead + pynutil.insert(f" {top}") + top_tail
        lead2 = (NONZERO + DIGIT ** (2, 13)) @ (number | crores)
        number = (number | crores | lead2 + pynutil.insert(f" {top}") + top_tail).optimize()
    unformatted = pynini.union(*",0123456789").closure()
    drop_commas = pynini.cdrewrite(pynutil.delete(","), "", "", unformatted)
    positive = (valid_commas() @ drop_commas @ number).optimize()
    return {"positive": positive, "one_to_99": one_to_99, "two": two, "numbers": numbers}


def build_indian(folder: Path, letters: pynini.Fst, crores_as_number: bool = False) -> dict[str, pynini.Fst]:
    """Every class the language's word lists support, keyed by grammar name (see the language modules)."""
    w = words_tsv(folder)
    n = _numbers(folder, w, crores_as_number)
    integer, decimal, amount = n["integer"], n["decimal"], n["amount"]
    out: dict[str, pynini.Fst] = {}
    year_words = _year_words(w, n)
    before = accep_any(tsv_words(folder / "year_before.tsv"))
    after = accep_any(tsv_words(folder / "year_after.tsv"))
    out["year"] = (before + SEP + year_words | year_words + SEP + after).optimize()
    out["date"] = _date(folder, n, year_words)
    phone = _phone(folder, w, n)
    if phone is not None:
        out["phone"] = phone
    if "hours" in w:
        out["time"] = _time(folder, w, integer)
    out["money"] = _money(folder, n)
    if (folder / "units.tsv").exists():
        out["measure"] = _measure(folder, w, n)
    out["percent"] = (
        amount + (pynini.cross("%", f" {w['percent']}") | SEP + pynini.cross("%", w["percent"]))
    ).optimize()
    if (folder / "fractions.tsv").exists():
        out["fraction"] = _fraction(folder, w, integer)
    # ordinals: 21वीं -> इक्कीसवीं (Hindi); ১ম -> প্রথম, ২১তম -> একুশতম (Bangla)
    irregular = tsv_map(folder / "ordinals.tsv")
    suffix = accep_any(tsv_words(folder / "ordinal_suffixes.tsv"))
    out["ordinal"] = (irregular | pynutil.add_weight(n["positive"] + suffix, 0.1)).optimize()
    if (folder / "classifiers.tsv").exists():
        out["classifier"] = _classifier(folder, letters, n["positive"])
    # ranges (10-15, 2011-12) are left as written: a range, a score and a fiscal year read differently
    range_number = integer | decimal
    percent_sign = pynini.cross("%", f" {w['percent']}").ques
    out["range"] = (range_number + percent_sign + pynini.cross(DASHES, " ") + range_number + percent_sign).optimize()
    out["slash"] = ((DIGIT ** (1, 4) + "/" + DIGIT ** (1, 4)) @ (integer + pynini.cross("/", " ") + integer)).optimize()
    if (folder / "case_endings.tsv").exists():
        endings = accep_any(tsv_words(folder / "case_endings.tsv"))
        out["case_ending"] = ((integer | decimal) + pynini.cross(DASHES, " ") + endings).optimize()
    out["compound"] = _compound(letters, n)
    out["decimal"] = decimal
    out["cardinal"] = n["cardinal"]
    return out


def _numbers(folder: Path, w: dict[str, str], crores_as_number: bool) -> dict[str, pynini.Fst]:
    """The cardinal's pieces (see :func:`indian_cardinal`) with digits, zero, signed numbers and decimals."""
    card = indian_cardinal(folder, crores_as_number)
    positive = card["positive"]
    digit = (DIGIT @ card["numbers"]).optimize()
    zero = pynini.cross("0", (pynini.accep("0") @ card["numbers"]).string())
    integer = (positive | zero).optimize()
    cardinal = with_leading_zeros(signed(integer, w["minus"]), digit)
    decimal = decimal_number(integer, zero.copy().project("output").string(), w["point"], digit, w["minus"])
    amount = (signed(integer, w["minus"]) | decimal).optimize()
    return {
        **card,
        "digit": digit,
        "integer": integer,
        "cardinal": cardinal,
        "decimal": decimal,
        "amount": amount,
    }


def _year_words(w: dict[str, str], n: dict[str, pynini.Fst]) -> pynini.Fst:
    """1947 -> उन्नीस सौ सैंतालीस / উনিশশ সাতচল্লিশ (1100-1999); later years are cardinals."""
    positive, two = n["positive"], n["two"]
    joined = w.get("hundred_joined")
    hundred = pynutil.insert(joined) if joined else pynutil.insert(f" {w['hundred']}")
    early = (
        (pynini.accep("1") + NONZERO) @ n["one_to_99"] + hundred + (pynutil.delete("00") | pynutil.insert(" ") + two)
    )
    year_words = (pynini.accep("1") + NONZERO + DIGIT**2) @ early | (pynini.accep("2") + DIGIT**3) @ positive
    return (year_words | pynutil.add_weight((pynini.accep("1") + NONZERO + DIGIT**2) @ positive, 0.5)).optimize()


def _date(folder: Path, n: dict[str, pynini.Fst], year_words: pynini.Fst) -> pynini.Fst:
    """15 अगस्त 1947, 15 अगस्त, अगस्त 1947, 15/08/1947 (day first); Bangla ২৯শে ডিসেম্বর."""
    months = tsv_map(folder / "months.tsv")
    if (folder / "month_endings.tsv").exists():
        months = (months + accep_any(tsv_words(folder / "month_endings.tsv")).ques).optimize()
    month_number = pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 12)
    month_name = (month_number @ tsv_map(folder / "month_numbers.tsv")).optimize()
    day = (pynutil.delete("0").ques + number_range(1, 9) | number_range(10, 31)) @ n["positive"]
    day_forms = tsv_map(folder / "day_forms.tsv") if (folder / "day_forms.tsv").exists() else None
    if day_forms is not None:
        day = day | day_forms
    year4 = (pynini.union("1", "2") + DIGIT**3) @ year_words
    sep = pynutil.delete(pynini.union("/", "-", ".")) + pynutil.insert(" ")
    return (
        day + SEP + months + SEP + year4
        | day + SEP + months
        | months + SEP + year4
        | day + sep + month_name + sep + year4
        | month_name + sep + year4
        # ১লা, ২৯শে: the written ending makes a day of the month even without one
        | (day_forms if day_forms is not None else day + sep + month_name + sep + year4)
    ).optimize()


def _phone(folder: Path, w: dict[str, str], n: dict[str, pynini.Fst]) -> pynini.Fst | None:
    """Telephone numbers, read digit by digit, in the shapes of ``phone.tsv``; None without it."""
    spoken_digits = digit_string(n["digit"])
    phone_parts, after_country = [], []
    if (folder / "phone.tsv").exists():
        for pattern in tsv_words(folder / "phone.tsv"):
            phone_parts.append(_digit_pattern(pattern, spoken_digits))
            if pattern.startswith("0:1 "):
                # after a country code the trunk 0 is dropped: +880 1711123456
                after_country.append(_digit_pattern(pattern[4:], spoken_digits))
    if not phone_parts:
        return None
    country = pynini.cross("+", f"{w['plus']} ") + DIGIT ** (1, 3) @ spoken_digits
    hyphen = pynini.cross("-", " ")
    local = pynini.union(*phone_parts)
    national = pynini.union(*phone_parts, *after_country)
    phone = (local | country + (SEP | hyphen | pynutil.insert(" ")) + national).optimize()
    if (folder / "phone_context.tsv").exists():
        context = accep_any(tsv_words(folder / "phone_context.tsv"))
        phone |= context + SEP + DIGIT ** (5, 12) @ spoken_digits
        phone = phone.optimize()
    return phone


def _time(folder: Path, w: dict[str, str], integer: pynini.Fst) -> pynini.Fst:
    """10:30 -> दस बजकर तीस मिनट, 8:00 -> आठ बजे; 9:15 बजे -> सवा नौ बजे."""
    hour = (pynutil.delete("0").ques + number_range(0, 9) | number_range(10, 24)) @ integer
    minute = (pynutil.delete("0") + NONZERO | (pynini.union(*"12345") + DIGIT)) @ integer
    second = (pynutil.delete("0").ques + DIGIT | (pynini.union(*"12345") + DIGIT)) @ integer
    o_clock = accep_any([w["o_clock"]])
    full = hour + pynini.cross(COLON, f" {w['hours']} ") + minute + pynutil.insert(f" {w['minutes']}")
    on_hour = hour + pynini.cross(COLON + "00", f" {w['o_clock']}")
    seconds = full + pynini.cross(COLON, " ") + second + pynutil.insert(f" {w['seconds']}")
    said = full | on_hour | seconds
    quarter = _quarter_hours(folder, integer)
    return (
        said | said + SEP + pynutil.delete(o_clock) | (quarter + SEP + o_clock if quarter is not None else said)
    ).optimize()


def _money(folder: Path, n: dict[str, pynini.Fst]) -> pynini.Fst:
    """₹45 करोड़ -> पैंतालीस करोड़ रुपये, ₹123.57 -> ... रुपये सत्तावन पैसे."""
    positive, integer, decimal, two = n["positive"], n["integer"], n["decimal"], n["two"]
    scale = pynini.string_map([(r[0], r[1]) for r in tsv_rows(folder / "scales.tsv")])
    number_chars = pynini.union(*"0123456789,").closure()
    other_decimals = pynini.difference(number_chars + "." + DIGIT.plus, number_chars + "." + DIGIT**2).optimize()
    currencies = []
    for (one, many, minor_one, minor_many), symbol_fst in currency_groups(folder / "currency.tsv", 4):
        major = pynini.cross("1", f"{_say(positive, '1')} {one}") | _not(integer, "1") + pynutil.insert(f" {many}")
        said = major | (integer | decimal) + SEP + scale + pynutil.insert(f" {many}")
        if minor_one:
            minor = _not(two, "01") + pynutil.insert(f" {minor_many}") | pynini.cross(
                "01", f"{_say(positive, '1')} {minor_one}"
            )
            cents = pynutil.delete(".") + (pynutil.delete("00") | pynutil.insert(" ") + minor)
            said |= major + cents
            said |= pynutil.delete("0").ques + pynutil.delete(".") + _not(minor, "00")
            said |= other_decimals @ decimal + pynutil.insert(f" {many}")
        else:
            said |= (number_chars + "." + DIGIT.plus) @ decimal + pynutil.insert(f" {many}")
        currencies.append((pynutil.delete(symbol_fst) + (SEP | pynutil.insert("")) + said).optimize())
    return pynini.union(*currencies)


def _measure(folder: Path, w: dict[str, str], n: dict[str, pynini.Fst]) -> pynini.Fst:
    """Measures (Hindi): 5 किमी -> पाँच किलोमीटर."""
    integer = n["integer"]
    units = tsv_rows(folder / "units.tsv")
    unit = pynini.string_map([(r[0], r[1]) for r in units])
    glued = pynini.string_map([(r[0], r[1]) for r in units if r[2] == "yes"])
    by = pynini.cross(pynini.union("x", "×"), f" {w['by']} ")
    return (n["amount"] + (pynutil.insert(" ") + glued | SEP + unit) | integer + by + integer).optimize()


def _fraction(folder: Path, w: dict[str, str], integer: pynini.Fst) -> pynini.Fst:
    """Fractions (Hindi): 1/2 -> आधा, 3/4 -> तीन चौथाई, 5/8 -> पाँच बटा आठ, 2 2/7 -> दो और दो बटा सात."""
    special = tsv_map(folder / "fractions.tsv")
    proper = _proper_fractions(integer, w["over"])
    fraction = special | pynutil.add_weight(proper, 0.1)
    halves = tsv_map(folder / "halves.tsv")
    # 1½ -> डेढ़, 2½ -> ढाई, 3½ -> साढ़े तीन
    with_half = halves + pynutil.delete("½") | pynutil.insert(f"{w['and_a_half']} ") + (
        number_range(3, 99) @ integer
    ) + pynutil.delete("½")
    mixed = integer + SEP + pynutil.insert(f"{w['and']} ") + fraction
    return (fraction | with_half | mixed).optimize()


def _classifier(folder: Path, letters: pynini.Fst, positive: pynini.Fst) -> pynini.Fst:
    """Bangla classifiers glued to the number: ১০টি -> দশটি, ২টি -> দুটি."""
    classifier = accep_any(tsv_words(folder / "classifiers.tsv"))
    stems = tsv_dict(folder / "classifier_stems.tsv")
    sigma = pynini.union(letters, " ").closure()
    short = pynini.union(*[pynini.cross(full, fields[0]) for full, fields in stems.items()])
    before_classifier = pynini.cdrewrite(short, "", "[EOS]", sigma)
    return ((positive @ before_classifier) + classifier).optimize()


def _compound(letters: pynini.Fst, n: dict[str, pynini.Fst]) -> pynini.Fst:
    """कोविड-19 -> कोविड उन्नीस, ঢাকা-১০ -> ঢাকা দশ: the word kept, the number spoken."""
    word = letters.plus
    number_piece = DIGIT ** (1, 4) @ with_leading_zeros(n["integer"], n["digit"])
    dash = pynini.cross(DASHES, " ")
    return (
        (word + dash).plus + number_piece + (dash + (word | number_piece)).closure() | number_piece + dash + word
    ).optimize()


def _digit_pattern(pattern: str, spoken_digits: pynini.Fst) -> pynini.Fst:
    """A phone-number shape from a word list (``6-9:1 D:9``: one digit 6-9, nine digits; ``-`` a hyphen)."""
    fst = pynini.accep("")
    for part in pattern.split():
        if part == "-":
            fst += pynini.cross("-", " ")
        elif part == "_":
            fst += SEP
        else:
            chars, count = part.split(":")
            lo, _, hi = count.partition("-")
            alphabet = DIGIT if chars == "D" else pynini.union(*_expand(chars))
            fst += alphabet ** (int(lo), int(hi or lo))
    return (fst @ _spaced_digits(spoken_digits)).optimize()


def _expand(chars: str) -> str:
    if len(chars) == 3 and chars[1] == "-":
        return "".join(str(d) for d in range(int(chars[0]), int(chars[2]) + 1))
    return chars


def _spaced_digits(spoken_digits):
    """Digit runs spoken digit by digit, across the hyphens and word boundaries already rewritten."""
    run = DIGIT.plus @ spoken_digits
    return (run + (pynini.accep(" ") + run | pynini.accep(" | ") + run).closure()).optimize()


def _quarter_hours(folder: Path, integer):
    """9:15 -> सवा नौ, 10:30 -> साढ़े दस (1:30 डेढ़, 2:30 ढाई), 9:45 -> पौने दस; None without the word list."""
    path = folder / "quarter_hours.tsv"
    if not path.exists():
        return None
    rows = tsv_dict(path)
    said = []
    for h in range(1, 13):
        hour_words = _say(integer, str(h))
        next_words = _say(integer, str(h % 12 + 1))
        for written in (str(h), f"{h:02d}"):
            said.append((f"{written}:15", f"{rows['15'][0]} {hour_words}"))
            said.append((f"{written}:30", rows.get(f"{h}:30", [f"{rows['30'][0]} {hour_words}"])[0]))
            said.append((f"{written}:45", f"{rows['45'][0]} {next_words}"))
    colon = pynini.cdrewrite(pynini.cross(COLON, ":"), "", "", pynini.union(*"0123456789:", COLON).closure())
    return (colon @ pynini.string_map(said)).optimize()


def _proper_fractions(integer, over: str) -> pynini.Fst:
    """n/d with n < d: ``n बटा d``."""
    pairs = []
    for d in range(2, 100):
        for n in range(1, d):
            pairs.append(f"{n}/{d}")
    # a numerator with fewer digits than a denominator of 3 or 4 digits is smaller too
    inputs = pynini.union(*pairs, *[DIGIT ** (1, k - 1) + "/" + NONZERO + DIGIT ** (k - 1) for k in (3, 4)]).optimize()
    return (inputs @ (integer + pynini.cross("/", f" {over} ") + integer)).optimize()


def _say(fst, written: str) -> str:
    return pynini.shortestpath(pynini.accep(written) @ fst).project("output").rmepsilon().string()


def _not(fst, excluded: str):
    sigma = pynini.union(*"0123456789,.").closure()
    return (pynini.difference(sigma, excluded).optimize() @ fst).optimize()
