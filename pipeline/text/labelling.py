"""Punctuated text -> words and one label per word (the mark that follows the word).

Rules (Alam 2020 §3.1 mapping; the mark table is data in ``lexicons/``):

* Marks glued to a word (``word,``) or standing alone (``word ,``) label the word
  before them.  A mark with no word before it in its segment is dropped and counted.
* Several marks after one word: the highest label of the label set wins (``papers``:
  QUESTION > PERIOD > COMMA, so ``?!`` -> QUESTION, ``."`` -> PERIOD).
* Opening quotes and brackets are dropped where they start a word; closing ones where
  they end it.  Marks inside a word are kept: ``3.5``, ``10,000``, ``well-being``.
* Abbreviations keep their period: ``dr.`` when listed in ``lexicons/<lang>/abbreviations.txt``,
  and initialisms (``u.s.``, ``e.g.``) always.  A further mark after them still counts.  Whether
  that period also ends a sentence is read from the next word of the line (:func:`_abbreviation_ends`):
  in a cased line a capital starts a sentence (``the U.S. It`` -> ``u.s.`` PERIOD) and a lowercase
  word does not; before a name (listed ``before_name``, or a capital initial) it never ends one.
  Where the line cannot tell (no next word, no case in the line or the next word) the label stays
  O and the case is counted under its reason.
* Lowercasing is the language's option (English: on).

The work is done column-wise with Arrow compute kernels (split, trim, regex on the
few tokens that carry marks), so it runs at millions of words per second.
"""

from __future__ import annotations

import functools
import operator
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.labels import CASE_TO_ID, LabelSet
from pipeline.schema import CASE_VALUES, encoded_codes
from pipeline.text.labelled import Labelled, _lower, _patch, case_codes, mixed_case_forms
from pipeline.text.languages import Language
from pipeline.text.normalize import (
    LETTER,
    LOWER,
    SPACES,
    UPPER,
    char_class,
    char_classes,
    lettered,
    value_data,
    value_offsets,
)
from pipeline.text.scripts import OTHER_SCRIPT_WORDS, word_script

# a word made of single letters each followed by a period (u.s, e.g, a.m), or a capital
# initial (George W. Bush): its period is part of it
_INITIALISM = r"^(\pL\.)+\pL$|^\p{Lu}$"
# what utf8_split_whitespace splits at: ASCII whitespace, the separators 0x1c-0x1f, and the
# Unicode spaces, which are exactly those that normalization makes ASCII spaces
_UNICODE_SPACE = char_class(SPACES)
_WHITESPACE_RUN = r"(?:[\t-\r\x1c-\x20]|" + _UNICODE_SPACE + ")+"


def _glued_chars(table) -> str:
    """The non-ASCII marks that never occur inside a word (``a，b``, ``this—that``).  ASCII marks
    do occur inside words (3.5, 10,000, well-known) and the en dash in ranges (1990–2000), so
    they only count at word ends."""
    return "".join(sorted({c for m in table.marks for c in m if not c.isascii() and c != "\u2013"}))


def _separate_glued_marks(lines: pa.Array, table) -> pa.Array:
    """Put a space after every glued mark (:func:`_glued_chars`): what a tokenizer is given."""
    chars = _glued_chars(table)
    if not chars or len(lines) == 0:
        return lines
    found = pc.invert(pc.string_is_ascii(lines))
    if not pc.any(found).as_py():
        return lines
    spaced = pc.replace_substring_regex(lines.filter(found), "(" + char_class(chars) + ")", "\\1 ")
    return pc.replace_with_mask(lines, found, spaced)


def _split_finds(table) -> tuple[str, str | None]:
    """What :func:`_split_glued_marks` looks for: the lines it may change or that hold whitespace
    beyond ASCII's (an RE2 pattern), and the glued marks followed by what a split does not split at."""
    chars = _glued_chars(table)
    glued = char_class(chars) + "[^\\t-\\r ]" if chars else None
    return "|".join(filter(None, [glued, _UNICODE_SPACE])), glued


def split_pattern(language: Language) -> str | None:
    """An RE2 pattern that every line :func:`label_lines` splits otherwise than at ASCII whitespace
    matches (None: it does not look, or not by a pattern): given ``candidates``, it looks at the
    lines that may match it only."""
    if language.tokenize is not None or language.relabelled:
        return None
    return _split_finds(language.punctuation)[0]


def _split_glued_marks(lines: pa.Array, table, candidates: np.ndarray | None = None) -> tuple[pa.Array, bool]:
    """For a whitespace split: a space after the glued marks (:func:`_glued_chars`) that are followed
    by what no whitespace split splits at (elsewhere it splits nothing: it would only add an empty
    token at the line's end, and an empty token is no word, no mark and no loss); and whether a
    line holds whitespace beyond ASCII's.  One scan finds the lines with either (few), of the
    ``candidates`` only where given (the others match no :func:`split_pattern`)."""
    if len(lines) == 0:
        return lines, False
    pattern, glued = _split_finds(table)
    if candidates is None:
        found = pc.match_substring_regex(lines, pattern)
    else:
        rows = np.flatnonzero(candidates)
        hits = np.zeros(len(lines), dtype=bool)
        if len(rows):
            hits[rows] = pc.match_substring_regex(lines.take(pa.array(rows)), pattern).to_numpy(zero_copy_only=False)
        found = pa.array(hits)
    if not pc.any(found).as_py():
        return lines, False
    subset = lines.filter(found)
    unicode_space = pc.any(pc.match_substring_regex(subset, _UNICODE_SPACE)).as_py()
    if glued is not None:
        to_space = pc.match_substring_regex(subset, glued)
        if pc.any(to_space).as_py():
            chars = _glued_chars(table)
            spaced = pc.replace_substring_regex(subset.filter(to_space), "(" + char_class(chars) + ")", "\\1 ")
            lines = pc.replace_with_mask(lines, found, pc.replace_with_mask(subset, to_space, spaced))
    return lines, unicode_space


def _suffixes(strings: pa.Array, rows: np.ndarray, prefix_bytes: np.ndarray) -> pa.Array:
    """``strings[rows]`` without their first ``prefix_bytes`` bytes, cut straight from the buffers.

    The marks after a word are a few bytes; gathering them with numpy avoids a
    regex over every marked token.
    """
    offsets = value_offsets(strings)
    data = value_data(strings)
    starts = offsets[rows] + prefix_bytes
    lengths = offsets[rows + 1] - starts
    out_offsets = np.zeros(len(rows) + 1, dtype=np.int32)
    np.cumsum(lengths, out=out_offsets[1:])
    gather = np.repeat(starts - out_offsets[:-1], lengths) + np.arange(out_offsets[-1], dtype=np.int64)
    return pa.StringArray.from_buffers(len(rows), pa.py_buffer(out_offsets), pa.py_buffer(data[gather].tobytes()))


def _list_offsets(lists: pa.ListArray) -> np.ndarray:
    offsets = value_offsets(lists)
    return offsets - offsets[0]


def _other_script(words: pa.Array, scripts: tuple[str, ...]) -> np.ndarray:
    """Words with letters, none of them in ``scripts`` (digits and symbols are no script)."""
    own = "|".join(f"\\p{{{s}}}" for s in scripts)
    outside = np.flatnonzero(~pc.match_substring_regex(words, f"(?:{own})").to_numpy(zero_copy_only=False))
    other = np.zeros(len(words), dtype=bool)
    # most words are in the language's script: the letter test runs on the others only
    other[outside] = lettered(words.take(pa.array(outside)))
    return other


def _tokens_hold_whitespace(tokens: pa.Array) -> bool:
    """Does a token hold whitespace?  A whitespace split's tokens hold none, so one pass over their
    bytes decides: any byte <= 0x20 (ASCII whitespace, or a control character: a false alarm only
    costs the exact split).  Normalized lines have only ASCII spaces left, so multi-byte spaces need
    no check."""
    if len(tokens) == 0:
        return False
    offsets = value_offsets(tokens)
    data = value_data(tokens)[offsets[0] : offsets[-1]]
    # the smallest byte: one pass without a temporary (a comparison makes one the size of the text)
    return bool(len(data)) and int(data.min()) <= 0x20


def _strip_openers(tokens: pa.Array, openers: str) -> pa.Array:
    """utf8_ltrim of the opening quotes and brackets, run only on the tokens whose first byte can
    begin one (most text has few: trimming every token costs more than finding them)."""
    offsets = value_offsets(tokens)
    if offsets[-1] == offsets[0]:
        return tokens
    data = value_data(tokens)
    can_open = np.zeros(256, dtype=bool)
    can_open[[c.encode()[0] for c in openers]] = True
    nonempty = offsets[1:] > offsets[:-1]
    rows = np.flatnonzero(nonempty & can_open[data[np.minimum(offsets[:-1], len(data) - 1)]])
    if len(rows) == 0:
        return tokens
    if len(rows) > len(tokens) // 256:  # trimming every token (7 ns each) beats patching many rows
        return pc.utf8_ltrim(tokens, characters=openers)
    return _patch(tokens, rows, pc.utf8_ltrim(tokens.take(pa.array(rows)), characters=openers))


def _byte_lengths(strings: pa.Array) -> np.ndarray:
    return pc.binary_length(strings).to_numpy(zero_copy_only=False).copy()


def _is_initialism(body: str, classes: dict[str, int]) -> bool:
    r"""Does ``_INITIALISM`` (``^(\pL\.)+\pL$|^\p{Lu}$``) match ``body``: letters each followed by a
    period but the last (``u.s``), or a single capital?  Read with RE2's own classes."""
    if len(body) == 1:
        return bool(classes[body] & UPPER)
    return (
        len(body) % 2 == 1
        and len(body) > 1
        and all(c == "." for c in body[1::2])
        and all(classes[c] & LETTER for c in body[::2])
    )


def _initialisms(bodies: pa.Array) -> np.ndarray:
    """Which bodies are initialisms (:func:`_is_initialism`); only a single character or a body
    with a period can be one, and those are looked at in Python."""
    length = pc.utf8_length(bodies)
    maybe = pc.or_(pc.equal(length, 1), pc.match_substring(bodies, "."))
    out = np.zeros(len(bodies), dtype=bool)
    rows = np.flatnonzero(maybe.to_numpy(zero_copy_only=False))
    if len(rows):
        candidates = bodies.take(pa.array(rows)).to_pylist()
        classes = char_classes(candidates)
        out[rows] = [_is_initialism(body, classes) for body in candidates]
    return out


def _listed(bodies: pa.Array, abbreviations: frozenset[str]) -> np.ndarray:
    """Which bodies, a period after them and lowercased, are ``abbreviations`` (a language without
    any, most, has nothing to look up)."""
    if not abbreviations:
        return np.zeros(len(bodies), dtype=bool)
    return pc.is_in(
        pc.utf8_lower(pc.binary_join_element_wise(bodies, ".", "")),
        value_set=pa.array(sorted(abbreviations), pa.string()),
    ).to_numpy(zero_copy_only=False)


def _before_name(bodies: pa.Array, language: Language) -> np.ndarray:
    """Which abbreviations (their words without the period) are written before a name: listed
    (titles), or a capital initial (George W. Bush) before the rest of a name."""
    listed = _listed(bodies, language.abbreviations_before_name)
    classes = char_classes([])
    initial = [len(body) == 1 and bool(classes[body] & UPPER) for body in bodies.to_pylist()]
    return listed | np.array(initial, dtype=bool)


def _cased(texts: list[str]) -> np.ndarray:
    r"""Which texts hold a capital and a small letter (RE2's ``\p{Lu}`` and ``\p{Ll}``), read with RE2's
    classes of their distinct characters."""
    texts = [set(text) for text in texts]
    classes = char_classes(texts)
    bits = [functools.reduce(operator.or_, map(classes.__getitem__, chars), 0) for chars in texts]
    return np.array([b & UPPER and b & LOWER for b in bits], dtype=bool)


def _starts_with(words: list[str], bit: int) -> np.ndarray:
    r"""Which words start with a character of class ``bit`` (``^\p{Lu}``: :data:`UPPER`)."""
    firsts = [word[:1] for word in words]
    classes = char_classes(firsts)
    return np.array([bool(first) and bool(classes[first] & bit) for first in firsts], dtype=bool)


def _abbreviation_ends(
    lines: pa.Array,
    body: pa.Array,
    token_offsets: np.ndarray,
    codes: np.ndarray,
    is_word: np.ndarray,
    rows: np.ndarray,
    before_name: np.ndarray,
    period: int,
    stats: Counter,
) -> None:
    """Set PERIOD on the abbreviations (tokens ``rows``, their period kept in the word) that end a
    sentence, as the source shows it; count the cases it cannot tell.

    The rule, one line of the source at a time: in a cased line (one holding capitals and small
    letters) an abbreviation followed by a word starting with a capital ends a sentence
    (``abbreviation_sentence_ends``), one followed by a lowercase word does not; one written
    before a name (``before_name`` in the list, a capital initial) never does before a word.  An
    abbreviation that another mark follows has that mark's label already.  The rest stay O and
    are counted as ``abbreviation_end_unresolved:<reason>``: ``line_end`` (no word after it on its
    line), ``uncased_line`` (the line has no case, or only one: lowercased or uppercased text, a
    script without case) and ``next_word_uncased`` (a digit or symbol comes next)."""
    open_rows = (codes[rows] == 0) & is_word[rows]
    # a mark standing alone right after the abbreviation labels it (label_lines attaches it)
    following = np.minimum(rows + 1, len(codes) - 1)
    line = np.searchsorted(token_offsets, rows, side="right") - 1
    loose_after = (rows + 1 < token_offsets[line + 1]) & ~is_word[following] & (codes[following] > 0)
    candidates = np.flatnonzero(open_rows & ~loose_after)
    if not len(candidates):
        return
    rows, before_name, line = rows[candidates], before_name[candidates], line[candidates]
    # the next word is nearly always the next token; the word index is built only for the others
    following = np.minimum(rows + 1, len(codes) - 1)
    far = np.flatnonzero(~is_word[following] | (following == rows))
    if len(far):
        words = np.flatnonzero(is_word)
        at = np.searchsorted(words, rows[far], side="right")
        following[far] = np.where(at < len(words), words[np.minimum(at, len(words) - 1)], len(codes))
    has_next = following < token_offsets[line + 1]
    if (~has_next).any():
        stats["abbreviation_end_unresolved:line_end"] += int((~has_next).sum())
    rows, before_name, line, following = rows[has_next], before_name[has_next], line[has_next], following[has_next]
    # before a name every next word is the name's: nothing to resolve
    rows, line, following = rows[~before_name], line[~before_name], following[~before_name]
    if not len(rows):
        return
    cased = _cased(lines.take(pa.array(line)).to_pylist())
    nexts = body.take(pa.array(following)).to_pylist()
    capital, small = _starts_with(nexts, UPPER), _starts_with(nexts, LOWER)
    ends = cased & capital
    codes[rows[ends]] = period
    stats["abbreviation_sentence_ends"] += int(ends.sum())
    stats["abbreviation_end_unresolved:uncased_line"] += int((~cased).sum())
    stats["abbreviation_end_unresolved:next_word_uncased"] += int((cased & ~capital & ~small).sum())


def label_lines(
    lines,
    language: Language,
    keep_other_scripts: bool = False,
    documents=None,
    encoded: bool = False,
    candidates: np.ndarray | None = None,
) -> Labelled:
    """Label each line of punctuated text.  ``lines`` are already normalized.

    ``keep_other_scripts``: keep words in another script than the language's even where the
    language drops them (an ASR hypothesis is what it is: every word stays).  ``documents``: a
    document key per line (None: one document), for a paper protocol that rewrites a document's
    lines together (:mod:`pipeline.text.protocols`); the project's own rules label line by line.
    ``encoded``: the words' values may come dictionary-encoded exactly as ``pc.dictionary_encode``
    encodes them (as a dataset is written: the writer keeps them), not as strings.  ``candidates``:
    a mask of the lines that may match :func:`split_pattern` (the others are not looked at for it)."""
    lines = lines if isinstance(lines, pa.Array) else pa.array(lines, pa.string())
    if language.relabelled:
        from pipeline.text import protocols

        return protocols.label_lines(lines, language, documents)
    table = language.punctuation
    if language.tokenize is not None:
        lines = _separate_glued_marks(lines, table)
        tokens_per_line = pa.array([language.tokenize(line) for line in lines.to_pylist()], pa.list_(pa.string()))
    else:
        lines, unicode_space = _split_glued_marks(lines, table, candidates)
        tokens_per_line = _split_at_whitespace(lines, unicode_space)
    tokens = pc.list_flatten(tokens_per_line)
    token_offsets = _list_offsets(tokens_per_line)
    dropped: Counter = Counter()
    # splitting an empty line gives one empty token: it is no word and no loss
    nonempty = _byte_lengths(tokens) > 0

    if table.openers:
        tokens = _strip_openers(tokens, "".join(sorted(table.openers)))
    body = pc.utf8_rtrim(tokens, characters=table.trailing_chars)
    body_len = _byte_lengths(body)
    codes, body, abbreviation_rows, before_name = _trailing_marks(tokens, body, body_len, language)

    is_word = body_len > 0
    stats: Counter = Counter()
    # the bodies' distinct values (a tenth of the tokens): scripts and case are read once for each,
    # and the words come out dictionary-encoded as they are written
    distinct = pc.dictionary_encode(body)
    body_index = distinct.indices.to_numpy(zero_copy_only=False)
    other = np.zeros(len(codes), dtype=bool)
    if language.drop_other_scripts and language.scripts and not keep_other_scripts:
        other = _drop_other_scripts(distinct.dictionary, body_index, is_word, language.scripts, dropped, stats)
        is_word = is_word & ~other
    if len(abbreviation_rows):
        # the label the period would give, were the word no abbreviation
        period = table.labels.to_id[table.label_of(".")]
        _abbreviation_ends(lines, body, token_offsets, codes, is_word, abbreviation_rows, before_name, period, stats)
    word_codes, offsets = _word_codes(codes, is_word, token_offsets, dropped)
    n_bare = int((~is_word & (codes == 0) & nonempty & ~other).sum())
    if n_bare:
        dropped["token_of_quotes_or_brackets_only"] += n_bare

    words, originals, index = _distinct_words(distinct.dictionary, body_index[is_word], language.lowercase)
    if not encoded:
        words = body.filter(pa.array(is_word)) if not language.lowercase else words.dictionary.take(words.indices)
    case_of_word = case_codes(originals, _lower(originals) if language.lowercase else originals)[index]
    mixed = np.flatnonzero(case_of_word == CASE_TO_ID["M"])
    surface = mixed_case_forms(len(index), mixed, originals.take(pa.array(index[mixed])))
    offsets = pa.array(offsets.astype(np.int32))
    labels = encoded_codes(table.labels.values, word_codes)
    return Labelled(
        words=pa.ListArray.from_arrays(offsets, words),
        labels=pa.ListArray.from_arrays(offsets, labels),
        case=pa.ListArray.from_arrays(offsets, encoded_codes(CASE_VALUES, case_of_word)),
        surface=pa.ListArray.from_arrays(offsets, surface),
        dropped=dropped,
        label_set=table.labels,
        stats=stats,
    )


def _distinct_words(
    values: pa.Array, word_index: np.ndarray, lowercase: bool
) -> tuple[pa.DictionaryArray, pa.Array, np.ndarray]:
    """The words (``values[word_index]``, lowercased if ``lowercase``) dictionary-encoded exactly as
    ``pc.dictionary_encode`` encodes them, ``values`` being distinct and in order of first appearance
    (a dictionary's); and the distinct words as written with each word's index into them.

    Whether a value is a word depends on the value alone, so the values used, in their order, are
    the words' distinct values in order of first appearance; lowercasing may make two of them one,
    which a second encoding, in that order, merges at the first."""
    used = np.zeros(len(values), dtype=bool)
    used[word_index] = True
    index = (np.cumsum(used) - 1)[word_index]
    originals = values.filter(pa.array(used))
    if not lowercase:
        return pa.DictionaryArray.from_arrays(pa.array(index, pa.int32()), originals), originals, index
    lowered = pc.dictionary_encode(_lower(originals))
    merged = lowered.indices.to_numpy(zero_copy_only=False)[index]
    return pa.DictionaryArray.from_arrays(pa.array(merged, pa.int32()), lowered.dictionary), originals, index


def _split_at_whitespace(lines: pa.Array, unicode_space: bool) -> pa.ListArray:
    """Each line's tokens, split at whitespace (``unicode_space``: a line holds some beyond ASCII's)."""
    # normalized lines hold no whitespace but ASCII's: the ASCII split (1.6x faster) is exact
    split = pc.utf8_split_whitespace if unicode_space else pc.ascii_split_whitespace
    tokens_per_line = split(lines)
    if _tokens_hold_whitespace(pc.list_flatten(tokens_per_line)):
        # pyarrow 26's utf8_split_whitespace reads the byte after an array's last string: when
        # that byte (whatever memory holds) is >= 0x80, the string's final space stays on its
        # last token (seen on Bangla news articles ending in "। "); the RE2 split is exact,
        # slower, and only needed then (or for the ASCII separators 0x1c-0x1f, which only the
        # UTF-8 split knows)
        tokens_per_line = pc.split_pattern_regex(lines, _WHITESPACE_RUN)
    return tokens_per_line


def _trailing_marks(
    tokens: pa.Array, body: pa.Array, body_len: np.ndarray, language: Language
) -> tuple[np.ndarray, pa.Array, np.ndarray, np.ndarray]:
    """The label code of each token's trailing marks (``body``: the tokens without them).

    Abbreviations keep one period of their tail in their body (``body_len`` grows in place).
    Returns the codes, the bodies, the abbreviations' rows and which of them come before a name."""
    table = language.punctuation
    has_tail = np.flatnonzero(body_len != _byte_lengths(tokens))
    codes = np.zeros(len(tokens), dtype=np.int8)
    abbreviation_rows = np.zeros(0, dtype=np.int64)
    before_name = np.zeros(0, dtype=bool)
    if not len(has_tail):
        return codes, body, abbreviation_rows, before_name
    marked_body = body.take(pa.array(has_tail))
    tails = _suffixes(tokens, has_tail, body_len[has_tail])
    # abbreviations keep one period of their tail (only a tail that starts with one is looked at)
    dotted = np.flatnonzero(pc.starts_with(tails, ".").to_numpy(zero_copy_only=False))
    abbrev_rows = np.zeros(0, dtype=np.int64)
    if len(dotted):
        bodies = marked_body.take(pa.array(dotted))
        abbrev_rows = dotted[_listed(bodies, language.abbreviations) | _initialisms(bodies)]
    if len(abbrev_rows):
        abbrev = np.zeros(len(has_tail), dtype=bool)
        abbrev[abbrev_rows] = True
        abbrev = pa.array(abbrev)
        tails = pc.if_else(abbrev, pc.utf8_slice_codeunits(tails, 1), tails)
        rows = has_tail[abbrev.to_numpy(zero_copy_only=False)]
        abbreviation_rows = rows
        before_name = _before_name(marked_body.filter(abbrev), language)
        body = _patch(body, rows, pc.binary_join_element_wise(marked_body.filter(abbrev), ".", ""))
        body_len[rows] += 1
    encoded = tails.dictionary_encode()
    to_id = table.labels.to_id
    tail_codes = np.array([to_id[table.label_of(t)] for t in encoded.dictionary.to_pylist()], dtype=np.int8)
    codes[has_tail] = tail_codes[encoded.indices.to_numpy(zero_copy_only=False)]
    return codes, body, abbreviation_rows, before_name


def _drop_other_scripts(
    values: pa.Array,
    body_index: np.ndarray,
    is_word: np.ndarray,
    scripts: tuple[str, ...],
    dropped: Counter,
    stats: Counter,
) -> np.ndarray:
    """The words in another script than ``scripts``, counted as dropped (and by script in ``stats``);
    the bodies given as their distinct ``values`` and each one's index into them."""
    # a word in another script goes (indic-punct); its mark stays, like a mark standing alone
    other = _other_script(values, scripts)[body_index] & is_word
    if other.any():
        dropped["word_in_other_script"] += int(other.sum())
        # by script: ingest refuses a corpus mostly in another script than its language's
        occurrences = np.bincount(body_index[other], minlength=len(values))
        present = np.flatnonzero(occurrences)
        for word, n in zip(values.take(pa.array(present)).to_pylist(), occurrences[present].tolist()):
            stats[f"{OTHER_SCRIPT_WORDS}:{word_script(word) or 'none'}"] += n
    return other


def _word_codes(
    codes: np.ndarray, is_word: np.ndarray, token_offsets: np.ndarray, dropped: Counter
) -> tuple[np.ndarray, np.ndarray]:
    """The label code of each word, with the marks standing alone attached; and the words' list offsets."""
    word_codes = codes[is_word]
    # words before each token, and the new list offsets: one cumulative sum serves both
    words_before = np.zeros(len(codes) + 1, dtype=np.int64)
    np.cumsum(is_word.view(np.int8), out=words_before[1:])
    offsets = words_before[token_offsets]
    loose = np.flatnonzero(~is_word & (codes > 0))
    if len(loose):
        # a mark standing alone labels the last word before it on the same line
        line = np.searchsorted(token_offsets, loose, side="right") - 1
        owner = words_before[loose] - 1
        attached = owner >= offsets[line]
        np.maximum.at(word_codes, owner[attached], codes[loose[attached]])
        if (~attached).any():
            dropped["mark_without_word_before_it"] += int((~attached).sum())
    return word_codes, offsets


def render(words: list[str], labels: list[str], label_set: LabelSet, script: str | None = None) -> str:
    """Words and labels back to punctuated text (each label's mark, in ``script``, glued to the word)."""
    marks = label_set.rendered(script)
    return " ".join(w + marks[l] for w, l in zip(words, labels))
