"""DVC stage: ingest one corpus of the registry (``corpora.<name>`` in the params file)."""
from __future__ import annotations

import argparse
import sys

from corpora import get_reader
from pipeline import io
from pipeline.spoken import speak_table
from pipeline.verbalize import get_verbalizer
from stages.common import input_files, load_params


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
    try:
        prepared = get_reader(reader)(input_files(source, pattern), lang=lang, corpus=args.corpus, **entry)
        if spoken:
            prepared.table, counts = speak_table(prepared.table, get_verbalizer(lang))
            prepared.stats.update(counts)
            prepared.stats["words"] = sum(len(w) for w in prepared.table["words"].to_pylist())
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
