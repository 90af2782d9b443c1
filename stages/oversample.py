"""DVC stage: ``split.parquet`` -> ``oversampled.parquet`` (train questions oversampled, Rao 2022),
``augmented.parquet`` (augmentation copies of train, for the audit) and the report
(``datasets.<name>.oversample``).  Streams over shards."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--in", dest="input", required=True, help="the split dataset")
    parser.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    parser.add_argument("--augmented", required=True, help="output: augmentation copies of train")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    parser.add_argument("--confusables", help="3r: the confusables Parquet of oversample.augment.confusables")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.oversample import oversample_entry

    oversample_entry(args.params, args.name, args.input, args.out, args.augmented, args.report, args.confusables)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
