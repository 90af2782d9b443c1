"""Model-ready sequences from labelled segments, and exports.

* ``chunk`` (Guerreiro 2021): consecutive segments of a document packed up to
  ``max_len`` subword tokens (special tokens included); chunk ends fall wherever
  the budget runs out, not at sentence ends, so a model cannot learn "the end
  of the input is a PERIOD".  ``stride`` > 0 makes consecutive chunks share that
  many words.
* ``segment``: each segment on its own (split into chunks if it is too long);
  ``chunk_id`` is ``seg_id * 1000 + chunk``.
* ``slot_filling`` (Rao 2022): a mask token after every word; the labels sit on
  the masks.

Labels: each word's label on its *last* subword (the mark follows the word, so the
token nearest the gap decides it); -100 on every other token; ``case_labels`` the
word's capitalization label (O/U/A/M as 0-3) at the same positions.  ``word_index``
gives, for every token, the position of its word in the document (-1 for special
and mask tokens), so predictions map back to words.  A word the tokenizer turns
into no token (an empty word) becomes the unknown token, so no label is lost.

Speed: each distinct word is tokenized once (a cache per process, over shards), and
the packing is array arithmetic over the shard; only documents longer than one
chunk are walked chunk by chunk.

Scale: the stage's driver does nothing that grows with the corpus.  A trained tokenizer
learns from word counts made on the workers (each shard's train words, normalized), summed
exactly per run of shards, then per range of word hashes, also on the workers
(:func:`count_train_words`); the driver
keeps the ``train_words`` most frequent (ties: by the word), and the trainer reads about
``train_occurrences`` occurrences at most (:func:`scaled_counts`).  Above that many words, the
counts come from a seeded sample of blocks of rows that holds about as many (:class:`RowSample`),
so the workers' counting stops growing with the corpus too.  The report's audit is made
from the same read of each shard as the packing.
"""

from __future__ import annotations

import importlib
import itertools
import logging
import threading
import time
from collections import Counter
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine.hashsets import WordCodes, word_codes
from pipeline.errors import InputError, ParamsError
from pipeline.labels import CASE_LABELS, LabelSet
from pipeline.schema import flat_codes, flat_dictionary

IGNORE = -100
log = logging.getLogger(__name__)

#: the sequences' layout.  Version 3 dropped ``attention_mask``: every stored position is a token
#: (rows are not padded), so it was all ones; a batch's mask is made where it is padded
SEQUENCES_SCHEMA_NAME = "punct-sequences/3"
SEQUENCE_SCHEMA = pa.schema(
    [
        pa.field("corpus", pa.string()),
        pa.field("lang", pa.string()),
        pa.field("split", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.int32()),
        pa.field("input_ids", pa.list_(pa.int32())),
        pa.field("labels", pa.list_(pa.int16())),
        pa.field("case_labels", pa.list_(pa.int8())),
        pa.field("word_index", pa.list_(pa.int32())),
    ],
    metadata={b"schema": SEQUENCES_SCHEMA_NAME.encode()},
)


#: words a worker's cache of tokenized words (:class:`PieceCache`) holds before it is cleared: at two
#: million words it held about 0.25 GB a worker at 100 M words
WORD_CACHE_LIMIT = 200_000


class WordSlots:
    """Distinct words numbered 0, 1, ... in the order added, found again with array operations over a
    batch of words: their hashes searched in a sorted array, each match checked against the word
    itself (a hash two words share finds no slot, so the word is added again: never a wrong slot).
    No Python string per word."""

    def __init__(self):
        from pipeline.engine.hashsets import string_array_hashes

        self._hash = string_array_hashes
        self.hashes = np.zeros(0, np.uint64)  # sorted
        self.slots = np.zeros(0, np.int64)  # the slot of each of ``hashes``
        self._chunks: list[pa.Array] = []

    def __len__(self) -> int:
        return len(self.slots)

    def words(self) -> pa.Array:
        """Every word added, by slot."""
        if len(self._chunks) != 1:
            self._chunks = [pa.concat_arrays(self._chunks) if self._chunks else pa.array([], pa.string())]
        return self._chunks[0]

    def find(self, words: pa.Array, hashes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """Each word's slot (-1: not added), and the words' hashes (``hashes``: given)."""
        hashes = self._hash(words) if hashes is None else hashes
        if not len(self.hashes):
            return np.full(len(words), -1, np.int64), hashes
        # the hashes searched in increasing order: each search starts where the one before ended
        # (half the time of searching them in the words' order)
        order = np.argsort(hashes)
        at = np.empty(len(hashes), np.intp)
        at[order] = np.minimum(np.searchsorted(self.hashes, hashes[order]), len(self.hashes) - 1)
        slots = np.where(self.hashes[at] == hashes, self.slots[at], -1)
        hit = slots >= 0
        if hit.any():
            # each word against the word of its slot (most words are found: the words compared in
            # place, only the slots' words gathered)
            same = pc.equal(words, self.words().take(pa.array(np.where(hit, slots, 0))))
            slots[hit & ~same.to_numpy(zero_copy_only=False)] = -1
        return slots, hashes

    def add(self, words: pa.Array, hashes: np.ndarray) -> np.ndarray:
        """The slots of ``words`` (with their ``hashes``), added."""
        new = np.arange(len(self.slots), len(self.slots) + len(words))
        order = np.argsort(hashes, kind="stable")
        at = np.searchsorted(self.hashes, hashes[order])
        self.hashes = np.insert(self.hashes, at, hashes[order])
        self.slots = np.insert(self.slots, at, new[order])
        self._chunks.append(words.cast(pa.string()) if words.type != pa.string() else words)
        return new


class PieceCache:
    """Subword ids of distinct words, tokenized once per process (bounded: cleared when full).

    A word's ids sit in one growing flat array (``flat``), found by the word's slot (``start``,
    ``length``): a shard looks its distinct words up with array operations (:class:`WordSlots`),
    with no array per word to gather and concatenate."""

    def __init__(self, tokenizer, limit: int = WORD_CACHE_LIMIT):
        self.tokenizer, self.limit = tokenizer, limit
        self.backend = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            # a copy without the padding and truncation a tokenizer.json may carry (sentence-transformers
            # models pad every encoding to 128): the Python call turns them off per call, the backend does not
            from tokenizers import Tokenizer

            self.backend = Tokenizer.from_str(backend.to_str())
            self.backend.no_padding()
            self.backend.no_truncation()
        self._clear()

    def _clear(self) -> None:
        self.index = WordSlots()
        self.start = np.zeros(1024, np.int64)
        self.length = np.zeros(1024, np.int64)
        self.flat = np.zeros(4096, np.int32)
        self._words = self._tokens = 0

    def _encode(self, words: list[str]) -> list[list[int]]:
        if self.backend is not None:  # the fast tokenizer's own batch encoder: the same ids, no Python wrapping
            return [e.ids for e in self.backend.encode_batch(words, add_special_tokens=False)]
        return self.tokenizer(words, add_special_tokens=False)["input_ids"]

    def _add(self, words: list[str]) -> None:
        unk = self.tokenizer.unk_token_id
        encoded = [ids or [unk] for ids in self._encode(words)]
        lengths = np.fromiter(map(len, encoded), np.int64, len(encoded))
        ids = np.fromiter(itertools.chain.from_iterable(encoded), np.int32, int(lengths.sum()))
        n, t = self._words, self._tokens
        self.start = _fit(self.start, n + len(words))
        self.length = _fit(self.length, n + len(words))
        self.flat = _fit(self.flat, t + len(ids))
        self.start[n : n + len(words)] = t + np.r_[0, np.cumsum(lengths)[:-1]]
        self.length[n : n + len(words)] = lengths
        self.flat[t : t + len(ids)] = ids
        self._words, self._tokens = n + len(words), t + len(ids)

    def lookup(self, words, hashes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(start, length) in ``flat`` of each of ``words`` (distinct; a list or an Arrow string array;
        ``hashes``: theirs, if the caller has them), tokenizing those not seen yet; valid until the
        next call."""
        words = words if isinstance(words, pa.Array) else pa.array(words, pa.string())
        slots, hashes = self.index.find(words, hashes)
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            if len(self.index) + len(missing) > self.limit:
                self._clear()
                slots[:], missing = -1, np.arange(len(words))
            new = words.take(pa.array(missing))
            self._add(new.to_pylist())
            slots[missing] = self.index.add(new, hashes[missing])
        return self.start[slots], self.length[slots]

    def pieces(self, words: list[str]) -> list[np.ndarray]:
        """Each word's ids (never empty: an untokenizable word is the unknown token)."""
        distinct = list(dict.fromkeys(words))
        start, length = self.lookup(distinct)
        found = {w: self.flat[s : s + n].copy() for w, s, n in zip(distinct, start.tolist(), length.tolist())}
        return [found[w] for w in words]


def _fit(array: np.ndarray, size: int) -> np.ndarray:
    """``array`` with room for ``size`` items (doubled, so that growing costs linear time)."""
    if size <= len(array):
        return array
    grown = np.zeros(max(size, 2 * len(array)), array.dtype)
    grown[: len(array)] = array
    return grown


_CACHES: dict[int, PieceCache] = {}


def piece_cache(tokenizer) -> PieceCache:
    cache = _CACHES.get(id(tokenizer))
    if cache is None or cache.tokenizer is not tokenizer:
        cache = _CACHES[id(tokenizer)] = PieceCache(tokenizer)
    return cache


def _offsets(lists) -> np.ndarray:
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    return pc.subtract(lists.offsets, lists.offsets[0]).to_numpy(zero_copy_only=False).astype(np.int64)


def _case_codes(case_column, words_column) -> np.ndarray:
    """Case label ids per word; IGNORE for the words of a row without case information (null)."""
    case_column = case_column.combine_chunks() if isinstance(case_column, pa.ChunkedArray) else case_column
    if case_column.null_count:
        lengths = pc.list_value_length(words_column).to_pylist()
        case_column = pa.array(
            [row if row is not None else [""] * n for row, n in zip(case_column.to_pylist(), lengths)],
            pa.list_(pa.string()),
        )
    codes = flat_codes(case_column, CASE_LABELS)[0]
    return np.where(codes < 0, IGNORE, codes)


def build_sequences(
    table: pa.Table,
    tokenizer,
    max_len: int = 256,
    mode: str = "chunk",
    stride: int = 0,
    slot_filling: bool = False,
    *,
    label_set: LabelSet,
    words: WordCodes | None = None,
) -> tuple[pa.Table, Counter]:
    """``table``'s segments as token sequences whose labels are ids in ``label_set`` (``words``:
    the codes of ``table``'s words, if the caller made them)."""
    if mode not in ("chunk", "segment"):
        raise ParamsError(f"mode must be chunk or segment, not {mode!r}")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    if slot_filling and tokenizer.mask_token_id is None:
        raise InputError("slot filling needs a tokenizer with a mask token")
    counts: Counter = Counter()
    if table.num_rows == 0:
        return SEQUENCE_SCHEMA.empty_table(), counts
    rows, group_first_row, row_position = _document_rows(table, mode)
    if rows is not table:  # rows put in document order: their words' codes made again
        words = None
    words = _token_stream(rows["words"].combine_chunks(), row_position, tokenizer, slot_filling, words)
    budget = max_len - (cls is not None) - (sep is not None)
    chunks = _chunks(words, group_first_row, budget, stride, max_len)
    label_code, _ = flat_codes(rows["labels"], label_set.labels)
    case_code = _case_codes(rows["case"], rows["words"]) if "case" in rows.column_names else None
    packed = _pack(words, chunks, cls, sep, label_code, case_code, slot_filling)
    first_rows = group_first_row[chunks.group]
    if mode == "segment":
        chunk_id = rows["seg_id"].to_numpy(zero_copy_only=False).astype(np.int64)[first_rows] * 1000 + chunks.number
    else:
        chunk_id = chunks.number
    meta = rows.select(["corpus", "lang", "split", "doc_id"]).take(pa.array(first_rows))
    list_offsets = pa.array(packed.offsets.astype(np.int32))
    total = int(packed.offsets[-1])
    out = pa.Table.from_arrays(
        [
            meta["corpus"].combine_chunks(),
            meta["lang"].combine_chunks(),
            meta["split"].combine_chunks().cast(pa.string()),
            meta["doc_id"].combine_chunks(),
            pa.array(chunk_id.astype(np.int32)),
            *(
                pa.ListArray.from_arrays(list_offsets, pa.array(values))
                for values in (packed.ids, packed.labels, packed.case, packed.index)
            ),
        ],
        schema=SEQUENCE_SCHEMA,
    )
    counts["chunks"] += len(chunks.group)
    counts["tokens"] += total
    counts["words"] += int(words.offsets[-1])
    return out, counts


def _document_rows(table: pa.Table, mode: str) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The rows in sequence order (a (doc, split)'s rows together, groups in order of first
    appearance; in ``segment`` mode each row its own group, in table order), the first row of each
    group, and each row's first word's position in its (doc, split)."""
    split = pc.fill_null(table["split"], "\x00")
    doc_split = pc.binary_join_element_wise(table["doc_id"], split, "\x1f")
    doc_split = doc_split.combine_chunks() if isinstance(doc_split, pa.ChunkedArray) else doc_split
    doc_group = pc.dictionary_encode(doc_split).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_rows = table.num_rows
    order = np.argsort(doc_group, kind="stable")  # rows of a (doc, split) together, in table order
    row_words = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False).astype(np.int64)
    sorted_words = row_words[order]
    sorted_group = doc_group[order]
    cumulative = np.cumsum(sorted_words) - sorted_words
    group_first = np.r_[0, np.flatnonzero(np.diff(sorted_group)) + 1]
    first_of_row = np.repeat(cumulative[group_first], np.diff(np.r_[group_first, n_rows]))
    row_offset = np.empty(n_rows, np.int64)
    row_offset[order] = cumulative - first_of_row
    if mode == "segment":
        order, group_of_row = np.arange(n_rows), np.arange(n_rows)
    else:
        group_of_row = sorted_group
    # documents are contiguous almost always: then the rows are already in order
    rows = table if bool((np.diff(order) > 0).all()) else table.take(pa.array(order))
    return rows, np.r_[0, np.flatnonzero(np.diff(group_of_row)) + 1], row_offset[order]


class TokenStream(NamedTuple):
    """The tokens of all words in row order (a word's pieces, then its mask in slot filling)."""

    tokens: np.ndarray
    prefix: np.ndarray  # tokens before each word (one more entry: the total)
    word_len: np.ndarray  # tokens of each word
    offsets: np.ndarray  # each row's first word (one more entry: the total)
    position: np.ndarray  # each word's position in its document


def _token_stream(
    words_column, row_position: np.ndarray, tokenizer, slot_filling: bool, words: WordCodes | None = None
) -> TokenStream:
    word_offsets = _offsets(words_column)
    words = words or word_codes(words_column)
    word_code = words.codes
    cache = piece_cache(tokenizer)
    unique_start, unique_len = cache.lookup(words.values, words.hashes)
    piece_len = unique_len[word_code]
    word_len = piece_len + int(slot_filling)
    prefix = np.r_[0, np.cumsum(word_len)]
    n_stream = int(prefix[-1])
    source = np.repeat(unique_start[word_code] - prefix[:-1], word_len) + np.arange(n_stream)  # in ``cache.flat``
    if slot_filling:
        is_piece = source - np.repeat(unique_start[word_code], word_len) < np.repeat(piece_len, word_len)
        tokens = np.where(is_piece, cache.flat[np.where(is_piece, source, 0)], tokenizer.mask_token_id)
    else:
        tokens = cache.flat[source]
    # a word's position in its document: its row's offset in the document, then its place in the row
    position = np.repeat(row_position - word_offsets[:-1], np.diff(word_offsets)) + np.arange(len(word_len))
    return TokenStream(tokens, prefix, word_len, word_offsets, position)


class Chunks(NamedTuple):
    """The chunks, groups in order and chunks in order within a group: their group, first word,
    end word and number within the group."""

    group: np.ndarray
    start: np.ndarray
    end: np.ndarray
    number: np.ndarray


def _chunks(words: TokenStream, group_first_row: np.ndarray, budget: int, stride: int, max_len: int) -> Chunks:
    """A group whose tokens fit the budget is one chunk (array arithmetic); a longer one is cut
    word by word where the budget runs out, the next chunk starting ``stride`` words back."""
    prefix, word_len = words.prefix, words.word_len
    g_word_start = words.offsets[group_first_row]
    g_word_end = np.r_[g_word_start[1:], words.offsets[-1]]
    g_tokens = prefix[g_word_end] - prefix[g_word_start]
    nonempty = g_word_end > g_word_start
    single = nonempty & (g_tokens <= budget)
    found = [np.flatnonzero(single), g_word_start[single], g_word_end[single], np.zeros(int(single.sum()), np.int64)]
    long: list[tuple[int, int, int, int]] = []
    for g in np.flatnonzero(nonempty & ~single).tolist():
        start, end_word, k = int(g_word_start[g]), int(g_word_end[g]), 0
        while start < end_word:
            end = min(int(np.searchsorted(prefix, prefix[start] + budget, side="right")) - 1, end_word)
            if end <= start:
                raise InputError(f"a word of {int(word_len[start])} tokens does not fit max_len")
            long.append((g, start, end, k))
            k += 1
            if end >= end_word:
                break
            if stride and end - stride <= start:
                # advancing one word instead would multiply the rows silently
                raise ParamsError(
                    f"stride: {stride} words is not fewer than the {end - start} words of a chunk of "
                    f"{max_len} tokens (long words): lower the sequences stride"
                )
            start = max(end - stride, start + 1)
    columns = np.array(long, np.int64).reshape(-1, 4).T
    group, start, end, number = (np.concatenate([a, b]) for a, b in zip(found, columns))
    ordering = np.lexsort((number, group))  # groups in order, chunks in order
    return Chunks(group[ordering], start[ordering], end[ordering], number[ordering])


class Packed(NamedTuple):
    offsets: np.ndarray  # each chunk's first token (one more entry: the total)
    ids: np.ndarray
    labels: np.ndarray
    case: np.ndarray
    index: np.ndarray


def _pack(words: TokenStream, chunks: Chunks, cls, sep, label_code, case_code, slot_filling: bool) -> Packed:
    """The tokens of each chunk: [cls] + its words' tokens + [sep]; the body tokens are gathered
    from the stream (with stride 0 they are the whole stream in order) and the specials set around
    them; each word's label and case on its last token (the mask in slot filling)."""
    prefix, word_len = words.prefix, words.word_len
    n_stream = int(prefix[-1])
    has_cls = cls is not None
    body = prefix[chunks.end] - prefix[chunks.start]
    n_body = int(body.sum())
    body_offsets = np.r_[0, np.cumsum(body)]
    out_offsets = np.r_[0, np.cumsum(body + has_cls + (sep is not None))]
    total = int(out_offsets[-1])
    if n_body == n_stream and bool((prefix[chunks.start] == body_offsets[:-1]).all()):
        # the chunks cover the stream in order (stride 0): every token once, in place, at every
        # output position but the specials (a mask: no position array to build and scatter by)
        token = slice(None)
        into = np.ones(total, bool)
        if has_cls:
            into[out_offsets[:-1]] = False
        if sep is not None:
            into[out_offsets[1:] - 1] = False
    else:
        along = np.arange(n_body)
        into = np.repeat(out_offsets[:-1] + int(has_cls) - body_offsets[:-1], body) + along  # position in the output
        token = np.repeat(prefix[chunks.start] - body_offsets[:-1], body) + along  # position in the token stream
        del along
    ids = np.zeros(total, np.int32)
    ids[into] = words.tokens[token]
    if has_cls:
        ids[out_offsets[:-1]] = cls
    if sep is not None:
        ids[out_offsets[1:] - 1] = sep
    labels = np.full(total, IGNORE, np.int16)
    case_labels = np.full(total, IGNORE, np.int8)
    index = np.full(total, -1, np.int32)
    last_token = prefix[1:] - 1
    on_last = np.full(n_stream, IGNORE, np.int16)
    on_last[last_token] = label_code
    labels[into] = on_last[token]
    on_last[last_token] = case_code if case_code is not None else 0
    case_labels[into] = on_last[token]
    word_of_token = np.repeat(words.position, word_len)
    if slot_filling:
        word_of_token[last_token] = -1  # the mask token belongs to no word
    index[into] = word_of_token[token]
    return Packed(out_offsets, ids, labels, case_labels, index)


def words_from_sequences(
    sequences: pa.Table, tokenizer, label_set: LabelSet
) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(doc, split) -> [(word position, label)] recovered from the sequences (first chunk wins)."""
    out: dict[tuple[str, str], dict[int, str]] = {}
    for doc, split, labels, index in zip(
        sequences["doc_id"].to_pylist(),
        sequences["split"].to_pylist(),
        sequences["labels"].to_pylist(),
        sequences["word_index"].to_pylist(),
    ):
        seen = out.setdefault((doc, split), {})
        last_word = None
        for label, word in zip(labels, index):
            if label != IGNORE:
                w = word if word >= 0 else last_word
                seen.setdefault(w, label_set.labels[label])
            if word >= 0:
                last_word = word
    return {k: sorted(v.items()) for k, v in out.items()}


def tokenizer_normalizer(lowercase: bool):
    """The trained tokenizer's normalizer: NFC, then lowercase if asked."""
    from tokenizers import normalizers

    return normalizers.Sequence([normalizers.NFC()] + ([normalizers.Lowercase()] if lowercase else []))


def train_tokenizer(words, vocab_size: int = 2000, lowercase: bool = False, normalized: bool = False):
    """A BPE tokenizer trained on the corpus (offline default), as a transformers fast tokenizer;
    ``normalized``: the words are already normalized (:func:`normalized_counts`), so the trainer
    skips the normalizer, which is set afterwards (a third of its time, same merges: tested).

    BPE, not WordPiece: the WordPiece trainer of ``tokenizers`` numbers its ``##``
    pieces in hash-map order, so the same words give a different vocabulary on
    every run (huggingface/tokenizers#1794); plain BPE numbers pieces from the
    sorted alphabet and its merges, and is the same every run (tested)."""
    from tokenizers import Tokenizer, models, pre_tokenizers, trainers

    # transformers, for the wrapper returned, is imported in a thread while the trainer runs: the
    # import is driver time that nothing else overlaps, and the trainer leaves part of a core idle
    importing = threading.Thread(target=importlib.import_module, args=("transformers",), daemon=True)
    importing.start()
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    if not normalized:
        tok.normalizer = tokenizer_normalizer(lowercase)
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=1, show_progress=False)
    tok.train_from_iterator(words, trainer=trainer)
    tok.normalizer = tokenizer_normalizer(lowercase)
    importing.join()
    from transformers import PreTrainedTokenizerFast  # a failed import raises here, in this thread

    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


# ------------------------------------------------------------------------------ the stage, streamed


def repeated_words(counts: dict[str, int], per_line: int = 1024, lines_per_batch: int = 16):
    """Batches of lines for the tokenizer trainer, each word repeated as often as it occurs, in
    lines of ``per_line`` words (several words a line: a line a word made a batch of sixteen short
    lines for most words, and the trainer's per-batch cost took a tenth of its time): the trainer
    counts exactly these occurrences, and its merges depend on the counts only, so the tokenizer
    is the one trained on the running text (tested).  Its normalizers act within a word (a space
    composes with nothing), so words joined by spaces normalize as they do in their segments.
    Small batches: the trainer's threads keep what their batches allocated (256 lines a batch:
    34 MB more at 100 M words)."""
    batch: list[str] = []
    line: list[str] = []
    room = per_line  # words the line can still take
    for word in sorted(counts):
        n = counts[word]
        while n > 0:
            take = min(n, room)
            line.append(" ".join([word] * take))
            n -= take
            room -= take
            if not room:
                batch.append(" ".join(line))
                line, room = [], per_line
                if len(batch) >= lines_per_batch:
                    yield batch
                    batch = []
    if line:
        batch.append(" ".join(line))
    if batch:
        yield batch


def normalized_counts(counts: dict[str, int], lowercase: bool) -> dict[str, int]:
    """Word counts of the normalized words (words that normalize alike summed), normalized once per
    distinct word by the tokenizer's own normalizer: the trainer then counts the words it would
    have counted after normalizing (NFC and lowercasing act within a word, as in
    :func:`repeated_words`)."""
    normalize = tokenizer_normalizer(lowercase).normalize_str
    out: Counter = Counter()
    for word, n in counts.items():
        out[normalize(word)] += n
    return out


#: rows per block of the tokenizer's word sample (:class:`RowSample`)
SAMPLE_BLOCK_ROWS = 1024
#: blocks a sample holds at the least, in expectation: a small ``train_occurrences`` still samples
#: the corpus through several hundred places, not a handful
SAMPLE_MIN_BLOCKS = 256
#: the sample's seed (a constant: the same corpus gives the same tokenizer on every run)
SAMPLE_SEED = 0x70756E6374


class RowSample(NamedTuple):
    """A seeded sample of the stage's input rows for the tokenizer's word counts: blocks of
    ``block_rows`` consecutive rows, numbered through the inputs read in order (so the sample is
    the same whatever the shards, the engine and the workers), each kept when its hash is below
    ``threshold`` (out of 2**64)."""

    threshold: int
    block_rows: int = SAMPLE_BLOCK_ROWS

    @classmethod
    def of(cls, occurrences: int, slots: int, rows: int, block_rows: int = SAMPLE_BLOCK_ROWS) -> RowSample | None:
        """The sample that holds about ``occurrences`` of the ``slots`` words (a footer's count:
        words, plus at most one per row) of ``rows`` rows, and at least about
        :data:`SAMPLE_MIN_BLOCKS` blocks; None (every row) when that is all of them."""
        blocks = -(-rows // block_rows)
        if slots <= occurrences or blocks <= SAMPLE_MIN_BLOCKS:
            return None
        threshold = max(occurrences * 2**64 // slots, SAMPLE_MIN_BLOCKS * 2**64 // blocks)
        return cls(threshold, block_rows) if threshold < 2**64 else None

    @property
    def share(self) -> float:
        return self.threshold / 2**64

    def rows(self, first_row: int, n: int) -> np.ndarray:
        """Which of the ``n`` rows from row number ``first_row`` on are in the sample."""
        if n <= 0:
            return np.zeros(0, bool)
        kept = self._blocks(first_row, n)
        return kept[(np.arange(first_row, first_row + n) // self.block_rows) - first_row // self.block_rows]

    def reaches(self, first_row: int, n: int) -> bool:
        """Whether any of the ``n`` rows from row number ``first_row`` on is in the sample."""
        return n > 0 and bool(self._blocks(first_row, n).any())

    def _blocks(self, first_row: int, n: int) -> np.ndarray:
        """Whether each block that the rows reach is kept."""
        from pipeline.engine.hashsets import mixed64

        first = first_row // self.block_rows
        blocks = np.arange(first, (first_row + n - 1) // self.block_rows + 1, dtype=np.uint64)
        return mixed64(blocks, SAMPLE_SEED) < np.uint64(self.threshold)


class TrainWordCounts:
    """Picklable map step: a segment shard -> its train split's distinct words, normalized as the
    trained tokenizer normalizes them (:func:`normalized_counts`), with how often each occurs,
    written to ``folder`` as one Arrow file sorted by the words' hashes (so that a hash range of
    every shard is one slice: :class:`SumWordRange`); returns the number of distinct words.
    ``sample``: only the rows of this :class:`RowSample` are counted, and a shard with none of
    them is not read (no file; returns None)."""

    def __init__(self, folder, lowercase: bool, sample: RowSample | None = None):
        self.folder, self.lowercase, self.sample = str(folder), lowercase, sample

    def __call__(self, shard):
        from pipeline.engine import location
        from pipeline.engine.dataset import read_rows
        from pipeline.engine.step import StepResult

        sampled = None
        if self.sample is not None:
            sampled = self.sample.rows(shard.first_row, shard.stop - shard.start)
            if not sampled.any():
                return StepResult(None, payload=None)
        table = read_rows(shard, ["words", "split"], dictionary=True)
        train = pc.fill_null(pc.equal(table["split"], "train"), False).to_numpy(zero_copy_only=False)
        if sampled is not None:
            train = train & sampled
        # the train rows' words picked out of the codes (filtering the table copied its lists)
        codes, values = flat_dictionary(table["words"])
        if not train.all():
            lengths = pc.fill_null(pc.list_value_length(table["words"]), 0).to_numpy(zero_copy_only=False)
            codes = codes[np.repeat(train, lengths)]
        counts = np.bincount(codes, minlength=len(values)) if len(codes) else np.zeros(0, np.int64)
        present = np.flatnonzero(counts)
        normalize = _NORMALIZED.get(self.lowercase)
        if normalize is None:
            normalize = _NORMALIZED[self.lowercase] = NormalizedWords(self.lowercase)
        words, word_hashes = normalize(values.take(pa.array(present)))
        # words that normalize alike summed (exact: a shard's counts are far below 2**53)
        encoded = pc.dictionary_encode(words)
        indices = encoded.indices.to_numpy(zero_copy_only=False)
        summed = np.bincount(indices, weights=counts[present], minlength=len(encoded.dictionary))
        words, n = encoded.dictionary, summed.astype(np.int64)
        hashes = np.zeros(len(words), np.uint64)
        hashes[indices] = word_hashes  # a word's hash, from any of its spellings
        location.make_folder(self.folder)
        written = write_word_counts(location.join(self.folder, f"{shard.index:05d}.arrow"), hashes, words, n)
        return StepResult(None, payload=written)


def write_word_counts(path, hashes: np.ndarray, words: pa.Array, n: np.ndarray) -> int:
    """A count file (word hash, word, occurrences) sorted by the hashes, so that a hash range of it
    is one slice (:class:`SumWordRange`); returns its number of words."""
    from pipeline.engine import writing

    order = np.argsort(hashes, kind="stable")
    out = pa.table({"hash": pa.array(hashes[order]), "word": words.take(order), "n": pa.array(n[order])})
    writing.write_arrow_in_place(out, path)
    return out.num_rows


class NormalizedWords:
    """Words normalized as the trained tokenizer normalizes them (:func:`tokenizer_normalizer`), with
    the hashes of the results; each distinct word normalized once per process (most of a shard's
    words were in an earlier shard), bounded by :data:`WORD_CACHE_LIMIT`."""

    def __init__(self, lowercase: bool, limit: int = WORD_CACHE_LIMIT):
        self.lowercase, self.limit = lowercase, limit
        self._clear()

    def _clear(self) -> None:
        self.index = WordSlots()
        self._normalized: list[pa.Array] = []
        self._hashes = np.zeros(0, np.uint64)

    def __call__(self, words: pa.Array) -> tuple[pa.Array, np.ndarray]:
        from pipeline.engine.hashsets import string_array_hashes

        words = words.cast(pa.string()) if words.type != pa.string() else words
        slots, hashes = self.index.find(words)
        missing = np.flatnonzero(slots < 0)
        if len(missing):
            if len(self.index) + len(missing) > self.limit:
                self._clear()
                slots[:], missing = -1, np.arange(len(words))
            new = words.take(pa.array(missing))
            normalized = normalized_words(new, self.lowercase)
            slots[missing] = self.index.add(new, hashes[missing])
            self._normalized.append(normalized)
            self._hashes = np.r_[self._hashes, string_array_hashes(normalized)]
        if len(self._normalized) > 1:
            self._normalized = [pa.concat_arrays(self._normalized)]
        if not self._normalized:
            return pa.array([], pa.string()), np.zeros(0, np.uint64)
        return self._normalized[0].take(pa.array(slots)), self._hashes[slots]


#: per process and ``lowercase``: the words normalized so far
_NORMALIZED: dict[bool, NormalizedWords] = {}


def normalized_words(words: pa.Array, lowercase: bool) -> pa.Array:
    """``words`` (an Arrow string array) normalized as the trained tokenizer normalizes them
    (:func:`tokenizer_normalizer`), in one call of the normalizer: the words joined by spaces, the
    result split at them.  Its normalizers act within a word: NFC composes and reorders nothing
    across a space (a starter that composes with no character), lowercasing maps each character on
    its own and makes no space; so the pieces are the words normalized one by one (tested).  Words
    holding a space themselves would split apart: they are normalized one by one."""
    words = words.cast(pa.string()) if words.type != pa.string() else words
    if len(words) == 0:
        return words
    normalize = tokenizer_normalizer(lowercase).normalize_str
    if not pc.any(pc.match_substring(words, " ")).as_py():
        joined = pc.binary_join(pa.ListArray.from_arrays(pa.array([0, len(words)], pa.int32()), words), " ")
        pieces = pc.split_pattern(pa.array([normalize(joined[0].as_py())]), " ").flatten()
        if len(pieces) == len(words):
            return pieces
    return pa.array([normalize(word) for word in words.to_pylist()], pa.string())


class SumWordFiles:
    """Picklable combine step: a group of consecutive shards' count files (:class:`TrainWordCounts`)
    -> one file of the same form, each word's counts summed over the group, written to ``folder``
    as ``sum-NNNNN.arrow`` (NNNNN: the group's first shard); returns its number of words.  A range
    then reads one slice per group, not one per shard: opening a shard's file for each range cost
    more than the sums (34 ranges x 965 shards at 100 M words)."""

    def __init__(self, folder):
        self.folder = str(folder)

    def __call__(self, group: list[int]) -> int:
        from pipeline.engine import location, reading

        tables = [
            reading.open_arrow_file(location.join(self.folder, f"{index:05d}.arrow")).read_all() for index in group
        ]
        # a word has one hash (of its normalized spelling): summed by the pair
        summed = pa.concat_tables(tables).group_by(["hash", "word"]).aggregate([("n", "sum")])
        del tables
        path = location.join(self.folder, f"sum-{group[0]:05d}.arrow")
        return write_word_counts(path, summed["hash"].to_numpy(), summed["word"], summed["n_sum"].to_numpy())


def combined_groups(shards: list[int], words: list[int], limit: int) -> list[list[int]]:
    """``shards`` cut into runs of consecutive shards whose words (``words``: each shard's distinct
    words) add up to at most ``limit`` (a shard with more is a run of its own)."""
    groups: list[list[int]] = []
    held = 0
    for shard, n in zip(shards, words):
        if not groups or held + n > limit:
            groups.append([])
            held = 0
        groups[-1].append(shard)
        held += n
    return groups


class SumWordRange:
    """Picklable reduce step: a range [lo, hi) of word hashes -> the ``limit`` most frequent words
    in it (by :func:`top_words`), their counts summed over every file's exactly (a word's hash
    puts all its counts in one range), and the number of distinct words in the range.  ``files``:
    the count files' names in ``folder``."""

    def __init__(self, folder, files: list[str], limit: int):
        self.folder, self.files, self.limit = str(folder), files, limit

    def __call__(self, bounds: tuple[int, int]) -> tuple[pa.Table, int]:
        from pipeline.engine import location, reading

        lo, hi = bounds
        pieces = []
        for name in self.files:
            table = reading.open_arrow_file(location.join(self.folder, name)).read_all()
            hashes = table["hash"].to_numpy()
            a = int(np.searchsorted(hashes, np.uint64(lo), "left"))
            b = int(np.searchsorted(hashes, np.uint64(hi - 1), "right")) if hi < 2**64 else len(hashes)
            if b > a:
                # the range's rows copied out of the mapped file, which is then unmapped: a slice would
                # keep every shard's mapping, and the pages read around each lookup, until the range
                # ends (the largest worker grew with the corpus: 0.35 GB at 30 M words)
                pieces.append(table.select(["word", "n"]).take(np.arange(a, b)))
            del table, hashes
        if not pieces:
            return WORD_COUNTS.empty_table(), 0
        summed = pa.concat_tables(pieces).group_by("word").aggregate([("n", "sum")])
        return top_words(pa.table({"word": summed["word"], "n": summed["n_sum"]}), self.limit), summed.num_rows


WORD_COUNTS = pa.schema([pa.field("word", pa.string()), pa.field("n", pa.int64())])
#: distinct words summed by one reduce task (about 100 bytes each while it runs)
WORDS_PER_RANGE = 500_000


def top_words(counts: pa.Table, limit: int) -> pa.Table:
    """The ``limit`` most frequent of ``counts`` (distinct words), ties broken by the word (code point
    order, which is UTF-8 byte order): one total order, so the words kept do not depend on how
    the counts were partitioned."""
    if counts.num_rows == 0:
        return WORD_COUNTS.empty_table()
    order = pc.sort_indices(counts, [("n", "descending"), ("word", "ascending")])
    return counts.take(order[:limit]).cast(WORD_COUNTS)


def count_train_words(
    runner, shards, folder, lowercase: bool, limit: int, sample: RowSample | None = None
) -> tuple[dict[str, int], int]:
    """The train split's ``limit`` most frequent normalized words and their exact counts (see
    :func:`top_words`), and how many distinct words there are in all; ``sample``: of the rows in
    this sample only (:class:`RowSample`).

    Map: each shard writes its distinct words with their counts, sorted by hash.  Combine: runs of
    consecutive shards holding up to :data:`WORDS_PER_RANGE` words between them are summed into
    one file each (:class:`SumWordFiles`).  Reduce: the hash space is cut into ranges of about
    :data:`WORDS_PER_RANGE` distinct words (at least one per worker); each range's counts are
    summed over the combined files and its top ``limit`` returned.  The
    driver keeps a running top ``limit`` of what the ranges return, merged with the ranges' tops
    once they hold ``limit`` words: it holds at most three times ``limit`` words, whatever the
    corpus."""
    from pipeline.engine.dataset import each_step

    step = TrainWordCounts(folder, lowercase, sample)
    # only the shards the sample reaches are sent (a task for each of the others cost its
    # dispatch, to return at once)
    reached = [s for s in shards if sample is None or sample.reaches(s.first_row, s.stop - s.start)]
    found = {r.index: r.payload for r in each_step(runner, step, reached, label="sequences: tokenizer words")}
    counted = [s.index for s in reached if found[s.index] is not None]
    written = [found[index] for index in counted]
    groups = combined_groups(counted, written, WORDS_PER_RANGE)
    files = [f"{index:05d}.arrow" for index in counted]
    if len(groups) < len(counted):
        written = runner.map(SumWordFiles(folder), groups, label="sequences: tokenizer words combined")
        files = [f"sum-{group[0]:05d}.arrow" for group in groups]
    upper = sum(written)  # distinct words summed over files: at least the corpus's
    n_ranges = max(1, runner.workers, -(-upper // WORDS_PER_RANGE))
    bounds = [(i * 2**64 // n_ranges, (i + 1) * 2**64 // n_ranges) for i in range(n_ranges)]
    best, distinct = WORD_COUNTS.empty_table(), 0
    task = SumWordRange(folder, files, limit)
    waiting: list[pa.Table] = []  # ranges' tops not yet merged: fewer than ``limit`` words in all
    for top, n in runner.each(task, bounds, label="sequences: tokenizer words summed"):
        distinct += n
        if best.num_rows >= limit:  # full: a word counted fewer times than the last kept cannot enter
            top = top.filter(pc.greater_equal(top["n"], best["n"][-1]))
        waiting.append(top)
        if sum(t.num_rows for t in waiting) >= limit:  # one sort for many ranges, not one each
            best, waiting = top_words(pa.concat_tables([best, *waiting]), limit), []
    if waiting:
        best = top_words(pa.concat_tables([best, *waiting]), limit)
    return dict(zip(best["word"].to_pylist(), best["n"].to_pylist())), distinct


def scaled_counts(counts: dict[str, int], occurrences: int) -> dict[str, int]:
    """``counts`` whose total is at most about ``occurrences``: each count scaled down in proportion
    (``n * occurrences // total``, at least 1) when they add up to more, unchanged otherwise.  The
    trainer reads every occurrence, so this bounds its time whatever the corpus; the words keep
    their relative frequencies, which are what BPE merges by."""
    total = sum(counts.values())
    if total <= occurrences:
        return counts
    return {word: max(1, n * occurrences // total) for word, n in counts.items()}


class PackingTokenizer(NamedTuple):
    """What packing needs of a fast tokenizer: its backend and special token ids.  Workers load it
    from the backend's JSON, without importing transformers (and torch with it: 2 s and about
    190 MB a worker, the step's largest cost at 10 M words)."""

    backend_tokenizer: object
    cls_token_id: int | None
    sep_token_id: int | None
    mask_token_id: int | None
    unk_token_id: int | None


SPECIAL_IDS = ("cls_token_id", "sep_token_id", "mask_token_id", "unk_token_id")


def packing_files(tokenizer, saved, folder) -> tuple[str, dict] | None:
    """The backend of ``tokenizer`` as loaded back from ``saved`` (its folder: what training loads),
    written in ``folder`` for :class:`SequencesStep`, and its special ids; None for a tokenizer
    without a fast backend (its workers load it through transformers)."""
    from pipeline.engine import location, writing

    if getattr(tokenizer, "backend_tokenizer", None) is None:
        return None
    with location.local_folder(saved) as local:  # by its own class, as AutoTokenizer would: which imports torch
        loaded = type(tokenizer).from_pretrained(str(local))
    path = location.join(folder, "backend.json")
    writing.write_text_in_place(loaded.backend_tokenizer.to_str(), path)
    return path, {key: getattr(loaded, key) for key in SPECIAL_IDS}


class SequencesStep:
    """Picklable: a segment shard -> its sequences, with the tokenizer saved in ``tokenizer_dir``
    (loaded once per worker process), or its fast backend saved as ``backend`` (a JSON file, as
    :func:`packing_files` writes it) with its special ids; ``audit`` (an
    :class:`~pipeline.audit.stats.AuditShard`): the shard's audit from the same read, as payload."""

    _loaded: dict = {}

    def __init__(
        self,
        tokenizer_dir,
        max_len: int,
        mode: str,
        stride: int,
        slot_filling: bool,
        label_set: LabelSet,
        backend=None,
        audit=None,
    ):
        self.tokenizer_dir = str(tokenizer_dir)
        self.backend, self.audit = backend, audit
        self.options = dict(max_len=max_len, mode=mode, stride=stride, slot_filling=slot_filling, label_set=label_set)

    def _tokenizer(self):
        from pipeline.engine import location, reading

        if self.backend is not None:
            from tokenizers import Tokenizer

            path, special_ids = self.backend
            return PackingTokenizer(Tokenizer.from_str(reading.read_text(path)), **special_ids)
        from transformers import AutoTokenizer

        with location.local_folder(self.tokenizer_dir) as local:  # a URL's files copied while it loads
            return AutoTokenizer.from_pretrained(str(local))

    def __call__(self, shard):
        from pipeline.audit.stats import AuditShard, TableShard
        from pipeline.engine.step import Counts, StepResult

        key = (self.tokenizer_dir, repr(self.backend))
        tokenizer = self._loaded.get(key)
        if tokenizer is None:
            tokenizer = self._loaded[key] = self._tokenizer()
        segments = _packing_rows(shard)
        words = word_codes(segments["words"])  # the tokenizer's lookup and the audit hash the same words
        table, counts = build_sequences(segments, tokenizer, **self.options, words=words)
        audited = None
        if self.audit is not None:
            audited = self.audit(TableShard(segments.select(AuditShard.COLUMNS), shard.index, shard.source, words))
        return StepResult(table, Counts(stats=counts), payload=audited)


#: the segment columns that packing and the shard's audit read (``surface``, the largest, is not)
PACKING_COLUMNS = ("corpus", "lang", "doc_id", "seg_id", "words", "labels", "case", "split")


def _packing_rows(shard):
    """The shard's rows, :data:`PACKING_COLUMNS` only, list columns as dictionaries; a file without
    ``split`` gets a null one, and one without ``case`` is read whole, for the version check's
    message (:func:`~pipeline.engine.dataset.read_shard`)."""
    from pipeline.engine import reading
    from pipeline.engine.dataset import read_rows, read_shard

    present = set(reading.open_parquet(shard.path).schema_arrow.names)
    if "case" not in present:
        return read_shard(shard, dictionary=True)
    table = read_rows(shard, [c for c in PACKING_COLUMNS if c in present or c != "split"], dictionary=True)
    if "split" not in table.column_names:
        table = table.append_column("split", pa.nulls(table.num_rows, pa.string()))
    return table


def train_on_counts(runner, shards, params, folder, name: str, word_slots: int):
    """The BPE tokenizer of ``params`` trained on the train split's word counts (see
    :func:`count_train_words` and :func:`scaled_counts`): the driver's part is bounded by
    ``train_words`` and ``train_occurrences``, whatever the corpus.  Where the inputs' footers
    count more than ``train_occurrences`` ``word_slots``, the counts come from a seeded sample
    of the rows that holds about that many (:class:`RowSample`), so the workers' part is bounded
    too."""
    from pipeline.engine.executor import record_timing

    rows = sum(shard.stop - shard.start for shard in shards)
    sample = RowSample.of(params.train_occurrences, word_slots, rows)
    counts, distinct = count_train_words(runner, shards, folder, params.lowercase, params.train_words, sample)
    occurrences = sum(counts.values())
    counts = scaled_counts(counts, params.train_occurrences)
    started = time.perf_counter()
    tokenizer = train_tokenizer(repeated_words(counts), params.vocab_size, params.lowercase, normalized=True)
    seconds = time.perf_counter() - started
    log.info(
        "sequences %s: tokenizer trained on %d of %d distinct words (%d occurrences, %d read) from %s in %.1f s",
        name, len(counts), distinct, occurrences, sum(counts.values()),
        "every row" if sample is None else f"a sample of {sample.share:.1%} of the rows", seconds,
    )  # fmt: skip
    record_timing(f"sequences {name}: tokenizer training", seconds, sum(counts.values()))
    return tokenizer


def sequences_dataset(source, params, out, tokenizer_out, report, name: str, earlier_reports=(), engine=None) -> dict:
    """``source`` (segments) -> ``out`` (sequences, a folder of parts), ``tokenizer_out`` and ``report``
    (the earlier stages' reports, the sequence counts, and the split distribution: audited from
    the shards that the packing reads, in the same pass)."""
    from pipeline.audit.stats import AuditView, ViewsAudit
    from pipeline.datasets.pretrained import load_tokenizer, save_tokenizer
    from pipeline.engine import location, reading, writing
    from pipeline.engine.dataset import (
        WriteParts,
        counts_of,
        finish,
        manifest_entry,
        protocol_entry,
        scan_datasets,
    )
    from pipeline.engine.executor import executor
    from pipeline.labels import file_metadata
    from pipeline.params import EngineParams

    engine = engine or EngineParams()
    earlier = list(earlier_reports)
    with writing.Outputs(inputs=[source, *earlier]) as outputs:
        folder = outputs.dataset(out, kind="sequences")
        tokenizer_folder = outputs.dataset(tokenizer_out, kind="tokenizer")
        report_path = outputs.file(report)
        scratch = outputs.scratch(out)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            scan = scan_datasets(source, engine.shard_rows, runner, one_values=("corpus",))
            shards, label_set = scan.shards, scan.labels
            if params.tokenizer == "train":
                tokenizer = train_on_counts(
                    runner, shards, params, location.join(scratch, "words"), name, scan.word_slots
                )
            else:
                tokenizer = load_tokenizer(params.tokenizer)
            save_tokenizer(tokenizer, tokenizer_folder)
            writing.write_manifest(tokenizer_folder, {"kind": "tokenizer"})
            backend = packing_files(tokenizer, tokenizer_folder, scratch)
            # the dataset pooled and, for several corpora (reported only then), per corpus
            views = [AuditView([name], expected_splits=("train", "dev", "test"))]
            if not scan.one_value["corpus"]:
                views.append(AuditView())
            audit = ViewsAudit(location.join(scratch, "audit"), views, label_set)
            options = (params.max_len, params.mode, params.stride, params.slot_filling, label_set, backend, audit.step)
            write = WriteParts(SequencesStep(tokenizer_folder, *options), folder, file_metadata(label_set))
            results = []
            for result in runner.each(write, shards, label=f"sequences {name}"):
                audit.add(result.payload)
                result.payload = None
                results.append(result)
            audits = audit.finish(runner, shards)
            distribution = audits[0][0]
            per_corpus = audits[1][0] if len(audits) > 1 else {}
        counts = counts_of(results)
        # how the sequences were built travels with them: training reads it instead of asking again
        record = {key: getattr(params, key) for key in ("tokenizer", "max_len", "mode", "stride", "slot_filling")}
        finish(
            folder,
            "sequences",
            results,
            schema=SEQUENCES_SCHEMA_NAME,
            sequences=record,
            **manifest_entry(label_set),
            **protocol_entry(source),
        )
        out_report: dict = {}
        for path in earlier:
            out_report.update(reading.read_json(path))
        out_report["sequences"] = {k: int(v) for k, v in sorted(counts.stats.items())}
        out_report["distribution"] = distribution
        if len(per_corpus) > 1:
            out_report["per_corpus"] = per_corpus
        writing.write_json_in_place(out_report, report_path)
    return out_report
