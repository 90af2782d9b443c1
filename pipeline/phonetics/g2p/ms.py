"""Malay g2p: the spelling is close to phonemic, so a letter -> phoneme table
(``lexicons/ms/g2p.tsv``, longest match first) does it.  Words with other
characters than its letters are skipped (counted)."""

from __future__ import annotations

from pipeline.phonetics.g2p import WordByWordG2p
from pipeline.text.lexicon import LEXICON_DIR, read_tsv_rows


class MalayG2p(WordByWordG2p):
    skip_reason = "not_malay_letters"

    lang = "ms"

    def __init__(self):
        rows = read_tsv_rows(LEXICON_DIR / "ms" / "g2p.tsv", 2)
        self.table = {g: p for _, (g, p, *_) in rows}
        self.longest = max(len(g) for g in self.table)

    def word(self, word: str) -> tuple[str, ...] | None:
        word = word.lower().replace("-", "")
        phones, i = [], 0
        while i < len(word):
            for size in range(self.longest, 0, -1):
                piece = word[i : i + size]
                if len(piece) == size and piece in self.table:
                    phones.append(self.table[piece])
                    i += size
                    break
            else:
                return None
        return tuple(phones) or None


def make(lang: str) -> MalayG2p:
    return MalayG2p()
