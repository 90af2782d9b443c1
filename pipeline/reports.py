"""Writing the audit's outputs: the one other module of the library, beside ``io``, that writes files.

``audit.json`` (DVC metrics), ``label_shares.csv`` and ``sentence_lengths.csv`` (DVC
plots), ``audit.html`` and ``table1.md``; alignment and dataset reports, where
given, are summarized beside their dataset.
"""

from __future__ import annotations

import csv
import io as _io
import json
from pathlib import Path

from . import io
from .audit import alignment_summary, audit, length_histograms, report_html, table1_markdown


def write_outputs(
    tables, out: Path, alignment_dir: Path | None = None, drift_threshold: float = 1.0, datasets_dir: Path | None = None
) -> dict:
    result = audit(tables, drift_threshold=drift_threshold)
    if alignment_dir and alignment_dir.is_dir():
        for path in sorted(alignment_dir.glob("*.json")):
            if path.stem in result:
                result[path.stem]["alignment"] = alignment_summary(json.loads(path.read_text()))
    if datasets_dir and datasets_dir.is_dir():
        # model-ready datasets: their split distribution, oversampling and augmentation
        for report_path in sorted(datasets_dir.glob("*/report.json")):
            report = json.loads(report_path.read_text())
            name = report_path.parent.name
            entry = dict(report.get("distribution", {}).get(name, {}))
            for key in ("oversampling", "augmentation"):
                if key in report:
                    entry[key] = report[key]
            if entry:
                result[f"dataset:{name}"] = entry
    histograms = length_histograms(tables)
    io.write_json(result, out / "audit.json")
    shares = _io.StringIO()
    writer = csv.writer(shares, lineterminator="\n")
    writer.writerow(["dataset", "label", "share"])
    for name, summary in result.items():
        for label, share in summary["label_shares"].items():
            writer.writerow([name, label, share])
    io.write_text(shares.getvalue(), out / "label_shares.csv")
    lengths = _io.StringIO()
    writer = csv.writer(lengths, lineterminator="\n")
    writer.writerow(["dataset", "sentence_length", "sentences"])
    for name, histogram in histograms.items():
        for length, count in histogram:
            writer.writerow([name, length, count])
    io.write_text(lengths.getvalue(), out / "sentence_lengths.csv")
    io.write_text(report_html(result, histograms), out / "audit.html")
    io.write_text(table1_markdown(result), out / "table1.md")
    return result
