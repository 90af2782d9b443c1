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


# What indic-nlp's normalizer (indic_normalize.py of indic-nlp-library 0.92, with the options of
# _normalizer) rewrites: the strings its str.replace calls look for, per script, and a colon after a
# letter of the script's block (its visarga re.sub).  Every rewrite needs its string in the text, so a
# line holding none of them (the normalizer's first rewrite cannot fire, nor then any later one)
# comes back unchanged: only the lines that hold one are given to it (a fifth of a corpus, or less).
# tests/test_languages.py checks this on every line of the real Indic corpora and on every
# character of each script's block, in many contexts.
_EVERY_SCRIPT = (
    "\ufeff\ufffe\u2060\u00ad\u200b\u00a0\u200c\u200d"  # BaseNormalizer.normalize
    "\u201e\u201c\u201d\u2013\u2014\u00b4\u2018\u201a\u2019\u2026",  # _normalize_punctuations
    ("''",),  # _normalize_punctuations ("´´" cannot occur: "´" went before it)
)
#: per script: (its block's first code point, characters it rewrites, longer strings it rewrites)
_SCRIPT_REWRITES: dict[str, tuple[int, str, tuple[str, ...]]] = {
    "Devanagari": (0x0900, "\u0972\u0929\u0931\u0934\u0958\u0959\u095a\u095b\u095c\u095d\u095e\u095f|", ()),
    "Gurmukhi": (
        0x0A00,
        "\u0a33\u0a36\u0a59\u0a5a\u0a5b\u0a5e\u0a64\u0a65|",
        (
            "\u0a05\u0a3e",
            "\u0a72\u0a3f",
            "\u0a72\u0a40",
            "\u0a73\u0a41",
            "\u0a73\u0a42",
            "\u0a72\u0a47",
            "\u0a05\u0a48",
            "\u0a73\u0a4b",
            "\u0a05\u0a4c",
        ),
    ),
    "Gujarati": (0x0A80, "\u0ae4\u0ae5", ()),
    "Bengali": (0x0980, "\u09dc\u09dd\u09df\u09e4\u09e5|\u09f7", ("\u09c7\u09be", "\u09c7\u09d7")),
    "Oriya": (
        0x0B00,
        "\u0b5c\u0b5d\u0b64\u0b65\u0b7c\u0b35",
        ("\u0b05\u0b3e", "\u0b0f\u0b57", "\u0b13\u0b57", "\u0b47\u0b56", "\u0b47\u0b3e", "\u0b47\u0b57"),
    ),
    "Tamil": (0x0B80, "\u0be4\u0be5", ("\u0b92\u0bd7", "\u0bc6\u0bbe", "\u0bc7\u0bbe", "\u0bc6\u0bd7")),
    "Telugu": (0x0C00, "\u0c64\u0c65", ("\u0c46\u0c56",)),
    "Kannada": (
        0x0C80,
        "\u0ce4\u0ce5",
        ("\u0cbf\u0cd5", "\u0cc6\u0cd5", "\u0cc6\u0cd6", "\u0cc6\u0cc2", "\u0cca\u0cd5"),
    ),
    "Malayalam": (
        0x0D00,
        "\u0d64\u0d65\u0d57",  # and the chillu sequences, which end in a joiner (above)
        ("\u0d46\u0d3e", "\u0d47\u0d3e"),
    ),
}


def _re2(text: str) -> str:
    return "".join(f"\\x{{{ord(c):x}}}" for c in text)


@functools.cache
def rewrites(script: str) -> str:
    """An RE2 pattern that every line indic-nlp's normalizer of ``script`` changes matches."""
    from pipeline.text.normalize import char_class

    start, chars, strings = _SCRIPT_REWRITES[script]
    alternatives = [char_class(_EVERY_SCRIPT[0] + chars)]
    alternatives += [_re2(s) for s in (*_EVERY_SCRIPT[1], *strings)]
    alternatives.append(f"[\\x{{{start:x}}}-\\x{{{start + 0x7F:x}}}]:")  # the visarga rewrite
    return "|".join(alternatives)


def indic_language(code: str, name: str, script: str):
    from pipeline.text.languages import Language

    return Language(
        code=code,
        name=name,
        keep_joiners=True,
        normalize_block=indic_normalizer(code),
        block_rewrites=rewrites(script),
        scripts=(script,),
        drop_other_scripts=True,
    )
