"""Bangla: what a reader says for written numbers, in the Indian numbering system.

Cardinals in lakh and crore, the number of crores said as a number above that
(``1000000009`` -> একশ কোটি নয়; ASCII or Bengali digits; ``-5`` -> মাইনাস পাঁচ,
``০৫`` -> শূন্য পাঁচ), decimals (দশমিক), percentages (শতাংশ), money with scale words
(``৳৫০০ কোটি`` -> পাঁচশ কোটি টাকা), years in a year context (``১৯৭১ সালে`` -> উনিশশ
একাত্তর সালে), dates (``১৬ ডিসেম্বর ১৯৭১``, ``২৯শে ডিসেম্বর`` -> উনত্রিশে ডিসেম্বর,
``১লা বৈশাখ`` -> পয়লা বৈশাখ, ``১৬/১২/১৯৭১``), telephone numbers (digit by digit),
ordinals (``২য়`` -> দ্বিতীয়, ``২১তম`` -> একুশতম), classifiers glued to numbers
(``১০টি`` -> দশটি, ``২টি`` -> দুটি) and words with numbers (``ঢাকা-১০`` -> ঢাকা দশ).
Left as written and counted: clock times (``১০:৩০``), ranges, ``x/y`` and numbers with a
hyphenated case ending (``২০০৫-এর``: said দুই হাজার পাঁচের).
"""

from __future__ import annotations

import pynini

from pipeline.text.verbalize.builders import DIGIT, tsv_words
from pipeline.text.verbalize.builders_indian import BENGALI, COLON, build_indian, script_letters

GRAMMARS = (
    "date",
    "time",
    "money",
    "year",
    "phone",
    "percent",
    "ordinal",
    "classifier",
    "range",
    "slash",
    "case_ending",
    "compound",
    "decimal",
    "cardinal",
)
LEFT = ("time", "range", "slash", "case_ending")
ALT = ()
MAX_WORDS = 4
NATIVE_DIGITS = "০১২৩৪৫৬৭৮৯"


def starters(folder) -> set[str]:
    """Words a group may start with before its number (ডিসেম্বর ১৯৭১, Tk ৫০০)."""
    currency = [c for c in tsv_words(folder / "currency.tsv") if not any(ch.isdigit() for ch in c)]
    return {*tsv_words(folder / "year_before.tsv"), *tsv_words(folder / "months.tsv"), *currency}


def build(folder):
    grammars = build_indian(folder, script_letters(BENGALI), crores_as_number=True)
    # clock times are left as written: Bangla says them with টা and a time of day (সকাল দশটা ত্রিশ
    # মিনিট) the text rarely gives; the reading below (দশ ত্রিশ) is only for alignment
    hour = pynini.union(*[str(h) for h in range(0, 25)], *[f"{h:02d}" for h in range(0, 10)])
    minute = pynini.union(*"012345") + DIGIT
    cardinal = grammars["cardinal"]
    grammars["time"] = ((hour @ cardinal) + pynini.cross(COLON, " ") + (minute @ cardinal)).optimize()
    return {name: grammars[name] for name in GRAMMARS}
