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
splits are found by hash (:mod:`pipeline.hashsets`).  Every document or segment left out is
counted with its reason in the report.
"""

from __future__ import annotations

import hashlib
import heapq
import logging
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from . import hashsets, io
from .dataset import RowShard, counts_of, finish, read_segments, row_shards, run_step
from .executor import executor
from .labels import LABELS, SENTENCE_END_IDS
from .params import SPLIT_NAMES, EngineParams, SplitParams
from .schema import SCHEMA_NAME, with_column
from .step import Counts, StepResult

log = logging.getLogger(__name__)
BUCKETS = 4096


def doc_hash(doc_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the document id and the seed."""
    digest = hashlib.blake2b(f"{seed}\0{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def marks_of(labels: list[str]) -> str:
    """A segment's stratum: the set of marks it contains."""
    return "+".join(sorted(set(labels) - {"O"})) or "none"


@dataclass(frozen=True)
class SplitInput:
    """A corpus fed to the split: its dataset, and its fixed split if it has one."""

    corpus: str
    path: str
    fixed: str | None = None


@dataclass
class _Docs:
    """The documents of a shard's (filtered) rows, in order of appearance."""

    table: pa.Table  # the rows kept by the segment and document filters
    keys: list[tuple[float, str, str]]  # (hash, doc_id, corpus) per document
    row_doc: np.ndarray  # document index of each row
    strata: list[str] | None


def per_row_sum(lists, flat_values: np.ndarray) -> np.ndarray:
    """Sum of ``flat_values`` (one per list item) over each list of ``lists``."""
    lists = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    offsets = pc.subtract(lists.offsets, lists.offsets[0]).to_numpy(zero_copy_only=False)
    cumulative = np.r_[0, np.cumsum(flat_values, dtype=np.int64)]
    return cumulative[offsets[1:]] - cumulative[offsets[:-1]]


_END_LABELS = pa.array([LABELS[i] for i in SENTENCE_END_IDS])


def document_index(table: pa.Table) -> np.ndarray:
    """Document number (0, 1, ...) of each row: a document's rows are contiguous, so a new one
    starts wherever corpus or doc_id changes."""
    n = table.num_rows
    if n == 0:
        return np.zeros(0, np.int64)
    change = np.zeros(n, dtype=bool)
    change[0] = True
    for name in ("doc_id", "corpus"):
        values = table[name].to_numpy(zero_copy_only=False)
        change[1:] |= values[1:] != values[:-1]
    return np.cumsum(change) - 1


def _documents(shard: RowShard, inputs: list[SplitInput], params: SplitParams, counts: Counts) -> _Docs:
    """Read the shard, apply min_marks (segments) and min_sentences (documents) to corpora being split."""
    table = read_segments(shard)
    fixed = inputs[shard.source].fixed is not None
    if not fixed and params.min_marks and table.num_rows:
        marks = pc.not_equal(pc.list_flatten(table["labels"]), "O").to_numpy(zero_copy_only=False)
        keep = per_row_sum(table["labels"], marks) >= params.min_marks
        counts.stats["segments_without_marks_dropped"] += int((~keep).sum())
        table = table.filter(pa.array(keep))
    elif not fixed and params.min_marks:
        counts.stats["segments_without_marks_dropped"] += 0
    row_doc = document_index(table)
    n_docs = int(row_doc[-1]) + 1 if len(row_doc) else 0
    if not fixed and params.min_sentences:
        counts.stats["documents_with_too_few_sentences_dropped"] += 0
        if table.num_rows:
            ends_flat = pc.is_in(pc.list_flatten(table["labels"]), value_set=_END_LABELS).to_numpy(zero_copy_only=False)
            ends = np.bincount(row_doc, weights=per_row_sum(table["labels"], ends_flat), minlength=n_docs)
            keep_doc = ends > params.min_sentences
            counts.stats["documents_with_too_few_sentences_dropped"] += int((~keep_doc).sum())
            keep = keep_doc[row_doc]
            table = table.filter(pa.array(keep))
            row_doc = (np.cumsum(keep_doc) - 1)[row_doc[keep]]
            n_docs = int(keep_doc.sum())
    first_rows = np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1] if len(row_doc) else np.zeros(0, np.int64)
    doc_ids = table["doc_id"].take(pa.array(first_rows)).to_pylist()
    corpora = table["corpus"].take(pa.array(first_rows)).to_pylist()
    keys = [(doc_hash(doc, params.seed), doc, corpus) for doc, corpus in zip(doc_ids, corpora)]
    strata = None
    if params.stratify and not fixed:
        parts: list[list[str]] = [[] for _ in range(n_docs)]
        for d, labels in zip(row_doc.tolist(), table["labels"].to_pylist()):
            parts[d].append(marks_of(labels))
        strata = ["|".join(p) for p in parts]
    return _Docs(table, keys, row_doc, strata)


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
        cuts, last = dict((s, (c, l)) for s, c, l in self.cuts)[stratum]
        return next((name for first_excluded, name in cuts if key < first_excluded), last)


def ratio_rule(ratios: dict[str, float]) -> Rule:
    total = sum(ratios.values())
    bounds, acc = [], 0.0
    for name, ratio in ratios.items():
        acc += ratio / total
        bounds.append((acc, name))
    return Rule("ratios", tuple(bounds))


class _SmallestKeys:
    """Pass of count splits: the N smallest keys of a shard, and how many documents it has."""

    def __init__(self, inputs, params, n):
        self.inputs, self.params, self.n = inputs, params, n

    def __call__(self, shard) -> StepResult:
        if self.inputs[shard.source].fixed is not None:
            return StepResult(None, payload=([], 0))
        docs = _documents(shard, self.inputs, self.params, Counts())
        return StepResult(None, payload=(heapq.nsmallest(self.n, docs.keys), len(docs.keys)))


def _bucket(key) -> int:
    return min(int(key[0] * BUCKETS), BUCKETS - 1)


class _StratumHistogram:
    """Pass 1 of stratified splits: per stratum, documents per hash bucket."""

    def __init__(self, inputs, params):
        self.inputs, self.params = inputs, params

    def __call__(self, shard) -> StepResult:
        out: dict[str, np.ndarray] = {}
        if self.inputs[shard.source].fixed is None:
            docs = _documents(shard, self.inputs, self.params, Counts())
            for key, stratum in zip(docs.keys, docs.strata):
                out.setdefault(stratum, np.zeros(BUCKETS, np.int64))[_bucket(key)] += 1
        return StepResult(None, payload=out)


class _BucketKeys:
    """Pass 2 of stratified splits: the keys in the buckets where cut points fall."""

    def __init__(self, inputs, params, wanted: frozenset):
        self.inputs, self.params, self.wanted = inputs, params, wanted

    def __call__(self, shard) -> StepResult:
        found: dict[tuple[str, int], list] = {}
        if self.inputs[shard.source].fixed is None:
            docs = _documents(shard, self.inputs, self.params, Counts())
            for key, stratum in zip(docs.keys, docs.strata):
                where = (stratum, _bucket(key))
                if where in self.wanted:
                    found.setdefault(where, []).append(key)
        return StepResult(None, payload=found)


def _stratified_rule(runner, shards, inputs, params: SplitParams) -> Rule:
    histograms: dict[str, np.ndarray] = {}
    for result in run_step(runner, _StratumHistogram(inputs, params), shards, label="split: strata"):
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
    for result in run_step(runner, _BucketKeys(inputs, params, frozenset(wanted)), shards, label="split: cut points"):
        for where, found in result.payload.items():
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


def _assigned(docs: _Docs, inputs, shard, rule: Rule | None, counts: Counts) -> tuple[pa.Table, np.ndarray]:
    """The shard's rows with their split (rows of documents beyond the counts removed) and, per
    kept row, its split index."""
    fixed = inputs[shard.source].fixed
    if fixed is not None:
        split = np.full(len(docs.keys), fixed, dtype=object)
    else:
        strata = docs.strata or [None] * len(docs.keys)
        split = np.array([rule.split_of(k, s) for k, s in zip(docs.keys, strata)], dtype=object)
        if rule.kind == "counts":
            counts.stats["documents_beyond_counts"] += int(sum(1 for s in split if s is None))
    per_row = split[docs.row_doc] if len(docs.row_doc) else np.zeros(0, dtype=object)
    keep = np.array([s is not None for s in per_row], dtype=bool)
    table = with_column(docs.table, "split", pa.array(per_row.tolist(), pa.string())).filter(pa.array(keep))
    codes = np.array([SPLIT_NAMES.index(s) for s in per_row[keep]], dtype=np.int64)
    return table, codes


def _segment_groups(table: pa.Table, codes: np.ndarray) -> dict:
    hashes = hashsets.list_hashes(table["words"])
    groups = {}
    for code in np.unique(codes).tolist():
        groups[("seg", SPLIT_NAMES[code])] = hashsets.distinct(hashes[codes == code])
    return groups


class _HashSegments:
    """Duplicates pass: the segment hashes of each split into the exchange."""

    def __init__(self, inputs, params, rule, folder):
        self.inputs, self.params, self.rule, self.folder = inputs, params, rule, str(folder)

    def __call__(self, shard) -> StepResult:
        counts = Counts()
        docs = _documents(shard, self.inputs, self.params, counts)
        table, codes = _assigned(docs, self.inputs, shard, self.rule, counts)
        written = hashsets.write_groups(self.folder, shard.index, _segment_groups(table, codes))
        return StepResult(None, payload=written)


class _WriteSplit:
    """The written pass: rows with their split, train duplicates dropped (by hash)."""

    def __init__(self, inputs, params, rule, folder, drop: np.ndarray | None):
        self.inputs, self.params, self.rule, self.drop = inputs, params, rule, drop
        self.folder = str(folder) if folder else None

    def __call__(self, shard) -> StepResult:
        counts = Counts()
        docs = _documents(shard, self.inputs, self.params, counts)
        table, codes = _assigned(docs, self.inputs, shard, self.rule, counts)
        written = 0
        if self.folder is not None:  # the duplicates are found in this same pass
            written = hashsets.write_groups(self.folder, shard.index, _segment_groups(table, codes))
        if self.drop is not None and len(self.drop) and table.num_rows:
            hashes = hashsets.list_hashes(table["words"])
            position = np.minimum(np.searchsorted(self.drop, hashes), len(self.drop) - 1)
            duplicate = (self.drop[position] == hashes) & (codes == SPLIT_NAMES.index("train"))
            counts.stats["train_duplicates_dropped"] += int(duplicate.sum())
            table = table.filter(pa.array(~duplicate))
        return StepResult(table, counts, payload=written)


def split_dataset(
    inputs: list[SplitInput],
    params: SplitParams,
    out: str | os.PathLike,
    report: str | os.PathLike,
    engine: EngineParams | None = None,
) -> dict:
    """Split the corpora into the dataset ``out`` (a folder of parts) and write the report."""
    engine = engine or EngineParams()
    shards = row_shards([i.path for i in inputs], engine.shard_rows)
    with io.Outputs(inputs=[i.path for i in inputs]) as outputs:
        folder = outputs.dataset(out)
        report_path = outputs.file(report)
        exchange = outputs.scratch(out)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            rule = None
            if params.counts is not None:
                n = sum(params.counts.values())
                found = run_step(runner, _SmallestKeys(inputs, params, n), shards, label="split: document keys")
                keys = heapq.nsmallest(n, (k for r in found for k in r.payload[0]))
                bounds, taken = [], 0
                for name, count in params.counts.items():
                    if count:
                        taken += count
                        if taken <= len(keys):
                            bounds.append((keys[taken - 1], name))
                        elif taken - count < len(keys):
                            bounds.append((keys[-1], name))
                rule = Rule("counts", tuple(bounds))
            elif params.stratify:
                rule = _stratified_rule(runner, shards, inputs, params)
            elif params.ratios is not None:
                rule = ratio_rule(params.ratios)
            if params.drop_train_duplicates:
                sizes = run_step(runner, _HashSegments(inputs, params, rule, exchange), shards, label="split: hashes")
                written = sum(r.payload for r in sizes)
                overlaps, collected = hashsets.reduce(
                    runner,
                    exchange,
                    [s.index for s in shards],
                    {"seg": [("seg", s) for s in SPLIT_NAMES]},
                    written,
                    collect={"seg": SPLIT_NAMES.index("train")},
                )
                drop = collected.get("seg", np.zeros(0, np.uint64))
                results = run_step(runner, _WriteSplit(inputs, params, rule, None, drop), shards, folder, "split")
            else:
                results = run_step(runner, _WriteSplit(inputs, params, rule, exchange, None), shards, folder, "split")
                written = sum(r.payload for r in results)
                overlaps, _ = hashsets.reduce(
                    runner, exchange, [s.index for s in shards], {"seg": [("seg", s) for s in SPLIT_NAMES]}, written
                )
        counts = counts_of(results)
        finish(folder, "segments", results, schema=SCHEMA_NAME)
        out_report = {key: int(value) for key, value in sorted(counts.stats.items())}
        out_report["duplicates_across_splits"] = duplicates_report(overlaps["seg"])
        if params.drop_train_duplicates:
            out_report.setdefault("train_duplicates_dropped", 0)
        io.write_json_in_place(out_report, Path(report_path))
    return out_report


def duplicates_report(overlap: hashsets.Overlap) -> dict[str, int]:
    """Segments (exact word sequences) found in several splits, by the splits they are in."""
    out: Counter = Counter()
    for mask, n in overlap.masks.items():
        members = [SPLIT_NAMES[i] for i in range(len(SPLIT_NAMES)) if mask >> i & 1]
        if len(members) > 1:
            out["+".join(sorted(members))] += n
    return dict(sorted(out.items()))
