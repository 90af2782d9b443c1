"""DVC stage: a dataset's segments in other tools' formats (``datasets.<name>.export``): one folder per
format under ``--out`` (``nemo/``, ``tsv/``, ``hf/``), see :mod:`pipeline.datasets.export`."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the dataset in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--in", dest="input", required=True, help="the dataset's segments (oversampled.parquet)")
    parser.add_argument("--out", required=True, help="output folder (one subfolder per format)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.export import export_entry

    # the dataset card says how the export was made: this command, as it was run
    command = f"python -m stages.export {' '.join(argv if argv is not None else sys.argv[1:])}"
    export_entry(args.params, args.name, args.input, args.out, command=command)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
