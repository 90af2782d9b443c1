"""DVC stage: a confusable vocabulary (``confusables.<name>`` in the params file).

The vocabulary is a corpus of the registry (its words seen ``min_count`` times, counted in one
streaming pass) or a word-list file; outputs the confusables Parquet and a report.
"""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the confusables entry in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--vocab", required=True, help="the segment dataset of entry.corpus, or entry.word_list")
    parser.add_argument("--out", required=True, help="output confusables (Parquet)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.confusables import confusables_entry

    confusables_entry(args.params, args.name, args.vocab, args.out, args.report)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
