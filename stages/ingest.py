"""DVC stage: ingest one corpus of the registry (``corpora.<name>`` in the params file)."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("corpus", help="name of the corpus in the registry")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--out", required=True, help="output segment dataset (a folder of parts)")
    parser.add_argument("--stats", required=True, help="output counts (JSON)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.ingest import ingest_entry

    ingest_entry(args.params, args.corpus, args.out, args.stats)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
