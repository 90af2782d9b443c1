"""Unicode clean-up shared by every language, column-wise on Arrow string arrays.

Only lines that are not pure ASCII need any work (ASCII control whitespace is
handled by whitespace splitting), so English text passes almost for free.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections import Counter, defaultdict

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


def _ranges(code_points) -> str:
    """An RE2 character class of code points, consecutive ones as ranges."""
    points = sorted(code_points)
    parts, start = [], 0
    for i in range(1, len(points) + 1):
        if i == len(points) or points[i] != points[i - 1] + 1:
            first, last = points[start], points[i - 1]
            parts.append(f"\\x{{{first:x}}}" + (f"-\\x{{{last:x}}}" if last > first else ""))
            start = i
    return "[" + "".join(parts) + "]"


def char_class(chars: str) -> str:
    """An RE2 character class of the characters of ``chars``."""
    return _ranges(map(ord, chars))


_DELETE_RE = {False: char_class(DELETE + JOINERS), True: char_class(DELETE)}
_SPACES_RE = char_class(SPACES)
_ANY_RE = {False: char_class(DELETE + JOINERS + SPACES), True: char_class(DELETE + SPACES)}


@functools.cache
def nfc_suspects() -> str:
    """An RE2 pattern that matches every string that is not NFC (and a few that are).

    UAX #15's quick check, as a pattern: a character that NFC never keeps (NFC_QC=No); a
    character that may compose with what precedes it (NFC_QC=Maybe) after something it can
    compose with; two combining marks in a row (they may be out of canonical order).  A vowel
    sign that composes (Bengali ``া`` after ``ে``) only counts right after its partner, and a
    combining mark that composes (Devanagari nukta) only after its partner or a character whose
    decomposition ends in a mark: so the common signs of Indic text do not make every line
    suspect.  Built from Python's Unicode database, once per process (0.2 s)."""
    never, firsts, decomposable, combining = [], defaultdict(set), [], set()
    for cp in range(0x30000):
        if 0x3400 <= cp < 0xA000 or 0xAC00 <= cp < 0xD7A4 or 0x20000 <= cp < 0x2F800:
            continue  # ideographs and Hangul syllables: no canonical mapping, class 0 (Hangul: below)
        char = chr(cp)
        if unicodedata.combining(char):
            combining.add(cp)
        mapping = unicodedata.decomposition(char)
        if not mapping or mapping.startswith("<"):
            continue
        if unicodedata.combining(unicodedata.normalize("NFD", char)[-1]):
            decomposable.append(cp)  # ends in a mark: a composing mark after it may reorder
        if unicodedata.normalize("NFC", char) != char:
            never.append(cp)
        elif len(mapping.split()) == 2:
            first, second = (int(part, 16) for part in mapping.split())
            firsts[second].add(first)
    # conjoining Hangul vowels and trailing consonants compose with what precedes them
    hangul = set(range(0x1161, 0x1176)) | set(range(0x11A8, 0x11C3))
    marks = _ranges(combining)
    alternatives = [_ranges(set(never) | hangul)]
    composing_marks, partners_of_marks = set(), set(decomposable)
    for second, partners in sorted(firsts.items()):
        if second in combining:
            composing_marks.add(second)
            partners_of_marks |= partners
        else:
            alternatives.append(f"{_ranges(partners)}\\x{{{second:x}}}")
    # (a composing mark that follows its partner across other marks is caught by the next line)
    alternatives.append(_ranges(partners_of_marks) + _ranges(composing_marks))
    # canonical order: two combining marks in a row (exact would be "a higher class first"; the
    # pair is rare outside vocalized Hebrew and Arabic, and a class-by-class pattern is 20x larger)
    alternatives.append(marks + marks)
    return "|".join(alternatives)


@functools.cache
def _needs_work(keep_joiners: bool) -> str:
    return _ANY_RE[keep_joiners] + "|" + nfc_suspects()


def split_lines(text: str) -> pa.Array:
    """A text's lines as an Arrow array: LF, CRLF and a lone CR each end a line (old Mac files
    would otherwise be one line); a final line ending ends the last line, adds none."""
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    if text.endswith("\n"):
        text = text[:-1]
    if not text:
        return pa.array([], pa.string())
    return split_exactly(text)


def split_exactly(text: str) -> pa.Array:
    """The pieces of ``text`` between newlines, every one (the inverse of :func:`join_lines`)."""
    return pc.list_flatten(pc.split_pattern(pa.array([text], pa.large_string()), "\n")).cast(pa.string())


#: C0 control characters but tab, newline and carriage return, and DEL: no text holds them, and
#: left inside a word they glue it to its mark (``Hello,\0 world``); each becomes a space, counted
_CONTROL_BYTES = np.zeros(256, dtype=bool)
_CONTROL_BYTES[[*range(0x00, 0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F]] = True
_CONTROL_RE = "[\\x00-\\x08\\x0b\\x0c\\x0e-\\x1f\\x7f]"


def replace_controls(lines: pa.Array, counts: Counter | None = None) -> pa.Array:
    """Control characters (see :data:`_CONTROL_BYTES`) made spaces; found in the byte buffer first."""
    if len(lines) == 0:
        return lines
    offsets = value_offsets(lines)
    data = value_data(lines)[offsets[0] : offsets[-1]]
    # two comparisons over the bytes cost a fifth of the table lookup; most text has none
    if not ((data < 0x20).any() or (data == 0x7F).any()):
        return lines
    positions = np.flatnonzero(_CONTROL_BYTES[data])
    if not len(positions):
        return lines
    if counts is not None:
        counts["control_characters_made_spaces"] += len(positions)
    rows = np.unique(np.searchsorted(offsets - offsets[0], positions, side="right") - 1)
    mask = np.zeros(len(lines), dtype=bool)
    mask[rows] = True
    fixed = pc.replace_substring_regex(lines.take(pa.array(rows)), _CONTROL_RE, " ")
    return pc.replace_with_mask(lines, pa.array(mask), fixed)


#: apostrophes written otherwise, made ASCII between two letters (``i’ve``, ``don`t``): the right
#: single quote (what word processors and news sites write), the modifier letter apostrophe, the
#: prime, the acute accent and the grave accent (keyboards without a typographic apostrophe), the
#: left single quote (autocorrect turned the wrong way) and the fullwidth apostrophe.  Between two
#: letters none of them is a quote or a mark of its own.  After a word, only the right single quote
#: and the modifier letter are apostrophes (``drivers’``); see :func:`_word_final_apostrophes`.
APOSTROPHES = "\u2019\u02bc\u2032\u00b4\u2018\uff07`"
_APOSTROPHE_RE = char_class(APOSTROPHES)
#: a letter of a script that writes apostrophes: not Chinese, Japanese or Korean, where ‘…’ and
#: ’ are quotes (``他要求‘彻底重写’``)
_CJK = r"\p{Han}\p{Hiragana}\p{Katakana}\p{Hangul}\p{Bopomofo}"
_LETTER = r"[^\P{L}" + _CJK + "]"
_IN_WORD_RE = "(" + _LETTER + r"\p{M}*)" + _APOSTROPHE_RE + "(" + _LETTER + ")"
#: a right single quote or modifier letter apostrophe that ends a word (not followed by a letter)
_WORD_FINAL_RE = _LETTER + r"\p{M}*[\x{2019}\x{2bc}](?:[^\p{L}]|$)"
_CJK_CHAR = re.compile(
    "[\u1100-\u11ff\u3040-\u30ff\u3100-\u312f\u3130-\u318f\u31f0-\u31ff\u3400-\u4dbf"
    "\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\U00020000-\U0003ffff]"
)


_QUOTES_AND_APOSTROPHES = re.compile("[\u2018\u2019\u02bc]")


def _word_final_apostrophes(line: str) -> str:
    """``drivers’`` -> ``drivers'`` (a plural possessive), but a right single quote that closes a
    left one opened earlier in the line stays a quote (``‘the drivers’``).  A modifier letter
    apostrophe is never a quote."""
    out, done, open_quotes = [], 0, 0
    for found in _QUOTES_AND_APOSTROPHES.finditer(line):
        i, char = found.start(), found.group()
        if char == "\u2018":
            open_quotes += 1
            continue
        before = line[i - 1] if i > 0 else ""
        after_word = bool(before) and (
            (before.isalnum() and not _CJK_CHAR.match(before)) or unicodedata.category(before).startswith("M")
        )
        if after_word and (char == "\u02bc" or not open_quotes):
            out += [line[done:i], "'"]
            done = i + 1
        elif char == "\u2019" and open_quotes:
            open_quotes -= 1
    return "".join(out) + line[done:] if out else line


#: what RE2 (Arrow's regex engine) takes each character met so far for: a letter of ``_LETTER`` (a
#: letter of a script that writes apostrophes), a mark (``\p{M}``), a letter (``\p{L}``), an
#: uppercase or a lowercase letter (``\p{Lu}``, ``\p{Ll}``).  Asked of RE2 itself as new characters
#: come, so a scan in Python decides as an RE2 pattern would (Python's own Unicode tables are of
#: another version), without compiling RE2's Unicode classes for every shard (a millisecond or
#: more each); a process soon knows its languages' alphabets.
LETTER_WITH_APOSTROPHES, MARK, LETTER, UPPER, LOWER = 1, 2, 4, 8, 16
_CLASS_PATTERNS = ((LETTER_WITH_APOSTROPHES, _LETTER), (MARK, r"\p{M}"), (LETTER, r"\p{L}"))
_CLASS_PATTERNS += ((UPPER, r"\p{Lu}"), (LOWER, r"\p{Ll}"))
_LETTER_BIT, _MARK_BIT, _ANY_LETTER_BIT = LETTER_WITH_APOSTROPHES, MARK, LETTER


class _Classes(dict):
    """A character not met yet (one :func:`char_classes` was not asked about first) is asked of RE2
    when a scan comes to it."""

    def __missing__(self, char: str) -> int:
        return char_classes([char])[char]


_CHAR_CLASSES = _Classes()


#: characters are asked of RE2 a block of this many code points at a time: a text's characters come
#: from a few blocks, so a process soon knows them all (each ask compiles RE2's Unicode classes again)
_CLASS_BLOCK = 128


def char_classes(texts) -> dict[str, int]:
    """The classes (bits: :data:`LETTER`, :data:`UPPER`...) of every character met so far, knowing
    every character of ``texts`` (strings) and the rest of their blocks; any other is looked up
    when asked for."""
    asked = set().union(*map(set, texts)) - _CHAR_CLASSES.keys()
    if asked:
        blocks = {ord(char) // _CLASS_BLOCK for char in asked}
        # the blocks' surrogates are no characters (no UTF-8 holds them)
        rest = {
            chr(p) for b in blocks for p in range(b * _CLASS_BLOCK, (b + 1) * _CLASS_BLOCK) if not 0xD800 <= p < 0xE000
        }
        new = sorted((asked | rest) - _CHAR_CLASSES.keys())
        chars = pa.array(new, pa.string())
        bits = np.zeros(len(new), dtype=np.int64)
        for bit, pattern in _CLASS_PATTERNS:
            bits[pc.match_substring_regex(chars, f"^{pattern}$").to_numpy(zero_copy_only=False)] |= bit
        _CHAR_CLASSES.update(zip(new, bits.tolist()))
    return _CHAR_CLASSES


def _letter_before(line: str, j: int, classes: dict[str, int]) -> int:
    r"""Where a run ``_LETTER \p{M}*`` that ends right before ``j`` starts (-1: none does).  It starts
    at the first character before ``j`` that is no mark; none of the apostrophes is a mark, so a
    match of the patterns below that has its apostrophe at ``j`` starts there or nowhere."""
    k = j - 1
    while k >= 0 and classes[line[k]] & _MARK_BIT:
        k -= 1
    return k if k >= 0 and classes[line[k]] & _LETTER_BIT else -1


_ANY_APOSTROPHE = re.compile("[" + re.escape(APOSTROPHES) + "]")


def _in_word_pass(line: str, classes: dict[str, int]) -> str:
    r"""One ``replace_substring_regex(_IN_WORD_RE, r"\1'\2")`` over the line.  A match is fixed by its
    apostrophe (where its letter run starts grows with it), so the leftmost one is the first
    apostrophe with a letter run before it, at or after where the last match ended, and a letter
    after it."""
    out, done, n = [], 0, len(line)
    for found in _ANY_APOSTROPHE.finditer(line):
        j = found.start()
        if j + 1 < n and classes[line[j + 1]] & _LETTER_BIT and _letter_before(line, j, classes) >= done:
            out += [line[done:j], "'", line[j + 1]]
            done = j + 2
    return "".join(out) + line[done:] if out else line


def _ends_a_word(line: str, classes: dict[str, int]) -> bool:
    """Does ``_WORD_FINAL_RE`` match in the line?"""
    n = len(line)
    for found in _ANY_APOSTROPHE.finditer(line):
        j = found.start()
        followed = j + 1 < n and classes[line[j + 1]] & _ANY_LETTER_BIT
        if line[j] in "\u2019\u02bc" and not followed and _letter_before(line, j, classes) >= 0:
            return True
    return False


def _mend_apostrophes(line: str, classes: dict[str, int]) -> str:
    for _ in range(2):  # "a’b’c": a match takes the letter after it, the second pass the one between
        line = _in_word_pass(line, classes)
    return _word_final_apostrophes(line) if _ends_a_word(line, classes) else line


def ascii_apostrophes(lines: pa.Array, counts: Counter | None = None) -> pa.Array:
    """Apostrophes written otherwise made the ASCII apostrophe (see :data:`APOSTROPHES`), counted as
    ``apostrophes_made_ascii``: ``i’ve`` and ``i've`` are one word.  ``lines`` itself is returned
    when none changes.

    The lines that hold one are few: they are rewritten by a scan in Python that does what
    ``_IN_WORD_RE`` (twice) and ``_WORD_FINAL_RE`` do in RE2, whose letter classes take RE2
    longer to compile than the scan takes."""
    if len(lines) == 0:
        return lines
    # one RE2 scan of every line: cheaper than a pre-filter (Arrow's literal search for the
    # backtick alone costs as much as the whole class)
    found = pc.match_substring_regex(lines, _APOSTROPHE_RE)
    if not pc.any(found).as_py():
        return lines
    rows = pc.indices_nonzero(found).to_numpy(zero_copy_only=False)
    subset = lines.filter(found).to_pylist()
    # the scans look at the characters around apostrophes (a letter after, marks and a letter
    # before): a character not met yet is asked of RE2 with the rest of its block
    fixed = [_mend_apostrophes(line, _CHAR_CLASSES) for line in subset]
    changed = [i for i, (line, done) in enumerate(zip(subset, fixed)) if line != done]
    if not changed:  # quotes, not apostrophes
        return lines
    if counts is not None:
        made = sum(sum(map(subset[i].count, APOSTROPHES)) - sum(map(fixed[i].count, APOSTROPHES)) for i in changed)
        if made:
            counts["apostrophes_made_ascii"] += made
    mask = np.zeros(len(lines), dtype=bool)
    mask[rows[changed]] = True
    return pc.replace_with_mask(lines, pa.array(mask), pa.array([fixed[i] for i in changed], pa.string()))


def clean_lines(lines: pa.Array, keep_joiners: bool = False, counts: Counter | None = None) -> pa.Array:
    """NFC, no BOM, zero-width or control characters, one kind of space, ASCII apostrophes inside
    words; the line count is kept."""
    if len(lines) == 0:
        return lines
    lines = replace_controls(lines, counts)
    non_ascii = pc.invert(pc.string_is_ascii(lines))
    apostrophes = ascii_apostrophes(lines, counts)
    if apostrophes is not lines:  # a line may be ASCII now
        lines, non_ascii = apostrophes, pc.invert(pc.string_is_ascii(apostrophes))
    if not pc.any(non_ascii).as_py():
        return lines
    subset = lines.filter(non_ascii)
    # one RE2 pass finds the few lines with something to delete or replace, or that may not be
    # NFC; only those are rewritten (NFC of a whole Indic column costs more than its normalizer)
    suspect = pc.match_substring_regex(subset, _needs_work(keep_joiners))
    if not pc.any(suspect).as_py():
        return lines
    fixed = subset.filter(suspect)
    dirty = pc.match_substring_regex(fixed, _ANY_RE[keep_joiners])
    if pc.any(dirty).as_py():  # most suspects are only not NFC: a match is cheaper than two rewrites
        cleaned = pc.replace_substring_regex(fixed.filter(dirty), _DELETE_RE[keep_joiners], "")
        fixed = pc.replace_with_mask(fixed, dirty, pc.replace_substring_regex(cleaned, _SPACES_RE, " "))
    fixed = pc.utf8_normalize(fixed, form="NFC")
    return pc.replace_with_mask(lines, non_ascii, pc.replace_with_mask(subset, suspect, fixed))


@functools.cache
def cleaned_or_rewritten(keep_joiners: bool, rewrites: str | None = None) -> str:
    """An RE2 pattern that every line :func:`clean_lines` changes matches (a control character, an
    apostrophe, or what :func:`_needs_work` finds), or, given ``rewrites``, that matches."""
    return "|".join(filter(None, [_CONTROL_RE, _APOSTROPHE_RE, _needs_work(keep_joiners), rewrites]))


def value_offsets(array: pa.Array) -> np.ndarray:
    """The offsets of a string or list array's values, read from its buffer (no copy)."""
    return np.frombuffer(array.buffers()[1], dtype=np.int32)[array.offset : array.offset + len(array) + 1]


def value_data(array: pa.Array) -> np.ndarray:
    """The character buffer of a string array as bytes (no copy; index it with :func:`value_offsets`)."""
    data = array.buffers()[2]
    return np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, dtype=np.uint8)


#: the bytes of UTF-8 text that may belong to a character lowercasing changes: the ASCII capitals and
#: every lead byte but 0xE0's, which leads U+0800-U+0FFF only (the scripts of India, Arabic's
#: extensions, Thai, Lao, Tibetan: none has case; a test checks each against Arrow's utf8_lower)
MAY_LOWER = np.zeros(256, dtype=bool)
MAY_LOWER[ord("A") : ord("Z") + 1] = True
MAY_LOWER[0xC0:0xE0] = True
MAY_LOWER[0xE1:] = True


def rows_holding(strings: pa.Array, table: np.ndarray) -> np.ndarray:
    """Indices of the strings holding a byte that ``table`` (a flag per byte value) flags, found in
    the character buffer."""
    offsets = value_offsets(strings)
    positions = np.flatnonzero(table[value_data(strings)[offsets[0] : offsets[-1]]])
    return np.unique(np.searchsorted(offsets - offsets[0], positions, side="right") - 1)


def non_ascii_rows(strings: pa.Array) -> np.ndarray:
    """Indices of the strings with a non-ASCII byte, found in the character buffer (string_is_ascii
    goes string by string: 10x slower on millions of words)."""
    offsets = value_offsets(strings)
    positions = np.flatnonzero(value_data(strings)[offsets[0] : offsets[-1]] >= 0x80)
    return np.unique(np.searchsorted(offsets - offsets[0], positions, side="right") - 1)


def join_lines(lines: pa.Array) -> str:
    """Lines without nulls joined by newlines: one Python string, built in Arrow."""
    offsets = pa.array([0, len(lines)], pa.int32())
    return pc.binary_join(pa.ListArray.from_arrays(offsets, lines.cast(pa.string())), "\n")[0].as_py() or ""


_ASCII_LETTERS = np.zeros(256, dtype=bool)
_ASCII_LETTERS[[*range(ord("A"), ord("Z") + 1), *range(ord("a"), ord("z") + 1)]] = True


def lettered(strings: pa.Array) -> np.ndarray:
    r"""Which strings hold a letter (RE2's ``\pL``): ASCII ones read off their bytes, the few others
    with RE2's classes of their characters (an RE2 pass would compile ``\pL``'s class, a millisecond,
    each time)."""
    out = np.zeros(len(strings), dtype=bool)
    if not len(strings):
        return out
    offsets = value_offsets(strings)
    letters = np.zeros(offsets[-1] - offsets[0] + 1, dtype=np.int64)
    np.cumsum(_ASCII_LETTERS[value_data(strings)[offsets[0] : offsets[-1]]], out=letters[1:])
    out[:] = letters[offsets[1:] - offsets[0]] > letters[offsets[:-1] - offsets[0]]
    rows = non_ascii_rows(strings)
    if len(rows):
        texts = strings.take(pa.array(rows)).to_pylist()
        classes = char_classes(texts)
        out[rows] = [any(classes[c] & LETTER for c in text) for text in texts]
    return out
