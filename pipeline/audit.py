"""Label distributions and sentence lengths of segment tables.

Sentence length: the number of words in a run that ends with a PERIOD or
QUESTION label, counted inside one document (runs may span segments); words after
a document's last end mark form no sentence.  The standard deviation is the
population one (ddof=0).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .labels import LABEL_TO_ID, LABELS, SENTENCE_END_IDS


def label_codes(labels: pa.Array) -> np.ndarray:
    """Label strings -> int8 ids (order of :data:`LABELS`)."""
    return pc.index_in(labels, value_set=pa.array(LABELS)).to_numpy(zero_copy_only=False).astype(np.int8)


def sentence_lengths(table: pa.Table) -> np.ndarray:
    """Words per sentence (see module doc); rows must be in document order."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    codes = label_codes(pc.list_flatten(table["labels"]))
    n_words = len(codes)
    word_counts = pc.list_value_length(table["labels"]).to_numpy(zero_copy_only=False)
    doc = table["doc_id"].to_numpy(zero_copy_only=False)
    new_doc = np.r_[True, doc[1:] != doc[:-1]]
    row_start = np.r_[0, np.cumsum(word_counts)[:-1]]
    # word index where each word's document starts
    doc_start_of_row = np.maximum.accumulate(np.where(new_doc, row_start, 0))
    doc_start = np.repeat(doc_start_of_row, word_counts)
    ends = np.flatnonzero(np.isin(codes, list(SENTENCE_END_IDS)))
    if not len(ends):
        return np.zeros(0, dtype=np.int64)
    prev_end = np.r_[-1, ends[:-1]]
    starts = np.maximum(prev_end + 1, doc_start[ends])
    assert n_words >= ends[-1]
    return ends - starts + 1


def summarize(table: pa.Table) -> dict:
    """The ``audit.json`` entry of one dataset: words, label counts, sentence length."""
    flat = pc.list_flatten(table["labels"]) if table.num_rows else pa.array([], pa.string())
    counts = {label: 0 for label in LABELS}
    if len(flat):
        for row in pc.value_counts(flat).to_pylist():
            counts[row["values"]] = int(row["counts"])
    lengths = sentence_lengths(table)
    return {
        "words": int(len(flat)),
        "labels": counts,
        "sentence_length": {
            "mean": round(float(lengths.mean()), 4) if len(lengths) else 0.0,
            "std": round(float(lengths.std()), 4) if len(lengths) else 0.0,
        },
    }


def audit(tables: list[pa.Table]) -> dict:
    """``{corpus: summary}`` for segment tables (several tables of one corpus are pooled)."""
    by_corpus: dict[str, list[pa.Table]] = {}
    for table in tables:
        for corpus in sorted(set(table["corpus"].to_pylist())) or ["(empty)"]:
            part = table.filter(pc.equal(table["corpus"], corpus)) if table.num_rows else table
            by_corpus.setdefault(corpus, []).append(part)
    return {corpus: summarize(pa.concat_tables(parts)) for corpus, parts in sorted(by_corpus.items())}


__all__ = ["audit", "summarize", "sentence_lengths", "label_codes", "LABEL_TO_ID"]
