"""Malay (Rao 2022's normalization to mimic ASR): cardinals, decimals, ordinals, currency
(RM), percentages, phone numbers, dates and web addresses.

123.5 -> seratus dua puluh tiga perpuluhan lima; 1000 -> seribu; ke-3 -> ketiga;
RM3.50 -> tiga ringgit lima puluh sen; 5% -> lima peratus; 012-3456789 -> kosong
satu dua ...; 26/4/2018 -> dua puluh enam april dua ribu lapan belas;
www.bernama.com -> www titik bernama titik com.
"""

from __future__ import annotations

import pynini
from pynini.lib import pynutil

from .builders import DIGIT, group_cardinal, not_input, tsv_dict, tsv_map, two_digits

GRAMMARS = ("cardinal", "decimal", "ordinal", "currency", "percent", "phone", "date", "url")


def build(folder) -> dict[str, pynini.Fst]:
    w = {role: (fields[0] if fields else "") for role, fields in tsv_dict(folder / "words.tsv").items()}
    digit = tsv_map(folder / "digits.tsv")
    digit_1_9 = (pynini.union(*"123456789") @ digit).optimize()
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
    positive = (group_cardinal(group_1_999, magnitudes) | pynini.cross("0", "kosong")).optimize()
    minus = pynini.cross("-", f"{w['minus']} ").ques
    cardinal = (minus + positive).optimize()

    digits_spoken = (digit + (pynutil.insert(" ") + digit).closure()).optimize()
    decimal = (
        minus + (positive | pynutil.insert("kosong")) + pynini.cross(".", f" {w['point']} ") + digits_spoken
    ).optimize()

    # ke-3 / ke3 -> ketiga; ke-1 -> pertama
    prefix = pynutil.delete("ke") + pynutil.delete("-").ques
    ordinal = (
        prefix + (pynini.cross("1", w["first"]) | pynutil.insert(w["ordinal_prefix"]) + not_input(positive, "1"))
    ).optimize()

    currencies = []
    for symbol, (major, minor) in tsv_dict(folder / "currency.tsv").items():
        amount = positive + pynutil.insert(f" {major}")
        cents = pynutil.delete(".") + (pynutil.delete("00") | pynutil.insert(" ") + two + pynutil.insert(f" {minor}"))
        currencies.append(pynutil.delete(symbol) + pynutil.delete(" ").ques + amount + cents.ques)
    currency = pynini.union(*currencies).optimize()

    percent = ((positive | decimal) + pynini.cross("%", f" {w['percent']}")).optimize()

    # phone numbers: a leading 0 or +, then digits with optional hyphens or spaces, read digit by digit
    spoken_digit = digit + pynutil.insert(" ")
    separator = pynutil.delete(pynini.union("-", " "))
    phone = (pynini.union("0", "+") + pynini.union(*"0123456789- ").closure(8)) @ (
        pynini.cross("+", "tambah ").ques + (spoken_digit | separator).closure(8)
    )
    trailing_space = pynini.cdrewrite(
        pynutil.delete(" "), "", "[EOS]", pynini.union(*"abcdefghijklmnopqrstuvwxyz ").closure()
    )
    phone = (phone @ trailing_space).optimize()

    # dates day/month/year (or with - or .), the month as its name in lower case
    months = tsv_map(folder / "months.tsv")
    month = (pynutil.delete("0").ques + pynini.union(*[str(m) for m in range(1, 13)])) @ months
    lowercase = pynini.cdrewrite(
        pynini.union(*[pynini.cross(c, c.lower()) for c in "ABCDEFGHIJKLMNOPQRSTUVWXYZ"]),
        "",
        "",
        pynini.union(*"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ").closure(),
    )
    day = (
        (pynini.union(*[f"{d:02d}" for d in range(1, 32)]) @ two)
        | (pynini.union(*"123456789") @ digit_1_9)
        | (pynini.union(*[str(d) for d in range(10, 32)]) @ two)
    )
    sep = pynutil.delete(pynini.union("/", "-", "."))
    year = (pynini.union(*"12") + DIGIT + DIGIT + DIGIT) @ positive
    date = (day + sep + pynutil.insert(" ") + (month @ lowercase) + sep + pynutil.insert(" ") + year).optimize()

    # web addresses: www.example.com -> www titik example titik com
    label = pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789-").closure(1)
    scheme = pynutil.delete(pynini.union("http://", "https://")).ques
    url = (
        scheme + label + (pynini.cross(".", f" {w['dot']} ") + label).closure(1) + pynutil.delete("/").ques
    ).optimize()
    url = (
        pynini.union("www.", "http://", "https://")
        + pynini.union(*"abcdefghijklmnopqrstuvwxyz0123456789-./:").closure()
    ) @ url

    return {
        "cardinal": cardinal,
        "decimal": decimal,
        "ordinal": ordinal,
        "currency": currency,
        "percent": percent,
        "phone": phone.optimize(),
        "date": date,
        "url": url.optimize(),
    }
