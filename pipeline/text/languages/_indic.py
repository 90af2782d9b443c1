"""Shared helper for the Indic languages normalized by indic-nlp-library."""

from __future__ import annotations

import functools
from collections.abc import Callable


@functools.cache
def _normalizer(code: str):
    from indicnlp.normalize.indic_normalize import IndicNormalizerFactory

    # remove_nuktas=False: nukta letters (য়, ड़) are distinct letters
    return IndicNormalizerFactory().get_normalizer(code, remove_nuktas=False)


def indic_normalizer(code: str) -> Callable[[str], str]:
    def normalize(text: str) -> str:
        """indic-nlp's normalizer, given a block of lines: it is some 30 ``str.replace`` and ``re.sub``
        passes, far cheaper once over a block than once per line.  With the options used here none
        of them reaches across a newline (character rewrites; ``.`` in its patterns stops at one; the
        word-level vowel-ending option is off): tests compare block and line by line on every
        language's real corpora."""
        return _normalizer(code).normalize(text)

    normalize.__name__ = f"indic_normalize_{code}"
    return normalize


def indic_language(code: str, name: str, script: str):
    from pipeline.text.languages import Language

    return Language(
        code=code,
        name=name,
        keep_joiners=True,
        normalize_block=indic_normalizer(code),
        scripts=(script,),
        drop_other_scripts=True,
    )
