"""Label distributions, lengths, drift and leakage of segment tables.

Definitions (also printed in the reports):

* sentence length: the number of words in a run that ends with a PERIOD or QUESTION
  label, counted inside one document (runs may span segments); words after a
  document's last end mark form no sentence.  Mean, population standard deviation
  (ddof=0) and percentiles (linear interpolation).
* segment length: words per segment (a row of the table).
* OOV rate (dev/test): the share of the split's word tokens absent from train's vocabulary.
* drift: a split's label share minus train's, in percentage points; above the
  threshold it is listed under ``warnings``.
* leakage: documents found in several splits, and segments (exact word sequences)
  found in several splits.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .labels import LABELS, SENTENCE_END_IDS

PERCENTILES = (50, 90, 99)

NOTES = [
    "Sentence length = words in a run ending with PERIOD or QUESTION, inside one document; "
    "words after a document's last end mark form no sentence; std is the population std (ddof=0).",
    "Alam et al. (2020) Table 2 reports means exactly 1 lower than this definition gives on the same files "
    "(EN dev 13.5 vs 14.48, test 13.8 vs 14.80, ASR 14.2 vs 15.19; BN dev 12.1 vs 13.10, news 12.4 vs 13.36) "
    "while the standard deviations agree to one decimal (10.7, 9.6, 9.7, 7.2, 7.2).  A constant shift leaves the "
    "std unchanged, so the paper counted one word fewer per sentence: the number of words before the one "
    "carrying the end mark (equivalently, the gaps between words), an off-by-one in its script.",
    "OOV rate = share of a split's word tokens not in the train split's vocabulary.",
    "Drift = label share of a split minus that of train, in percentage points.",
]


def label_codes(labels: pa.Array) -> np.ndarray:
    """Label strings -> int8 ids (order of :data:`LABELS`)."""
    return pc.index_in(labels, value_set=pa.array(LABELS)).to_numpy(zero_copy_only=False).astype(np.int8)


def sentence_lengths(table: pa.Table) -> np.ndarray:
    """Words per sentence (see module doc); rows must be in document order."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    labels = table["labels"].combine_chunks()
    codes = label_codes(pc.list_flatten(labels))
    word_counts = pc.list_value_length(labels).to_numpy(zero_copy_only=False)
    doc = table["doc_id"].to_numpy(zero_copy_only=False)
    new_doc = np.r_[True, doc[1:] != doc[:-1]]
    row_start = np.r_[0, np.cumsum(word_counts)[:-1]]
    doc_start = np.repeat(np.maximum.accumulate(np.where(new_doc, row_start, 0)), word_counts)
    ends = np.flatnonzero(np.isin(codes, list(SENTENCE_END_IDS)))
    if not len(ends):
        return np.zeros(0, dtype=np.int64)
    prev_end = np.r_[-1, ends[:-1]]
    starts = np.maximum(prev_end + 1, doc_start[ends])
    return ends - starts + 1


def _stats(values: np.ndarray) -> dict:
    out = {
        "mean": round(float(values.mean()), 4) if len(values) else 0.0,
        "std": round(float(values.std()), 4) if len(values) else 0.0,
    }
    for p in PERCENTILES:
        out[f"p{p}"] = round(float(np.percentile(values, p)), 2) if len(values) else 0.0
    return out


def summarize(table: pa.Table, train_vocabulary: set | None = None) -> dict:
    """One dataset (or split): words, label counts and shares, lengths, vocabulary, OOV."""
    words = pc.list_flatten(table["words"].combine_chunks()) if table.num_rows else pa.array([], pa.string())
    flat = pc.list_flatten(table["labels"].combine_chunks()) if table.num_rows else pa.array([], pa.string())
    counts = {label: 0 for label in LABELS}
    if len(flat):
        for row in pc.value_counts(flat).to_pylist():
            counts[row["values"]] = int(row["counts"])
    n = len(flat)
    segment_lengths = (
        pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False) if table.num_rows else np.zeros(0)
    )
    vocabulary = set(pc.unique(words).to_pylist()) if len(words) else set()
    summary = {
        "words": n,
        "labels": counts,
        "label_shares": {label: round(100.0 * c / n, 4) if n else 0.0 for label, c in counts.items()},
        "sentence_length": _stats(sentence_lengths(table)),
        "segments": int(table.num_rows),
        "segment_length": _stats(segment_lengths.astype(np.int64)),
        "documents": len(set(table["doc_id"].to_pylist())) if table.num_rows else 0,
        "vocabulary": len(vocabulary),
        "languages": ",".join(sorted(set(table["lang"].to_pylist()))) if table.num_rows else "",
    }
    if train_vocabulary is not None:
        if n:
            in_train = pc.is_in(words, value_set=pa.array(sorted(train_vocabulary), pa.string()))
            summary["oov_rate"] = round(100.0 * (1 - pc.sum(in_train).as_py() / n), 4)
        else:
            summary["oov_rate"] = 0.0
    missing = [label for label, c in counts.items() if c == 0]
    if n and missing:
        summary["missing_labels"] = ",".join(missing)
    return summary


def _splits(table: pa.Table) -> list[str]:
    splits = table["split"].to_pylist() if table.num_rows else []
    present = sorted({s for s in splits if s is not None})
    order = {"train": 0, "dev": 1, "valid": 1, "test": 2}
    return sorted(present, key=lambda s: (order.get(s, 3), s))


def audit(tables: list[pa.Table], drift_threshold: float = 1.0, expected_splits: tuple[str, ...] = ()) -> dict:
    """``{dataset: summary}``; datasets with a ``split`` column also get per-split summaries,
    drift against train and leakage counts."""
    by_corpus: dict[str, list[pa.Table]] = {}
    for table in tables:
        corpora = sorted(set(table["corpus"].to_pylist())) if table.num_rows else ["(empty)"]
        for corpus in corpora:
            part = table.filter(pc.equal(table["corpus"], corpus)) if table.num_rows else table
            by_corpus.setdefault(corpus, []).append(part)
    result = {}
    for corpus, parts in sorted(by_corpus.items()):
        table = pa.concat_tables(parts)
        summary = summarize(table)
        languages = sorted(set(table["lang"].to_pylist())) if table.num_rows else []
        if len(languages) > 1:  # a multilingual dataset: each language on its own too
            summary["by_language"] = {
                lang: _brief(summarize(table.filter(pc.equal(table["lang"], lang)))) for lang in languages
            }
        splits = _splits(table)
        if splits or expected_splits:
            summary.update(_split_audit(table, splits, expected_splits, drift_threshold))
        result[corpus] = summary
    return result


def _brief(summary: dict) -> dict:
    return {key: summary[key] for key in ("words", "labels", "label_shares", "sentence_length", "documents")}


def _split_audit(table, splits, expected_splits, threshold) -> dict:
    parts = {s: table.filter(pc.equal(table["split"], s)) for s in splits}
    train = parts.get("train")
    train_vocab = (
        set(pc.unique(pc.list_flatten(train["words"].combine_chunks())).to_pylist())
        if train is not None and train.num_rows
        else None
    )
    split_summaries = {}
    for name in list(splits) + [s for s in expected_splits if s not in splits]:
        part = parts.get(name, table.slice(0, 0))
        split_summaries[name] = summarize(part, train_vocab if name != "train" else None)
        languages = sorted(set(part["lang"].to_pylist())) if part.num_rows else []
        if len(languages) > 1:
            split_summaries[name]["by_language"] = {
                lang: _brief(summarize(part.filter(pc.equal(part["lang"], lang)))) for lang in languages
            }
    warnings = []
    drift = {}
    if train is not None and split_summaries["train"]["words"]:
        for name, summary in split_summaries.items():
            if name == "train" or not summary["words"]:
                continue
            drift[name] = {
                label: round(summary["label_shares"][label] - split_summaries["train"]["label_shares"][label], 4)
                for label in LABELS
            }
            for label, diff in drift[name].items():
                if abs(diff) > threshold:
                    warnings.append(f"{name} {label} share differs from train by {diff:+.2f} points")
    for name, summary in split_summaries.items():
        if summary["documents"] == 0:
            warnings.append(f"split {name} has no documents")
    # leakage
    doc_splits: dict[str, set] = {}
    segment_splits: dict[tuple, set] = {}
    for doc, split, words in zip(table["doc_id"].to_pylist(), table["split"].to_pylist(), table["words"].to_pylist()):
        if split is None:
            continue
        doc_splits.setdefault(doc, set()).add(split)
        segment_splits.setdefault(tuple(words), set()).add(split)
    out = {
        "splits": split_summaries,
        "leakage": {
            "documents_in_several_splits": sum(1 for s in doc_splits.values() if len(s) > 1),
            "segments_in_several_splits": sum(1 for s in segment_splits.values() if len(s) > 1),
        },
    }
    if drift:
        out["drift"] = drift
    if warnings:
        out["warnings"] = "; ".join(warnings)
    return out


def alignment_summary(report: dict) -> dict:
    """The few numbers of an alignment report worth a line in the audit."""
    marks = report.get("marks", {})
    return {
        "wer": report.get("wer", {}).get("wer"),
        "marks_reference": marks.get("reference", 0),
        "marks_transferred": marks.get("transferred", 0),
        "marks_dropped": sum(marks.get("dropped", {}).values()),
    }


# ---------------------------------------------------------------- presentation


def _paper_percent(count: int, total: int) -> str:
    """Alam 2020 Table 1 style: round to 2 decimals, trailing zeros dropped (6.3, 0.51, 85.5)."""
    return f"{round(100.0 * count / total, 2) if total else 0.0:g}%"


def table1_markdown(result: dict) -> str:
    """Alam 2020 Table 1 layout: Dataset | Total | Period | Comma | Question | Other (O)."""
    lines = ["| Dataset | Total | Period | Comma | Question | Other (O) |", "| --- | --- | --- | --- | --- | --- |"]
    for name, summary in result.items():
        rows = [(name, summary)] + [(f"{name} / {s}", v) for s, v in summary.get("splits", {}).items()]
        for label, s in rows:
            total, c = s["words"], s["labels"]
            cells = [f"{c[k]} ({_paper_percent(c[k], total)})" for k in ("PERIOD", "COMMA", "QUESTION", "O")]
            lines.append(f"| {label} | {total} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot_rows(result: dict) -> tuple[list[dict], list[dict]]:
    """Rows for the DVC plots: label shares per dataset, and sentence-length histograms."""
    shares, lengths = [], []
    for name, summary in result.items():
        for label in LABELS:
            shares.append({"dataset": name, "label": label, "share": summary["label_shares"][label]})
    return shares, lengths


def length_histograms(tables: list[pa.Table], bins: int = 40) -> dict[str, list[tuple[int, int]]]:
    """Sentence-length histogram per dataset: (length, number of sentences), lengths capped at ``bins``."""
    out = {}
    for table in tables:
        for corpus in sorted(set(table["corpus"].to_pylist())) if table.num_rows else []:
            lengths = sentence_lengths(table.filter(pc.equal(table["corpus"], corpus)))
            counts = np.bincount(np.minimum(lengths, bins), minlength=bins + 1)
            out[corpus] = [(int(k), int(v)) for k, v in enumerate(counts) if k > 0]
    return out


_COLORS = {"O": "#9aa5b1", "COMMA": "#1f77b4", "PERIOD": "#d62728", "QUESTION": "#2ca02c"}


def _svg_shares(name: str, summary: dict) -> str:
    width, height, pad = 420, 180, 30
    marks = ["COMMA", "PERIOD", "QUESTION"]
    top = max([summary["label_shares"][m] for m in marks] + [1.0])
    bar = (width - 2 * pad) / len(marks)
    parts = [
        f'<svg class="chart" role="img" aria-label="label shares of {name}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#333"/>',
    ]
    for i, label in enumerate(marks):
        share = summary["label_shares"][label]
        h = (height - 2 * pad) * share / top
        x = pad + i * bar + 8
        parts.append(
            f'<rect x="{x:.1f}" y="{height - pad - h:.1f}" width="{bar - 16:.1f}" height="{max(h, 1):.1f}" '
            f'fill="{_COLORS[label]}"><title>{label}: {share:.2f}%</title></rect>'
        )
        parts.append(
            f'<text x="{x + (bar - 16) / 2:.1f}" y="{height - 10}" font-size="11" text-anchor="middle">'
            f"{label} {share:.2f}%</text>"
        )
    parts.append("</svg>")
    return "".join(parts)


def _svg_histogram(name: str, histogram: list[tuple[int, int]]) -> str:
    width, height, pad = 420, 180, 30
    peak = max([c for _, c in histogram] + [1])
    bar = (width - 2 * pad) / max(len(histogram), 1)
    parts = [
        f'<svg class="chart" role="img" aria-label="sentence lengths of {name}" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" xmlns="http://www.w3.org/2000/svg">',
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" stroke="#333"/>',
    ]
    for i, (length, count) in enumerate(histogram):
        h = (height - 2 * pad) * count / peak
        parts.append(
            f'<rect x="{pad + i * bar:.1f}" y="{height - pad - h:.1f}" width="{max(bar - 1, 1):.1f}" '
            f'height="{max(h, 1 if count else 0):.1f}" fill="#ff7f0e"><title>{length} words: {count}</title></rect>'
        )
    parts.append(
        f'<text x="{pad}" y="{height - 10}" font-size="11">1</text>'
        f'<text x="{width - pad}" y="{height - 10}" font-size="11" text-anchor="end">'
        f"{len(histogram)}+ words</text></svg>"
    )
    return "".join(parts)


def report_html(result: dict, histograms: dict[str, list[tuple[int, int]]], title: str = "Label audit") -> str:
    """A self-contained page: tables, SVG charts, notes; no script, no network fetch."""
    import html

    rows = []
    for name, s in result.items():
        rows.append(
            "<tr>"
            + "".join(
                f"<td>{html.escape(str(v))}</td>"
                for v in (
                    name,
                    s["languages"],
                    s["documents"],
                    s["segments"],
                    s["words"],
                    s["labels"]["PERIOD"],
                    s["labels"]["COMMA"],
                    s["labels"]["QUESTION"],
                    s["labels"]["O"],
                    f"{s['sentence_length']['mean']:.2f} ± {s['sentence_length']['std']:.2f}",
                    s["vocabulary"],
                    s.get("warnings", ""),
                )
            )
            + "</tr>"
        )
    sections = []
    for name, s in result.items():
        charts = _svg_shares(name, s) + (_svg_histogram(name, histograms[name]) if name in histograms else "")
        extra = ""
        if "splits" in s:
            split_rows = "".join(
                f"<tr><td>{html.escape(k)}</td><td>{v['documents']}</td><td>{v['words']}</td>"
                + "".join(f"<td>{v['label_shares'][l]:.2f}</td>" for l in LABELS)
                + f"<td>{v.get('oov_rate', '')}</td></tr>"
                for k, v in s["splits"].items()
            )
            extra = (
                "<table><tr><th>split</th><th>docs</th><th>words</th>"
                + "".join(f"<th>{l} %</th>" for l in LABELS)
                + f"<th>OOV %</th></tr>{split_rows}</table>"
                + f"<p>Leakage: {s['leakage']['documents_in_several_splits']} documents and "
                f"{s['leakage']['segments_in_several_splits']} segments in several splits.</p>"
            )
        sections.append(f'<section><h2>{html.escape(name)}</h2><div class="charts">{charts}</div>{extra}</section>')
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in NOTES)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{html.escape(title)}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin: 1em 0; }}
td, th {{ border: 1px solid #ccc; padding: 3px 8px; text-align: right; }}
td:first-child, th:first-child {{ text-align: left; }}
.charts {{ display: flex; gap: 2em; flex-wrap: wrap; }}
</style></head><body>
<h1>{html.escape(title)}</h1>
<table><tr><th>dataset</th><th>lang</th><th>docs</th><th>segments</th><th>words</th><th>PERIOD</th><th>COMMA</th>
<th>QUESTION</th><th>O</th><th>sentence length</th><th>vocabulary</th><th>warnings</th></tr>
{"".join(rows)}</table>
{"".join(sections)}
<h2>Notes</h2><ul>{notes}</ul>
</body></html>
"""
