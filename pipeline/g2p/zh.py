"""Mandarin g2p from pinyin (pypinyin): each character as its initial and final.

Tones are left out by default (as English stress is); ``keep_tones`` appends the
tone number to the final.  Words with a non-Han character are skipped (counted).
"""
from __future__ import annotations

from collections import Counter

from ..scripts import char_script


class MandarinG2p:
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

    def phonemize(self, words: list[str]):
        out, skipped = [], Counter()
        for w in words:
            phones = self.word(w)
            if phones is None:
                skipped["not_han"] += 1
            out.append(phones)
        return out, skipped


def make(lang: str) -> MandarinG2p:
    return MandarinG2p()
