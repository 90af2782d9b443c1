"""DVC stage: train and evaluate a punctuation model (``train.<name>`` in the params file).

    python -m stages.train NAME --params params.yaml --dataset data/datasets/<dataset>
        [--confusables lexicons/confusables/<entry>.parquet] --model-dir models/NAME
        --metrics reports/train_NAME.json --plots-dir reports [--checkpoint-dir DIR] [--resume]

On several GPUs or nodes the same command runs under ``accelerate launch`` (see the README).

Reads ``train.NAME`` (validated by ``pipeline.params.TrainParams``) and the dataset's
sequence options ``datasets.<dataset>.sequences`` (tokenizer, max_len, mode, stride, slot_filling)
from the params file, which must be those the dataset's sequences record; from the dataset folder
``sequences.parquet`` (train/dev/test), ``tokenizer/`` and,
with augmentation or capitalization, ``oversampled.parquet``; with 3R, the confusables Parquet
named by ``augmentation.confusables``.  Writes the best model to the model folder, resumable
checkpoints to ``<model-dir>/checkpoints`` (removed at the end), the metrics JSON (test and dev:
per-class P/R/F1, overall, macro F1, SER, 4/3/2-class merges, per language, capitalization) and,
in the plots folder, ``train_NAME_steps.csv`` (loss per step) and ``train_NAME_confusion.csv``.
"""

from __future__ import annotations

import argparse
import sys

from pipeline.entrypoint import RawDescriptionHelpFormatter
from stages.common import PARAMS_HELP, ArgumentParser, add_logging_options, run, setup_logging


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description=__doc__, formatter_class=RawDescriptionHelpFormatter)
    parser.add_argument("name", help="name of the train entry in the params file")
    parser.add_argument("--params", default="params.yaml", help=PARAMS_HELP)
    parser.add_argument("--dataset", help="dataset folder (default: DATA_DIR/datasets/<train.NAME.dataset>)")
    parser.add_argument("--confusables", help="confusables Parquet of augmentation.confusables (3R)")
    parser.add_argument("--model-dir", help="model output folder (default: MODELS_DIR/NAME)")
    parser.add_argument("--metrics", help="metrics JSON (default: REPORTS_DIR/train_NAME.json)")
    parser.add_argument("--plots-dir", help="folder of the steps and confusion CSVs (default: the metrics folder)")
    parser.add_argument("--checkpoint-dir", help="resumable checkpoints (default: MODEL_DIR/checkpoints)")
    parser.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    # the layout of the first stage command line, kept so an older dvc.yaml runs
    parser.add_argument("--data-dir", default="data", help=argparse.SUPPRESS)
    parser.add_argument("--models-dir", default="models", help=argparse.SUPPRESS)
    parser.add_argument("--reports-dir", default="reports", help=argparse.SUPPRESS)
    add_logging_options(parser)
    return parser


def _main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    setup_logging(args)
    from pipeline.operations.train import train_entry

    train_entry(
        args.params,
        args.name,
        dataset=args.dataset,
        data_dir=args.data_dir,
        confusables=args.confusables,
        model_dir=args.model_dir,
        models_dir=args.models_dir,
        metrics=args.metrics,
        reports_dir=args.reports_dir,
        plots_dir=args.plots_dir,
        checkpoint_dir=args.checkpoint_dir,
        resume=args.resume,
    )
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
