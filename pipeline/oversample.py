"""Question oversampling (Rao 2022) and materialized augmentation copies, streamed over shards.

Oversampling copies train question sentences (segments ending in QUESTION) into other train
documents of the same language until QUESTION reaches ``question_share`` of train's words;
dev and test are never touched.  Every draw is seeded by the segment, not by the order of a
loop, so the result does not depend on how the dataset is sharded or run:

* the number of copies K comes from whole-dataset counts (one streaming pass);
* the K copies are spread over the M question sentences systematically (each gets floor or
  ceil of K/M, which ones by a seeded offset), not drawn with replacement;
* copy j of question sentence i goes to a train document drawn by ``default_rng([seed, i, j])``
  among the documents of its language (not its own), after a drawn segment of it;
* copies travel from the shard of their sentence to the shard of their document through disk.

Augmentation copies (``augment``: Alam 2020 or 3R; training draws anew each epoch, these are
for the audit) draw per (seed, copy, index of the segment among train's), as training does.
"""

from __future__ import annotations

import logging
import math
import os
from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from . import io
from .dataset import RowShard, counts_of, finish, read_segments, row_shards, run_step
from .executor import executor
from .params import EngineParams, OversampleParams
from .schema import SCHEMA_NAME, concat, with_column
from .splits import document_index
from .step import Counts, StepResult

log = logging.getLogger(__name__)


def _train(table: pa.Table) -> np.ndarray:
    return pc.fill_null(pc.equal(table["split"], "train"), False).to_numpy(zero_copy_only=False)


def _question_rows(table: pa.Table) -> np.ndarray:
    """Rows whose last label is QUESTION (a question sentence)."""
    labels = table["labels"].combine_chunks()
    offsets = pc.subtract(labels.offsets, labels.offsets[0]).to_numpy(zero_copy_only=False)
    is_question_label = pc.equal(pc.list_flatten(labels), "QUESTION").to_numpy(zero_copy_only=False)
    nonempty = offsets[1:] > offsets[:-1]
    out = np.zeros(table.num_rows, dtype=bool)
    out[nonempty] = is_question_label[offsets[1:][nonempty] - 1]
    return out


def _train_docs_by_lang(table: pa.Table, train: np.ndarray) -> tuple[np.ndarray, list[str], dict[str, int]]:
    """Per row its document number; the language of each document; train documents per language."""
    row_doc = document_index(table)
    first_rows = np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1] if len(row_doc) else np.zeros(0, np.int64)
    langs = table["lang"].take(pa.array(first_rows)).to_pylist()
    train_doc = train[first_rows] if len(first_rows) else np.zeros(0, bool)
    per_lang = Counter(lang for lang, t in zip(langs, train_doc) if t)
    return row_doc, langs, dict(per_lang)


class _Tally:
    """Pass 1: train words, QUESTION labels, question sentences, train documents per language, train rows."""

    def __call__(self, shard: RowShard) -> StepResult:
        table = read_segments(shard)
        train = _train(table)
        part = table.filter(pa.array(train))
        words = int(pc.sum(pc.list_value_length(part["words"])).as_py() or 0)
        flat = pc.list_flatten(part["labels"])
        questions = int(pc.sum(pc.equal(flat, "QUESTION")).as_py() or 0)
        is_question = _question_rows(table) & train
        q_rows = table.filter(pa.array(is_question))
        q_words = int(pc.sum(pc.list_value_length(q_rows["words"])).as_py() or 0)
        q_labels = int(pc.sum(pc.equal(pc.list_flatten(q_rows["labels"]), "QUESTION")).as_py() or 0)
        _, _, docs = _train_docs_by_lang(table, train)
        payload = {
            "words": words,
            "questions": questions,
            "question_rows": int(is_question.sum()),
            "question_words": q_words,
            "question_labels": q_labels,
            "docs": docs,
            "train_rows": int(train.sum()),
        }
        return StepResult(None, payload=payload)


def copies_of(i: int, k: int, m: int, offset: float) -> int:
    """How many of K copies question sentence i (of M) gets: systematic, exactly K in all."""
    return math.floor((i + 1) * k / m + offset) - math.floor(i * k / m + offset)


class _Copies:
    """Pass 2: each question sentence's copies, written to the scratch folder of their target shard."""

    def __init__(self, seed, k, m, offset, q_before, docs_before, docs_total, shard_of_doc, folder):
        self.seed, self.k, self.m, self.offset = seed, k, m, offset
        self.q_before, self.docs_before, self.docs_total = q_before, docs_before, docs_total
        self.shard_of_doc, self.folder = shard_of_doc, str(folder)

    def __call__(self, shard: RowShard) -> StepResult:
        table = read_segments(shard)
        train = _train(table)
        row_doc, langs, _ = _train_docs_by_lang(table, train)
        rows = np.flatnonzero(_question_rows(table) & train)
        # the train-document number (per language, over the whole dataset) of each document here
        first_rows = np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1] if len(row_doc) else np.zeros(0, np.int64)
        seen: Counter = Counter()
        doc_number = np.full(len(first_rows), -1, np.int64)
        for d, row in enumerate(first_rows.tolist()):
            if train[row]:
                doc_number[d] = self.docs_before[shard.index].get(langs[d], 0) + seen[langs[d]]
                seen[langs[d]] += 1
        out: dict[int, list] = {}
        for local, row in enumerate(rows.tolist()):
            i = self.q_before[shard.index] + local
            lang = langs[row_doc[row]]
            own, n_docs = doc_number[row_doc[row]], self.docs_total[lang]
            for j in range(copies_of(i, self.k, self.m, self.offset)):
                rng = np.random.default_rng([self.seed, i, j])
                target = int(rng.integers(n_docs))
                while n_docs > 1 and target == own:
                    target = int(rng.integers(n_docs))
                position = float(rng.random())
                where, local_doc = self.shard_of_doc(lang, target)
                out.setdefault(where, []).append((local_doc, i, j, position, row))
        for where, copies in out.items():
            rows_taken = pa.array([c[4] for c in copies], pa.int64())
            part = table.take(rows_taken).drop_columns(["corpus", "doc_id", "seg_id", "split"])
            part = part.append_column("target_lang", pa.array([langs[row_doc[c[4]]] for c in copies], pa.string()))
            part = part.append_column("target_doc", pa.array([c[0] for c in copies], pa.int64()))
            part = part.append_column("order_i", pa.array([c[1] for c in copies], pa.int64()))
            part = part.append_column("order_j", pa.array([c[2] for c in copies], pa.int64()))
            part = part.append_column("position", pa.array([c[3] for c in copies], pa.float64()))
            target = Path(self.folder) / f"{where:05d}"
            target.mkdir(parents=True, exist_ok=True)
            pq.write_table(part, target / f"{shard.index:05d}.parquet")
        return StepResult(None, payload={where: len(c) for where, c in out.items()})


class _Write:
    """Pass 3: the shard's rows with the copies sent to it inserted; augmentation copies of its train rows."""

    def __init__(self, folder, augment, seed, train_before, vocabulary, confusables, augmented_folder, n_shards):
        self.folder = None if folder is None else str(folder)
        self.augment, self.seed = augment, seed
        self.train_before, self.vocabulary, self.confusables = train_before, vocabulary, confusables
        self.augmented_folder = None if augmented_folder is None else str(augmented_folder)
        self.n_shards = n_shards

    def _incoming(self, shard: RowShard) -> pa.Table | None:
        where = Path(self.folder) / f"{shard.index:05d}" if self.folder else None
        if where is None or not where.is_dir():
            return None
        parts = [pq.read_table(p) for p in sorted(where.glob("*.parquet"))]
        table = pa.concat_tables(parts)
        order = pc.sort_indices(table, sort_keys=[("order_i", "ascending"), ("order_j", "ascending")])
        return table.take(order)

    def __call__(self, shard: RowShard) -> StepResult:
        table = read_segments(shard)
        counts = Counts()
        incoming = self._incoming(shard)
        if incoming is not None and incoming.num_rows:
            table = _insert(table, incoming)
            counts.stats["inserted"] += incoming.num_rows
        train = table.filter(pa.array(_train(table)))
        counts.stats["train_words"] += int(pc.sum(pc.list_value_length(train["words"])).as_py() or 0)
        counts.stats["train_questions"] += int(
            pc.sum(pc.equal(pc.list_flatten(train["labels"]), "QUESTION")).as_py() or 0
        )
        # copy c of shard i is part c * shards + i: read in order, the parts give copy 0 of all of
        # train, then copy 1..., whatever the sharding
        for copy in range(self.augment["copies"] if self.augment is not None else 1):
            if self.augment is not None:
                from .augment import augmented

                first = self.train_before[shard.index]
                part = augmented(train, self.augment, copy, self.seed, self.vocabulary, self.confusables, first)
            else:
                part = concat([])
            counts.stats["augmented_rows"] += part.num_rows
            counts.stats["augmented_words"] += int(pc.sum(pc.list_value_length(part["words"])).as_py() or 0)
            name = f"part-{copy * self.n_shards + shard.index:05d}.parquet"
            io.write_parquet(part, Path(self.augmented_folder) / name)
        return StepResult(table, counts)


def _insert(table: pa.Table, incoming: pa.Table) -> pa.Table:
    """Rows of ``table`` with ``incoming`` copies placed inside their target train documents."""
    train = _train(table)
    row_doc, langs, _ = _train_docs_by_lang(table, train)
    first_rows = np.r_[0, np.flatnonzero(np.diff(row_doc)) + 1]
    # (lang, local train-document number) -> document index in this shard
    seen: Counter = Counter()
    local: dict[tuple[str, int], int] = {}
    for d, row in enumerate(first_rows.tolist()):
        if train[row]:
            local[(langs[d], seen[langs[d]])] = d
            seen[langs[d]] += 1
    rows_of = [list(range(a, b)) for a, b in zip(first_rows.tolist(), [*first_rows[1:].tolist(), table.num_rows])]
    placed = [[("row", r) for r in rows] for rows in rows_of]
    touched = set()
    for k, (lang, target, position) in enumerate(
        zip(incoming["target_lang"].to_pylist(), incoming["target_doc"].to_pylist(), incoming["position"].to_pylist())
    ):
        d = local[(lang, target)]
        slot = min(int(position * (len(placed[d]) + 1)), len(placed[d]))
        placed[d].insert(slot, ("copy", k))
        touched.add(d)
    pieces, seg_ids = [], []
    copies = incoming.select(["words", "labels", "case", "surface", "lang"])
    for d, items in enumerate(placed):
        for k, (kind, index) in enumerate(items):
            pieces.append((kind, index, d))
            seg_ids.append(k if d in touched else None)
    base = table.take(pa.array([r if kind == "row" else first_rows[d] for kind, r, d in pieces]))
    # copy rows: the target document's corpus, doc_id and split; the sentence's own words and labels
    is_copy = np.array([kind == "copy" for kind, _, _ in pieces])
    if is_copy.any():
        source = copies.take(pa.array([index for kind, index, _ in pieces if kind == "copy"]))
        for name in ("words", "labels", "case", "surface", "lang"):
            column = base[name].combine_chunks()
            merged = _scatter(column, is_copy, source[name].combine_chunks())
            base = with_column(base, name, merged)
    seg = [s if s is not None else v for s, v in zip(seg_ids, base["seg_id"].to_pylist())]
    return with_column(base, "seg_id", pa.array(seg, pa.int32()))


def _scatter(column: pa.Array, mask: np.ndarray, values: pa.Array) -> pa.Array:
    """``column`` with the ``mask`` rows replaced by ``values`` in order."""
    order = np.empty(len(mask), np.int64)
    order[~mask] = np.flatnonzero(~mask)
    order[mask] = len(mask) + np.arange(int(mask.sum()))
    return pa.concat_arrays([column, values.cast(column.type)]).take(pa.array(order))


class _ShardOfDoc:
    """(language, train-document number over the dataset) -> (shard, its number within the shard)."""

    def __init__(self, starts: dict[str, np.ndarray]):
        self.starts = starts

    def __call__(self, lang: str, target: int) -> tuple[int, int]:
        starts = self.starts[lang]
        shard = int(np.searchsorted(starts, target, side="right")) - 1
        return shard, target - int(starts[shard])


def _vocabulary(runner, shards) -> list[str]:
    """The sorted distinct words of train (3R substitutes them)."""
    words: set[str] = set()
    for result in run_step(runner, _TrainWords(), shards, label="oversample: vocabulary"):
        words.update(result.payload)
    return sorted(words)


class _TrainWords:
    def __call__(self, shard: RowShard) -> StepResult:
        table = read_segments(shard)
        words = pc.list_flatten(table.filter(pa.array(_train(table)))["words"])
        return StepResult(None, payload=pc.unique(words).to_pylist() if len(words) else [])


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
    shards = row_shards(source, engine.shard_rows)
    augment = params.augment.model_dump() if params.augment is not None else None
    inputs = [source, *([confusables] if confusables else [])]
    with io.Outputs(inputs=inputs) as outputs:
        folder = outputs.dataset(out)
        augmented_folder = outputs.dataset(augmented_out)
        report_path = outputs.file(report)
        scratch = outputs.scratch(out)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            tallies = [r.payload for r in run_step(runner, _Tally(), shards, label="oversample: counts")]
            words = sum(t["words"] for t in tallies)
            questions = sum(t["questions"] for t in tallies)
            incoming: Counter = Counter()
            copies_folder = None
            target = params.question_share
            m = sum(t["question_rows"] for t in tallies)
            if target and m and words and questions / words < target:
                q_words = sum(t["question_words"] for t in tallies)
                q_labels = sum(t["question_labels"] for t in tallies)
                gain = (q_labels - target * q_words) / m  # what one copy adds, on average
                if gain <= 0:
                    raise ValueError(
                        f"oversample.question_share {target} cannot be reached: question sentences are "
                        f"themselves only {q_labels / q_words:.4f} QUESTION"
                    )
                k = math.ceil((target * words - questions) / gain)
                offset = float(np.random.default_rng([seed, 15]).random())
                q_before = np.r_[0, np.cumsum([t["question_rows"] for t in tallies])].tolist()
                docs_before, running = [], Counter()
                for t in tallies:
                    docs_before.append(dict(running))
                    running.update(t["docs"])
                starts = {lang: np.array([b.get(lang, 0) for b in docs_before]) for lang in running}
                copies_folder = scratch / "copies"
                step = _Copies(
                    seed, k, m, offset, q_before, docs_before, dict(running), _ShardOfDoc(starts), copies_folder
                )
                for result in run_step(runner, step, shards, label="oversample: copies"):
                    incoming.update(result.payload)
            # augmentation draws by a segment's index among train's, the copies included
            train_rows = [t["train_rows"] + incoming[s.index] for t, s in zip(tallies, shards)]
            train_before = np.r_[0, np.cumsum(train_rows)].tolist()
            vocabulary, confusable_words = None, None
            if augment is not None and augment["kind"] == "3r":
                vocabulary = _vocabulary(runner, shards)
                if confusables:
                    from .augment import load_confusables

                    confusable_words = load_confusables(confusables)
            write = _Write(
                copies_folder, augment, seed, train_before, vocabulary, confusable_words, augmented_folder, len(shards)
            )
            results = run_step(runner, write, shards, folder, label="oversample")
        counts = counts_of(results)
        finish(folder, "segments", results, schema=SCHEMA_NAME)
        io.write_manifest(
            Path(augmented_folder),
            {
                "kind": "segments",
                "parts": len(shards) * (augment["copies"] if augment else 1),
                "rows": int(counts.stats["augmented_rows"]),
                "words": int(counts.stats["augmented_words"]),
                "schema": SCHEMA_NAME,
            },
        )
        out_report: dict = {}
        stats = counts.stats
        if target:
            after = stats["train_questions"] / stats["train_words"] if stats["train_words"] else 0.0
            out_report["oversampling"] = {
                "before": round(questions / words, 6) if words else 0.0,
                "inserted": int(stats["inserted"]),
                "after": round(after, 6),
            }
        if augment is not None:
            out_report["augmentation"] = {
                "kind": augment["kind"],
                "copies": augment["copies"],
                "train_words": int(stats["train_words"]),
                "augmented_words_per_copy": round(stats["augmented_words"] / augment["copies"], 1),
            }
        io.write_json_in_place(out_report, Path(report_path))
    return out_report
