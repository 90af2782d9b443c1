"""DVC stage: ``oversampled.parquet`` -> ``sequences.parquet``, ``tokenizer/`` and ``report.json``
(the earlier steps' reports, sequence counts, the split distribution) (``datasets.<name>.sequences``).
Streams over shards."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--in", dest="input", required=True, help="the dataset's segments")
    parser.add_argument("--out", required=True, help="output sequences (a folder of parts)")
    parser.add_argument("--tokenizer", required=True, help="output: the tokenizer folder")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    parser.add_argument("--reports", nargs="*", default=[], help="earlier steps' reports, merged into --report")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.sequences import sequences_entry

    sequences_entry(args.params, args.name, args.input, args.out, args.tokenizer, args.report, args.reports)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
