"""Round trip through an independent inverse normalizer: NVIDIA NeMo's ITN reads our spoken forms back.

Compared are the numbers each side holds (``tk 3.5 million`` and NeMo's ``৳3.5 million``
both hold 3.5; a telephone number's digits in order), since the written style differs
(NeMo writes ``05:00 p.m.``, single digits as words, ``३८.७ प्रतिशत``).  Classes where the
inverse normalizer has no written form to return (fractions, decades, words with numbers)
are not compared.  Needs ``nemo-text-processing`` (not a project requirement: installed
with ``--no-deps`` next to pynini 2.1.7); the test is skipped without it.
"""

import re
import unicodedata

import pytest

from pipeline.text.lexicon import LEXICON_DIR
from pipeline.text.verbalize import cache_dir, read_cases
from pipeline.text.verbalize.builders import tsv_dict

pytestmark = pytest.mark.slow

SHARED = ["cardinal", "decimal", "ordinal", "year", "date", "time", "money", "percent", "measure", "phone"]
ROUND_TRIP = {"en": [*SHARED, "range"], "hi": SHARED}
# what NeMo leaves as words (small numbers, month names) and expands (lakh), for the comparison only
WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve"]
SMALL = {w: str(n) for n, w in enumerate(WORDS)} | {"oh": "0"}
MONTHS = {m: n for n, (m,) in tsv_dict(LEXICON_DIR / "en/verbalize/month_numbers.tsv").items()}
SMALL |= MONTHS | {m[:3]: n for m, n in MONTHS.items()}
SCALES = {"lakh": 10**5, "crore": 10**7, "k": 10**3, "लाख": 10**5, "करोड़": 10**7}
DEVANAGARI_DIGITS = str.maketrans("०१२३४५६७८९", "0123456789")


def numbers(text: str, family: str) -> list:
    """The numbers a text holds, in order; a telephone number's digits; a clock time's digits.

    Whole minutes of a clock time are dropped (5 pm = 05:00 p.m.), lakh and k multiplied out.
    """
    text = unicodedata.normalize("NFC", text.lower().translate(DEVANAGARI_DIGITS))
    text = " ".join(SMALL.get(w, w) for w in re.split(r"[\s-]+", text))
    text = re.sub(r"\bp(\d\d)\b", r"0.\1", text)  # NeMo's Hindi paise: p50 for 0.50
    if family == "time":
        text = re.sub(r"(\d)\.(\d\d)", r"\1:\2", text)
    text = re.sub(r"(?<=\d),(?=\d)", "", text)
    text = re.sub(r"[:.]00(?!\d)", "", text)
    if family == "phone":
        return [re.sub(r"\D", "", text)]
    found = []
    scales = "|".join(SCALES)
    for value, scale in re.findall(rf"(\d*\.?\d+)(?: ?({scales})(?!\w))?", text):
        found.append(round(float(value) * SCALES.get(scale, 1), 6))
    if family == "time":
        return ["".join(str(int(x)) for x in found)]
    # a date's parts come back in the order said (2012-07-25: july 25 2012)
    return sorted(found) if family == "date" else found


def comparable(written: str) -> bool:
    """Fractions and decades have no written form in NeMo's English inverse normalizer."""
    return not re.search(r"\d/\d|[½¼¾]|\ds\b", written)


@pytest.fixture(scope="module")
def inverse_normalizer():
    itn = pytest.importorskip("nemo_text_processing.inverse_text_normalization.inverse_normalize")
    folder = cache_dir() / "nemo"
    folder.mkdir(parents=True, exist_ok=True)
    built = {}

    def get(lang):
        if lang not in built:
            built[lang] = itn.InverseNormalizer(lang=lang, cache_dir=str(folder))
        return built[lang]

    return get


@pytest.mark.parametrize("lang", sorted(ROUND_TRIP))
def test_inverse_normalizer_reads_the_spoken_forms_back(lang, inverse_normalizer):
    itn = inverse_normalizer(lang)
    failures, compared = [], 0
    for family in ROUND_TRIP[lang]:
        for lineno, written, spoken in read_cases(LEXICON_DIR / lang / "verbalize" / f"{family}.cases"):
            if not spoken or not comparable(written):
                continue
            back = itn.inverse_normalize(spoken, verbose=False)
            compared += 1
            if numbers(written, family) != numbers(back, family):
                failures.append(f"{family}.cases:{lineno}: {written!r} -> {spoken!r} -> {back!r}")
    assert compared > 300
    assert not failures, "\n".join(failures)


def test_hindi_number_words_are_known_to_the_inverse_normalizer():
    """Every Hindi word for 0-99 is one NeMo's Hindi inverse normalizer reads (95: पंचानबे, not पचानबे)."""
    nemo = pytest.importorskip("nemo_text_processing")
    from pathlib import Path

    folder = Path(nemo.__file__).parent / "inverse_text_normalization/hi/data/numbers"
    known: dict[int, set[str]] = {}
    for name in ("digit.tsv", "teens_and_ties.tsv", "zero.tsv"):
        for digits, word in (line.split("\t")[:2] for line in (folder / name).read_text("utf-8").splitlines() if line):
            known.setdefault(int(digits.translate(DEVANAGARI_DIGITS)), set()).add(unicodedata.normalize("NFC", word))
    ours = tsv_dict(LEXICON_DIR / "hi/verbalize/numbers.tsv")
    unknown = {n: w for n, (w,) in ours.items() if unicodedata.normalize("NFC", w) not in known[int(n)]}
    assert not unknown
