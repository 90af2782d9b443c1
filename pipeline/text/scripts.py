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
#: the stats key of the words in another script than the corpus's language, ``<key>:<Script>``
OTHER_SCRIPT_WORDS = "other_script_words"
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


@functools.lru_cache(maxsize=1 << 16)
def word_script(word: str) -> str | None:
    """The script most of a word's letters are in (None for digits and symbols)."""
    counts = Counter(s for s in map(char_script, word) if s)
    return counts.most_common(1)[0][0] if counts else None


def dominant_script(words) -> str | None:
    counts = Counter(s for s in map(word_script, words) if s)
    return counts.most_common(1)[0][0] if counts else None


def other_script_words(words, scripts: tuple[str, ...]):
    """Which of ``words`` (an Arrow string array) have letters, none of them in ``scripts``.  For a
    Latin-script language only the words with a non-ASCII byte need the regex (ASCII letters are
    Latin): the check costs little on its own text."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.text.normalize import lettered, non_ascii_rows

    other = np.zeros(len(words), dtype=bool)
    if not len(words) or not scripts:
        return other
    rows = non_ascii_rows(words) if "Latin" in scripts else np.arange(len(words))
    if not len(rows):
        return other
    subset = words.take(pa.array(rows)) if len(rows) < len(words) else words
    own = "|".join(f"\\p{{{s}}}" for s in scripts)
    outside = ~pc.match_substring_regex(subset, f"(?:{own})").to_numpy(zero_copy_only=False)
    if outside.any():
        # the letter test on the words outside the scripts only (most words are in them)
        other[rows[np.flatnonzero(outside)[lettered(subset.filter(pa.array(outside)))]]] = True
    return other


def script_tally(words) -> Counter:
    """Words (an Arrow string array) per script, each distinct word's script read once."""
    import pyarrow.compute as pc

    tally: Counter = Counter()
    if not len(words):
        return tally
    counted = pc.value_counts(words)
    for word, n in zip(counted.field("values").to_pylist(), counted.field("counts").to_pylist()):
        tally[word_script(word) or "none"] += n
    return tally
