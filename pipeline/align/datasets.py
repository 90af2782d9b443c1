"""Alignment of datasets, sharded: each hypothesis shard aligned with the reference documents it
pairs with (read by a filtered scan, so memory is bounded by the shard), the shards' reports
merged, and the WER checked over the whole corpus before any output is in place."""

from __future__ import annotations

import contextlib

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from pipeline.align.pairing import AlignmentError, Pairing, pair
from pipeline.align.report import AlignReport, label_counts
from pipeline.align.tables import align_part, table_documents
from pipeline.errors import ParamsError
from pipeline.labels import LabelSet


class AlignStep:
    """A hypothesis shard -> its segments labelled from the reference documents they pair with;
    only those reference documents are read (a filtered scan), so memory is bounded by the shard."""

    def __init__(
        self,
        ref_path: str,
        policy: str,
        lang: str | None,
        corpus: str,
        pairing: dict | None,
        label_set: LabelSet,
        max_wer: float | None,
    ):
        self.ref_path, self.policy, self.lang, self.corpus = str(ref_path), policy, lang, corpus
        self.label_set = label_set
        self.max_wer = max_wer
        self.pairing = pairing  # hyp doc -> ref doc per shard index (documents not in it are left out); None: by id

    def __call__(self, shard):
        from pipeline.engine.dataset import read_shard
        from pipeline.engine.location import is_url
        from pipeline.engine.reading import conform_segments, open_input, parquet_files
        from pipeline.engine.step import StepResult
        from pipeline.text.verbalize import verbalizer_or_none

        hyp = read_shard(shard)
        if self.pairing is not None:
            mapping = self.pairing.get(shard.index, {})
            if hyp.num_rows and len(mapping) < len(set(hyp["doc_id"].to_pylist())):  # unpaired, left out (--force)
                hyp = hyp.filter(pc.is_in(hyp["doc_id"], value_set=pa.array(list(mapping), pa.string())))
        hyp_ids = list(table_documents(hyp, None))
        if self.pairing is None:
            mapping = {d: d for d in hyp_ids}
        wanted = sorted(set(mapping.values()))
        tables = []
        for file in parquet_files(self.ref_path):
            found = None
            if wanted:
                # a local file by its path (read natively); a URL through a file object, closed once read
                with open_input(file) if is_url(file) else contextlib.nullcontext(file) as source:
                    found = pq.read_table(source, filters=[("doc_id", "in", wanted)])
            if found is not None and found.num_rows:
                tables.append(conform_segments(found, file))
        ref = pa.concat_tables(tables) if tables else None
        known = set(table_documents(ref, self.label_set)) if ref is not None else set()
        missing = [d for d in hyp_ids if mapping.get(d) not in known]
        if missing:
            raise AlignmentError(
                f"{len(missing)} hypothesis document(s) have no reference document of the same id, e.g. {missing[0]!r}"
            )
        lang = self.lang or (hyp["lang"][0].as_py() if hyp.num_rows else None)
        pairs = [(mapping[d], d) for d in hyp_ids]
        out, report = align_part(
            ref if ref is not None else hyp.slice(0, 0),
            hyp,
            pairs,
            self.policy,
            verbalizer_or_none(lang) if lang else None,
            self.corpus,
            workers=1,
            label_set=self.label_set,
            max_wer=self.max_wer,
        )
        return StepResult(out, payload=report)


def align_datasets(
    ref_path,
    hyp_path,
    out,
    report,
    policy: str = "guerreiro",
    lang: str | None = None,
    corpus: str | None = "aligned",
    pair_by: str = "id",
    max_wer: float = 0.5,
    force: bool = False,
    engine=None,
    pairs_file=None,
) -> dict:
    """Reference punctuation onto a hypothesis dataset, shard by shard, into ``out`` (a folder of parts)
    and ``report``; the WER check covers the whole corpus and, failing, leaves no output.  Documents
    are paired by ``pair_by`` (and ``pairs_file``) before any shard is aligned, so a pairing
    problem fails at once (:mod:`pipeline.align.pairing`)."""
    from pipeline.engine import writing
    from pipeline.engine.dataset import (
        counts_of,
        dataset_labels,
        finish,
        iter_batches,
        manifest_entry,
        row_shards,
        run_step,
    )
    from pipeline.engine.executor import executor
    from pipeline.params import EngineParams
    from pipeline.schema import SCHEMA_NAME

    engine = engine or EngineParams()
    check_languages(lang, {"reference": ref_path, "hypothesis": hyp_path})
    # the reference's labels go onto the hypothesis (whose own labels are dropped, whatever their set)
    label_set = dataset_labels(ref_path)
    shards = row_shards(hyp_path, engine.shard_rows)
    ref_docs = _document_ids(ref_path)
    hyp_docs_by_shard = [_shard_document_ids(s) for s in shards]
    hyp_docs = [d for docs in hyp_docs_by_shard for d in docs]
    pairing = pair(ref_docs, hyp_docs, pair_by, pairs_file, force) if hyp_docs else Pairing([])
    by_hyp = {h: r for r, h in pairing.pairs}
    mapping = {s.index: {d: by_hyp[d] for d in docs if d in by_hyp} for s, docs in zip(shards, hyp_docs_by_shard)}
    with writing.Outputs(inputs=[ref_path, hyp_path]) as outputs:
        folder = outputs.dataset(out, kind="segments")
        report_path = outputs.file(report)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            step = AlignStep(ref_path, policy, lang, corpus, mapping, label_set, max_wer)
            results = run_step(runner, step, shards, folder, "align", label_set)
        merged = AlignReport(policy)
        for result in results:
            merged.merge(result.payload)
        labels_before = dict.fromkeys(label_set.labels, 0)
        for batch in iter_batches(ref_path, columns=["labels"]):
            for label, n in label_counts(batch, label_set).items():
                labels_before[label] += n
        out_report = merged.finish(labels_before, max_wer, force, pairing)
        counts_of(results)
        finish(folder, "segments", results, schema=SCHEMA_NAME, **manifest_entry(label_set))
        writing.write_json_in_place(out_report, report_path)
    return out_report


def _dataset_languages(path) -> list[str]:
    """The distinct values of a dataset's ``lang`` column, sorted (streamed)."""
    from pipeline.engine.dataset import iter_batches

    seen: set[str] = set()
    for batch in iter_batches(path, columns=["lang"]):
        column = batch.column(0)
        if len(column):
            seen.update(
                v
                for v in pc.unique(
                    column.dictionary_decode() if pa.types.is_dictionary(column.type) else column
                ).to_pylist()
                if v
            )
    return sorted(seen)


def check_languages(lang: str | None, datasets: dict[str, str]) -> None:
    """The alignment's ``lang`` (its number grammars) is the language of both datasets' rows, and the
    two are one language: refused otherwise (the reference read as one language, the transcript
    as another, or a grammar of a third)."""
    found = {side: _dataset_languages(path) for side, path in datasets.items()}
    for side, langs in found.items():
        if lang is not None and langs and langs != [lang]:
            raise ParamsError(
                f"lang {lang!r} differs from the {side} dataset {datasets[side]}, whose rows are in "
                f"{', '.join(map(repr, langs))} (its lang column): align it with the language it was ingested in"
            )
    ref_langs, hyp_langs = found.get("reference"), found.get("hypothesis")
    if ref_langs and hyp_langs and ref_langs != hyp_langs:
        raise ParamsError(
            f"the reference dataset {datasets['reference']} is in {', '.join(map(repr, ref_langs))} but the "
            f"hypothesis dataset {datasets['hypothesis']} in {', '.join(map(repr, hyp_langs))} (their lang "
            "columns): not the same text"
        )


def _document_ids(path) -> list[str]:
    """A dataset's document ids in order of appearance (documents are contiguous), streamed."""
    from pipeline.engine.dataset import iter_batches

    out: list[str] = []
    for batch in iter_batches(path, columns=["doc_id"]):
        values = batch.column(0).to_numpy(zero_copy_only=False)
        if not len(values):
            continue
        starts = np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]
        for v in values[starts].tolist():
            if not out or out[-1] != v:
                out.append(v)
    return out


def _shard_document_ids(shard) -> list[str]:
    from pipeline.engine.dataset import read_rows

    values = read_rows(shard, ["doc_id"])["doc_id"].to_numpy(zero_copy_only=False)
    if not len(values):
        return []
    return values[np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]].tolist()
