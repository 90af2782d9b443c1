"""Mandarin: jieba word segmentation (words are the units that get labels), full-width
punctuation, stray spaces between Chinese characters removed, Latin words kept.

Segmentation runs on jieba-rs (the ``rjieba`` binding): jieba's algorithm and dictionary
compiled, 10-15x the speed of the Python package. It gives Python jieba's words on all
but a few real lines, where it keeps a Latin or digit run joined by ``.`` or ``-`` whole
(``E.coli``, ``Michaels-Ober``, ``1894-1895``) instead of cutting out a mark that the
labeller would read as a sentence end or a comma; tests/test_languages.py compares the two
on the IWSLT and FLORES zh text.

A user dictionary in jieba's format (``word [freq] [tag]`` per line) is a corpus option
(``user_dict`` in the registry, ``--user-dict`` on the command line): a param and a DVC dependency.
"""

from __future__ import annotations

import dataclasses
import functools
import re

from pipeline.errors import InputError
from pipeline.text.languages import Language

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# a space between two Chinese characters (or a Chinese character and a full-width mark) is a typo
_STRAY_SPACE = re.compile(rf"(?<=[{_HAN}\u3000-\u303f\uff00-\uffef]) +(?=[{_HAN}\u3000-\u303f\uff00-\uffef])")
# ASCII marks written right after a Chinese character are full-width marks typed on the wrong layout
_HALF_TO_FULL = {",": "，", "?": "？", "!": "！", ";": "；", ":": "："}
_ASCII_MARK_AFTER_HAN = re.compile(rf"(?<=[{_HAN}])([,?!;:])")
# jieba's own user-dictionary line format
_USER_DICT_LINE = re.compile(r"^(.+?)( [0-9]+)?( [a-z]+)?$")


def read_user_dictionary(path: str) -> list[tuple[str, int | None, str | None]]:
    """(word, frequency or None, tag or None) per line of a jieba user dictionary."""
    entries = []
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read().lstrip("\ufeff")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: cannot read the jieba user dictionary: {err}") from None
    for line in text.splitlines():
        line = line.strip()
        if not line:
            continue
        word, freq, tag = _USER_DICT_LINE.match(line).groups()  # matches any non-empty line
        entries.append((word, int(freq) if freq else None, tag.strip() if tag else None))
    return entries


@functools.cache
def segmenter(user_dict: str | None):
    """A jieba-rs segmenter with jieba's default dictionary, plus the user dictionary."""
    import rjieba

    jieba = rjieba.Jieba()
    for word, freq, tag in read_user_dictionary(user_dict) if user_dict else ():
        jieba.add_word(word, freq, tag)  # freq None: jieba's suggested frequency, as in jieba
    return jieba


def normalize_block(text: str) -> str:
    """Over a block of lines at once: neither rewrite can reach across a newline."""
    text = _STRAY_SPACE.sub("", text)
    return _ASCII_MARK_AFTER_HAN.sub(lambda m: _HALF_TO_FULL[m.group(1)], text)


def tokenize(line: str, user_dict: str | None = None) -> list[str]:
    """jieba words; whitespace is a separator and never a token."""
    jieba = segmenter(user_dict)
    pieces = jieba.cut(line, True)
    if "'" in line:
        pieces = _latin_apostrophes_joined(pieces)
    return [w for w in pieces if w.strip()]


def _latin_apostrophes_joined(pieces: list[str]) -> list[str]:
    """``O'flynn`` whole: jieba cuts a Latin word at its apostrophe, which would leave the
    apostrophe a word of its own (jieba's pieces are the line, so neighbours touch)."""
    out: list[str] = []
    i = 0
    while i < len(pieces):
        piece = pieces[i]
        while (
            i + 2 < len(pieces)
            and pieces[i + 1] == "'"
            and piece[-1:].isascii()
            and piece[-1:].isalpha()
            and pieces[i + 2][:1].isascii()
            and pieces[i + 2][:1].isalpha()
        ):
            piece += "'" + pieces[i + 2]
            i += 2
        out.append(piece)
        i += 1
    return out


def with_user_dict(path: str) -> Language:
    """Mandarin segmented with jieba's dictionary plus the user dictionary at ``path`` (read now:
    an unreadable file is an error naming it)."""
    segmenter(path)
    return dataclasses.replace(LANGUAGE, tokenize=functools.partial(tokenize, user_dict=path))


LANGUAGE = Language(
    code="zh",
    name="Mandarin",
    normalize_block=normalize_block,
    tokenize=tokenize,
    scripts=("Han",),
)
