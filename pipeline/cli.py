"""``python -m pipeline <command>``: a thin shim over the library and the corpus readers."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import io


def _ingest(args) -> dict:
    from corpora import get_reader

    options = {}
    if args.doc_boundary:
        options["doc_boundary"] = args.doc_boundary
    prepared = get_reader(args.reader)(args.inputs, lang=args.lang, corpus=args.corpus, **options)
    io.write_parquet(prepared.table, args.out)
    report = {"corpus": args.corpus, "reader": args.reader, "lang": args.lang, **prepared.report()}
    if args.stats:
        io.write_json(report, args.stats)
    print(
        f"ingest {args.corpus}: {report['segments']} segments, {report['words']} words -> {args.out}"
        + (f"; dropped {report['dropped']}" if report["dropped"] else ""),
        file=sys.stderr,
    )
    return report


def _audit(args) -> dict:
    from .audit import audit

    tables = [io.read_segments(path) for path in args.inputs]
    result = audit(tables)
    out = Path(args.out)
    io.write_json(result, out / "audit.json")
    print(f"audit: {len(result)} dataset(s) -> {out / 'audit.json'}", file=sys.stderr)
    return result


def build_parser() -> argparse.ArgumentParser:
    from corpora import READERS

    from .languages import available_languages

    parser = argparse.ArgumentParser(prog="python -m pipeline", description="Punctuation-restoration corpus pipeline.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = commands.add_parser(
        "ingest", help="read a corpus into the canonical segment Parquet",
        description="Read INPUT files with a reader, normalize and label them, write one segment Parquet.",
    )
    ingest.add_argument("--reader", required=True, choices=sorted(READERS), help="input format")
    ingest.add_argument("--lang", required=True, help=f"language code ({', '.join(available_languages())})")
    ingest.add_argument("--corpus", required=True, help="dataset name stored in every row")
    ingest.add_argument("--doc-boundary", choices=["file", "blank_line", "line"],
                        help="text readers: what separates documents (default: blank_line for text, file for transcript)")
    ingest.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s)")
    ingest.add_argument("--out", required=True, help="output .parquet")
    ingest.add_argument("--stats", help="also write read/drop counts as JSON here")
    ingest.set_defaults(func=_ingest)

    audit = commands.add_parser(
        "audit", help="label distributions and sentence lengths",
        description="Write DIR/audit.json: per dataset, words, label counts and sentence length mean/std.",
    )
    audit.add_argument("inputs", nargs="+", metavar="FILE.parquet")
    audit.add_argument("--out", required=True, metavar="DIR")
    audit.set_defaults(func=_audit)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (io.InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
