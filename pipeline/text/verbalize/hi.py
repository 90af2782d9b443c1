"""Hindi: what a reader says for written numbers, in the Indian numbering system.

Cardinals to 10^19 in lakh, crore, arab, kharab, nil, padma, shankh (ASCII or Devanagari
digits; ``-5`` -> माइनस पाँच, ``०५`` -> शून्य पाँच), decimals (दशमलव), percentages,
money with scale words (``₹45 करोड़`` -> पैंतालीस करोड़ रुपये), years in a year context
(``1947 में`` -> उन्नीस सौ सैंतालीस में), dates (``15 अगस्त 1947``, ``15/08/1947``),
times (``10:30`` -> दस बजकर तीस मिनट, ``9:15 बजे`` -> सवा नौ बजे), telephone numbers
(digit by digit), measures (``5 किमी`` -> पाँच किलोमीटर), fractions (``3/4`` -> तीन
चौथाई), ordinals (``21वीं`` -> इक्कीसवीं) and words with numbers (``कोविड-19``).  Left
as written and counted: ranges (``10-15``: दस से पंद्रह or दस-पंद्रह) and ``x/y`` that
is no proper fraction.
"""

from __future__ import annotations

from pipeline.text.verbalize.builders import tsv_words
from pipeline.text.verbalize.builders_indian import DEVANAGARI, build_indian, script_letters

GRAMMARS = (
    "date",
    "time",
    "money",
    "year",
    "phone",
    "measure",
    "percent",
    "fraction",
    "ordinal",
    "range",
    "slash",
    "compound",
    "decimal",
    "cardinal",
)
LEFT = ("range", "slash")
ALT = ()
MAX_WORDS = 4
NATIVE_DIGITS = "०१२३४५६७८९"


def starters(folder) -> set[str]:
    """Words a group may start with before its number (सन् 1947, अगस्त 1947, रु. 500, पिन कोड 110023)."""
    currency = [c for c in tsv_words(folder / "currency.tsv") if not any(ch.isdigit() for ch in c)]
    return {
        *tsv_words(folder / "year_before.tsv"),
        *tsv_words(folder / "months.tsv"),
        *tsv_words(folder / "phone_context.tsv"),
        *currency,
    }


def build(folder):
    grammars = build_indian(folder, script_letters(DEVANAGARI))
    return {name: grammars[name] for name in GRAMMARS}
