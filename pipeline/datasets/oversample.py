"""Question oversampling (Rao 2022) and materialized augmentation copies, streamed over shards.

Oversampling copies train question sentences (segments ending in QUESTION) into other train
documents of the same language until QUESTION reaches ``question_share`` of train's words;
dev and test are never touched.  Every draw is seeded by the segment, not by the order of a
loop, so the result does not depend on how the dataset is sharded or run:

* the number of copies K comes from whole-dataset counts (one streaming pass, which also keeps
  train's question sentences in the scratch folder: the copies pass reads no part of the dataset);
* the K copies are spread over the M question sentences systematically (each gets floor or
  ceil of K/M, which ones by a seeded offset), not drawn with replacement;
* copy j of question sentence i goes to a train document of its language (not its own) and
  after a segment of it, both drawn from (seed, i, j) (:func:`uniform`);
* copies travel from the shard of their sentence to the shard of their document through disk,
  in two hops: each sending shard writes one file, a serialized record batch per bucket of
  receiving shards (:func:`bucket_width` consecutive shards) at an offset that an index gives
  (:class:`_SenderIndex`: sorted runs of it, so that the driver holds a bounded part of the index
  whatever the number of shard pairs); a task per bucket gathers its batches into one file
  sorted by receiver, of which each receiver reads its slice.  A message per (sender, receiver)
  pair cost a fixed read and decode each, and their number grows as the square of the shards.

Augmentation copies (``augment``: Alam 2020 or 3R; training draws anew each epoch, these are
for the audit) draw per (seed, copy, index of the segment among train's), as training does.
"""

from __future__ import annotations

import itertools
import logging
import math
import os
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine import location, reading, writing
from pipeline.engine.dataset import (
    RowShard,
    counts_of,
    document_index,
    each_step,
    finish,
    manifest_entry,
    protocol_entry,
    read_rows,
    read_shard,
    run_step,
    scan_datasets,
)
from pipeline.engine.executor import executor
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import ParamsError
from pipeline.labels import QUESTION, LabelSet, file_metadata
from pipeline.params import EngineParams, OversampleParams
from pipeline.schema import SCHEMA_NAME, concat, flat_codes, papers_codes

log = logging.getLogger(__name__)

#: (sending shard, receiving shard) messages the driver holds before it writes them as a sorted
#: run of the index: about 30 bytes each, so a run costs a few MB however many pairs there are
#: (they grow as the square of a language's shards)
RUN_MESSAGES = 100_000

#: receiving shards per bucket (None: :func:`bucket_width`'s choice)
BUCKET_SHARDS: int | None = None

#: a bucket's gather holds about this many shards' rows of copies: one shard's rows made buckets so
#: narrow that the messages' fixed costs (a serialized batch, a read and a decode each) took about a
#: quarter of the stage's CPU; four shards' cost a worker a few tens of MB more, the same at every
#: corpus size (the scale benchmark measures both)
GATHER_SHARDS = 4


def bucket_width(n_shards: int, copies: int, shard_rows: int) -> int:
    """Receiving shards per bucket: the square root of the shards, so that the messages (senders x
    buckets) and a bucket's gather (one message per sender) both grow as the shards' 1.5th power,
    not the square; but no more shards than receive about :data:`GATHER_SHARDS` shards' rows of
    the ``copies`` between them, so that a gather's memory does not grow with the corpus (with 32
    shards a bucket at 100 M words, a gather held 60,000 copies and its worker grew to 240 MB)."""
    if BUCKET_SHARDS is not None:
        return BUCKET_SHARDS
    by_shards = math.isqrt(max(n_shards - 1, 0)) + 1
    by_rows = GATHER_SHARDS * shard_rows * n_shards // max(copies, 1)
    return max(1, min(by_shards, by_rows))


#: a copy on its way to its target shard: the sentence's own columns, where it goes, and its order
COPY_SCHEMA = pa.schema(
    [
        pa.field("lang", pa.string()),
        *(pa.field(name, pa.list_(pa.string())) for name in ("words", "labels", "case", "surface")),
        pa.field("target_lang", pa.string()),
        pa.field("target_doc", pa.int64()),
        pa.field("order_i", pa.int64()),
        pa.field("order_j", pa.int64()),
        pa.field("position", pa.float64()),
    ]
)

#: a message between a sender and a bucket of receivers: the copies and the shard each goes to
MESSAGE_SCHEMA = COPY_SCHEMA.append(pa.field("target_shard", pa.int32()))


def _train(table: pa.Table) -> np.ndarray:
    return pc.fill_null(pc.equal(table["split"], "train"), False).to_numpy(zero_copy_only=False)


def _question_rows(table: pa.Table, label_set: LabelSet, is_question_label: np.ndarray | None = None) -> np.ndarray:
    """Rows whose last label is a QUESTION (a question sentence; in another label set, a label that
    merges to QUESTION); ``is_question_label``: per label whether it is one, if the caller has it."""
    labels = table["labels"].combine_chunks()
    offsets = pc.subtract(labels.offsets, labels.offsets[0]).to_numpy(zero_copy_only=False)
    if is_question_label is None:
        is_question_label = papers_codes(labels, label_set) == QUESTION
    nonempty = offsets[1:] > offsets[:-1]
    out = np.zeros(table.num_rows, dtype=bool)
    out[nonempty] = is_question_label[offsets[1:][nonempty] - 1]
    return out


class _Documents(NamedTuple):
    """A shard's documents: per row its document; per document its first row, its language (a
    code into ``names``) and whether it is in train; train documents per language."""

    row_doc: np.ndarray
    first_rows: np.ndarray
    lang: np.ndarray
    names: list[str]
    train: np.ndarray
    train_per_lang: dict[str, int]


def _documents(table: pa.Table, train: np.ndarray) -> _Documents:
    row_doc = document_index(table)
    first_rows = np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1] if len(row_doc) else np.zeros(0, np.int64)
    langs = pc.dictionary_encode(table["lang"].take(pa.array(first_rows)).cast(pa.string()).combine_chunks())
    doc_lang = langs.indices.to_numpy(zero_copy_only=False).astype(np.int64)
    names = langs.dictionary.to_pylist()
    train_doc = train[first_rows] if len(first_rows) else np.zeros(0, bool)
    per_lang = np.bincount(doc_lang[train_doc], minlength=len(names))
    counts = {name: int(c) for name, c in zip(names, per_lang.tolist()) if c}
    return _Documents(row_doc, first_rows, doc_lang, names, train_doc, counts)


class _Tally:
    """Pass 1: train words, QUESTION labels, question sentences, train documents per language, train
    rows; with ``folder``, the train question sentences themselves, kept for the copies pass
    (:func:`_save_questions`), which then reads no part of the dataset."""

    def __init__(self, label_set: LabelSet, folder=None):
        self.label_set = label_set
        self.folder = None if folder is None else str(folder)

    def __call__(self, shard: RowShard) -> StepResult:
        if self.folder is None:
            table = read_rows(shard, ["corpus", "lang", "doc_id", "labels", "split"], dictionary=True)
        else:
            table = read_shard(shard, dictionary=True)
        train = _train(table)
        codes = papers_codes(table["labels"], self.label_set)
        lengths = pc.list_value_length(table["labels"]).to_numpy(zero_copy_only=False)
        question = codes == QUESTION
        per_row = np.add.reduceat(question, np.r_[0, np.cumsum(lengths)[:-1]]) if len(codes) else np.zeros(0)
        per_row = np.where(lengths > 0, per_row, 0)
        words = int(lengths[train].sum())
        questions = int(per_row[train].sum())
        is_question = _question_rows(table, self.label_set, question) & train
        q_words = int(lengths[is_question].sum())
        q_labels = int(per_row[is_question].sum())
        docs = _documents(table, train)
        if self.folder is not None and is_question.any():
            _save_questions(self.folder, shard.index, table, docs, np.flatnonzero(is_question))
        payload = {
            "words": words,
            "questions": questions,
            "question_rows": int(is_question.sum()),
            "question_words": q_words,
            "question_labels": q_labels,
            "docs": docs.train_per_lang,
            "train_rows": int(train.sum()),
        }
        return StepResult(None, payload=payload)


def _save_questions(folder: str, index: int, table: pa.Table, docs: _Documents, rows: np.ndarray) -> None:
    """A shard's train question sentences (``rows``), their own columns as plain strings, with their
    document's language and its number among the shard's train documents of that language."""
    doc = docs.row_doc[rows]
    local = np.full(len(docs.first_rows), -1, np.int64)
    for code in range(len(docs.names)):
        members = np.flatnonzero(docs.train & (docs.lang == code))
        local[members] = np.arange(len(members))
    part = table.select(["lang", "words", "labels", "case", "surface"]).take(pa.array(rows))
    part = part.cast(pa.schema([COPY_SCHEMA.field(name) for name in part.column_names]))
    part = part.append_column("doc_lang", pa.array(docs.names, pa.string()).take(pa.array(docs.lang[doc])))
    part = part.append_column("doc_local", pa.array(local[doc], pa.int64()))
    location.make_folder(folder)
    writing.write_arrow_in_place(part.combine_chunks(), location.join(folder, f"{index:05d}.arrow"))


def _save_before(plan, name: str, counts: np.ndarray) -> None:
    """Per shard (row), ``counts`` summed over the shards before it, as a file of the plan folder:
    the tasks map it (sent with every task, such numbers grew as the square of the shards)."""
    location.make_folder(plan)
    writing.write_bytes_in_place(
        np.ascontiguousarray(np.cumsum(counts, axis=0) - counts, np.int64), location.join(plan, name)
    )


def _before(plan, name: str) -> np.ndarray:
    """A file of :func:`_save_before`, mapped (one row per shard)."""
    return reading.read_array(location.join(plan, name), np.int64)


def uniform(seed: int, i: np.ndarray, j: np.ndarray, stream: int) -> np.ndarray:
    """Uniform draws in [0, 1) fixed by (seed, i, j, stream): splitmix64 of the four, vectorized (a
    numpy Generator per copy costs 20 us; millions of copies need array arithmetic)."""
    with np.errstate(over="ignore"):
        x = np.uint64(seed & (2**64 - 1)) * np.uint64(0x9E3779B97F4A7C15)
        for value in (i.astype(np.uint64), j.astype(np.uint64), np.uint64(stream)):
            x = (x ^ value) * np.uint64(0xBF58476D1CE4E5B9)
            x ^= x >> np.uint64(31)
            x = x * np.uint64(0x94D049BB133111EB)
            x ^= x >> np.uint64(29)
    return (x >> np.uint64(11)).astype(np.float64) / float(2**53)


class _Copies:
    """Pass 2: each question sentence's copies, written to one file per sending shard (the senders' folder)."""

    def __init__(
        self, seed, k, m, offset, plan, langs: list[str], docs_total: dict[str, int], folder, questions, width
    ):
        # plan: the folder of the per-shard numbers (:func:`_save_before`); questions: the folder of
        # the question sentences the counts pass kept (:func:`_save_questions`); width: receiving
        # shards per bucket
        self.seed, self.k, self.m, self.offset = seed, k, m, offset
        self.plan, self.langs, self.docs_total, self.folder = str(plan), langs, docs_total, str(folder)
        self.questions, self.width = str(questions), width

    def __call__(self, shard: RowShard) -> StepResult:
        # the shard's train question sentences, as the counts pass kept them
        path = location.join(self.questions, f"{shard.index:05d}.arrow")
        if not location.exists(path):
            none = np.zeros(0, np.int32)
            return StepResult(None, payload=(none, none, none, np.zeros(0, np.int64)))
        questions = reading.open_arrow_file(path).read_all()
        doc_langs = pc.dictionary_encode(questions["doc_lang"].combine_chunks())
        names = doc_langs.dictionary.to_pylist()
        question_lang = doc_langs.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        # train documents of each language (column) in the shards before each shard (row)
        docs_before = _before(self.plan, "docs_before.bin").reshape(-1, len(self.langs))
        # the train-document number (per language, over the whole dataset) of each sentence's document
        before = np.array([docs_before[shard.index, self.langs.index(name)] for name in names], np.int64)
        number = before[question_lang] + questions["doc_local"].to_numpy()
        # the copies of each question sentence: i its number over the dataset, j the copy's
        i = int(_before(self.plan, "questions_before.bin")[shard.index]) + np.arange(questions.num_rows)
        n_copies = np.floor((i + 1) * self.k / self.m + self.offset) - np.floor(i * self.k / self.m + self.offset)
        n_copies = n_copies.astype(np.int64)
        row = np.repeat(np.arange(questions.num_rows), n_copies)
        i = np.repeat(i, n_copies)
        j = np.arange(len(i)) - np.repeat(np.cumsum(n_copies) - n_copies, n_copies)
        lang_code = question_lang[row]
        lang = np.array(names, dtype=object)[lang_code] if len(names) else np.zeros(0, object)
        n_docs = np.array([self.docs_total.get(g, 0) for g in names], np.int64)[lang_code]
        own = number[row]
        # a document of the same language, not its own: uniform over the others
        others = np.maximum(n_docs - 1, 1)
        target = np.minimum((uniform(self.seed, i, j, 0) * others).astype(np.int64), others - 1)
        target = np.where((n_docs > 1) & (target >= own), target + 1, target)
        position = uniform(self.seed, i, j, 1)
        where = np.zeros(len(i), np.int64)
        local_doc = np.zeros(len(i), np.int64)
        for code in np.unique(lang_code).tolist():
            mask = lang_code == code
            starts = np.ascontiguousarray(docs_before[:, self.langs.index(names[code])])
            where[mask] = np.searchsorted(starts, target[mask], side="right") - 1
            local_doc[mask] = target[mask] - starts[where[mask]]
        table = questions.select(["lang", "words", "labels", "case", "surface"])
        # one file per source shard, its copies in target-shard order, a record batch per bucket of
        # receivers (files per (source, target) pair grew as the square of the shards: 1.2 M small
        # files at 100 M words in 5,000-row shards; then a message per pair, 240,000 of them)
        order = np.lexsort((j, i, where))
        part = table.take(pa.array(row[order]))
        extra = {
            "target_lang": pa.array(lang[order].tolist(), pa.string()),
            "target_doc": pa.array(local_doc[order], pa.int64()),
            "order_i": pa.array(i[order], pa.int64()),
            "order_j": pa.array(j[order], pa.int64()),
            "position": pa.array(position[order], pa.float64()),
            "target_shard": pa.array(where[order], pa.int32()),
        }
        for name, column in extra.items():
            part = part.append_column(name, column)
        targets, sent = np.unique(where, return_counts=True)
        buckets, per_bucket = np.unique(where // self.width, return_counts=True)
        lengths = np.zeros(len(buckets), np.int64)
        if len(buckets):
            # a serialized record batch per bucket, one after another in the sender's file: a
            # bucket's gather reads its bytes with one pread per sender.  Lists decoded: a few rows
            # taken out of a shard keep the shard's whole vocabulary as their dictionary, and
            # unifying hundreds of them cost two thirds of oversampling at 100 M words
            batch = part.cast(MESSAGE_SCHEMA).combine_chunks().to_batches()[0]  # one batch, sliced per bucket
            bounds = np.r_[0, np.cumsum(per_bucket)]
            location.make_folder(self.folder)
            with writing.open_output(_sender_file(self.folder, shard.index)) as sink:
                for n, (a, b) in enumerate(itertools.pairwise(bounds)):
                    message = batch.slice(a, b - a).serialize()
                    sink.write(message)
                    lengths[n] = message.size
        payload = (targets.astype(np.int32), sent.astype(np.int32), buckets.astype(np.int32), lengths)
        return StepResult(None, payload=payload)


class _Gather:
    """The hop between senders and receivers: a bucket's messages, one from each sender that sent it
    copies, in sender order, written as one file sorted by receiving shard (stably: a receiver's
    copies stay in sender order, and senders hold consecutive question sentences, so they are in
    (i, j) order).  Returns the rows gathered."""

    def __init__(self, folder, runs: int):
        self.folder, self.runs = str(folder), runs
        self.sent = str(_sent_folder(folder))

    def __call__(self, bucket: int) -> int:
        batches = []
        for run in range(self.runs):  # runs hold consecutive senders: in order, senders in order
            # the index is mapped, not sent with every task (it grows with the senders)
            index = reading.open_arrow_file(_SenderIndex.run_path(self.folder, run)).read_all()
            first, last = np.searchsorted(index["target"].to_numpy(), [bucket, bucket + 1])
            rows = index.slice(first, last - first)
            for source, offset, length in zip(*(rows[c].to_pylist() for c in ("source", "offset", "length"))):
                message = _read_message(_sender_file(self.sent, source), offset, length)
                batches.append(pa.ipc.read_record_batch(pa.py_buffer(message), MESSAGE_SCHEMA))
        table = pa.Table.from_batches(batches, MESSAGE_SCHEMA).combine_chunks()
        order = np.argsort(table["target_shard"].to_numpy(), kind="stable")
        writing.write_arrow_in_place(table.take(pa.array(order)), _bucket_file(self.folder, bucket))
        return table.num_rows


def _bucket_file(folder, bucket: int) -> str:
    return location.join(folder, f"bucket-{bucket:05d}.arrow")


class _Write:
    """Pass 3: the shard's rows with the copies sent to it inserted; augmentation copies of its train rows.

    What grows with the shards or the vocabulary is read from files, not sent with every task: the
    train rows before each shard from the plan folder, 3R's train vocabulary from ``vocabulary``
    and its confusables from their table (``confusables``), both loaded once per worker process."""

    _loaded: dict = {}

    def __init__(
        self,
        folder,
        width,
        augment,
        seed,
        plan,
        vocabulary,
        confusables,
        augmented_folder,
        n_shards,
        label_set: LabelSet,
    ):
        self.label_set = label_set
        self.folder, self.width = None if folder is None else str(folder), width
        self.augment, self.seed, self.plan = augment, seed, str(plan)
        self.vocabulary = None if vocabulary is None else str(vocabulary)
        self.confusables = None if confusables is None else str(confusables)
        self.augmented_folder = None if augmented_folder is None else str(augmented_folder)
        self.n_shards = n_shards

    def _load(self, kind: str, path: str | None):
        if path is None:
            return None
        if (kind, path) not in self._loaded:
            if kind == "vocabulary":
                self._loaded[(kind, path)] = reading.open_arrow_file(path).read_all()["word"].to_pylist()
            else:
                from pipeline.datasets.augment import load_confusables

                self._loaded[(kind, path)] = load_confusables(path)
        return self._loaded[(kind, path)]

    def _incoming(self, shard: RowShard) -> pa.Table | None:
        """The copies sent to this shard: its slice of its bucket's file (:class:`_Gather`), in
        (i, j) order."""
        if self.folder is None:
            return None
        path = _bucket_file(self.folder, shard.index // self.width)
        if not location.exists(path):
            return None
        bucket = reading.open_arrow_file(path).read_all()
        first, last = np.searchsorted(bucket["target_shard"].to_numpy(), [shard.index, shard.index + 1])
        if first == last:
            return None
        return bucket.slice(first, last - first).drop_columns(["target_shard"]).combine_chunks()

    def __call__(self, shard: RowShard) -> StepResult:
        table = read_shard(shard, dictionary=True)
        counts = Counts()
        incoming = self._incoming(shard)
        if incoming is not None and incoming.num_rows:
            table = _insert(table, incoming)
            counts.stats["inserted"] += incoming.num_rows
        # train's words and QUESTION labels after: the counts pass counted the shard's own, the
        # copies (all in train documents) add theirs
        counts.stats["train_words"] += 0
        counts.stats["train_questions"] += 0
        if incoming is not None and incoming.num_rows:
            counts.stats["train_words"] += int(pc.sum(pc.list_value_length(incoming["words"])).as_py() or 0)
            question = papers_codes(incoming["labels"], self.label_set) == QUESTION
            counts.stats["train_questions"] += int(question.sum())
        train = table.filter(pa.array(_train(table))) if self.augment is not None else None
        if self.augment is not None:  # augmentation draws by a segment's index among train's
            first = int(_before(self.plan, "train_before.bin")[shard.index])
        # copy c of shard i is part c * shards + i: read in order, the parts give copy 0 of all of
        # train, then copy 1..., whatever the sharding
        for copy in range(self.augment["copies"] if self.augment is not None else 1):
            if self.augment is not None:
                from pipeline.datasets.augment import augmented

                part = augmented(
                    train,
                    self.augment,
                    copy,
                    self.seed,
                    self._load("vocabulary", self.vocabulary),
                    self._load("confusables", self.confusables),
                    indices=range(first, first + train.num_rows),
                    label_set=self.label_set,
                )
            else:  # no augmentation: an empty part, the same bytes for every shard
                counts.stats["augmented_rows"] += 0
                counts.stats["augmented_words"] += 0
                name = location.join(self.augmented_folder, f"part-{copy * self.n_shards + shard.index:05d}.parquet")
                self._write_empty(name)
                continue
            counts.stats["augmented_rows"] += part.num_rows
            counts.stats["augmented_words"] += int(pc.sum(pc.list_value_length(part["words"])).as_py() or 0)
            name = f"part-{copy * self.n_shards + shard.index:05d}.parquet"
            writing.write_parquet(part, location.join(self.augmented_folder, name), file_metadata(self.label_set))
        return StepResult(table, counts)

    _empty: dict = {}

    def _write_empty(self, path) -> None:
        """An empty part, written once per process and label set, its bytes copied after."""
        metadata = file_metadata(self.label_set)
        key = tuple(sorted(metadata.items()))
        if key not in self._empty:
            writing.write_parquet(concat([]), path, metadata)
            self._empty[key] = reading.read_bytes(path)
            return
        writing.write_bytes_in_place(self._empty[key], path)
        writing.make_readable(path)


def _sent_folder(copies):
    """The senders' files, in the copies folder: a folder of their own, removed once gathered."""
    return location.join(copies, "sent")


def _sender_file(folder: str, source: int) -> str:
    """The file of sending shard ``source`` in the senders' folder (:func:`_sent_folder`), spelled
    as a string (a receiver names one per message: a path object's parsing cost more than the read)."""
    name = f"{source:05d}.bin"
    return f"{folder.rstrip('/')}/{name}" if location.is_url(folder) else os.path.join(folder, name)


def _read_message(path, offset: int, length: int) -> bytes:
    """Bytes [offset, offset + length) of a sender's file: one positioned read where it is local
    (a receiver reads one message from each of its senders)."""
    if location.is_url(path):
        return reading.read_range(path, offset, offset + length)
    try:
        handle = os.open(path, os.O_RDONLY)
        try:
            return os.pread(handle, length, offset)
        finally:
            os.close(handle)
    except OSError:
        return reading.read_range(path, offset, offset + length)  # its one-line refusal


class _SenderIndex:
    """Who sent what, folded as the copies pass's results arrive (in sending-shard order): per
    sending shard, the buckets of receivers it sent copies to and the bytes of each batch, one
    after another in its file.  Held until :data:`RUN_MESSAGES` messages, then written as a run
    sorted by bucket (then sender) to the copies folder: a bucket's gather reads its slice of each
    run, and the runs, holding consecutive senders, give its senders in order.  ``incoming``: the
    copies each shard receives; ``buckets``: those that received any."""

    def __init__(self, folder, n_shards: int):
        self.folder, self.run_messages = folder, RUN_MESSAGES
        self.incoming = np.zeros(n_shards, np.int64)
        self.buckets: set[int] = set()
        self.pending: list[tuple[int, np.ndarray, np.ndarray]] = []
        self.held = self.messages = self.runs = 0

    @staticmethod
    def run_path(folder, run: int) -> str:
        return location.join(folder, f"senders-{run:05d}.arrow")

    def add(self, source: int, targets: np.ndarray, rows: np.ndarray, buckets: np.ndarray, lengths: np.ndarray) -> None:
        np.add.at(self.incoming, targets, rows)
        self.buckets.update(buckets.tolist())
        if len(buckets):
            self.pending.append((source, buckets, lengths.astype(np.int64)))
            self.held += len(buckets)
            if self.held >= self.run_messages:
                self._write_run()

    def close(self) -> int:
        """Writes what is held; returns the number of runs."""
        if self.pending:
            self._write_run()
        return self.runs

    def _write_run(self) -> None:
        targets = np.concatenate([t for _, t, _ in self.pending])
        lengths = np.concatenate([n for _, _, n in self.pending])
        sources = np.repeat(np.array([s for s, _, _ in self.pending], np.int32), [len(t) for _, t, _ in self.pending])
        offsets = np.concatenate([np.cumsum(n) - n for _, _, n in self.pending])
        order = np.argsort(targets, kind="stable")  # stable: senders in order within a target
        table = pa.table(
            {"target": targets[order], "source": sources[order], "offset": offsets[order], "length": lengths[order]}
        )
        location.make_folder(self.folder)
        writing.write_arrow_in_place(table, self.run_path(self.folder, self.runs))
        self.messages += len(targets)
        self.runs += 1
        self.pending, self.held = [], 0


def _insert(table: pa.Table, incoming: pa.Table) -> pa.Table:
    """Rows of ``table`` with ``incoming`` copies placed inside their target train documents: in
    (i, j) order, each copy goes after a segment of its document drawn by its position, among the
    rows and copies the document holds by then.  Computed in rounds (round t places every
    document's t-th copy), over arrays; the list columns are gathered as codes into the table's
    own dictionaries, the copies' new values appended to them (as Arrow's dictionary unification
    of the two would), so no column is decoded."""
    train = _train(table)
    docs = _documents(table, train)
    row_doc, first_rows = docs.row_doc, docs.first_rows
    n, k = table.num_rows, incoming.num_rows
    # each copy's document here: the target_doc-th train document of its language in this shard
    train_docs = np.flatnonzero(docs.train)
    target_lang = pc.dictionary_encode(incoming["target_lang"].combine_chunks())
    target_code = target_lang.indices.to_numpy(zero_copy_only=False)
    target_doc = incoming["target_doc"].to_numpy()
    dest = np.zeros(k, np.int64)
    for code, lang in enumerate(target_lang.dictionary.to_pylist()):
        mask = target_code == code
        dest[mask] = train_docs[docs.lang[train_docs] == docs.names.index(lang)][target_doc[mask]]
    # rank of every row and copy inside its document; a copy's round: how many copies its document got before it
    rank = np.r_[np.arange(n) - first_rows[row_doc], np.zeros(k, np.int64)]
    by_doc = np.argsort(dest, kind="stable")
    starts = np.r_[0, np.flatnonzero(np.diff(dest[by_doc])) + 1]
    rounds = np.empty(k, np.int64)
    rounds[by_doc] = np.arange(k) - np.repeat(starts, np.diff(np.r_[starts, k]))
    receiving = np.zeros(len(first_rows), bool)
    receiving[dest] = True
    items = np.r_[np.flatnonzero(receiving[row_doc]), n + np.arange(k)]  # rows and copies of receiving documents
    item_doc = np.r_[row_doc, dest][items]
    item_rank = rank[items]
    item_rank[len(items) - k :] = -1  # a copy not placed yet: shifted by none
    sizes = np.diff(np.r_[first_rows, n])
    position = incoming["position"].to_numpy()
    at = np.full(len(first_rows), np.iinfo(np.int64).max)
    for t in range(int(rounds.max()) + 1 if k else 0):
        placed = np.flatnonzero(rounds == t)
        doc = dest[placed]
        length = sizes[doc] + t
        slot = np.minimum((position[placed] * (length + 1)).astype(np.int64), length)
        at[doc] = slot
        item_rank += item_rank >= at[item_doc]
        item_rank[len(items) - k + placed] = slot
        at[doc] = np.iinfo(np.int64).max
    rank[items] = item_rank
    order = np.lexsort((rank, np.r_[row_doc, dest]))
    # copy rows: their target document's corpus, doc_id and split; the sentence's own lang, words and labels
    rows = np.r_[np.arange(n), first_rows[dest]][order]
    gather = _ListGather(order)
    columns = {}
    for name in table.column_names:
        if name == "seg_id":  # renumbered inside the documents that received copies
            seg = np.where(receiving[np.r_[row_doc, dest][order]], rank[order], table["seg_id"].to_numpy()[rows])
            columns[name] = pa.array(seg, pa.int32())
        elif name in ("words", "labels", "case", "surface"):
            columns[name] = gather(table[name], incoming[name])
        elif name == "lang":
            own = incoming[name].combine_chunks().cast(table[name].type)
            columns[name] = pa.concat_arrays([table[name].combine_chunks(), own]).take(pa.array(order))
        else:
            columns[name] = table[name].take(pa.array(rows))
    return pa.Table.from_arrays([columns[name] for name in table.column_names], schema=table.schema)


class _ListGather:
    """``concat([column, copies]).take(order)`` for list columns of dictionaries (``column``) and of
    plain strings (``copies``): the copies encoded into ``column``'s dictionary, their values
    missing from it appended in the order of their first appearance (as Arrow's unification of
    the two dictionaries appends them); the items' positions computed once for the columns that
    share their lengths (one item per word)."""

    def __init__(self, order: np.ndarray):
        self.order = order
        self.lengths: np.ndarray | None = None

    def _positions(self, lengths: np.ndarray) -> None:
        self.lengths = lengths
        starts = np.zeros(len(lengths), np.int64)
        np.cumsum(lengths[:-1], out=starts[1:])
        out_lengths = lengths[self.order]
        self.offsets = np.zeros(len(lengths) + 1, np.int64)
        np.cumsum(out_lengths, out=self.offsets[1:])
        self.items = np.repeat(starts[self.order] - self.offsets[:-1], out_lengths)
        self.items += np.arange(len(self.items))

    def __call__(self, column, copies) -> pa.Array:
        column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
        copies = copies.combine_chunks() if isinstance(copies, pa.ChunkedArray) else copies
        if not pa.types.is_dictionary(column.type.value_type):  # read without dictionaries: Arrow's take
            return pa.concat_arrays([column, copies.cast(column.type)]).take(pa.array(self.order))
        lengths = np.concatenate([_lengths(column), _lengths(copies)])
        if self.lengths is None or not np.array_equal(lengths, self.lengths):
            self._positions(lengths)
        flat = pc.list_flatten(column)
        dictionary = flat.dictionary
        copied = pc.list_flatten(copies)
        # the copies' values looked up in the dictionary; those missing from it appended in the
        # order of their first appearance
        known = pc.index_in(copied, value_set=dictionary)
        missing = ~known.is_valid().to_numpy(zero_copy_only=False)
        copy_codes = known.fill_null(0).to_numpy(zero_copy_only=False).astype(np.int32)
        if copied.null_count:
            missing &= copied.is_valid().to_numpy(zero_copy_only=False)
        if missing.any():
            new = pc.dictionary_encode(copied.filter(pa.array(missing)))
            copy_codes[missing] = len(dictionary) + new.indices.to_numpy(zero_copy_only=False)
            dictionary = pa.concat_arrays([dictionary, new.dictionary])
        codes = np.concatenate([flat.indices.fill_null(0).to_numpy(zero_copy_only=False), copy_codes])
        mask = None
        if flat.null_count or copied.null_count:
            valid = [flat.is_valid().to_numpy(zero_copy_only=False), copied.is_valid().to_numpy(zero_copy_only=False)]
            mask = ~np.concatenate(valid)[self.items]
        values = pa.DictionaryArray.from_arrays(pa.array(codes[self.items], pa.int32(), mask=mask), dictionary)
        return pa.ListArray.from_arrays(pa.array(self.offsets.astype(np.int32)), values, type=column.type)


def _lengths(lists: pa.ListArray) -> np.ndarray:
    return np.diff(lists.offsets.to_numpy(zero_copy_only=False)).astype(np.int64)


def _vocabulary(runner, shards) -> list[str]:
    """The sorted distinct words of train (3R substitutes them)."""
    words: set[str] = set()
    for result in each_step(runner, _TrainWords(), shards, label="oversample: vocabulary"):
        words.update(result.payload)
    return sorted(words)


class _TrainWords:
    def __call__(self, shard: RowShard) -> StepResult:
        table = read_rows(shard, ["words", "split"], dictionary=True)
        codes, values = flat_codes(table.filter(pa.array(_train(table)))["words"])
        return StepResult(None, payload=[values[c] for c in np.unique(codes)] if len(codes) else [])


def _question_copies(
    runner, shards, tallies: list[dict], target: float, seed: int, scratch, questions_folder, shard_rows: int
):
    """Pass 2 where train's QUESTION share is below ``target``: the copies sent between shards, made
    from the question sentences the counts pass kept in ``questions_folder`` (in ``scratch``).
    Returns the copies folder (None: no copies), the receiving shards per bucket and the copies each
    shard receives."""
    words = sum(t["words"] for t in tallies)
    questions = sum(t["questions"] for t in tallies)
    m = sum(t["question_rows"] for t in tallies)
    if not (target and m and words and questions / words < target):
        return None, 1, np.zeros(len(shards), np.int64)
    q_words = sum(t["question_words"] for t in tallies)
    q_labels = sum(t["question_labels"] for t in tallies)
    gain = (q_labels - target * q_words) / m  # what one copy adds, on average
    if gain <= 0:
        raise ParamsError(
            f"oversample.question_share {target} cannot be reached: question sentences are "
            f"themselves only {q_labels / q_words:.4f} QUESTION"
        )
    k = math.ceil((target * words - questions) / gain)
    offset = float(np.random.default_rng([seed, 15]).random())
    langs = sorted({lang for t in tallies for lang in t["docs"]})
    docs = np.array([[t["docs"].get(lang, 0) for lang in langs] for t in tallies], np.int64)
    plan = location.join(scratch, "plan")
    _save_before(plan, "docs_before.bin", docs)  # per shard, per language
    _save_before(plan, "questions_before.bin", np.array([t["question_rows"] for t in tallies], np.int64))
    docs_total = {lang: int(n) for lang, n in zip(langs, docs.sum(axis=0).tolist())}
    copies_folder = location.join(scratch, "copies")
    width = bucket_width(len(shards), k, shard_rows)
    step = _Copies(seed, k, m, offset, plan, langs, docs_total, _sent_folder(copies_folder), questions_folder, width)
    index = _SenderIndex(copies_folder, len(shards))
    # results in shard order (each_step runs to its end, which logs the pass's time)
    for n, result in enumerate(each_step(runner, step, shards, label="oversample: copies")):
        index.add(shards[n].index, *result.payload)
    runs = index.close()
    log.info(
        "oversample: %d copy messages to %d bucket(s) of %d shard(s), indexed in %d run(s)",
        index.messages, len(index.buckets), width, runs,
    )  # fmt: skip
    for _ in runner.each(_Gather(copies_folder, runs), sorted(index.buckets), label="oversample: gather"):
        pass
    return copies_folder, width, index.incoming


def _vocabulary_file(runner, shards, scratch, augment: dict | None, confusables) -> str | None:
    """3R's train vocabulary, written to the scratch folder for pass 3 (None for other augmentation);
    a bad confusables table is refused here, before the pass."""
    if augment is None or augment["kind"] != "3r":
        return None
    vocabulary = location.join(scratch, "vocabulary.arrow")
    train_vocabulary = pa.array(_vocabulary(runner, shards), pa.string())
    writing.write_arrow_in_place(pa.table({"word": train_vocabulary}), vocabulary)
    if confusables:
        from pipeline.datasets.augment import check_confusables

        check_confusables(confusables)
    return vocabulary


def _oversample_report(tallies: list[dict], target: float, augment: dict | None, stats) -> dict:
    """QUESTION's share of train's words before and after, and the augmentation copies' size."""
    words = sum(t["words"] for t in tallies)
    questions = sum(t["questions"] for t in tallies)
    report: dict = {}
    if target:
        after = stats["train_questions"] / stats["train_words"] if stats["train_words"] else 0.0
        report["oversampling"] = {
            "before": round(questions / words, 6) if words else 0.0,
            "inserted": int(stats["inserted"]),
            "after": round(after, 6),
        }
    if augment is not None:
        report["augmentation"] = {
            "kind": augment["kind"],
            "copies": augment["copies"],
            "train_words": int(stats["train_words"]),
            "augmented_words_per_copy": round(stats["augmented_words"] / augment["copies"], 1),
        }
    return report


def oversample_dataset(
    source: str | os.PathLike,
    params: OversampleParams,
    seed: int,
    out: str | os.PathLike,
    augmented_out: str | os.PathLike,
    report: str | os.PathLike,
    confusables: str | os.PathLike | None = None,
    engine: EngineParams | None = None,
) -> dict:
    """``source`` (a split dataset) -> ``out`` (questions oversampled in train), ``augmented_out``
    (augmentation copies of train, for the audit) and the report."""
    engine = engine or EngineParams()
    augment = params.augment.model_dump() if params.augment is not None else None
    inputs = [source, *([confusables] if confusables else [])]
    with writing.Outputs(inputs=inputs) as outputs:
        folder = outputs.dataset(out, kind="segments")
        augmented_folder = outputs.dataset(augmented_out, kind="segments")
        report_path = outputs.file(report)
        scratch = outputs.scratch(out)
        plan = location.join(scratch, "plan")  # per-shard numbers the passes map (they grow with the shards)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            scan = scan_datasets(source, engine.shard_rows, runner)
            shards, label_set = scan.shards, scan.labels
            # with a share to reach, the counts pass keeps the question sentences: the copies pass
            # then reads no part of the dataset
            questions = location.join(scratch, "questions") if params.question_share else None
            step = _Tally(label_set, questions)
            tallies = [r.payload for r in run_step(runner, step, shards, label="oversample: counts")]
            copies_folder, width, incoming = _question_copies(
                runner, shards, tallies, params.question_share, seed, scratch, questions, engine.shard_rows
            )
            if copies_folder is not None:  # gathered: the question sentences and the senders' files
                outputs.discard(questions, _sent_folder(copies_folder))
            # augmentation draws by a segment's index among train's, the copies included
            train_rows = np.array([t["train_rows"] for t in tallies], np.int64) + incoming[[s.index for s in shards]]
            _save_before(plan, "train_before.bin", train_rows)
            vocabulary = _vocabulary_file(runner, shards, scratch, augment, confusables)
            write = _Write(
                copies_folder, width, augment, seed, plan, vocabulary,
                confusables if vocabulary is not None else None, augmented_folder, len(shards), label_set,
            )  # fmt: skip
            results = run_step(runner, write, shards, folder, "oversample", label_set)
        counts = counts_of(results)
        counts.stats["train_words"] += sum(t["words"] for t in tallies)
        counts.stats["train_questions"] += sum(t["questions"] for t in tallies)
        finish(folder, "segments", results, schema=SCHEMA_NAME, **manifest_entry(label_set), **protocol_entry(source))
        writing.write_manifest(
            augmented_folder,
            {
                "kind": "segments",
                "parts": len(shards) * (augment["copies"] if augment else 1),
                "rows": int(counts.stats["augmented_rows"]),
                "words": int(counts.stats["augmented_words"]),
                "schema": SCHEMA_NAME,
                **manifest_entry(label_set),
                **protocol_entry(source),
            },
        )
        out_report = _oversample_report(tallies, params.question_share, augment, counts.stats)
        writing.write_json_in_place(out_report, report_path)
    return out_report
