"""Mandarin g2p from pinyin (pypinyin): each character as its initial and final.

Tones are left out by default (as English stress is); ``keep_tones`` appends the
tone number to the final.  Words with a non-Han character are skipped (counted).
"""

from __future__ import annotations

from pipeline.phonetics.g2p import WordByWordG2p
from pipeline.text.scripts import char_script


class MandarinG2p(WordByWordG2p):
    skip_reason = "not_han"

    lang = "zh"

    def __init__(self, keep_tones: bool = False):
        self.keep_tones = keep_tones

    def word(self, word: str) -> tuple[str, ...] | None:
        from pypinyin import Style, lazy_pinyin

        if not word or any(char_script(c) != "Han" for c in word):
            return None
        initials = lazy_pinyin(word, style=Style.INITIALS, strict=False)
        finals = lazy_pinyin(word, style=Style.FINALS_TONE3 if self.keep_tones else Style.FINALS, strict=False)
        phones: list[str] = []
        for initial, final in zip(initials, finals):
            phones.extend(p for p in (initial, final) if p)
        return tuple(phones) or None


def make(lang: str) -> MandarinG2p:
    return MandarinG2p()
