"""DVC stage: audit every segment dataset of the registry (corpora and alignments), with the
alignment reports and model-ready datasets' reports summarized beside them.

Writes ``<out>/audit.json`` (DVC metrics), ``label_shares.csv``, ``case_shares.csv`` and
``sentence_lengths.csv`` (DVC plots), ``audit.html`` (a page to read) and ``table1.md``
(Alam 2020 Table 1 layout).  The inputs are named by the params file, not found by globbing.
"""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    from pipeline.operations.audit import DRIFT_THRESHOLD

    parser = ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--data-dir", default="data", help="where segments/, alignment/ and datasets/ are")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument(
        "--drift-threshold", type=float, default=DRIFT_THRESHOLD, help="warn above this many share points"
    )
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.audit import audit_registry

    audit_registry(args.params, args.data_dir, args.out, args.drift_threshold)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
