"""Presentation of the audit: Alam 2020 Table 1 in Markdown, and one self-contained HTML page
(tables, SVG charts, notes; no script, no fetch).  Statistics live in :mod:`pipeline.audit.stats`."""

from __future__ import annotations

from pipeline.audit.stats import NOTES
from pipeline.labels import CASE_LABELS


def _paper_percent(count: int, total: int) -> str:
    """Alam 2020 Table 1 style: round to 2 decimals, trailing zeros dropped (6.3, 0.51, 85.5)."""
    return f"{round(100.0 * count / total, 2) if total else 0.0:g}%"


def _papers(summary: dict, key: str = "labels") -> dict:
    """A summary's label counts (``labels``) or shares (``label_shares``) in the papers' four classes:
    merged where the dataset has another label set."""
    return summary.get(f"merged_{key}", summary[key])


def table1_markdown(result: dict) -> str:
    """Alam 2020 Table 1 layout: Dataset | Total | Period | Comma | Question | Other (O)."""
    lines = ["| Dataset | Total | Period | Comma | Question | Other (O) |", "| --- | --- | --- | --- | --- | --- |"]
    for name, summary in result.items():
        rows = [(name, summary)] + [(f"{name} / {s}", v) for s, v in summary.get("splits", {}).items()]
        for label, s in rows:
            total, c = s["words"], _papers(s)
            cells = [f"{c[k]} ({_paper_percent(c[k], total)})" for k in ("PERIOD", "COMMA", "QUESTION", "O")]
            lines.append(f"| {label} | {total} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def _paper_tables_html(tables: dict) -> str:
    """The papers' tables: per dataset, each column as counted here and as published."""
    import html

    if not tables:
        return ""
    out = ["<h2>Paper tables</h2>"]
    for title, entries in tables.items():
        columns = list(entries[0]["columns"])
        head = "".join(f"<th>{html.escape(c)} (here / paper)</th>" for c in columns)
        rows = []
        for e in entries:
            published = e.get("published") or {}
            cells = "".join(
                f"<td>{html.escape(str(e['columns'][c]))} / {html.escape(str(published.get(c, '-')))}</td>"
                for c in columns
            )
            verdict = "no published row" if not published else ("agrees" if e.get("within_tolerance") else "differs")
            note = f" ({html.escape(e['note'])})" if e.get("note") else ""
            rows.append(
                f"<tr><td>{html.escape(e['dataset'])}</td><td>{html.escape(str(e.get('row') or '-'))}</td>"
                f"{cells}<td>{verdict}{note}</td></tr>"
            )
        out.append(
            f'<h3>{html.escape(title)}</h3><div class="scroll"><table><tr><th>dataset</th><th>paper row</th>'
            f"{head}<th></th></tr>{''.join(rows)}</table></div>"
        )
    return "".join(out)


def capped_histogram(histogram, bins: int = 40) -> list[tuple[int, int]]:
    """(length, sentences) for lengths 1..bins, the last bin holding every longer sentence."""
    counts = [0] * (bins + 1)
    for length, n in histogram.items():
        counts[min(int(length), bins)] += n
    return [(k, counts[k]) for k in range(1, bins + 1)]


_COLORS = {"O": "#9aa5b1", "COMMA": "#1f77b4", "PERIOD": "#d62728", "QUESTION": "#2ca02c"}
_HIST_COLOR = "#ff7f0e"
MARKS = ("COMMA", "PERIOD", "QUESTION")
#: readers of the data Alam et al. (2020) released (xashru's TSV): its off-by-one note is about them
ALAM_READERS = frozenset({"tsv"})
#: the note of :data:`NOTES` about Alam et al. (2020), shown only beside the datasets it concerns
ALAM_NOTE = next(n for n in NOTES if n.startswith("Alam et al. (2020)"))
#: histogram bins: words per sentence, the last bin every longer sentence
HIST_BINS = ((1, 5), (6, 10), (11, 15), (16, 20), (21, 25), (26, 30), (31, 35), (36, 39), (40, None))

# chart geometry (SVG user units; the SVG scales to the page width)
_W, _H = 440, 250
_LEFT, _RIGHT, _TOP, _BOTTOM = 58, 12, 34, 52


def nice_axis(top: float, ticks: int = 5, whole: bool = False) -> tuple[float, float]:
    """(axis maximum, tick step) for values up to ``top``: a step of 1, 2, 2.5 or 5 times a power
    of ten, giving at most ``ticks`` steps; ``whole``: a whole-number step (counts)."""
    import math

    if top <= 0:
        return (1.0, 1.0) if whole else (1.0, 0.25)
    raw = top / ticks
    power = 10 ** math.floor(math.log10(raw))
    steps = [m * power for m in (1, 2, 2.5, 5, 10)]
    if whole:
        steps = [max(1, round(step)) for step in steps if step >= 1 and step == int(step)] or [1]
    step = next(step for step in [*steps, steps[-1] * 2] if step >= raw)
    return math.ceil(top / step - 1e-9) * step, step


def _number(value: float) -> str:
    return f"{value:g}" if value < 1e6 else f"{value:.3g}"


def _frame(title: str, label: str, x_label: str, y_label: str, axis_max: float, step: float, unit: str) -> list[str]:
    """An SVG chart's opening: its title, the y axis with its ticks and values, the axis labels."""
    import html

    plot_h = _H - _TOP - _BOTTOM
    parts = [
        f'<svg class="chart" role="img" aria-label="{html.escape(label)}" viewBox="0 0 {_W} {_H}" '
        f'preserveAspectRatio="xMinYMin meet" xmlns="http://www.w3.org/2000/svg">',
        f"<title>{html.escape(label)}</title>",
        f'<text class="chart-title" x="{_W / 2:.0f}" y="18" font-size="14" font-weight="bold" '
        f'text-anchor="middle">{html.escape(title)}</text>',
    ]
    k = 0
    while k * step <= axis_max + 1e-9:
        value = k * step
        y = _TOP + plot_h - plot_h * value / axis_max
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_W - _RIGHT}" y2="{y:.1f}" stroke="#e3e3e3"/>'
            f'<text class="tick y-tick" x="{_LEFT - 5}" y="{y + 4:.1f}" font-size="11" text-anchor="end">'
            f"{_number(value)}{unit}</text>"
        )
        k += 1
    parts += [
        f'<line x1="{_LEFT}" y1="{_TOP}" x2="{_LEFT}" y2="{_TOP + plot_h}" stroke="#333"/>',
        f'<line x1="{_LEFT}" y1="{_TOP + plot_h}" x2="{_W - _RIGHT}" y2="{_TOP + plot_h}" stroke="#333"/>',
        f'<text class="axis-label x-label" x="{(_LEFT + _W - _RIGHT) / 2:.0f}" y="{_H - 8}" font-size="12" '
        f'text-anchor="middle">{html.escape(x_label)}</text>',
        f'<text class="axis-label y-label" x="14" y="{_TOP + plot_h / 2:.0f}" font-size="12" text-anchor="middle" '
        f'transform="rotate(-90 14 {_TOP + plot_h / 2:.0f})">{html.escape(y_label)}</text>',
    ]
    return parts


def _svg_shares(name: str, summary: dict, axis_max: float, step: float) -> str:
    """The punctuation labels' shares of the words, on the axis every dataset's chart shares."""
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    parts = _frame(
        "Punctuation labels (% of words)",
        f"punctuation label shares of {name}",
        "label",
        "share of words (%)",
        axis_max,
        step,
        "%",
    )
    bar = plot_w / len(MARKS)
    for i, label in enumerate(MARKS):
        share = _papers(summary, "label_shares")[label]
        h = plot_h * share / axis_max
        x = _LEFT + i * bar + bar * 0.2
        centre = _LEFT + (i + 0.5) * bar
        parts.append(
            f'<rect x="{x:.1f}" y="{_TOP + plot_h - h:.1f}" width="{bar * 0.6:.1f}" height="{h:.1f}" '
            f'fill="{_COLORS[label]}"><title>{label}: {share:.2f}% ({_papers(summary)[label]} words)</title></rect>'
            f'<text class="value" x="{centre:.1f}" y="{_TOP + plot_h - h - 4:.1f}" font-size="11" '
            f'text-anchor="middle">{share:.2f}%</text>'
            f'<text class="tick x-tick" x="{centre:.1f}" y="{_TOP + plot_h + 15}" font-size="11" '
            f'text-anchor="middle">{label}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def binned_histogram(histogram: list[tuple[int, int]]) -> list[tuple[str, int]]:
    """(bin label, sentences) of a capped histogram (:func:`capped_histogram`) in :data:`HIST_BINS`."""
    bins = []
    for low, high in HIST_BINS:
        label = f"{low}+" if high is None else f"{low}–{high}"
        count = sum(n for length, n in histogram if length >= low and (high is None or length <= high))
        bins.append((label, count))
    return bins


def _svg_histogram(name: str, histogram: list[tuple[int, int]]) -> str:
    bins = binned_histogram(histogram)
    axis_max, step = nice_axis(max(c for _, c in bins), whole=True)
    plot_w, plot_h = _W - _LEFT - _RIGHT, _H - _TOP - _BOTTOM
    parts = _frame(
        "Sentence lengths",
        f"sentence lengths of {name}",
        "words per sentence",
        "sentences",
        axis_max,
        step,
        "",
    )
    bar = plot_w / len(bins)
    for i, (label, count) in enumerate(bins):
        h = plot_h * count / axis_max
        centre = _LEFT + (i + 0.5) * bar
        parts.append(
            f'<rect x="{_LEFT + i * bar + 1:.1f}" y="{_TOP + plot_h - h:.1f}" width="{bar - 2:.1f}" '
            f'height="{h:.1f}" fill="{_HIST_COLOR}"><title>{label} words: {count} sentences</title></rect>'
            f'<text class="tick x-tick" x="{centre:.1f}" y="{_TOP + plot_h + 15}" font-size="10" '
            f'text-anchor="middle">{label}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _empty(message: str) -> str:
    import html

    return f'<div class="chart empty"><p>{html.escape(message)}</p></div>'


def dataset_warnings(summary: dict) -> list[str]:
    """A dataset's warnings, one per item: its drift and empty splits, and the labels it lacks."""
    raw = summary.get("warnings") or []
    warnings = [w for w in raw.split("; ") if w] if isinstance(raw, str) else list(raw)
    if missing := summary.get("missing_labels"):
        names = missing.split(",") if isinstance(missing, str) else list(missing)
        warnings.append(f"missing labels: no {', '.join(names)} label in this dataset")
    for split, part in summary.get("splits", {}).items():
        if part.get("missing_labels") and part.get("words"):
            warnings.append(f"split {split}: no {part['missing_labels'].replace(',', ', ')} label")
    return warnings


def _charts(name: str, summary: dict, histogram, axis: tuple[float, float]) -> str:
    if not summary.get("words"):
        return _empty("no words in this dataset")
    if sum(_papers(summary)[m] for m in MARKS) == 0:
        shares = _empty("no punctuation labels in this dataset")
    else:
        shares = _svg_shares(name, summary, *axis)
    if histogram is None:
        return shares
    if not sum(n for _, n in histogram):
        return shares + _empty("no sentences in this dataset (no PERIOD or QUESTION label ends one)")
    return shares + _svg_histogram(name, histogram)


_STYLE = """
body { font-family: sans-serif; margin: 1em; color: #222; max-width: 1200px; }
table { border-collapse: collapse; margin: 1em 0; }
td, th { border: 1px solid #ccc; padding: 3px 8px; text-align: right; }
td:first-child, th:first-child { text-align: left; }
.scroll { overflow-x: auto; }
.charts { display: flex; gap: 1.5em; flex-wrap: wrap; }
.chart { width: 440px; max-width: 100%; height: auto; }
.chart.empty { display: flex; align-items: center; justify-content: center; aspect-ratio: 440 / 250;
  border: 1px dashed #bbb; color: #555; text-align: center; padding: 1em; box-sizing: border-box; }
.warnings { background: #fff6e5; border-left: 4px solid #e69a00; padding: 0.2em 1em; }
.warnings h3 { margin: 0.4em 0; font-size: 1em; }
.note { font-size: 0.9em; color: #444; }
"""


def _summary_row(name: str, s: dict) -> str:
    """A dataset's row of the summary table."""
    import html

    cells = (
        name,
        s.get("languages", ""),
        s.get("documents", ""),
        s.get("segments", ""),
        s["words"],
        _papers(s)["PERIOD"],
        _papers(s)["COMMA"],
        _papers(s)["QUESTION"],
        _papers(s)["O"],
        " / ".join(f"{s['case_shares'][c]:.1f}" for c in CASE_LABELS[1:]) if "case_shares" in s else "",
        f"{s['sentence_length']['mean']:.2f} ± {s['sentence_length']['std']:.2f}" if "sentence_length" in s else "",
        s.get("vocabulary", ""),
        len(dataset_warnings(s)) or "",
    )
    return "<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in cells) + "</tr>"


def _splits_html(s: dict) -> str:
    """A split dataset's table of splits (label and case shares, OOV) and its leakage."""
    import html

    labels = list(s["labels"])  # the dataset's label set
    split_rows = "".join(
        f"<tr><td>{html.escape(k)}</td><td>{v['documents']}</td><td>{v['words']}</td>"
        + "".join(f"<td>{v['label_shares'][l]:.2f}</td>" for l in labels)
        + "".join(f"<td>{v['case_shares'][c]:.2f}</td>" for c in CASE_LABELS[1:] if "case_shares" in v)
        + f"<td>{v.get('oov_rate', '')}</td></tr>"
        for k, v in s["splits"].items()
    )
    leakage = ", ".join(
        f"{html.escape(str(v))} {html.escape(k.replace('_', ' '))}" for k, v in s.get("leakage", {}).items()
    )
    return (
        '<div class="scroll"><table><tr><th>split</th><th>docs</th><th>words</th>'
        + "".join(f"<th>{l} %</th>" for l in labels)
        + "".join(f"<th>case {c} %</th>" for c in CASE_LABELS[1:])
        + f"<th>OOV %</th></tr>{split_rows}</table></div>"
        + (f"<p>Leakage: {leakage}.</p>" if leakage else "")
    )


def _section(name: str, s: dict, histogram, axis: tuple[float, float], reader: str | None) -> str:
    """A dataset's section: its warnings, charts, splits and (for a format of Alam et al.) the note."""
    import html

    charts = _charts(name, s, histogram, axis)
    extra = _splits_html(s) if "splits" in s else ""
    warnings = dataset_warnings(s)
    listed = (
        '<div class="warnings"><h3>Warnings</h3><ul>'
        + "".join(f"<li>{html.escape(w)}</li>" for w in warnings)
        + "</ul></div>"
        if warnings
        else ""
    )
    note = ""
    if reader in ALAM_READERS:
        note = f'<p class="note">Note: {html.escape(ALAM_NOTE)}</p>'
    return (
        f'<section id="{html.escape(name)}"><h2>{html.escape(name)}</h2>{listed}'
        f'<div class="charts">{charts}</div>{extra}{note}</section>'
    )


def report_html(
    result: dict,
    histograms: dict[str, list[tuple[int, int]]],
    title: str = "Label audit",
    readers: dict[str, str] | None = None,
    paper_tables: dict | None = None,
) -> str:
    """A self-contained page: tables, SVG charts, warnings and notes; no script, no network fetch.

    ``readers`` (dataset name -> reader) decides where the note on Alam et al. (2020) applies:
    beside the datasets read with its format only; ``paper_tables``: the papers' tables of the
    datasets made under a paper protocol, shown beside the published numbers."""
    import html

    readers = readers or {}
    top = max([_papers(s, "label_shares")[m] for s in result.values() if "label_shares" in s for m in MARKS] + [0.0])
    axis = nice_axis(top)
    audited = {name: s for name, s in result.items() if "labels" in s}
    rows = [_summary_row(name, s) for name, s in audited.items()]
    sections = [_section(name, s, histograms.get(name), axis, readers.get(name)) for name, s in audited.items()]
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in NOTES if n != ALAM_NOTE)
    papers = _paper_tables_html(paper_tables or {})
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{html.escape(title)}</title>
<style>{_STYLE}</style></head><body>
<h1>{html.escape(title)}</h1>
<div class="scroll"><table><tr><th>dataset</th><th>lang</th><th>docs</th><th>segments</th><th>words</th><th>PERIOD</th>
<th>COMMA</th><th>QUESTION</th><th>O</th><th>case U / A / M %</th><th>sentence length</th><th>vocabulary</th>
<th>warnings</th></tr>
{"".join(rows)}</table></div>
{"".join(sections)}{papers}
<h2>Notes</h2><ul>{notes}</ul>
</body></html>
"""
