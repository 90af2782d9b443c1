"""DVC stage: a dataset's corpora -> ``split.parquet`` (document-level splits, filters, duplicates)
and its report (``datasets.<name>.split`` in the params file).  Streams over shards."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--segments-dir", default="data/segments", help="where the corpora's segment datasets are")
    parser.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.split import split_entry

    split_entry(args.params, args.name, args.segments_dir, args.out, args.report)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
