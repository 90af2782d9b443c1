"""DVC stage: a dataset's segments in other tools' formats (``datasets.<name>.export``): one folder per
format under ``--out`` (``nemo/``, ``tsv/``, ``hf/``), see :mod:`pipeline.datasets.export`."""

from __future__ import annotations

import logging
import sys

from pipeline import params as P
from pipeline.datasets.export import dataset_card, export_datasets, export_warnings
from pipeline.engine import location, writing
from stages.common import ArgumentParser, add_logging_options, run, setup_logging

log = logging.getLogger("stages.export")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--in", dest="input", required=True, help="the dataset's segments (oversampled.parquet)")
    parser.add_argument("--out", required=True, help="output folder (one subfolder per format)")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    location.require_local(args.out, "export")
    params = P.load(args.params, [("datasets", args.name)])
    if args.name not in params.datasets:
        raise P.ParamsError(f"{args.params}: datasets.{args.name}: no such dataset")
    dataset = params.datasets[args.name]
    entry = dataset.export
    card = dataset_card(params, args.name, f"python -m stages.export {' '.join(argv or sys.argv[1:])}")
    with writing.Outputs(inputs=[args.input]) as outputs:
        folder = outputs.dataset(args.out)
        for fmt in entry.formats:
            report = export_datasets([args.input], fmt, folder / fmt, case_column=entry.case_column, card=card)
            log.info("export %s: %s (%s)", args.name, fmt, ", ".join(report["splits"]))
            for warning in export_warnings(report):
                log.warning("export %s: %s: %s", args.name, fmt, warning)
        writing.write_manifest(folder, {"kind": "exports", "formats": list(entry.formats)})
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
