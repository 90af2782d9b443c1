"""DVC stage: audit every segment Parquet of a directory.

Writes ``<out>/audit.json`` (DVC metrics), ``<out>/label_shares.csv`` and
``<out>/sentence_lengths.csv`` (DVC plots), ``<out>/audit.html`` (a page to read)
and ``<out>/table1.md`` (Alam 2020 Table 1 layout).  Alignment reports found in
``--alignment-dir`` are summarized beside their dataset.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline import io
from pipeline.reports import write_outputs


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
    result = write_outputs(
        [io.read_segments(p) for p in paths],
        Path(args.out),
        Path(args.alignment_dir) if args.alignment_dir else None,
        args.drift_threshold,
        Path(args.datasets_dir) if args.datasets_dir else None,
    )
    print(f"audit: {len(result)} dataset(s) -> {args.out}/audit.json, audit.html, table1.md", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
