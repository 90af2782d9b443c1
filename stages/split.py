"""DVC stage: a dataset's corpora -> ``split.parquet`` (document-level splits, filters, duplicates)
and its report (``datasets.<name>.split`` in the params file).  Streams over shards."""

from __future__ import annotations

import logging
import sys

from pipeline.datasets.split import SplitInput, split_dataset
from pipeline.engine import location
from stages.common import ArgumentParser, add_logging_options, dataset_entry, run, setup_logging

log = logging.getLogger("stages.split")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--segments-dir", default="data/segments", help="where the corpora's segment datasets are")
    parser.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params, entry = dataset_entry(args)
    fixed = {**dict.fromkeys(entry.split.test_corpora, "test"), **entry.split.fixed}
    inputs = [SplitInput(c, str(location.join(args.segments_dir, f"{c}.parquet"))) for c in entry.corpora]
    inputs += [
        SplitInput(c, str(location.join(args.segments_dir, f"{c}.parquet")), split) for c, split in fixed.items()
    ]
    report = split_dataset(inputs, entry.split, args.out, args.report, params.engine_for(entry.engine))
    log.info("split %s: %s", args.name, ", ".join(f"{k} {v}" for k, v in report.items() if isinstance(v, int)))
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
