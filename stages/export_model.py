"""DVC stage: a trained model exported for a runtime (``export_model.<name>`` in the params file):
the model of ``train.<name>`` as an ONNX folder that ``punctuate`` runs without torch, int8 with
``int8: true`` (see :mod:`pipeline.training.onnx`).  The same function as ``punct-corpora
export-model``."""

from __future__ import annotations

import sys

from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> ArgumentParser:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the train entry (and of its export_model entry) in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--model", required=True, help="the trained model's folder (models/<name>)")
    parser.add_argument("--out", required=True, help="output folder (models/<name>-onnx)")
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.punctuate import export_model_entry

    export_model_entry(args.params, args.name, args.model, args.out)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
