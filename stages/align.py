"""DVC stage: transfer a reference corpus's punctuation onto its ASR corpus (``alignments.<name>``)."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the alignment in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--ref", required=True, help="reference segment dataset")
    parser.add_argument("--hyp", required=True, help="hypothesis segment dataset")
    parser.add_argument("--out", required=True, help="output segment dataset (hypothesis words, transferred labels)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.align import align_entry

    align_entry(args.params, args.name, args.ref, args.hyp, args.out, args.report)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
