"""Mandarin: jieba word segmentation (words are the units that get labels), full-width
punctuation, stray spaces between Chinese characters removed, Latin words kept.

A user dictionary for jieba can be given with the environment variable
``PUNCT_JIEBA_USER_DICT`` or the reader option ``jieba_user_dict``.
"""
from __future__ import annotations

import functools
import os
import re

from . import Language

_HAN = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
# a space between two Chinese characters (or a Chinese character and a full-width mark) is a typo
_STRAY_SPACE = re.compile(rf"(?<=[{_HAN}\u3000-\u303f\uff00-\uffef]) +(?=[{_HAN}\u3000-\u303f\uff00-\uffef])")
# ASCII marks written right after a Chinese character are full-width marks typed on the wrong layout
_HALF_TO_FULL = {",": "，", "?": "？", "!": "！", ";": "；", ":": "："}
_ASCII_MARK_AFTER_HAN = re.compile(rf"(?<=[{_HAN}])([,?!;:])")


@functools.lru_cache(maxsize=None)
def _jieba(user_dict: str | None):
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    tokenizer = jieba.Tokenizer()
    if user_dict:
        tokenizer.load_userdict(user_dict)
    tokenizer.initialize()
    return tokenizer


def normalize_block(text: str) -> str:
    """Over a block of lines at once: neither rewrite can reach across a newline."""
    text = _STRAY_SPACE.sub("", text)
    return _ASCII_MARK_AFTER_HAN.sub(lambda m: _HALF_TO_FULL[m.group(1)], text)


def tokenize(line: str) -> list[str]:
    """jieba words; whitespace is a separator and never a token."""
    tokenizer = _jieba(os.environ.get("PUNCT_JIEBA_USER_DICT") or None)
    return [w for w in tokenizer.lcut(line, HMM=True) if w.strip()]


LANGUAGE = Language(
    code="zh",
    name="Mandarin",
    normalize_block=normalize_block,
    tokenize=tokenize,
    scripts=("Han",),
)
