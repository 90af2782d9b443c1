"""Presentation of the audit: Alam 2020 Table 1 in Markdown, and one self-contained HTML page
(tables, SVG charts, notes; no script, no fetch).  Statistics live in :mod:`pipeline.audit.stats`."""

from __future__ import annotations

from pipeline.audit.stats import NOTES
from pipeline.labels import CASE_LABELS, LABELS


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


def capped_histogram(histogram, bins: int = 40) -> list[tuple[int, int]]:
    """(length, sentences) for lengths 1..bins, the last bin holding every longer sentence."""
    counts = [0] * (bins + 1)
    for length, n in histogram.items():
        counts[min(int(length), bins)] += n
    return [(k, counts[k]) for k in range(1, bins + 1)]


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
                    " / ".join(f"{s['case_shares'][c]:.1f}" for c in CASE_LABELS[1:]) if "case_shares" in s else "",
                    f"{s['sentence_length']['mean']:.2f} ± {s['sentence_length']['std']:.2f}",
                    s.get("vocabulary", ""),
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
                + "".join(f"<td>{v['case_shares'][c]:.2f}</td>" for c in CASE_LABELS[1:])
                + f"<td>{v.get('oov_rate', '')}</td></tr>"
                for k, v in s["splits"].items()
            )
            extra = (
                "<table><tr><th>split</th><th>docs</th><th>words</th>"
                + "".join(f"<th>{l} %</th>" for l in LABELS)
                + "".join(f"<th>case {c} %</th>" for c in CASE_LABELS[1:])
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
<th>QUESTION</th><th>O</th><th>case U / A / M %</th><th>sentence length</th><th>vocabulary</th><th>warnings</th></tr>
{"".join(rows)}</table>
{"".join(sections)}
<h2>Notes</h2><ul>{notes}</ul>
</body></html>
"""
