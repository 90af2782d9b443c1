"""Indic g2p approximation from indic-nlp-library's script data.

Brahmic scripts are close to phonemic, and Unicode lays out every Indic block in
the same order, so a character's offset in its block (indic-nlp-library's
``get_offset``) names the same sound in Devanagari, Bengali, Tamil...  Phonemes
are written as the Devanagari character of that offset, so confusables are
comparable across the 11 languages.  Rules: a vowel sign sounds as its
independent vowel (``lexicons/common/indic_vowel_signs.tsv``); a consonant not
followed by a vowel sign or virama carries the inherent vowel (अ), except at the
end of a word (schwa deletion, true of Hindi, Marathi, Punjabi, Gujarati and
mostly of Bangla); a nukta marks its consonant; anusvara, candrabindu and
visarga are phonemes of their own.  It ignores medial schwa deletion and
consonant-cluster assimilation: an approximation, good enough to rank confusions.
"""

from __future__ import annotations

import functools

from indicnlp import langinfo

from pipeline.errors import ParamsError
from pipeline.phonetics.g2p import WordByWordG2p
from pipeline.text.lexicon import LEXICON_DIR, read_tsv_rows

SCHWA = chr(0x0900 + 0x05)
NUKTA = chr(0x0900 + 0x3C)


@functools.cache
def vowel_signs() -> dict[int, int]:
    path = LEXICON_DIR / "common" / "indic_vowel_signs.tsv"
    return {int(a, 16): int(b, 16) for _, (a, b, *_) in read_tsv_rows(path, 2)}


class IndicG2p(WordByWordG2p):
    skip_reason = "not_in_script_or_has_digits"

    def __init__(self, lang: str):
        if lang not in langinfo.SCRIPT_RANGES:
            raise ParamsError(f"indic-nlp-library has no script data for {lang!r}")
        self.lang = lang
        self.signs = vowel_signs()

    def word(self, word: str) -> tuple[str, ...] | None:
        phones: list[str] = []
        pending = False  # a consonant waiting for its vowel
        for ch in word:
            offset = langinfo.get_offset(ch, self.lang)
            if not 0 <= offset < 0x80:
                return None
            if langinfo.is_number_offset(offset):
                return None
            if langinfo.is_consonant_offset(offset):
                if pending:
                    phones.append(SCHWA)
                phones.append(chr(0x0900 + offset))
                pending = True
            elif langinfo.is_nukta_offset(offset):
                if phones:
                    phones[-1] += NUKTA
            elif offset in self.signs:
                phones.append(chr(0x0900 + self.signs[offset]))
                pending = False
            elif langinfo.is_halanta_offset(offset):
                pending = False
            elif langinfo.is_vowel_offset(offset) or offset in (0x01, 0x02, 0x03):
                if pending:
                    phones.append(SCHWA)
                pending = False
                phones.append(chr(0x0900 + offset))
            # other marks (danda, avagraha, ...) carry no sound
        return tuple(phones) or None


def make(lang: str) -> IndicG2p:
    return IndicG2p(lang)
