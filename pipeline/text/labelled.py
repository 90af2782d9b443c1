"""What labelling gives for each line (:class:`Labelled`) and the pieces every labelling rule shares
(the project's in :mod:`pipeline.text.labelling`, a paper's in :mod:`pipeline.text.protocols`):
lowercasing and the case labels of the words as written.  It imports neither rule, so each can
build on it."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.labels import CASE_LABELS, CASE_TO_ID, LabelSet
from pipeline.schema import CASE_VALUES, encoded_codes
from pipeline.text.case import case_of_stored
from pipeline.text.normalize import MAY_LOWER, non_ascii_rows, rows_holding, value_data, value_offsets


@dataclass
class Labelled:
    """Words, labels, case labels and mixed-case forms per input line, plus what was dropped and why."""

    words: pa.ListArray
    labels: pa.ListArray
    case: pa.ListArray
    surface: pa.ListArray
    label_set: LabelSet
    dropped: Counter = field(default_factory=Counter)
    #: facts worth a count that lose nothing (abbreviations read as sentence ends, or left unresolved)
    stats: Counter = field(default_factory=Counter)

    def __len__(self) -> int:
        return len(self.words)


def _patch(strings: pa.Array, rows: np.ndarray, values: pa.Array) -> pa.Array:
    """``strings`` with ``rows`` (sorted) replaced by ``values``.

    Few rows change (abbreviations), so slices and a concatenation, one memcpy,
    beat a masked replace over the whole column.
    """
    if len(rows) > 1000:  # a masked replace costs the same (3 ms for 100,000 words) whatever the rows
        mask = np.zeros(len(strings), dtype=bool)
        mask[rows] = True
        return pc.replace_with_mask(strings, pa.array(mask), values)
    pieces, start = [], 0
    for i, row in enumerate(rows.tolist()):
        pieces += [strings.slice(start, row - start), values.slice(i, 1)]
        start = row + 1
    pieces.append(strings.slice(start))
    return pa.concat_arrays(pieces)


def _lower(words: pa.Array) -> pa.Array:
    """utf8_lower, by the ASCII kernel (20x faster) but for the words with a non-ASCII byte."""
    rows = non_ascii_rows(words)
    lowered = pc.ascii_lower(words)
    return _patch(lowered, rows, pc.utf8_lower(words.take(pa.array(rows)))) if len(rows) else lowered


_O, _U, _A, _M = (CASE_TO_ID[c] for c in CASE_LABELS)


def case_labels(original: pa.Array, stored: pa.Array) -> tuple[pa.Array, pa.Array]:
    """Case label (O/U/A/M) and mixed-case form of each word, ``stored`` being the word as kept
    (lowercased, or as written).  Exactly :func:`pipeline.text.case.apply_case`'s inverse: ASCII words
    starting with a letter are decided by Arrow's ASCII kernels (which do what Python does there),
    every other word that is not its own lowercase by the Python rule itself."""
    codes = case_codes(original, stored)
    mixed = np.flatnonzero(codes == _M)
    return encoded_codes(CASE_VALUES, codes), mixed_case_forms(len(original), mixed, original.take(pa.array(mixed)))


def case_codes(original: pa.Array, stored: pa.Array) -> np.ndarray:
    """The case label of each word as codes (``CASE_TO_ID``): see :func:`case_labels`."""
    codes = np.zeros(len(original), dtype=np.int8)
    if not len(original):
        return codes
    if stored is not original:
        differs = np.flatnonzero(pc.not_equal(original, stored).to_numpy(zero_copy_only=False))
        low = stored.take(pa.array(differs))
    else:  # only a word holding a byte of a character lowercasing may change can differ from its lowercase
        rows = rows_holding(original, MAY_LOWER)
        lowered = pc.utf8_lower(original.take(pa.array(rows)))
        changed = np.flatnonzero(pc.not_equal(original.take(pa.array(rows)), lowered).to_numpy(zero_copy_only=False))
        differs, low = rows[changed], lowered.take(pa.array(changed))
    if not len(differs):
        return codes
    subset = original.take(pa.array(differs))
    simple = pc.and_(pc.string_is_ascii(subset), pc.match_substring_regex(subset, "^[A-Za-z]")).to_numpy(
        zero_copy_only=False
    )
    rows, orig_s, low_s = differs[simple], subset.filter(pa.array(simple)), low.filter(pa.array(simple))
    is_u = pc.equal(orig_s, pc.ascii_capitalize(low_s)).to_numpy(zero_copy_only=False)
    is_a = pc.equal(orig_s, pc.ascii_upper(low_s)).to_numpy(zero_copy_only=False) & ~is_u
    codes[rows] = np.where(is_u, _U, np.where(is_a, _A, _M))
    for row, word, kept in zip(
        differs[~simple].tolist(),
        subset.filter(pa.array(~simple)).to_pylist(),
        low.filter(pa.array(~simple)).to_pylist(),
    ):
        codes[row] = CASE_TO_ID[case_of_stored(word, kept)[0]]
    return codes


def mixed_case_forms(n: int, rows: np.ndarray, forms: pa.Array) -> pa.Array:
    """``n`` nulls but at ``rows`` (sorted: the words whose case label is ``M``), their ``forms``."""
    if not len(rows):
        return pa.nulls(n, pa.string())
    mask = np.zeros(n, dtype=bool)
    mask[rows] = True
    if forms.null_count:
        return pc.replace_with_mask(pa.nulls(n, pa.string()), pa.array(mask), forms)
    # built from the buffers: the forms' bytes as they are, empty strings under the nulls (a masked
    # replace over every word costs ten times more)
    form_offsets = value_offsets(forms)
    lengths = np.zeros(n, dtype=np.int32)
    lengths[rows] = np.diff(form_offsets)
    offsets = np.zeros(n + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    data = value_data(forms)[form_offsets[0] : form_offsets[-1]]
    validity = np.packbits(mask, bitorder="little")
    buffers = [pa.py_buffer(validity), pa.py_buffer(offsets), pa.py_buffer(data)]
    return pa.StringArray.from_buffers(n, buffers[1], buffers[2], buffers[0], n - len(rows))
