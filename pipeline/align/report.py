"""An alignment's report: what it did, summed over documents and shards, checked over the whole
corpus (its WER, pairs above ``max_wer``, an empty hypothesis) and worded for the report file."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import pyarrow as pa

from pipeline.align.pairing import SHOWN, AlignmentError, Pairing
from pipeline.labels import CASE_LABELS, LabelSet, count_labels


@dataclass
class AlignReport:
    """What an alignment did, summed over documents and shards (:meth:`merge`); :meth:`finish` checks
    the whole corpus (WER, an empty hypothesis) and words the report."""

    policy: str
    documents: int = 0
    reference_words: int = 0
    hypothesis_words: int = 0
    errors: Counter = field(default_factory=Counter)  # substitutions, deletions, insertions, reference_tokens
    marks: Counter = field(default_factory=Counter)  # reference, transferred, moved, merged, dropped:<reason>
    labels_after: Counter = field(default_factory=Counter)
    ignored_hypothesis_labels: int = 0
    per_document: list = field(default_factory=list)
    # reference (cased words), transferred, approximated, onto_substituted, dropped:<reason>
    case: Counter = field(default_factory=Counter)
    case_before: Counter = field(default_factory=Counter)  # case labels of the paired reference documents
    case_after: Counter = field(default_factory=Counter)
    ignored_hypothesis_case: int = 0
    #: document pairs above max_wer, not aligned: {reference, hypothesis, wer, hypothesis_words}
    over_max_wer: list = field(default_factory=list)

    def merge(self, other: AlignReport) -> AlignReport:
        self.documents += other.documents
        self.over_max_wer += other.over_max_wer
        self.reference_words += other.reference_words
        self.hypothesis_words += other.hypothesis_words
        self.errors.update(other.errors)
        self.marks.update(other.marks)
        self.labels_after.update(other.labels_after)
        self.ignored_hypothesis_labels += other.ignored_hypothesis_labels
        self.per_document += other.per_document
        self.case.update(other.case)
        self.case_before.update(other.case_before)
        self.case_after.update(other.case_after)
        self.ignored_hypothesis_case += other.ignored_hypothesis_case
        return self

    @property
    def wer(self) -> float:
        e = self.errors
        errors = e["substitutions"] + e["deletions"] + e["insertions"]
        return errors / e["reference_tokens"] if e["reference_tokens"] else 1.0

    def finish(
        self, labels_before: dict[str, int], max_wer: float = 0.5, force: bool = False, pairing: Pairing | None = None
    ) -> dict:
        warnings = pairing.warnings() if pairing is not None else []
        if self.ignored_hypothesis_labels:
            warnings.append(
                f"the hypothesis carried {self.ignored_hypothesis_labels} punctuation labels: ignored (stripped)"
            )
        if self.ignored_hypothesis_case:
            warnings.append(
                f"the hypothesis carried {self.ignored_hypothesis_case} capitalized words: their case "
                "replaced by the reference's"
            )
        if self.over_max_wer:
            pairs = _pairs_named(self.over_max_wer)
            if not force:
                raise AlignmentError(
                    f"{len(self.over_max_wer)} document pair(s) above max_wer {max_wer}, probably not the same "
                    f"document: {pairs}; check the pairing (--pair-by, --pairs), or pass --force to leave these "
                    "pairs out and report them"
                )
            words = sum(d["hypothesis_words"] for d in self.over_max_wer)
            warnings.append(
                f"{len(self.over_max_wer)} document pair(s) above max_wer {max_wer} left out, not aligned "
                f"({words} hypothesis words): {pairs}"
            )
        if not self.hypothesis_words and not self.over_max_wer:
            if not force:
                raise AlignmentError(
                    "the hypothesis is empty: no words to align; pass --force to write an empty output"
                )
            warnings.append("the hypothesis is empty")
        check_wer(self.wer, self.per_document, max_wer, force)
        dropped = {k.split(":", 1)[1]: int(v) for k, v in sorted(self.marks.items()) if k.startswith("dropped:")}
        case_dropped = {k.split(":", 1)[1]: int(v) for k, v in sorted(self.case.items()) if k.startswith("dropped:")}
        return {
            "policy": self.policy,
            "documents": self.documents,
            "reference_words": self.reference_words,
            "hypothesis_words": self.hypothesis_words,
            "wer": {
                "wer": round(self.wer, 4),
                **{k: int(self.errors[k]) for k in ("substitutions", "deletions", "insertions")},
                "reference_tokens": int(self.errors["reference_tokens"]),
            },
            "marks": {
                **{k: int(self.marks[k]) for k in ("reference", "transferred", "moved", "merged")},
                "dropped": dropped,
            },
            "labels_before": {k: int(labels_before.get(k, 0)) for k in labels_before},
            "labels_after": {k: int(self.labels_after[k]) for k in labels_before},
            "case": {
                "labels_before": {k: int(self.case_before[k]) for k in CASE_LABELS},
                **{k: int(self.case[k]) for k in ("reference", "transferred", "approximated", "onto_substituted")},
                "dropped": case_dropped,
                "labels_after": {k: int(self.case_after[k]) for k in CASE_LABELS},
            },
            **(pairing or Pairing([])).report(),
            "over_max_wer": sorted(self.over_max_wer, key=lambda d: (d["hypothesis"], d["reference"])),
            "warnings": warnings,
            "ignored_hypothesis_labels": self.ignored_hypothesis_labels,
            "ignored_hypothesis_case": self.ignored_hypothesis_case,
            "per_document": self.per_document,
        }


def _pairs_named(pairs: list[dict]) -> str:
    """``'ref' vs 'hyp' (WER 0.91)``, for the first few pairs in the hypothesis's order."""
    ordered = sorted(pairs, key=lambda d: (d["hypothesis"], d["reference"]))
    named = ", ".join(f"{d['reference']!r} vs {d['hypothesis']!r} (WER {d['wer']})" for d in ordered[:SHOWN])
    return named + (f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")


def check_wer(wer: float, per_document: list[dict], max_wer: float, force: bool) -> None:
    if wer > max_wer and not force:
        worst = max(per_document, key=lambda d: d["wer"]) if per_document else {}
        raise AlignmentError(
            f"WER {wer:.3f} exceeds {max_wer}: the reference and hypothesis are probably not the same documents"
            + (f" (worst: {worst['reference']} vs {worst['hypothesis']}, WER {worst['wer']})" if worst else "")
            + "; pass --force to align anyway"
        )


def label_counts(table: pa.Table | pa.RecordBatch, label_set: LabelSet) -> dict[str, int]:
    """Words per label of ``label_set`` (every label present, 0 when absent)."""
    return count_labels(table["labels"], label_set.labels) if table.num_rows else dict.fromkeys(label_set.labels, 0)
