"""Unicode clean-up shared by every language, column-wise on Arrow string arrays.

Only lines that are not pure ASCII need any work (ASCII control whitespace is
handled by whitespace splitting), so English text passes almost for free.
"""
from __future__ import annotations

import re
import unicodedata

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: deleted everywhere: zero-width space, word joiner, BOM, soft hyphen, direction marks
DELETE = "\u200b\u2060\ufeff\u00ad\u200e\u200f"
#: joiners shape conjuncts in Indic scripts, so those languages keep them
JOINERS = "\u200c\u200d"
#: every other kind of space becomes an ASCII space (no-break, narrow, figure, em/en,
#: ideographic, line separators: a separator inside a line must not split it)
SPACES = "\u00a0\u202f\u2007\u3000\u1680\u205f\u2028\u2029\u0085" + "".join(chr(c) for c in range(0x2000, 0x200B))


def _class(chars: str) -> str:
    return "[" + "".join(f"\\x{{{ord(c):04x}}}" for c in chars) + "]"


_DELETE_RE = {False: _class(DELETE + JOINERS), True: _class(DELETE)}
_SPACES_RE = _class(SPACES)
_ANY_RE = {False: _class(DELETE + JOINERS + SPACES), True: _class(DELETE + SPACES)}
#: the same classes for Python's re, which scans a whole decoded buffer at once
_ANY_PY_RE = {keep: re.compile("[" + re.escape((DELETE if keep else DELETE + JOINERS) + SPACES) + "]")
              for keep in (False, True)}


def split_lines(text: str) -> pa.Array:
    """A text's lines as an Arrow array (a final newline ends the last line, adds none)."""
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        return pa.array([], pa.string())
    return split_exactly(text)


def split_exactly(text: str) -> pa.Array:
    """The pieces of ``text`` between newlines, every one (the inverse of :func:`join_lines`)."""
    return pc.list_flatten(pc.split_pattern(pa.array([text], pa.large_string()), "\n")).cast(pa.string())


def clean_lines(lines: pa.Array, keep_joiners: bool = False) -> pa.Array:
    """NFC, no BOM or zero-width characters, one kind of space; the line count is kept."""
    if len(lines) == 0:
        return lines
    non_ascii = pc.invert(pc.string_is_ascii(lines))
    if not pc.any(non_ascii).as_py():
        return lines
    subset = lines.filter(non_ascii)
    changed = False
    # most text has no zero-width or odd space at all, and much is NFC already: one decoding of
    # the array's character buffer answers both questions
    text = _buffer_text(subset)
    nfc = unicodedata.is_normalized("NFC", text)
    if _ANY_PY_RE[keep_joiners].search(text):
        # the few lines that hold such characters are rewritten, not the whole column
        dirty = pc.match_substring_regex(subset, _ANY_RE[keep_joiners])
        fixed = pc.replace_substring_regex(subset.filter(dirty), _DELETE_RE[keep_joiners], "")
        fixed = pc.replace_substring_regex(fixed, _SPACES_RE, " ")
        subset = pc.replace_with_mask(subset, dirty, fixed)
        # the other lines' NFC status is known; a deletion may bring marks together
        nfc = nfc and unicodedata.is_normalized("NFC", _buffer_text(fixed))
        changed = True
    if not nfc:
        subset = pc.utf8_normalize(subset, form="NFC")
        changed = True
    return pc.replace_with_mask(lines, non_ascii, subset) if changed else lines


def value_offsets(array: pa.Array) -> np.ndarray:
    """The offsets of a string or list array's values, read from its buffer (no copy)."""
    return np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array) + 1]


def _buffer_text(strings: pa.Array) -> str:
    """All the strings of the array, concatenated, as one Python string (no object per string)."""
    offsets = value_offsets(strings)
    data = strings.buffers()[2]
    return data.to_pybytes()[int(offsets[0]) : int(offsets[-1])].decode("utf-8") if data is not None else ""


def join_lines(lines: pa.Array) -> str:
    """Lines without nulls joined by newlines: one Python string, built in Arrow."""
    offsets = pa.array([0, len(lines)], pa.int32())
    return pc.binary_join(pa.ListArray.from_arrays(offsets, lines.cast(pa.string())), "\n")[0].as_py() or ""

