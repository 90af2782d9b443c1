"""DVC stage: audit every segment dataset of the registry (corpora and alignments), with the
alignment reports and model-ready datasets' reports summarized beside them.

Writes ``<out>/audit.json`` (DVC metrics), ``label_shares.csv``, ``case_shares.csv`` and
``sentence_lengths.csv`` (DVC plots), ``audit.html`` (a page to read) and ``table1.md``
(Alam 2020 Table 1 layout).  The inputs are named by the params file, not found by globbing.
"""

from __future__ import annotations

import logging
import sys

from pipeline import params as P
from pipeline.audit.reports import with_reports, write_outputs
from pipeline.audit.stats import audit_datasets, empty_summary
from pipeline.engine import location, writing
from pipeline.engine.executor import executor
from stages.common import ArgumentParser, add_logging_options, run, setup_logging

log = logging.getLogger("stages.audit")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data-dir", default="data", help="where segments/, alignment/ and datasets/ are")
    parser.add_argument("--out", required=True, help="output directory")
    parser.add_argument("--drift-threshold", type=float, default=1.0, help="warn above this many share points")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params = P.load(args.params, [])
    data = args.data_dir
    names = params.segment_names()
    paths = [location.join(data, "segments", f"{name}.parquet") for name in names]
    engine = params.engine_for()
    with writing.Outputs(inputs=paths) as outputs, executor(engine.engine, engine.workers, engine.scheduler) as runner:
        result, histograms = audit_datasets(
            runner,
            paths,
            outputs.scratch(location.join(args.out, "audit.json")),
            engine.shard_rows,
            drift_threshold=args.drift_threshold,
        )
    for name in names:  # a corpus with no rows is reported, not left out
        result.setdefault(name, empty_summary())
    alignments = {name: location.join(data, "alignment", f"{name}.json") for name in params.alignments}
    datasets = {name: location.join(data, "datasets", name, "report.json") for name in params.datasets}
    result = with_reports(result, alignments, datasets)
    readers = {name: entry.get("reader") for name, entry in params.corpora.items()}
    write_outputs(result, histograms, args.out, inputs=paths, readers=readers)
    log.info("audit: %d dataset(s) -> %s/audit.json, audit.html, table1.md", len(result), args.out)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
