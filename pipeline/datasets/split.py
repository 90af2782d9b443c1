"""Deterministic document-level splits, streamed over shards.

A document's split is decided by a seeded hash of its id alone, so it keeps its split when
other documents are added: ratio splits compare the hash, as a number in [0, 1), with the
cumulative ratios; count splits (4000/500/200 documents) take documents in hash order;
stratified splits (Gupta 2021) cut each stratum (the marks a document has) in hash order by the
ratios, so every split gets the same mix.  A document is a ``(corpus, doc_id)`` pair; its rows
lie in one shard, so everything about it is known there.

Memory is bounded by the shard: ratio splits need nothing global; count and stratified splits
first gather the few keys that decide the cut points (the N smallest keys; per stratum a
histogram of hash buckets, then the keys of the buckets where cuts fall); duplicates across
splits are found by hash (:mod:`pipeline.engine.hashsets`).  Every document or segment left out is
counted with its reason in the report.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import heapq
import json
import logging
import os
from collections import Counter
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine import hashsets, location, reading, writing
from pipeline.engine.dataset import (
    RowShard,
    counts_of,
    document_index,
    each_step,
    finish,
    manifest_entry,
    protocol_entry,
    read_rows,
    run_step,
    scan_datasets,
)
from pipeline.engine.executor import executor, runs_of
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import InputError
from pipeline.labels import LABELS, SENTENCE_END_IDS, LabelSet
from pipeline.params import SPLIT_NAMES, EngineParams, SplitParams
from pipeline.schema import SCHEMA_NAME, SEGMENT_SCHEMA, papers_codes, with_column

log = logging.getLogger(__name__)
BUCKETS = 4096


def doc_hash(doc_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the document id and the seed."""
    return float(doc_hashes([doc_id], seed)[0])


def doc_hashes(doc_ids: list[str], seed: int) -> np.ndarray:
    """:func:`doc_hash` of each id, the digests read as one big-endian array (uint64 to float64
    rounds as Python's int / 2**64 does: the scaling by 2**-64 is exact)."""
    base = hashlib.blake2b(f"{seed}\0".encode(), digest_size=8)

    def digest(doc_id: str) -> bytes:
        h = base.copy()  # the seed's state copied: cheaper than hashing it again per document
        h.update(doc_id.encode())
        return h.digest()

    digests = b"".join(map(digest, doc_ids))
    return np.frombuffer(digests, ">u8").astype(np.float64) / 2.0**64


def marks_of(labels: list[str]) -> str:
    """A segment's stratum: the set of marks it contains."""
    return "+".join(sorted(set(labels) - {"O"})) or "none"


@dataclass(frozen=True)
class SplitInput:
    """A corpus fed to the split: its dataset, and its fixed split if it has one."""

    corpus: str
    path: str
    fixed: str | None = None
    #: the label set of the inputs (one for all; :func:`split_dataset` reads it from their footers):
    #: marks and sentence ends are counted by their papers class, so a corpus splits the same
    #: whatever set it was labelled in
    labels: LabelSet | None = None


@dataclass
class _Docs:
    """The documents of a shard, in order of appearance, as arrays (a key is made a Python tuple
    only where a rule needs it: ties on the hash, the count splits' smallest keys)."""

    table: pa.Table  # the shard's rows, all of them
    keep: np.ndarray | None  # the rows the segment and document filters kept (None: all)
    row_doc: np.ndarray  # document index of each kept row
    hashes: np.ndarray  # per document, its key's hash
    doc_ids: pa.Array
    corpora: pa.Array
    marks: np.ndarray | None  # per document, the bit mask of its marks (its stratum, see _MARK_STRATA)
    counts: Counts | None = None  # what the filters dropped (saved with the keys)

    def key(self, d: int) -> tuple[float, str, str]:
        return float(self.hashes[d]), self.doc_ids[d].as_py(), self.corpora[d].as_py()

    def keys(self, documents) -> list[tuple[float, str, str]]:
        positions = np.asarray(documents, np.int64)
        taken = pa.array(positions)
        doc_ids, corpora = self.doc_ids.take(taken).to_pylist(), self.corpora.take(taken).to_pylist()
        return list(zip(self.hashes[positions].tolist(), doc_ids, corpora))

    def smallest_keys(self, n: int) -> list[tuple[float, str, str]]:
        """``heapq.nsmallest(n, keys)``, tuples made only for the documents whose hash may be among them."""
        if len(self.hashes) > n:
            bound = np.partition(self.hashes, n - 1)[n - 1] if n else -1.0
            return heapq.nsmallest(n, self.keys(np.flatnonzero(self.hashes <= bound)))
        return heapq.nsmallest(n, self.keys(np.arange(len(self.hashes))))


def per_row_sum(lists, flat_values: np.ndarray) -> np.ndarray:
    """Sum of ``flat_values`` (one per list item) over each list of ``lists``."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    offsets = pc.subtract(lists.offsets, lists.offsets[0]).to_numpy(zero_copy_only=False)
    cumulative = np.r_[0, np.cumsum(flat_values, dtype=np.int64)]
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


_MARK_STRATA = [
    marks_of([LABELS[b] for b in range(1, len(LABELS)) if mask >> b & 1]) for mask in range(1 << len(LABELS))
]
_KEY_COLUMNS = ["corpus", "doc_id", "labels"]


def _renumbered(row_doc: np.ndarray) -> np.ndarray:
    """Document numbers 0, 1, ... again, after some rows were left out."""
    if not len(row_doc):
        return row_doc
    return np.cumsum(np.r_[True, row_doc[1:] != row_doc[:-1]]) - 1


def _documents(shard: RowShard, inputs: list[SplitInput], params: SplitParams, counts: Counts,
               columns: list[str] | None = None, keys_folder=None) -> _Docs:  # fmt: skip
    """Read the shard (``columns``: only those; list columns as dictionaries), apply min_marks
    (segments) and min_sentences (documents) to the corpora being split, as a mask of the rows
    kept (the table is filtered once, when written).  The documents' keys and strata, and the
    rows the filters kept, come from ``keys_folder`` when an earlier pass left them there
    (:func:`_save_keys`): the labels are then not decoded again."""
    table = read_rows(shard, columns, dictionary=True)
    if columns is None:
        table = read_segments_table(table, shard)
    saved = location.join(keys_folder, f"{shard.index:05d}.arrow") if keys_folder else None
    if saved is not None and location.exists(saved):
        return _saved_documents(table, keys_folder, shard.index, counts)
    fixed = inputs[shard.source].fixed is not None
    row_doc = document_index(table)
    keep = None
    codes = None
    label_set = inputs[shard.source].labels
    if not fixed and (params.min_marks or params.min_sentences) and table.num_rows:
        codes = papers_codes(table["labels"], label_set)
    if not fixed and params.min_marks:
        counts.stats["segments_without_marks_dropped"] += 0
        if table.num_rows:
            keep = per_row_sum(table["labels"], codes > 0) >= params.min_marks
            counts.stats["segments_without_marks_dropped"] += int((~keep).sum())
            row_doc = _renumbered(row_doc[keep])
    n_docs = int(row_doc[-1]) + 1 if len(row_doc) else 0
    if not fixed and params.min_sentences:
        counts.stats["documents_with_too_few_sentences_dropped"] += 0
        if table.num_rows:
            ends = per_row_sum(table["labels"], np.isin(codes, _END_CODES))
            ends = np.bincount(row_doc, weights=ends if keep is None else ends[keep], minlength=n_docs)
            keep_doc = ends > params.min_sentences
            counts.stats["documents_with_too_few_sentences_dropped"] += int((~keep_doc).sum())
            kept_rows = keep_doc[row_doc]
            if keep is None:
                keep = kept_rows
            else:
                keep[keep] = kept_rows
            row_doc = (np.cumsum(keep_doc) - 1)[row_doc[kept_rows]]
            n_docs = int(keep_doc.sum())
    rows = np.arange(table.num_rows) if keep is None else np.flatnonzero(keep)
    first_rows = pa.array(rows[np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1]] if len(row_doc) else rows)
    doc_ids = table["doc_id"].take(first_rows).combine_chunks()
    corpora = table["corpus"].take(first_rows).combine_chunks()
    hashes = doc_hashes(doc_ids.to_pylist(), params.seed)
    marks = None
    if params.stratify and not fixed:
        marks = _marks(table, codes, keep, row_doc, n_docs, label_set)
    return _Docs(table, keep, row_doc, hashes, doc_ids, corpora, marks, counts)


def _saved_documents(table: pa.Table, folder, index: int, counts: Counts) -> _Docs:
    """:func:`_documents` from what the first pass saved: the keys, the strata, the rows kept and
    the filters' counts (the same counts, under the same keys, as the filters give)."""
    known = reading.open_arrow_file(location.join(folder, f"{index:05d}.arrow")).read_all()
    metadata = known.schema.metadata or {}
    for key, value in json.loads(metadata.get(b"counts", b"{}")).items():
        counts.stats[key] += value
    keep = None
    if b"keep" in metadata:  # bits, as the first pass packed them
        bits = np.frombuffer(base64.b64decode(metadata[b"keep"]), np.uint8)
        keep = np.unpackbits(bits, count=table.num_rows).astype(bool)
    row_doc = document_index(table)
    if keep is not None:
        row_doc = _renumbered(row_doc[keep])
    marks = known["marks"].to_numpy() if "marks" in known.column_names else None
    doc_ids, corpora = known["doc"].combine_chunks(), known["corpus"].combine_chunks()
    return _Docs(table, keep, row_doc, known["hash"].to_numpy(), doc_ids, corpora, marks, counts)


def _save_keys(folder, shard, docs: _Docs, extra: dict | None = None) -> None:
    """A shard's document keys (and strata), the rows the filters kept and their counts, for the
    later passes of the same split."""
    columns = {
        "hash": pa.array(docs.hashes, pa.float64()),
        "doc": docs.doc_ids.cast(pa.string()),
        "corpus": docs.corpora.cast(pa.string()),
        **({"marks": pa.array(docs.marks, pa.int8())} if docs.marks is not None else {}),
        **(extra or {}),
    }
    metadata = {"counts": json.dumps(dict(docs.counts.stats) if docs.counts is not None else {})}
    if docs.keep is not None:  # in the same file (a file more per shard cost more than the bits)
        metadata["keep"] = base64.b64encode(np.packbits(docs.keep).tobytes())
    writing.write_arrow_in_place(
        pa.table(columns).replace_schema_metadata(metadata), location.join(folder, f"{shard.index:05d}.arrow")
    )


_END_CODES = sorted(SENTENCE_END_IDS)


def _marks(
    table: pa.Table, codes, keep: np.ndarray | None, row_doc: np.ndarray, n_docs: int, label_set: LabelSet
) -> np.ndarray:
    """Each document's stratum as a bit mask of the marks it has, over all its kept segments (a
    document of ten sentences is one stratum among at most eight, so small strata do not all round
    toward train); ``codes``: the table's label codes, if the caller has them."""
    if codes is None:
        codes = papers_codes(table["labels"], label_set)
    lengths = pc.list_value_length(table["labels"]).to_numpy(zero_copy_only=False)
    bits = np.where(codes > 0, np.left_shift(1, np.maximum(codes, 0)), 0)
    row_mask = np.zeros(len(lengths), np.int64)
    nonempty = lengths > 0
    if nonempty.any():
        starts = np.r_[0, np.cumsum(lengths)[:-1]][nonempty]
        row_mask[nonempty] = np.bitwise_or.reduceat(bits, starts)
    doc_mask = np.zeros(n_docs, np.int64)
    np.bitwise_or.at(doc_mask, row_doc, row_mask if keep is None else row_mask[keep])
    return doc_mask


def read_segments_table(table: pa.Table, shard: RowShard) -> pa.Table:
    """A shard read with dictionaries, checked to be a segment table of this version."""
    if "case" not in table.column_names:
        from pipeline.engine import reading

        reading.conform_segments(table.slice(0, 0), shard.path)
    if "split" not in table.column_names:
        table = table.append_column("split", pa.nulls(table.num_rows, pa.string()))
    return table.select(SEGMENT_SCHEMA.names)


# ------------------------------------------------------------------------ the rules, as small values


@dataclass(frozen=True)
class Rule:
    """How a document's key becomes a split (picklable, small)."""

    kind: str  # ratios | counts | strata
    bounds: tuple = ()  # ratios: ((cumulative share, split), ...); counts: ((last key inclusive, split), ...)
    cuts: tuple = ()  # strata: ((stratum, ((first key excluded, split), ...), last split), ...)

    def split_of(self, key: tuple, stratum: str | None = None) -> str | None:
        if self.kind == "ratios":
            return next((name for bound, name in self.bounds if key[0] < bound), self.bounds[-1][1])
        if self.kind == "counts":
            return next((name for last, name in self.bounds if key <= last), None)
        cuts, last = self.strata[stratum]
        return next((name for first_excluded, name in cuts if key < first_excluded), last)

    @functools.cached_property
    def strata(self) -> dict:
        return {s: (c, l) for s, c, l in self.cuts}

    def codes(self, docs: _Docs) -> np.ndarray:
        """The split (index into SPLIT_NAMES, -1 for none) of each document; vectorized on the
        hash, the rule itself (:meth:`split_of`) only where a hash equals a bound's."""
        hashes = docs.hashes
        if self.kind == "ratios":
            bounds = np.array([b for b, _ in self.bounds])
            names = np.array([SPLIT_NAMES.index(n) for _, n in self.bounds])
            return names[np.minimum(np.searchsorted(bounds, hashes, side="right"), len(names) - 1)]
        out = np.empty(len(hashes), np.int64)
        groups = {None: np.arange(len(hashes))} if self.kind == "counts" else _groups(docs.marks)
        for stratum, members in groups.items():
            if self.kind == "counts":
                edges = [(k, n) for k, n in self.bounds]
                tail = -1
            else:
                edges, last = self.strata[stratum]
                tail = SPLIT_NAMES.index(last)
            # counts: a key goes to the first split whose last key is >= it; strata: to the first
            # split whose first excluded key is > it; on the hash alone but for exact ties
            edge_hash = np.array([k[0] for k, _ in edges], np.float64)
            codes = np.array([SPLIT_NAMES.index(n) for _, n in edges] + [tail], np.int64)
            h = hashes[members]
            side = "left" if self.kind == "counts" else "right"
            position = np.searchsorted(edge_hash, h, side=side)
            out[members] = codes[position]
            for i in np.flatnonzero(np.isin(h, edge_hash)).tolist():
                out[members[i]] = _code(self.split_of(docs.key(int(members[i])), stratum))
        return out


def ratio_rule(ratios: dict[str, float]) -> Rule:
    total = sum(ratios.values())
    bounds, acc = [], 0.0
    for name, ratio in ratios.items():
        acc += ratio / total
        bounds.append((acc, name))
    return Rule("ratios", tuple(bounds))


class _SmallestKeys:
    """Pass of count splits: the N smallest keys of a shard, and how many documents it has."""

    def __init__(self, inputs, params, n, folder):
        self.inputs, self.params, self.n, self.folder = inputs, params, n, str(folder)

    def __call__(self, shard) -> StepResult:
        if self.inputs[shard.source].fixed is not None:
            return StepResult(None, payload=([], 0))
        docs = _documents(shard, self.inputs, self.params, Counts(), _KEY_COLUMNS)
        _save_keys(self.folder, shard, docs)
        return StepResult(None, payload=(docs.smallest_keys(self.n), len(docs.hashes)))


class _StratumHistogram:
    """Pass 1 of stratified splits: per stratum, documents per hash bucket; each shard's keys and
    strata are kept in the scratch folder, so pass 2 does not read the corpus again."""

    def __init__(self, inputs, params, folder):
        self.inputs, self.params, self.folder = inputs, params, str(folder)

    def __call__(self, shard) -> StepResult:
        out: dict[str, np.ndarray] = {}
        if self.inputs[shard.source].fixed is None:
            docs = _documents(shard, self.inputs, self.params, Counts(), _KEY_COLUMNS)
            buckets = np.minimum((docs.hashes * BUCKETS).astype(np.int64), BUCKETS - 1)
            for stratum, members in _groups(docs.marks).items():
                out[stratum] = np.bincount(buckets[members], minlength=BUCKETS)
            _save_keys(self.folder, shard, docs, {"bucket": pa.array(buckets, pa.int32())})
        return StepResult(None, payload=out)


#: shards whose saved keys one task of the cut points' pass reads: the pass keeps only the keys of a
#: few buckets, so a task a shard spent most of its time on the task's own fixed costs
KEYS_PER_TASK = 64


class _BucketKeys:
    """Pass 2 of stratified splits: from the scratch folder, the keys in the buckets where cut
    points fall, of a run of shards (:data:`KEYS_PER_TASK`)."""

    def __init__(self, folder, wanted: frozenset):
        self.folder, self.wanted = str(folder), wanted

    def __call__(self, indices: tuple[int, ...]) -> dict[tuple[str, int], list]:
        found: dict[tuple[str, int], list] = {}
        wanted_buckets = sorted({b for _, b in self.wanted})
        for index in indices:
            path = location.join(self.folder, f"{index:05d}.arrow")
            if not location.exists(path):  # a corpus with a fixed split: no keys
                continue
            keys = reading.open_arrow_file(path).read_all()
            rows = np.flatnonzero(np.isin(keys["bucket"].to_numpy(), wanted_buckets))
            if len(rows):
                part = keys.take(pa.array(rows))
                columns = ("hash", "doc", "corpus", "bucket", "marks")
                for h, doc, corpus, bucket, marks in zip(*(part[c].to_pylist() for c in columns)):
                    if (where := (_MARK_STRATA[marks], bucket)) in self.wanted:
                        found.setdefault(where, []).append((h, doc, corpus))
        return found


def _stratified_rule(runner, shards, inputs, params: SplitParams, keys_folder: Path) -> Rule:
    histograms: dict[str, np.ndarray] = {}
    for result in each_step(runner, _StratumHistogram(inputs, params, keys_folder), shards, label="split: strata"):
        for stratum, counts in result.payload.items():
            histograms[stratum] = histograms.get(stratum, 0) + counts
    names = list(params.ratios)
    total = sum(params.ratios.values())
    # the rank of the first document of each split but the first, per stratum (as exact shares of it)
    plans, wanted = {}, set()
    for stratum, histogram in histograms.items():
        n = int(histogram.sum())
        stops, acc = [], 0.0
        for name in names[:-1]:
            acc += params.ratios[name] / total
            stops.append((round(acc * n), name))
        cumulative = np.cumsum(histogram)
        located = []
        for rank, name in stops:
            if rank >= n:
                located.append((None, None, name))
                continue
            bucket = int(np.searchsorted(cumulative, rank, side="right"))
            before = int(cumulative[bucket - 1]) if bucket else 0
            located.append((bucket, rank - before, name))
            wanted.add((stratum, bucket))
        plans[stratum] = located
    keys: dict[tuple[str, int], list] = {}
    runs = runs_of([shard.index for shard in shards], KEYS_PER_TASK)
    for found_in_run in runner.each(_BucketKeys(keys_folder, frozenset(wanted)), runs, label="split: cut points"):
        for where, found in found_in_run.items():
            keys.setdefault(where, []).extend(found)
    cuts = []
    for stratum, located in sorted(plans.items()):
        first_excluded = []
        for bucket, rank_in_bucket, name in located:
            if bucket is None:
                first_excluded.append(((2.0, "", ""), name))  # the rest of the stratum: no cut
            else:
                first_excluded.append((sorted(keys[(stratum, bucket)])[rank_in_bucket], name))
        cuts.append((stratum, tuple(first_excluded), names[-1]))
    return Rule("strata", cuts=tuple(cuts))


# ------------------------------------------------------------------------------- assignment


def _assigned(docs: _Docs, inputs, shard, rule: Rule | None, counts: Counts) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The shard's kept rows with their split (rows of documents beyond the counts removed) and,
    per row, its split index and its document: one filter of the table, none when every row is kept."""
    fixed = inputs[shard.source].fixed
    if fixed is not None:
        split = np.full(len(docs.hashes), SPLIT_NAMES.index(fixed), dtype=np.int64)
    else:
        split = rule.codes(docs)
        if rule.kind == "counts":
            counts.stats["documents_beyond_counts"] += int((split < 0).sum())
    per_row = split[docs.row_doc] if len(docs.row_doc) else np.zeros(0, np.int64)
    keep = np.ones(docs.table.num_rows, bool) if docs.keep is None else docs.keep.copy()
    keep[keep] = per_row >= 0
    row_doc = docs.row_doc[per_row >= 0]
    per_row = per_row[per_row >= 0]
    table = docs.table if keep.all() else docs.table.filter(pa.array(keep))
    column = pa.array(SPLIT_NAMES).take(pa.array(per_row))
    if "split" in table.column_names:
        table = with_column(table, "split", column)
    else:
        table = table.append_column("split", column)
    return table, per_row, row_doc


def _groups(marks: np.ndarray) -> dict[str, np.ndarray]:
    """Positions of each stratum's documents (``marks``: each document's mask of marks)."""
    order = np.argsort(marks, kind="stable")
    values, starts = np.unique(marks[order], return_index=True)
    bounds = np.r_[starts, len(marks)]
    return {_MARK_STRATA[m]: order[bounds[k] : bounds[k + 1]] for k, m in enumerate(values.tolist())}


def _code(split: str | None) -> int:
    return -1 if split is None else SPLIT_NAMES.index(split)


def _segment_groups(table: pa.Table, codes: np.ndarray) -> dict:
    hashes = hashsets.list_hashes(table["words"])
    groups = {}
    for code in np.unique(codes).tolist():
        groups[("seg", SPLIT_NAMES[code])] = hashsets.distinct(hashes[codes == code])
    return groups


class _HashSegments:
    """Duplicates pass: the segment hashes of each split into the exchange."""

    def __init__(self, inputs, params, rule, folder, keys_folder):
        self.inputs, self.params, self.rule, self.folder = inputs, params, rule, str(folder)
        self.keys_folder = keys_folder

    def __call__(self, shard) -> StepResult:
        counts = Counts()
        docs = _documents(shard, self.inputs, self.params, counts, [*_KEY_COLUMNS, "words"], self.keys_folder)
        table, codes, _ = _assigned(docs, self.inputs, shard, self.rule, counts)
        written = hashsets.write_groups(self.folder, shard.index, _segment_groups(table, codes))
        return StepResult(None, payload=written)


class _WriteSplit:
    """The written pass: rows with their split, train duplicates dropped (by hash)."""

    def __init__(self, inputs, params, rule, folder, drop, keys_folder):
        # drop: a .npy of the sorted hashes to drop, mapped in each task rather than sent with it
        self.inputs, self.params, self.rule = inputs, params, rule
        self.drop = str(drop) if drop else None
        self.folder = str(folder) if folder else None
        self.keys_folder = keys_folder

    def __call__(self, shard) -> StepResult:
        counts = Counts()
        docs = _documents(shard, self.inputs, self.params, counts, keys_folder=self.keys_folder)
        table, codes, row_doc = _assigned(docs, self.inputs, shard, self.rule, counts)
        written = 0
        if self.folder is not None:  # the duplicates are found in this same pass
            written = hashsets.write_groups(self.folder, shard.index, _segment_groups(table, codes))
        drop = reading.read_array(self.drop, np.uint64) if self.drop is not None else ()
        if len(drop) and table.num_rows:
            hashes = hashsets.list_hashes(table["words"])
            position = np.minimum(np.searchsorted(drop, hashes), len(drop) - 1)
            duplicate = (drop[position] == hashes) & (codes == SPLIT_NAMES.index("train"))
            counts.stats["train_duplicates_dropped"] += int(duplicate.sum())
            table = table.filter(pa.array(~duplicate))
            codes, row_doc = codes[~duplicate], row_doc[~duplicate]
        _count_splits(table, codes, row_doc, counts)
        return StepResult(table, counts, payload=written)


#: the stats keys of the per-split counts (``split.train.documents``...), gathered into the report's ``splits``
_PER_SPLIT = "split."


def _count_splits(table: pa.Table, codes: np.ndarray, row_doc: np.ndarray, counts: Counts) -> None:
    """Documents, segments and words of each split in the written rows (``row_doc``: each row's
    document; a document's rows are all in one shard and one split, so documents add up across
    shards and are counted by their first rows)."""
    n = len(SPLIT_NAMES)
    words = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False) if table.num_rows else codes
    first = np.r_[True, row_doc[1:] != row_doc[:-1]] if len(row_doc) else np.zeros(0, bool)
    documents = np.bincount(codes[first], minlength=n)
    segments = np.bincount(codes, minlength=n)
    word_sums = np.bincount(codes, weights=words, minlength=n).astype(np.int64)  # exact below 2**53
    for code, name in enumerate(SPLIT_NAMES):
        counts.stats[f"{_PER_SPLIT}{name}.documents"] += int(documents[code])
        counts.stats[f"{_PER_SPLIT}{name}.segments"] += int(segments[code])
        counts.stats[f"{_PER_SPLIT}{name}.words"] += int(word_sums[code])


def per_split(stats: dict) -> dict[str, dict[str, int]]:
    """The report's ``splits``: per split its documents, segments and words (every split, 0 included)."""
    return {
        name: {what: int(stats.get(f"{_PER_SPLIT}{name}.{what}", 0)) for what in ("documents", "segments", "words")}
        for name in SPLIT_NAMES
    }


def expected_splits(params: SplitParams, inputs) -> list[str]:
    """The splits the rule gives documents to: a positive ratio or count, or a corpus fixed to it."""
    asked = params.counts if params.counts is not None else (params.ratios or {})
    named = {name for name, share in asked.items() if share > 0} if any(i.fixed is None for i in inputs) else set()
    named |= {i.fixed for i in inputs if i.fixed is not None}
    return [name for name in SPLIT_NAMES if name in named]


def _count_rule(runner, shards, inputs, params: SplitParams, keys_folder, out) -> tuple[Rule, dict]:
    """The rule of count splits: the N smallest document keys, given out in the order the counts
    are given; and per split the documents asked for and got (fewer documents than asked: a
    warning, or with ``strict`` a refusal)."""
    n = sum(params.counts.values())
    step = _SmallestKeys(inputs, params, n, keys_folder)
    found = each_step(runner, step, shards, label="split: document keys")
    keys = heapq.nsmallest(n, (k for r in found for k in r.payload[0]))
    bounds, taken = [], 0
    for name, count in params.counts.items():
        if count:
            taken += count
            if taken <= len(keys):
                bounds.append((keys[taken - 1], name))
            elif taken - count < len(keys):
                bounds.append((keys[-1], name))
    filled = counts_filled(params.counts, len(keys))
    short = {name: got for name, got in filled.items() if got["got"] < got["asked"]}
    if short:
        what = ", ".join(f"{name} {got['got']} of {got['asked']}" for name, got in short.items())
        message = f"split counts ask for {n} documents and the corpora have {len(keys)}: documents per split {what}"
        if params.strict:
            raise InputError(f"{out}: {message} (strict: true)")
        log.warning("%s: %s", out, message)
    return Rule("counts", tuple(bounds)), filled


def _write_splits(runner, shards, inputs, params: SplitParams, rule, scratch, keys_folder, folder, label_set):
    """The written pass, and the segments found in several splits (by hash): found before the
    written pass when train's duplicates are dropped in it (their hashes collected), else in that
    same pass.  Returns the pass's results and the overlaps."""
    exchange = location.join(scratch, "hashes")
    segments = {"seg": [("seg", s) for s in SPLIT_NAMES]}
    shard_ids = [s.index for s in shards]
    if params.drop_train_duplicates:
        step = _HashSegments(inputs, params, rule, exchange, keys_folder)
        written = sum(r.payload for r in run_step(runner, step, shards, label="split: hashes"))
        collect = {"seg": SPLIT_NAMES.index("train")}
        overlaps, collected = hashsets.reduce(
            runner, exchange, shard_ids, segments, written, collect=collect, label="split: duplicates"
        )
        drop = location.join(scratch, "train_duplicates.bin")
        writing.write_bytes_in_place(collected.get("seg", np.zeros(0, np.uint64)), drop)
        write = _WriteSplit(inputs, params, rule, None, drop, keys_folder)
        results = run_step(runner, write, shards, folder, "split", label_set)
    else:
        write = _WriteSplit(inputs, params, rule, exchange, None, keys_folder)
        results = run_step(runner, write, shards, folder, "split", label_set)
        written = sum(r.payload for r in results)
        overlaps, _ = hashsets.reduce(runner, exchange, shard_ids, segments, written, label="split: duplicates")
    return results, overlaps


def _split_report(counts, params: SplitParams, inputs, overlaps, filled: dict | None, out) -> dict:
    """The split's counts, per split and in all; an empty split a model would be scored on is
    named (and warned about); the segments in several splits."""
    report = {key: int(value) for key, value in sorted(counts.stats.items()) if not key.startswith(_PER_SPLIT)}
    report["splits"] = per_split(counts.stats)
    empty = [name for name in expected_splits(params, inputs) if not report["splits"][name]["documents"]]
    if empty:
        report["empty_splits"] = empty
        documents = sum(split["documents"] for split in report["splits"].values())
        log.warning(
            "%s: no documents in split %s (%d documents in all): a model cannot be scored on an empty split",
            out,
            ", ".join(empty),
            documents,
        )
    report["duplicates_across_splits"] = duplicates_report(overlaps["seg"])
    if params.drop_train_duplicates:
        report.setdefault("train_duplicates_dropped", 0)
    if filled is not None:
        report["counts"] = filled
    return report


def split_dataset(
    inputs: list[SplitInput],
    params: SplitParams,
    out: str | os.PathLike,
    report: str | os.PathLike,
    engine: EngineParams | None = None,
) -> dict:
    """Split the corpora into the dataset ``out`` (a folder of parts) and write the report."""
    engine = engine or EngineParams()
    with writing.Outputs(inputs=[i.path for i in inputs]) as outputs:
        folder = outputs.dataset(out, kind="segments")
        report_path = outputs.file(report)
        scratch = outputs.scratch(out)
        keys_folder = location.join(scratch, "keys")
        location.make_folder(keys_folder)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            # the shards, and the inputs' one label set (or a one-line refusal)
            scan = scan_datasets([i.path for i in inputs], engine.shard_rows, runner)
            shards, label_set = scan.shards, scan.labels
            inputs = [replace(i, labels=label_set) for i in inputs]
            rule, filled = None, None
            if params.counts is not None:
                rule, filled = _count_rule(runner, shards, inputs, params, keys_folder, out)
            elif params.stratify:
                rule = _stratified_rule(runner, shards, inputs, params, keys_folder)
            elif params.ratios is not None:
                rule = ratio_rule(params.ratios)
            results, overlaps = _write_splits(
                runner, shards, inputs, params, rule, scratch, keys_folder, folder, label_set
            )
        counts = counts_of(results)
        finish(
            folder,
            "segments",
            results,
            schema=SCHEMA_NAME,
            **manifest_entry(label_set),
            **protocol_entry([i.path for i in inputs]),
        )
        out_report = _split_report(counts, params, inputs, overlaps, filled, out)
        writing.write_json_in_place(out_report, report_path)
    return out_report


def counts_filled(counts: dict[str, int], available: int) -> dict[str, dict[str, int]]:
    """Per split the documents its count asked for and those it got: splits are filled in the
    order the counts are given, so ``available`` documents short of the sum leave the last short."""
    out, left = {}, available
    for name, asked in counts.items():
        got = min(asked, left)
        left -= got
        out[name] = {"asked": asked, "got": got}
    return out


def duplicates_report(overlap: hashsets.Overlap) -> dict[str, int]:
    """Segments (exact word sequences) found in several splits, by the splits they are in."""
    out: Counter = Counter()
    for mask, n in overlap.masks.items():
        members = [SPLIT_NAMES[i] for i in range(len(SPLIT_NAMES)) if mask >> i & 1]
        if len(members) > 1:
            out["+".join(sorted(members))] += n
    return dict(sorted(out.items()))
