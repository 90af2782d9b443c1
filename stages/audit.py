"""DVC stage: audit every segment Parquet of a directory into ``<out>/audit.json``."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from pipeline import io
from pipeline.audit import audit


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("segments", help="directory of segment Parquet files")
    parser.add_argument("--out", required=True, help="output directory")
    args = parser.parse_args(argv)
    paths = sorted(Path(args.segments).glob("*.parquet"))
    if not paths:
        print(f"error: {args.segments}: no .parquet files to audit", file=sys.stderr)
        return 2
    result = audit([io.read_segments(p) for p in paths])
    io.write_json(result, Path(args.out) / "audit.json")
    print(f"audit: {len(result)} dataset(s) -> {args.out}/audit.json", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
