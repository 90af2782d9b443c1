"""Shared helper for the Indic languages normalized by indic-nlp-library."""
from __future__ import annotations

import functools
from typing import Callable


@functools.lru_cache(maxsize=None)
def _normalizer(code: str):
    from indicnlp.normalize.indic_normalize import IndicNormalizerFactory

    # remove_nuktas=False: nukta letters (য়, ड़) are distinct letters
    return IndicNormalizerFactory().get_normalizer(code, remove_nuktas=False)


def indic_normalizer(code: str) -> Callable[[list[str]], list[str]]:
    def normalize(lines: list[str]) -> list[str]:
        norm = _normalizer(code).normalize
        return [norm(line) if line else line for line in lines]

    normalize.__name__ = f"indic_normalize_{code}"
    return normalize


def indic_language(code: str, name: str, script: str):
    from . import Language

    return Language(
        code=code,
        name=name,
        keep_joiners=True,
        normalize_lines=indic_normalizer(code),
        scripts=(script,),
        drop_other_scripts=True,
    )
