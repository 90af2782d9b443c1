"""DVC stage: ``oversampled.parquet`` -> ``sequences.parquet``, ``tokenizer/`` and ``report.json``
(the earlier steps' reports, sequence counts, the split distribution) (``datasets.<name>.sequences``).
Streams over shards."""

from __future__ import annotations

import logging
import sys

from pipeline.datasets.sequences import sequences_dataset
from stages.common import ArgumentParser, add_logging_options, dataset_entry, run, setup_logging

log = logging.getLogger("stages.sequences")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--in", dest="input", required=True, help="the dataset's segments")
    parser.add_argument("--out", required=True, help="output sequences (a folder of parts)")
    parser.add_argument("--tokenizer", required=True, help="output: the tokenizer folder")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    parser.add_argument("--reports", nargs="*", default=[], help="earlier steps' reports, merged into --report")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params, entry = dataset_entry(args)
    engine = params.engine_for(entry.engine, entry.sequences.engine)
    report = sequences_dataset(
        args.input, entry.sequences, args.out, args.tokenizer, args.report, args.name, args.reports, engine
    )
    splits = report["distribution"].get(args.name, {}).get("splits", {})
    log.info(
        "dataset %s: %s",
        args.name,
        ", ".join(f"{k} {v['documents']} docs/{v['words']} words" for k, v in splits.items()),
    )
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
