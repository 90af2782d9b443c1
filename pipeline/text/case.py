"""Capitalization as a label per word, so the lowercased words plus their labels give back the text.

``case_of(word)`` -> (label, surface): ``O`` when the word is its own lowercase (caseless scripts
too), ``U`` when it is its lowercase with the first cased letter raised (``Paris``, ``I``,
``'Twas``), ``A`` when it is its lowercase raised whole (``NASA``, ``U.S.``), else ``M`` with the
exact form kept as ``surface`` (``iPhone``, ``McDonald``).  :func:`apply_case` inverts it
exactly: each label is chosen only if applying it gives the word back.
"""

from __future__ import annotations


def capitalize_first(word: str) -> str:
    """The word with its first lowercase letter raised (``'twas`` -> ``'Twas``)."""
    for i, char in enumerate(word):
        upper = char.upper()
        if upper != char:
            return word[:i] + upper + word[i + 1 :]
    return word


def case_of(word: str) -> tuple[str, str | None]:
    return case_of_stored(word, word)


def case_of_stored(original: str, stored: str) -> tuple[str, str | None]:
    """:func:`case_of` for a word kept as ``stored`` (lowercased by another routine, or as written):
    the label that :func:`apply_case` turns ``stored`` back into ``original`` with."""
    lower = stored.lower()
    if original == lower:
        return "O", None
    if original == capitalize_first(lower):
        return "U", None
    if original == lower.upper():
        return "A", None
    return "M", original


def apply_case(word: str, label: str, surface: str | None = None) -> str:
    """The cased form of ``word`` (stored lowercased, or caseless) under ``label``."""
    if label == "M":
        return surface if surface else word
    lower = word.lower()
    if label == "U":
        return capitalize_first(lower)
    if label == "A":
        return lower.upper()
    return lower


def restore_case(words: list[str], cases: list[str], mixed_case: dict[str, str] | None = None) -> list[str]:
    """Words cased by their labels; an ``M`` word takes its surface form from the lexicon saved with the
    model (mixed-case forms seen in train), else its first letter raised."""
    mixed_case = mixed_case or {}
    out = []
    for word, label in zip(words, cases):
        if label == "M":
            surface = mixed_case.get(word.lower())
            out.append(surface if surface else capitalize_first(word.lower()))
        else:
            out.append(apply_case(word, label))
    return out
