"""Grapheme-to-phoneme conversion per language, for confusable vocabularies.

``get_g2p(lang).phonemize(words)`` returns one phoneme tuple per word (None for a
word it cannot or should not convert) and counts of the skipped words by reason.
English uses CMUdict and g2p-en's network offline; the other languages use
approximations documented in their modules.
"""

from __future__ import annotations

import functools
import importlib
from collections import Counter
from typing import Protocol

from pipeline.errors import ParamsError


class G2p(Protocol):
    lang: str

    def phonemize(self, words: list[str]) -> tuple[list[tuple[str, ...] | None], Counter]: ...


class NoG2pError(ParamsError):
    pass


class WordByWordG2p:
    """Base of the rule-based converters: ``word(w)`` gives phonemes or None (skipped, counted)."""

    lang = ""
    skip_reason = "not_convertible"

    def word(self, word: str) -> tuple[str, ...] | None:
        raise NotImplementedError

    def phonemize(self, words: list[str]) -> tuple[list[tuple[str, ...] | None], Counter]:
        out, skipped = [], Counter()
        for w in words:
            phones = self.word(w)
            if phones is None:
                skipped[self.skip_reason] += 1
            out.append(phones)
        return out, skipped


def g2p_module(lang: str) -> str:
    """The module that converts ``lang`` (the language registry's; several Indic languages share one)."""
    from pipeline.text import registry

    entry = registry.lookup(lang)
    if entry is None or entry.g2p is None:
        raise NoG2pError(
            f"no grapheme-to-phoneme conversion for language {lang!r}; available: {', '.join(registry.codes('g2p'))}"
        )
    return entry.g2p


@functools.cache
def get_g2p(lang: str) -> G2p:
    """The grapheme-to-phoneme converter of ``lang`` (one per process), found through the language
    registry; a language without one is a ParamsError naming those that have one."""
    return importlib.import_module(g2p_module(lang)).make(lang)
