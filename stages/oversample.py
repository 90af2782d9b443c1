"""DVC stage: ``split.parquet`` -> ``oversampled.parquet`` (train questions oversampled, Rao 2022),
``augmented.parquet`` (augmentation copies of train, for the audit) and the report
(``datasets.<name>.oversample``).  Streams over shards."""

from __future__ import annotations

import logging
import sys

from pipeline.datasets.oversample import oversample_dataset
from stages.common import ArgumentParser, add_logging_options, dataset_entry, run, setup_logging

log = logging.getLogger("stages.oversample")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--in", dest="input", required=True, help="the split dataset")
    parser.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    parser.add_argument("--augmented", required=True, help="output: augmentation copies of train")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    parser.add_argument("--confusables", help="3r: the confusables Parquet of oversample.augment.confusables")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params, entry = dataset_entry(args)
    report = oversample_dataset(
        args.input,
        entry.oversample,
        entry.split.seed,
        args.out,
        args.augmented,
        args.report,
        args.confusables,
        params.engine_for(entry.engine),
    )
    if "oversampling" in report:
        log.info(
            "oversample %s: QUESTION %.4f -> %.4f",
            args.name,
            report["oversampling"]["before"],
            report["oversampling"]["after"],
        )
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
