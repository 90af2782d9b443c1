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
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .labels import CASE_LABELS, LABELS
from .schema import flat_codes, flat_dictionary

IGNORE = -100

SEQUENCE_SCHEMA = pa.schema(
    [
        pa.field("corpus", pa.string()),
        pa.field("lang", pa.string()),
        pa.field("split", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.int32()),
        pa.field("input_ids", pa.list_(pa.int32())),
        pa.field("attention_mask", pa.list_(pa.int8())),
        pa.field("labels", pa.list_(pa.int16())),
        pa.field("case_labels", pa.list_(pa.int8())),
        pa.field("word_index", pa.list_(pa.int32())),
    ],
    metadata={b"schema": b"punct-sequences/2"},
)


class PieceCache:
    """Subword ids of distinct words, tokenized once per process (bounded: cleared when full)."""

    def __init__(self, tokenizer, limit: int = 2_000_000):
        self.tokenizer, self.limit = tokenizer, limit
        self.ids: dict[str, np.ndarray] = {}
        self.backend = None
        backend = getattr(tokenizer, "backend_tokenizer", None)
        if backend is not None:
            # a copy without the padding and truncation a tokenizer.json may carry (sentence-transformers
            # models pad every encoding to 128): the Python call turns them off per call, the backend does not
            from tokenizers import Tokenizer

            self.backend = Tokenizer.from_str(backend.to_str())
            self.backend.no_padding()
            self.backend.no_truncation()

    def pieces(self, words: list[str]) -> list[np.ndarray]:
        missing = [w for w in words if w not in self.ids]
        if missing:
            if len(self.ids) + len(missing) > self.limit:
                self.ids.clear()
            unk = self.tokenizer.unk_token_id
            if self.backend is not None:  # the fast tokenizer's own batch encoder: the same ids, no Python wrapping
                encoded = [e.ids for e in self.backend.encode_batch(missing, add_special_tokens=False)]
            else:
                encoded = self.tokenizer(missing, add_special_tokens=False)["input_ids"]
            for word, ids in zip(missing, encoded):
                self.ids[word] = np.asarray(ids if ids else [unk], dtype=np.int32)
        return [self.ids[w] for w in words]


_CACHES: dict[int, PieceCache] = {}


def piece_cache(tokenizer) -> PieceCache:
    cache = _CACHES.get(id(tokenizer))
    if cache is None or cache.tokenizer is not tokenizer:
        cache = _CACHES[id(tokenizer)] = PieceCache(tokenizer)
    return cache


def word_pieces(tokenizer, words: list[str]) -> list[list[int]]:
    """Subword ids of each word (never empty: an untokenizable word is the unknown token)."""
    return [p.tolist() for p in piece_cache(tokenizer).pieces(list(words))]


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
    table: pa.Table, tokenizer, max_len: int = 256, mode: str = "chunk", stride: int = 0, slot_filling: bool = False
) -> tuple[pa.Table, Counter]:
    if mode not in ("chunk", "segment"):
        raise ValueError(f"mode must be chunk or segment, not {mode!r}")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    mask = tokenizer.mask_token_id
    if slot_filling and mask is None:
        raise ValueError("slot filling needs a tokenizer with a mask token")
    n_specials = (cls is not None) + (sep is not None)
    budget = max_len - n_specials
    counts: Counter = Counter()
    if table.num_rows == 0:
        return SEQUENCE_SCHEMA.empty_table(), counts

    # groups: (doc, split) in order of first appearance (chunk), or each row (segment)
    split = pc.fill_null(table["split"], "\x00")
    doc_split = pc.binary_join_element_wise(table["doc_id"], split, "\x1f")
    doc_split = doc_split.combine_chunks() if isinstance(doc_split, pa.ChunkedArray) else doc_split
    doc_group = pc.dictionary_encode(doc_split).indices.to_numpy(zero_copy_only=False).astype(np.int64)
    n_rows = table.num_rows
    order = np.argsort(doc_group, kind="stable")  # rows of a (doc, split) together, in table order
    row_words = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False).astype(np.int64)
    # position of each row's first word in its (doc, split)
    sorted_words = row_words[order]
    sorted_group = doc_group[order]
    cumulative = np.cumsum(sorted_words) - sorted_words
    group_first = np.r_[0, np.flatnonzero(np.diff(sorted_group)) + 1]
    first_of_row = np.repeat(cumulative[group_first], np.diff(np.r_[group_first, n_rows]))
    row_offset = np.empty(n_rows, np.int64)
    row_offset[order] = cumulative - first_of_row
    if mode == "segment":
        order = np.arange(n_rows)
        group_of_row = np.arange(n_rows)
    else:
        group_of_row = sorted_group
    # documents are contiguous almost always: then the rows are already in order
    rows = table if bool((np.diff(order) > 0).all()) else table.take(pa.array(order))
    group_of_row = group_of_row if mode == "segment" else sorted_group
    g_first_row = np.r_[0, np.flatnonzero(np.diff(group_of_row)) + 1]  # first row of each group (in ``rows``)
    n_groups = len(g_first_row)

    # words, their pieces, and the token stream of all words
    words_column = rows["words"].combine_chunks()
    word_offsets = _offsets(words_column)
    word_code, distinct_words = flat_codes(words_column)
    pieces = piece_cache(tokenizer).pieces(distinct_words)
    if slot_filling:
        pieces = [np.r_[p, mask].astype(np.int32) for p in pieces]
    unique_len = np.array([len(p) for p in pieces], np.int64)
    unique_start = np.r_[0, np.cumsum(unique_len)[:-1]] if len(pieces) else np.zeros(0, np.int64)
    unique_flat = np.concatenate(pieces) if pieces else np.zeros(0, np.int32)
    word_len = unique_len[word_code]
    prefix = np.r_[0, np.cumsum(word_len)]  # tokens before each word
    stream = unique_flat[np.repeat(unique_start[word_code] - prefix[:-1], word_len) + np.arange(prefix[-1])]
    label_code, _ = flat_codes(rows["labels"], LABELS)
    case_code = _case_codes(rows["case"], words_column) if "case" in rows.column_names else None

    # chunks: (group, first word, end word, number within the group)
    g_word_start = word_offsets[g_first_row]
    g_word_end = np.r_[g_word_start[1:], word_offsets[-1]]
    g_tokens = prefix[g_word_end] - prefix[g_word_start]
    nonempty = g_word_end > g_word_start
    single = nonempty & (g_tokens <= budget)
    chunk_group = [np.flatnonzero(single)]
    chunk_start, chunk_end = [g_word_start[single]], [g_word_end[single]]
    chunk_no = [np.zeros(int(single.sum()), np.int64)]
    long_groups, lg_start, lg_end, lg_no = [], [], [], []
    for g in np.flatnonzero(nonempty & ~single).tolist():
        start, end_word, k = int(g_word_start[g]), int(g_word_end[g]), 0
        while start < end_word:
            end = min(int(np.searchsorted(prefix, prefix[start] + budget, side="right")) - 1, end_word)
            if end <= start:
                raise ValueError(f"a word of {int(word_len[start])} tokens does not fit max_len")
            long_groups.append(g)
            lg_start.append(start)
            lg_end.append(end)
            lg_no.append(k)
            k += 1
            if end >= end_word:
                break
            start = max(end - stride, start + 1)
    chunk_group.append(np.array(long_groups, np.int64))
    chunk_start.append(np.array(lg_start, np.int64))
    chunk_end.append(np.array(lg_end, np.int64))
    chunk_no.append(np.array(lg_no, np.int64))
    c_group = np.concatenate(chunk_group)
    c_start, c_end, c_no = np.concatenate(chunk_start), np.concatenate(chunk_end), np.concatenate(chunk_no)
    ordering = np.lexsort((c_no, c_group))  # groups in order, chunks in order
    c_group, c_start, c_end, c_no = c_group[ordering], c_start[ordering], c_end[ordering], c_no[ordering]

    # the tokens of each chunk: [cls] + its words' tokens + [sep]
    body = prefix[c_end] - prefix[c_start]
    out_len = body + n_specials
    out_offsets = np.r_[0, np.cumsum(out_len)]
    total = int(out_offsets[-1])
    chunk_of = np.repeat(np.arange(len(c_group)), out_len)
    local = np.arange(total) - out_offsets[:-1][chunk_of]
    has_cls = cls is not None
    is_cls = (local == 0) if has_cls else np.zeros(total, bool)
    is_sep = (local == out_len[chunk_of] - 1) if sep is not None else np.zeros(total, bool)
    in_body = ~is_cls & ~is_sep
    token = prefix[c_start][chunk_of] + local - int(has_cls)  # position in the token stream
    token = np.where(in_body, token, 0)
    ids = np.where(in_body, stream[np.minimum(token, max(len(stream) - 1, 0))] if len(stream) else 0, 0)
    if has_cls:
        ids = np.where(is_cls, cls, ids)
    if sep is not None:
        ids = np.where(is_sep, sep, ids)
    word_of_token = np.repeat(np.arange(len(word_len)), word_len)
    word = word_of_token[token] if len(word_of_token) else np.zeros(total, np.int64)
    last_of_word = (token == prefix[word + 1] - 1) & in_body
    labels = np.where(last_of_word, label_code[word] if len(label_code) else 0, IGNORE)
    case_labels = np.where(last_of_word, case_code[word] if case_code is not None and len(case_code) else 0, IGNORE)
    # a word's position in its document
    row_of_word = np.repeat(np.arange(n_rows), np.diff(word_offsets))
    group_first_word = word_offsets[g_first_row]
    base = row_offset[order][g_first_row]
    position = base[c_group][chunk_of] + (word - group_first_word[c_group][chunk_of])
    index = np.where(in_body, position, -1)
    if slot_filling:
        index = np.where(last_of_word, -1, index)
    del row_of_word

    first_rows = g_first_row[c_group]
    if mode == "segment":
        chunk_id = rows["seg_id"].to_numpy(zero_copy_only=False).astype(np.int64)[first_rows] * 1000 + c_no
    else:
        chunk_id = c_no
    list_offsets = pa.array(out_offsets.astype(np.int32))
    meta = rows.select(["corpus", "lang", "split", "doc_id"]).take(pa.array(first_rows))
    out = pa.Table.from_arrays(
        [
            meta["corpus"].combine_chunks(),
            meta["lang"].combine_chunks(),
            meta["split"].combine_chunks().cast(pa.string()),
            meta["doc_id"].combine_chunks(),
            pa.array(chunk_id.astype(np.int32)),
            pa.ListArray.from_arrays(list_offsets, pa.array(ids.astype(np.int32))),
            pa.ListArray.from_arrays(list_offsets, pa.array(np.ones(total, np.int8))),
            pa.ListArray.from_arrays(list_offsets, pa.array(labels.astype(np.int16))),
            pa.ListArray.from_arrays(list_offsets, pa.array(case_labels.astype(np.int8))),
            pa.ListArray.from_arrays(list_offsets, pa.array(index.astype(np.int32))),
        ],
        schema=SEQUENCE_SCHEMA,
    )
    counts["chunks"] += len(c_group)
    counts["tokens"] += total
    counts["words"] += int(word_offsets[-1])
    del n_groups
    return out, counts


def words_from_sequences(sequences: pa.Table, tokenizer) -> dict[tuple[str, str], list[tuple[int, str]]]:
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
                seen.setdefault(w, LABELS[label])
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
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    if not normalized:
        tok.normalizer = tokenizer_normalizer(lowercase)
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=1, show_progress=False)
    tok.train_from_iterator(words, trainer=trainer)
    tok.normalizer = tokenizer_normalizer(lowercase)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )


# ------------------------------------------------------------------------------ the stage, streamed


class TrainWordCounts:
    """Picklable step: a segment shard -> its train split's distinct words and how often each
    occurs (counted over dictionary codes in the workers, so that the driver, which trains the
    tokenizer, merges counts of distinct words instead of reading every word)."""

    def __call__(self, shard):
        from .dataset import read_rows
        from .step import StepResult

        table = read_rows(shard, ["words", "split"], dictionary=True)
        train = pc.fill_null(pc.equal(table["split"], "train"), False)
        codes, values = flat_dictionary(table.filter(train)["words"])
        counts = np.bincount(codes, minlength=len(values)) if len(codes) else np.zeros(0, np.int64)
        present = np.flatnonzero(counts)
        return StepResult(None, payload=(values.take(pa.array(present)).to_pylist(), counts[present]))


def repeated_words(counts: dict[str, int], per_line: int = 4096, lines_per_batch: int = 256):
    """Batches of lines for the tokenizer trainer, each word repeated as often as it occurs (in
    lines of at most ``per_line`` words): the trainer counts exactly these occurrences, and its
    merges depend on the counts only, so the tokenizer is the one trained on the running text
    (tested).  Its normalizers act within a word (a space composes with nothing), so words
    joined by spaces normalize as they do in their segments."""
    batch: list[str] = []
    for word in sorted(counts):
        n = counts[word]
        while n > 0:
            take = min(n, per_line)
            batch.append(" ".join([word] * take))
            n -= take
            if len(batch) >= lines_per_batch:
                yield batch
                batch = []
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


def count_train_words(runner, shards) -> dict[str, int]:
    """The train split's word counts, counted per shard on ``runner`` and summed."""
    from .dataset import each_step

    totals: Counter = Counter()
    for result in each_step(runner, TrainWordCounts(), shards, label="sequences: tokenizer words"):
        words, counts = result.payload
        totals.update(dict(zip(words, counts.tolist())))
    return totals


class SequencesStep:
    """Picklable: a segment shard -> its sequences, with the tokenizer saved in ``tokenizer_dir``
    (loaded once per worker process)."""

    _loaded: dict = {}

    def __init__(self, tokenizer_dir, max_len: int, mode: str, stride: int, slot_filling: bool):
        self.tokenizer_dir = str(tokenizer_dir)
        self.options = dict(max_len=max_len, mode=mode, stride=stride, slot_filling=slot_filling)

    def __call__(self, shard):
        from transformers import AutoTokenizer

        from . import io
        from .dataset import read_segments
        from .step import Counts, StepResult

        tokenizer = self._loaded.get(self.tokenizer_dir)
        if tokenizer is None:
            with io.local_folder(self.tokenizer_dir) as local:  # a URL's files copied while it loads
                tokenizer = self._loaded[self.tokenizer_dir] = AutoTokenizer.from_pretrained(str(local))
        table, counts = build_sequences(read_segments(shard, dictionary=True), tokenizer, **self.options)
        return StepResult(table, Counts(stats=counts))


def sequences_dataset(source, params, out, tokenizer_out, report, name: str, earlier_reports=(), engine=None) -> dict:
    """``source`` (segments) -> ``out`` (sequences, a folder of parts), ``tokenizer_out`` and ``report``
    (the earlier stages' reports, the sequence counts, and the split distribution)."""
    from . import io
    from .audit import AuditView, audit_dataset_views
    from .dataset import counts_of, finish, one_value, row_shards, run_step
    from .executor import executor
    from .params import EngineParams
    from .pretrained import load_tokenizer, save_tokenizer

    engine = engine or EngineParams()
    earlier = list(earlier_reports)
    with io.Outputs(inputs=[source, *earlier]) as outputs:
        folder = outputs.dataset(out)
        tokenizer_folder = outputs.dataset(tokenizer_out)
        report_path = outputs.file(report)
        scratch = outputs.scratch(out)
        shards = row_shards(source, engine.shard_rows)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            if params.tokenizer == "train":
                counts = normalized_counts(count_train_words(runner, shards), params.lowercase)
                words = repeated_words(counts)
                tokenizer = train_tokenizer(words, params.vocab_size, params.lowercase, normalized=True)
                del counts
            else:
                tokenizer = load_tokenizer(params.tokenizer)
            save_tokenizer(tokenizer, tokenizer_folder)
            io.write_manifest(tokenizer_folder, {"kind": "tokenizer"})
            step = SequencesStep(tokenizer_folder, params.max_len, params.mode, params.stride, params.slot_filling)
            results = run_step(runner, step, shards, folder, label=f"sequences {name}")
            # the dataset pooled and, for several corpora (reported only then), per corpus: one pass
            views = [AuditView([name], expected_splits=("train", "dev", "test"))]
            if not one_value(source, "corpus"):
                views.append(AuditView())
            audits = audit_dataset_views(runner, [source], io.join(scratch, "audit"), engine.shard_rows, views)
            distribution = audits[0][0]
            per_corpus = audits[1][0] if len(audits) > 1 else {}
        counts = counts_of(results)
        finish(folder, "sequences", results, schema="punct-sequences/2")
        out_report: dict = {}
        for path in earlier:
            out_report.update(io.read_json(path))
        out_report["sequences"] = {k: int(v) for k, v in sorted(counts.stats.items())}
        out_report["distribution"] = distribution
        if len(per_corpus) > 1:
            out_report["per_corpus"] = per_corpus
        io.write_json_in_place(out_report, report_path)
    return out_report
