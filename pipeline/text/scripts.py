"""Which writing system a word is in, from Unicode character names.

Used to refuse aligning a reference and a hypothesis in different scripts and to
find words in another script than the language's (indic-punct drops those).
"""

from __future__ import annotations

import functools
import unicodedata
from collections import Counter

# character-name prefixes that do not name a script
_GENERIC = {"DIGIT", "FULLWIDTH", "HALFWIDTH", "MODIFIER", "COMBINING", "SUPERSCRIPT", "SUBSCRIPT"}
_ALIASES = {"CJK": "Han", "HIRAGANA": "Japanese", "KATAKANA": "Japanese", "ORIYA": "Odia", "GURMUKHI": "Gurmukhi"}


@functools.lru_cache(maxsize=65536)
def char_script(ch: str) -> str | None:
    """Script of a letter or mark (``Latin``, ``Bengali``, ``Devanagari``, ``Han``...); None otherwise."""
    if not unicodedata.category(ch).startswith(("L", "M")):
        return None
    name = unicodedata.name(ch, "")
    if not name:
        return None
    if ch.isascii() or name.startswith("LATIN"):
        return "Latin"
    first = name.split(" ")[0]
    if first in _GENERIC:
        return "Latin" if "LATIN" in name else None
    return _ALIASES.get(first, first.capitalize())


def word_script(word: str) -> str | None:
    """The script most of a word's letters are in (None for digits and symbols)."""
    counts = Counter(s for s in map(char_script, word) if s)
    return counts.most_common(1)[0][0] if counts else None


def dominant_script(words) -> str | None:
    counts = Counter(s for s in map(word_script, words) if s)
    return counts.most_common(1)[0][0] if counts else None
