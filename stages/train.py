"""DVC stage: train and evaluate a punctuation model (``train.<name>`` in the params file).

    python -m stages.train NAME --params params.yaml --dataset data/datasets/<dataset>
        [--confusables lexicons/confusables/<entry>.parquet] --model-dir models/NAME
        --metrics reports/train_NAME.json --plots-dir reports [--checkpoint-dir DIR] [--resume]

On several GPUs or nodes the same command runs under ``accelerate launch`` (see the README).

Reads ``train.NAME`` (validated by ``pipeline.training.config.TrainParams``) and the dataset's
sequence options ``datasets.<dataset>.sequences`` (max_len, mode, stride, slot_filling) from the
params file; from the dataset folder ``sequences.parquet`` (train/dev/test), ``tokenizer/`` and,
with augmentation or capitalization, ``oversampled.parquet``; with 3R, the confusables Parquet
named by ``augmentation.confusables``.  Writes the best model to the model folder, resumable
checkpoints to ``<model-dir>/checkpoints`` (removed at the end), the metrics JSON (test and dev:
per-class P/R/F1, overall, macro F1, SER, 4/3/2-class merges, per language, capitalization) and,
in the plots folder, ``train_NAME_steps.csv`` (loss per step) and ``train_NAME_confusion.csv``.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import io as _io
import logging
import sys
from pathlib import Path

from pipeline.engine import location, writing
from pipeline.errors import ParamsError
from stages.common import ArgumentParser, add_logging_options, run, setup_logging


def _confusion_csv(matrix: dict | None) -> str:
    out = _io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["actual", "predicted", "percent"])
    if matrix:
        for i, gold in enumerate(matrix["labels"]):
            for j, pred in enumerate(matrix["labels"]):
                writer.writerow([gold, pred, matrix["percent"][i][j]])
    return out.getvalue()


def train_and_score(args) -> dict:
    from pipeline import params as P
    from pipeline.datasets.augment import load_confusables
    from pipeline.training.data import SequenceOptions, TrainingData
    from pipeline.training.loop import evaluate, train
    from pipeline.training.model import build_model, load_checkpoint

    loaded = P.load(args.params, [("train", args.name)])
    if args.name not in loaded.train_entries:
        close = difflib.get_close_matches(args.name, list(loaded.train_entries), n=1)
        hint = f"; did you mean {close[0]!r}?" if close else ""
        raise P.ParamsError(f"{args.params}: train.{args.name}: no such train entry{hint}")
    params = loaded.train_entries[args.name]
    dataset = Path(args.dataset) if args.dataset else Path(args.data_dir) / "datasets" / str(params.dataset)
    name = params.dataset or dataset.name
    if params.dataset and dataset.name != params.dataset:
        raise ParamsError(f"--dataset {dataset} is not the folder of train.{args.name}.dataset {params.dataset!r}")
    if name not in loaded.datasets:
        raise P.ParamsError(f"{args.params}: datasets.{name}: no such dataset (the sequences' max_len...)")
    options = SequenceOptions.from_params(loaded.datasets[name].sequences.model_dump())
    if params.max_len is not None and params.max_len != options.max_len:
        raise ParamsError(
            f"train.{args.name}.max_len: {params.max_len} differs from datasets.{name}.sequences.max_len "
            f"{options.max_len} (training uses the dataset's; drop the key)"
        )
    aug = params.augmentation
    confusables = None
    if aug is not None and aug.kind == "3r" and aug.confusables:
        if not args.confusables:
            raise ParamsError(
                f"train.{args.name}.augmentation.confusables is {aug.confusables!r}: pass its Parquet (--confusables)"
            )
        if Path(args.confusables).stem != aug.confusables:
            raise ParamsError(f"--confusables {args.confusables} is not the confusables entry {aug.confusables!r}")
        confusables = load_confusables(args.confusables)
        if not confusables:
            raise ParamsError(f"{args.confusables}: no confusable words")
    data = TrainingData.from_folder(dataset, options, confusables)
    model = build_model(params, data.tokenizer)
    model_dir = Path(args.model_dir) if args.model_dir else Path(args.models_dir) / args.name
    history = train(
        model,
        data,
        params,
        model_dir=model_dir,
        checkpoint_dir=args.checkpoint_dir,
        resume=args.resume,
    )
    from accelerate import PartialState

    state = PartialState()
    if not state.is_main_process:  # the main process scores and writes the reports
        return {}
    best, tokenizer, _ = load_checkpoint(model_dir, state.device)
    bf16 = params.precision == "bf16" and state.device.type == "cuda"
    result = {
        "device": history["device"],
        "processes": history["processes"],
        "epochs": len(history["epochs"]),
        "steps": len(history["steps"]),
        "test": evaluate(best, data.split("test"), tokenizer.pad_token_id, state.device, params.eval_batch_size, bf16),
        "dev": evaluate(best, data.split("dev"), tokenizer.pad_token_id, state.device, params.eval_batch_size, bf16),
        "epoch_log": history["epochs"],
    }
    if history.get("augmentation"):
        result["augmentation"] = history["augmentation"]
    for split in ("test", "dev"):
        if not result[split]["overall"]["overall"]["support"]:
            result[split] = {}
    metrics = Path(args.metrics) if args.metrics else Path(args.reports_dir) / f"train_{args.name}.json"
    plots = Path(args.plots_dir) if args.plots_dir else metrics.parent
    writing.write_json(result, metrics)
    steps = _io.StringIO()
    fields = ["step", "epoch", "loss", "lr", "grad_norm"] + (["case_loss"] if params.capitalization else [])
    writer = csv.DictWriter(steps, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(history["steps"])
    writing.write_text(steps.getvalue(), plots / f"train_{args.name}_steps.csv")
    test = result["test"]
    writing.write_text(
        _confusion_csv(test["overall"]["confusion"] if test else None), plots / f"train_{args.name}_confusion.csv"
    )
    overall = test["overall"]["overall"] if test else {}
    case = f", capitalization F1 {test['case']['overall']['f1']}" if test and "case" in test else ""
    logging.getLogger("stages.train").info(
        "test overall F1 %s%s, %d steps on %s x %d",
        overall.get("f1"),
        case,
        result["steps"],
        result["device"],
        result["processes"],
    )
    return result


def build_parser() -> argparse.ArgumentParser:
    parser = ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("name")
    parser.add_argument("--params", default="params.yaml")
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
    for value in (args.dataset, args.confusables, args.model_dir, args.metrics, args.plots_dir, args.checkpoint_dir):
        if value:
            location.require_local(value, "training")
    train_and_score(args)
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
