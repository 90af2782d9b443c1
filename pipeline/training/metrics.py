"""Punctuation metrics over aligned label sequences (same words, gold and predicted labels).

* per-class precision, recall, F1 for COMMA, PERIOD, QUESTION (and O);
* ``overall``: micro-average over the three marks (the papers' "Overall": a
  predicted mark counts as correct only when it is the gold mark);
* ``macro_f1``: mean F1 over the four labels (indic-punct);
* slot error rate (Guerreiro 2021, after Makhoul et al.): (substitutions +
  deletions + insertions of marks) / gold marks, where a substitution is a wrong
  mark in a gap that has one, a deletion a missed mark, an insertion a false alarm;
* confusion matrix in percent of each gold row (Alam 2020 Figure 2);
* the same on the papers' four classes, and on 3 and 2 merged classes (Alam 2020 Table 5): a
  label set's labels merged first to the four (its table's merges), so results of any set
  compare with the papers';
* capitalization (:func:`case_scores`): per-class P/R/F1 for O/U/A/M and ``overall``, the
  micro-average over U, A and M (a word counts as correctly cased only with its gold label).
"""

from __future__ import annotations

import numpy as np

from pipeline.labels import CASE_LABELS, LABELS, MERGES, PAPERS_CLASSES, LabelSet, merged_labels


def confusion(gold: np.ndarray, pred: np.ndarray, n: int = len(LABELS)) -> np.ndarray:
    """Counts, gold label ids as rows, predicted as columns."""
    gold = np.asarray(gold, dtype=np.int64)
    pred = np.asarray(pred, dtype=np.int64)
    if gold.shape != pred.shape:
        raise ValueError(f"gold and predicted label sequences differ in length: {gold.shape} vs {pred.shape}")
    return np.bincount(gold * n + pred, minlength=n * n).reshape(n, n)


def _prf(tp: float, fp: float, fn: float) -> dict:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    f = 2 * p * r / (p + r) if p + r else 0.0
    return {"precision": round(p, 4), "recall": round(r, 4), "f1": round(f, 4), "support": int(tp + fn)}


def scores(gold, pred, labels: tuple[str, ...] | list[str] = LABELS) -> dict:
    """Per-class and overall scores of label-id sequences over ``labels`` (O first)."""
    n = len(labels)
    matrix = confusion(gold, pred, n)
    per_class = {}
    for k, name in enumerate(labels):
        tp = matrix[k, k]
        per_class[name] = _prf(tp, matrix[:, k].sum() - tp, matrix[k, :].sum() - tp)
    marks = range(1, n)
    tp = sum(matrix[k, k] for k in marks)
    fp = sum(matrix[:, k].sum() - matrix[k, k] for k in marks)
    fn = sum(matrix[k, :].sum() - matrix[k, k] for k in marks)
    gold_marks = int(matrix[1:, :].sum())
    substitutions = int(matrix[1:, 1:].sum() - np.trace(matrix[1:, 1:]))
    deletions = int(matrix[1:, 0].sum())
    insertions = int(matrix[0, 1:].sum())
    row_totals = matrix.sum(axis=1, keepdims=True)
    percent = np.divide(100.0 * matrix, row_totals, out=np.zeros(matrix.shape), where=row_totals > 0)
    return {
        "per_class": per_class,
        "overall": _prf(tp, fp, fn),
        "macro_f1": round(float(np.mean([per_class[name]["f1"] for name in labels])), 4),
        "ser": round((substitutions + deletions + insertions) / gold_marks, 4) if gold_marks else 0.0,
        "slot_errors": {
            "substitutions": substitutions,
            "deletions": deletions,
            "insertions": insertions,
            "gold_marks": gold_marks,
        },
        "confusion": {
            "labels": labels,
            "counts": matrix.tolist(),
            "percent": [[round(float(x), 2) for x in row] for row in percent],
        },
    }


def merged_scores(gold, pred, label_set: LabelSet) -> dict:
    """:func:`scores` on 4, 3 and 2 classes of label-id sequences of ``label_set`` (its labels merged
    to the papers' four classes first)."""
    gold, pred = label_set.merge_ids[np.asarray(gold, np.int64)], label_set.merge_ids[np.asarray(pred, np.int64)]
    out = {}
    for n_classes in sorted(MERGES, reverse=True):
        names = merged_labels(n_classes)
        to_merged = np.array([names.index(MERGES[n_classes][label]) for label in PAPERS_CLASSES])
        out[f"{n_classes}_class"] = scores(to_merged[gold], to_merged[pred], names)
    return out


def case_scores(gold, pred) -> dict:
    """Capitalization scores of case-label-id sequences (O/U/A/M): per class, overall micro over U/A/M,
    macro F1 and the confusion matrix (no slot errors: a case label is no mark)."""
    result = scores(gold, pred, CASE_LABELS)
    return {k: result[k] for k in ("per_class", "overall", "macro_f1", "confusion")}
