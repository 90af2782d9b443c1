"""DVC stage: audit every segment Parquet of a directory.

Writes ``<out>/audit.json`` (DVC metrics), ``<out>/label_shares.csv`` and
``<out>/sentence_lengths.csv`` (DVC plots), ``<out>/audit.html`` (a page to read)
and ``<out>/table1.md`` (Alam 2020 Table 1 layout).  Alignment reports found in
``--alignment-dir`` are summarized beside their dataset.
"""
from __future__ import annotations

import argparse
import csv
import io as _io
import json
import sys
from pathlib import Path

from pipeline import io
from pipeline.audit import alignment_summary, audit, length_histograms, report_html, table1_markdown


def write_outputs(tables, out: Path, alignment_dir: Path | None = None, drift_threshold: float = 1.0,
                  datasets_dir: Path | None = None) -> dict:
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


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("segments", help="directory of segment Parquet files")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--alignment-dir", help="directory of alignment reports (<dataset>.json)")
    parser.add_argument("--drift-threshold", type=float, default=1.0, help="warn above this many share points")
    parser.add_argument("--datasets-dir", help="directory of model-ready datasets (<name>/report.json)")
    args = parser.parse_args(argv)
    paths = sorted(Path(args.segments).glob("*.parquet"))
    if not paths:
        print(f"error: {args.segments}: no .parquet files to audit", file=sys.stderr)
        return 2
    result = write_outputs([io.read_segments(p) for p in paths], Path(args.out),
                           Path(args.alignment_dir) if args.alignment_dir else None, args.drift_threshold,
                           Path(args.datasets_dir) if args.datasets_dir else None)
    print(f"audit: {len(result)} dataset(s) -> {args.out}/audit.json, audit.html, table1.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
