"""DVC stage: train and evaluate a punctuation model (``train.<name>`` in the params file).

Reads ``data/datasets/<dataset>/segments.parquet`` (train split: segments, so the
augmentation draws anew each epoch; dev/test: sequences), trains, keeps the best
checkpoint in ``models/<name>/``, and writes ``reports/train_<name>.json`` (metrics:
per-class P/R/F1, overall, macro F1, SER, 4/3/2-class merges, per language),
``reports/train_<name>_steps.csv`` (loss per step) and ``reports/train_<name>_confusion.csv``.
"""

from __future__ import annotations

import argparse
import csv
import io as _io
import sys
from pathlib import Path

import pyarrow.compute as pc

from pipeline import io
from pipeline.model import build_model, load_checkpoint, save_checkpoint
from pipeline.sequences import build_sequences
from pipeline.train import device_of, evaluate, train
from stages.common import load_params


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data-dir", default="data")
    parser.add_argument("--models-dir", default="models")
    parser.add_argument("--reports-dir", default="reports")
    args = parser.parse_args(argv)
    params = dict(load_params(args.params, "train", args.name))
    folder = Path(args.data_dir) / "datasets" / params["dataset"]
    segments = io.read_segments(folder / "segments.parquet")
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(str(folder / "tokenizer"))

    def split(name):
        return segments.filter(pc.equal(segments["split"], name))

    seq = dict(
        max_len=int(params.get("max_len", 256)),
        mode=params.get("mode", "chunk"),
        slot_filling=bool(params.get("slot_filling", False)),
    )
    dev = build_sequences(split("dev"), tokenizer, **seq)[0]
    test = build_sequences(split("test"), tokenizer, **seq)[0]
    model = build_model(params, tokenizer)
    out = Path(args.models_dir) / args.name
    history = train(
        model,
        tokenizer,
        split("train"),
        dev,
        params,
        checkpoint=lambda m: save_checkpoint(m, tokenizer, params, out),
        log=lambda msg: print(f"train {args.name}: {msg}", file=sys.stderr),
    )
    device = device_of(params.get("device", "auto"))
    best, _, _ = load_checkpoint(out, device)
    result = {"device": device, "epochs": len(history["epochs"]), "steps": len(history["steps"])}
    result["test"] = evaluate(best, test, tokenizer.pad_token_id, device) if test.num_rows else {}
    result["dev"] = evaluate(best, dev, tokenizer.pad_token_id, device) if dev.num_rows else {}
    reports = Path(args.reports_dir)
    io.write_json(result, reports / f"train_{args.name}.json")
    steps = _io.StringIO()
    writer = csv.DictWriter(steps, fieldnames=["step", "epoch", "loss", "lr"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(history["steps"])
    io.write_text(steps.getvalue(), reports / f"train_{args.name}_steps.csv")
    confusion = _io.StringIO()
    writer = csv.writer(confusion, lineterminator="\n")
    writer.writerow(["actual", "predicted", "percent"])
    if result["test"]:
        matrix = result["test"]["overall"]["confusion"]
        for i, gold in enumerate(matrix["labels"]):
            for j, pred in enumerate(matrix["labels"]):
                writer.writerow([gold, pred, matrix["percent"][i][j]])
    io.write_text(confusion.getvalue(), reports / f"train_{args.name}_confusion.csv")
    overall = result["test"]["overall"]["overall"] if result["test"] else {}
    print(
        f"train {args.name}: test overall F1 {overall.get('f1')}, {result['steps']} steps on {device}", file=sys.stderr
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
