"""DVC stage: a confusable vocabulary (``confusables.<name>`` in the params file).

The vocabulary is a corpus of the registry (its words seen ``min_count`` times)
or a word-list file; output ``lexicons/confusables/<name>.parquet`` and a report.
"""

from __future__ import annotations

import argparse
import sys

from pipeline import io
from pipeline.confusables import build_confusables, vocabulary_from_segments
from pipeline.g2p import get_g2p
from stages.common import load_params


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--out-dir", default="lexicons/confusables")
    args = parser.parse_args(argv)
    entry = load_params(args.params, "confusables", args.name)
    try:
        if "corpus" in entry:
            table = io.read_segments(f"{args.data_dir}/segments/{entry['corpus']}.parquet")
            words = vocabulary_from_segments(table, int(entry.get("min_count", 1)))
        else:
            words = [w.strip() for w in io.read_text(entry["word_list"]).splitlines() if w.strip()]
        g2p = get_g2p(entry["lang"])
        table, report = build_confusables(
            words,
            g2p,
            k=int(entry.get("k", 3)),
            workers=int(entry.get("workers", 0)),
            progress=lambda stage, done, total: print(
                f"confusables {args.name}: stage {stage}: {done}/{total} settled", file=sys.stderr
            ),
        )
    except (io.InputError, ValueError) as exc:
        print(f"error: confusables {args.name}: {exc}", file=sys.stderr)
        return 2
    io.write_parquet(table, f"{args.out_dir}/{args.name}.parquet")
    io.write_json(report, f"{args.data_dir}/confusables/{args.name}.json")
    print(f"confusables {args.name}: {report['words']} words, {report['rows']} rows", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
