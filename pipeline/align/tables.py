"""Alignment of tables in memory: a part of a hypothesis (a shard, or all of it) labelled from the
reference documents it pairs with, document pair by document pair, and its report."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.align.document import align_document
from pipeline.align.pairing import AlignmentError, Pairing, pair
from pipeline.align.report import AlignReport, label_counts
from pipeline.align.transfer import DocumentAlignment
from pipeline.engine.executor import map_ordered
from pipeline.labels import CASE_LABELS, PAPERS, LabelSet
from pipeline.schema import CASE_VALUES, segments_table
from pipeline.text.scripts import dominant_script


@dataclass
class Document:
    words: pa.Array  # the document's words, in order
    codes: np.ndarray  # label id of each word
    segment_end: np.ndarray  # True for the last word of each segment
    positions: np.ndarray  # where the words sit in the table's flattened word column
    case: np.ndarray | None = None  # case label id of each word (with_case)
    surface: pa.Array | None = None  # exact form of each mixed-case word, else null (with_case)


def table_documents(table: pa.Table, label_set: LabelSet | None, with_case: bool = False) -> dict[str, Document]:
    """The table's documents (in first-seen order) as flat word sequences, their label codes in
    ``label_set`` (None: not wanted, all 0: a hypothesis's labels are not read)."""
    if table.num_rows == 0:
        return {}
    words = pc.list_flatten(table["words"].combine_chunks())
    if label_set is None:
        codes = np.zeros(len(words), np.int8)
    else:
        flat_labels = pc.list_flatten(table["labels"].combine_chunks())
        codes = pc.index_in(flat_labels, value_set=label_set.values).to_numpy(zero_copy_only=False)
    case = surface = None
    if with_case:
        case = pc.index_in(pc.list_flatten(table["case"].combine_chunks()), value_set=CASE_VALUES).to_numpy(
            zero_copy_only=False
        )
        surface = pc.list_flatten(table["surface"].combine_chunks())
    lengths = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths)
    segment_end = np.zeros(len(words), dtype=bool)
    segment_end[ends[lengths > 0] - 1] = True
    encoded = pc.dictionary_encode(table["doc_id"].combine_chunks())
    row_doc = encoded.indices.to_numpy(zero_copy_only=False)
    word_doc = np.repeat(row_doc, lengths)
    order = np.argsort(word_doc, kind="stable")
    bounds = np.searchsorted(word_doc[order], np.arange(len(encoded.dictionary) + 1))
    docs = {}
    for k, doc_id in enumerate(encoded.dictionary.to_pylist()):
        positions = order[bounds[k] : bounds[k + 1]]
        taken = pa.array(positions)
        docs[doc_id] = Document(
            words.take(taken),
            codes[positions].astype(np.int8),
            segment_end[positions],
            positions,
            case[positions].astype(np.int8) if with_case else None,
            surface.take(taken) if with_case else None,
        )
    return docs


def _align_job(job) -> DocumentAlignment:
    return align_document(*job)


def _job(ref: Document, hyp: Document, policy: str, verbalizer) -> tuple:
    """:func:`align_document`'s arguments for a document pair (the surface forms only where there are any)."""
    surface = ref.surface if ref.surface is not None and ref.surface.null_count < len(ref.surface) else None
    return (ref.words, ref.codes, ref.segment_end, hyp.words, policy, verbalizer, ref.case, surface)


def _not_o(hyp: pa.Table, column: str) -> int:
    """The hypothesis's own labels (``labels`` or ``case``) other than O: replaced, and counted."""
    flat = pc.list_flatten(hyp[column]) if hyp.num_rows else pa.array([], pa.string())
    return int(pc.sum(pc.not_equal(flat, "O")).as_py() or 0)


def _check_scripts(ref_docs: dict[str, Document], hyp_docs: dict[str, Document], pairs) -> None:
    """Refuse a reference and a hypothesis in two scripts (read on the first pair's first words)."""
    if not pairs:
        return
    ref_script = dominant_script(ref_docs[pairs[0][0]].words[:2000].to_pylist())
    hyp_script = dominant_script(hyp_docs[pairs[0][1]].words[:2000].to_pylist())
    if ref_script and hyp_script and ref_script != hyp_script:
        raise AlignmentError(
            f"reference is in {ref_script} script but hypothesis in {hyp_script}: not transcripts of the same text"
        )


@dataclass
class _HypothesisLabels:
    """The labels the transfer gives the part's hypothesis words (flattened), and which words stay."""

    codes: np.ndarray  # label id of each word
    case: np.ndarray  # case label id of each word
    kept: np.ndarray  # False for the words of a pair left out (above max_wer)
    surface: dict[int, str] = field(default_factory=dict)  # word -> exact form, where the case is M

    @classmethod
    def empty(cls, n: int) -> _HypothesisLabels:
        return cls(np.zeros(n, dtype=np.int8), np.zeros(n, dtype=np.int8), np.ones(n, dtype=bool))

    def put(self, positions: np.ndarray, result: DocumentAlignment) -> None:
        self.codes[positions] = result.hyp_codes
        self.case[positions] = result.hyp_case
        self.surface.update({int(positions[i]): form for i, form in result.hyp_surface.items()})


def _leave_out(report: AlignReport, ref: Document, hyp: Document, ref_id: str, hyp_id: str, wer: float) -> None:
    """A pair above max_wer: listed in the report, its words and documents not counted."""
    report.over_max_wer.append(
        {"reference": ref_id, "hypothesis": hyp_id, "wer": wer, "hypothesis_words": len(hyp.positions)}
    )
    report.documents -= 1
    report.reference_words -= len(ref.words)
    report.hypothesis_words -= len(hyp.positions)


def _count_pair(report: AlignReport, ref: Document, result: DocumentAlignment, ref_id: str, hyp_id: str, wer: float):
    """An aligned pair's case, errors and marks added to the report."""
    report.case.update(result.case)
    report.case_before.update(dict(zip(CASE_LABELS, np.bincount(ref.case, minlength=len(CASE_LABELS)).tolist())))
    report.per_document.append({"reference": ref_id, "hypothesis": hyp_id, "wer": wer})
    report.errors.update(
        substitutions=result.substitutions,
        deletions=result.deletions,
        insertions=result.insertions,
        reference_tokens=result.ref_tokens,
    )
    report.marks.update(result.marks)
    report.marks["reference"] += int((ref.codes > 0).sum())


def _labelled_table(
    ref: pa.Table, hyp: pa.Table, labels: _HypothesisLabels, corpus: str | None, label_set: LabelSet
) -> pa.Table:
    """The hypothesis's own words, segments and case, with the labels from the transfer."""
    words_column = hyp["words"].combine_chunks()
    offsets = pc.subtract(words_column.offsets, words_column.offsets[0]) if hyp.num_rows else pa.array([0], pa.int32())
    labels_column = pa.ListArray.from_arrays(offsets, label_set.values.take(pa.array(labels.codes)))
    surface = pa.nulls(len(labels.case), pa.string())
    if labels.surface:
        rows = sorted(labels.surface)
        mask = np.zeros(len(labels.case), dtype=bool)
        mask[rows] = True
        surface = pc.replace_with_mask(
            surface, pa.array(mask), pa.array([labels.surface[r] for r in rows], pa.string())
        )
    return segments_table(
        corpus or (hyp["corpus"][0].as_py() if hyp.num_rows else "aligned"),
        hyp["lang"][0].as_py() if hyp.num_rows else (ref["lang"][0].as_py() if ref.num_rows else "und"),
        hyp["doc_id"],
        hyp["seg_id"],
        hyp["words"],
        labels_column,
        case=pa.ListArray.from_arrays(offsets, CASE_VALUES.take(pa.array(labels.case))),
        surface=pa.ListArray.from_arrays(offsets, surface),
        vocabulary=label_set.labels,
    )


def align_part(
    ref: pa.Table,
    hyp: pa.Table,
    pairs: list[tuple[str, str]],
    policy: str,
    verbalizer,
    corpus: str | None,
    workers: int,
    label_set: LabelSet,
    max_wer: float | None,
) -> tuple[pa.Table, AlignReport]:
    """The hypothesis rows labelled from the reference by the document ``pairs`` (every hypothesis
    document of ``hyp`` in a pair), and the part's report; ``label_set``: the reference's labels,
    which the output gets.  A pair whose WER is above ``max_wer`` is not aligned: its hypothesis
    rows are left out and the pair is listed in the report's ``over_max_wer`` (its marks and
    errors are not counted); a wrong pairing puts a reference's marks on unrelated words."""
    ref_docs, hyp_docs = table_documents(ref, label_set, with_case=True), table_documents(hyp, None)
    report = AlignReport(policy)
    report.ignored_hypothesis_labels = _not_o(hyp, "labels")
    report.ignored_hypothesis_case = _not_o(hyp, "case")
    _check_scripts(ref_docs, hyp_docs, pairs)
    report.documents = len(pairs)
    report.reference_words = sum(len(ref_docs[d].words) for d, _ in pairs)
    report.hypothesis_words = sum(len(hyp_docs[d].words) for _, d in pairs)
    labels = _HypothesisLabels.empty(len(pc.list_flatten(hyp["labels"])) if hyp.num_rows else 0)
    jobs = [_job(ref_docs[r], hyp_docs[h], policy, verbalizer) for r, h in pairs]
    for (ref_id, hyp_id), result in zip(pairs, map_ordered(_align_job, jobs, workers)):
        ref_doc, hyp_doc = ref_docs[ref_id], hyp_docs[hyp_id]
        doc_errors = result.substitutions + result.deletions + result.insertions
        doc_wer = round(doc_errors / max(result.ref_tokens, 1), 4)
        if max_wer is not None and doc_wer > max_wer:
            _leave_out(report, ref_doc, hyp_doc, ref_id, hyp_id, doc_wer)
            labels.kept[hyp_doc.positions] = False
            continue
        labels.put(hyp_doc.positions, result)
        _count_pair(report, ref_doc, result, ref_id, hyp_id, doc_wer)
    out = _labelled_table(ref, hyp, labels, corpus, label_set)
    if report.over_max_wer:
        left_out = pa.array([d["hypothesis"] for d in report.over_max_wer], pa.string())
        out = out.filter(pc.invert(pc.is_in(out["doc_id"], value_set=left_out)))
    report.labels_after.update(label_counts(out, label_set))
    kept_case = labels.case[labels.kept]
    report.case_after.update(dict(zip(CASE_LABELS, np.bincount(kept_case, minlength=len(CASE_LABELS)).tolist())))
    return out, report


def align_tables(
    ref: pa.Table,
    hyp: pa.Table,
    policy: str = "guerreiro",
    verbalizer=None,
    max_wer: float = 0.5,
    force: bool = False,
    corpus: str | None = None,
    pair_by: str = "id",
    workers: int = 1,
    pairs_file=None,
    label_set: LabelSet = PAPERS,
) -> tuple[pa.Table, dict]:
    """Hypothesis segments labelled from the reference, and the alignment report (tables in memory).

    ``workers`` > 1 aligns documents on that many processes (0: one per core); the
    output is the same whatever the number.  Documents are paired by ``pair_by`` (and
    ``pairs_file``), see :mod:`pipeline.align.pairing`; with ``force``, a hypothesis document
    left unpaired is left out of the output and reported.
    """
    hyp_ids = list(table_documents(hyp, None))
    ref_ids = list(table_documents(ref, label_set))
    pairing = pair(ref_ids, hyp_ids, pair_by, pairs_file, force) if hyp_ids else Pairing([])
    if pairing.unpaired_hypothesis:
        hyp = hyp.filter(pc.is_in(hyp["doc_id"], value_set=pa.array([h for _, h in pairing.pairs], pa.string())))
    out, report = align_part(ref, hyp, pairing.pairs, policy, verbalizer, corpus, workers, label_set, max_wer)
    return out, report.finish(label_counts(ref, label_set), max_wer, force, pairing)
