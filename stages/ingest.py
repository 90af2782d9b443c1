"""DVC stage: ingest one corpus of the registry (``corpora.<name>`` in the params file)."""

from __future__ import annotations

import argparse
import sys

from corpora import get_reader
from pipeline import io
from stages.common import input_files, load_params


def _sharded(args, reader, lang, files, engine, options) -> int:
    """The output path is then a directory of part-NNNNN.parquet shards (readers accept either)."""
    from pipeline.engine import ingest_text_sharded

    if reader != "text":
        print(f"error: corpus {args.corpus}: engine runs the text reader, not {reader!r}", file=sys.stderr)
        return 2
    try:
        report = ingest_text_sharded(
            files,
            lang,
            args.corpus,
            f"{args.out_dir}/segments/{args.corpus}.parquet",
            engine,
            int(options.get("workers", 0)),
            int(options.get("shard_lines", 100_000)),
            options.get("quoting", "none"),
        )
    except (io.InputError, ValueError) as exc:
        print(f"error: corpus {args.corpus}: {exc}", file=sys.stderr)
        return 2
    io.write_json({**report, "reader": reader}, f"{args.out_dir}/stats/{args.corpus}.json")
    print(f"ingest {args.corpus}: {report['shards']} shards on {engine}, {report['words']} words", file=sys.stderr)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("corpus", help="name of the corpus in the registry")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out-dir", default="data")
    args = parser.parse_args(argv)
    entry = dict(load_params(args.params, "corpora", args.corpus))
    reader, lang, source = entry.pop("reader"), entry.pop("lang"), entry.pop("input")
    spoken = entry.pop("spoken", False)
    pattern = entry.pop("glob", "*")
    engine = entry.pop("engine", None)
    if engine:  # a corpus bigger than memory: sharded, streaming, on a process pool or Dask
        return _sharded(args, reader, lang, input_files(source, pattern), engine, entry)
    try:
        prepared = get_reader(reader)(input_files(source, pattern), lang=lang, corpus=args.corpus, **entry)
        if spoken:
            prepared.speak(lang)
    except (io.InputError, ValueError) as exc:
        print(f"error: corpus {args.corpus}: {exc}", file=sys.stderr)
        return 2
    io.write_parquet(prepared.table, f"{args.out_dir}/segments/{args.corpus}.parquet")
    report = {"corpus": args.corpus, "reader": reader, "lang": lang, **prepared.report()}
    io.write_json(report, f"{args.out_dir}/stats/{args.corpus}.json")
    print(f"ingest {args.corpus}: {report['segments']} segments, {report['words']} words", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
