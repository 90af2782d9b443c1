"""``train``: a punctuation model trained on a dataset folder, scored on its test and dev splits.

:func:`train_entry` is the DVC stage's way in (``train.<name>`` of the params file, checked against
the dataset's ``datasets.<dataset>.sequences``); :func:`train_config` the command line's (a YAML
file of train keys, sequence options when given).  Both refuse URLs, read the sequence options the
dataset records (:func:`pipeline.training.checks.sequence_options`) and end in :func:`train`; every
check of the inputs against the model is training's own (:mod:`pipeline.training.checks`).
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path

log = logging.getLogger("punct-corpora.train")


def _confusion_csv(matrix: dict | None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["actual", "predicted", "percent"])
    if matrix:
        for i, gold in enumerate(matrix["labels"]):
            for j, pred in enumerate(matrix["labels"]):
                writer.writerow([gold, pred, matrix["percent"][i][j]])
    return out.getvalue()


def train(
    params,
    name: str,
    dataset,
    stated,
    model_dir,
    metrics,
    plots_dir=None,
    *,
    confusables=None,
    checkpoint_dir=None,
    resume: bool = False,
) -> dict:
    """Train ``params`` (:class:`pipeline.params.TrainParams`) on the dataset folder ``dataset``
    with the sequence options it records (``stated``: ``(key, what, value)`` the caller gives too,
    which must equal them), save the best model to ``model_dir``, score it on test and dev; write
    ``metrics`` and, in ``plots_dir`` (default: the metrics' folder), ``train_<name>_steps.csv`` and
    ``train_<name>_confusion.csv``."""
    from pipeline.engine import writing
    from pipeline.training.checks import scored_splits, sequence_options
    from pipeline.training.data import TrainingData
    from pipeline.training.loop import evaluate
    from pipeline.training.loop import train as train_loop
    from pipeline.training.model import build_model, load_checkpoint

    if params.loader_workers:  # the data loader's workers are the parallelism, not the tokenizer's threads
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    options, tokenizer_source = sequence_options(dataset, stated)
    data = TrainingData.from_folder(dataset, options, confusables, tokenizer_source=tokenizer_source)
    model = build_model(params, data.tokenizer, data.label_set)
    scored_splits(data, dataset, f"train {name}")
    model_dir = Path(model_dir)
    history = train_loop(
        model, data, params, model_dir=model_dir, checkpoint_dir=checkpoint_dir, resume=resume, where=f"train {name}"
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
    metrics = Path(metrics)
    plots = Path(plots_dir) if plots_dir else metrics.parent
    writing.write_json(result, metrics)
    steps = io.StringIO()
    fields = ["step", "epoch", "loss", "lr", "grad_norm"] + (["case_loss"] if params.capitalization else [])
    writer = csv.DictWriter(steps, fieldnames=fields, lineterminator="\n")
    writer.writeheader()
    writer.writerows(history["steps"])
    writing.write_text(steps.getvalue(), plots / f"train_{name}_steps.csv")
    test = result["test"]
    writing.write_text(
        _confusion_csv(test["overall"]["confusion"] if test else None), plots / f"train_{name}_confusion.csv"
    )
    overall = test["overall"]["overall"] if test else {}
    case = f", capitalization F1 {test['case']['overall']['f1']}" if test and "case" in test else ""
    log.info(
        "test overall F1 %s%s, %d steps on %s x %d",
        overall.get("f1"),
        case,
        result["steps"],
        result["device"],
        result["processes"],
    )
    return result


def _require_local(*paths) -> None:
    """Training reads and writes through libraries that know local paths only."""
    from pipeline.engine import location

    for path in paths:
        if path:
            location.require_local(path, "training")


def train_entry(
    params_path,
    name: str,
    *,
    dataset=None,
    data_dir="data",
    confusables=None,
    model_dir=None,
    models_dir="models",
    metrics=None,
    reports_dir="reports",
    plots_dir=None,
    checkpoint_dir=None,
    resume: bool = False,
) -> dict:
    """The params file's ``train.<name>`` on its dataset (``dataset``, default
    ``data_dir/datasets/<train.NAME.dataset>``), whose recorded sequence options must be the params
    file's ``datasets.<dataset>.sequences``."""
    from pipeline.errors import ParamsError
    from pipeline.operations.entries import entry, load_entry
    from pipeline.training.checks import load_confusables

    _require_local(dataset, confusables, model_dir, metrics, plots_dir, checkpoint_dir)
    loaded, params = load_entry(params_path, "train_entries", name)
    folder = Path(dataset) if dataset else Path(data_dir) / "datasets" / str(params.dataset)
    dataset_name = params.dataset or folder.name
    if params.dataset and folder.name != params.dataset:
        raise ParamsError(f"--dataset {folder} is not the folder of train.{name}.dataset {params.dataset!r}")
    sequences = entry(loaded, "datasets", dataset_name, params_path).sequences
    key = f"{params_path}: datasets.{dataset_name}.sequences"
    stated = [
        (k, f"{key}.{k}", getattr(sequences, k)) for k in ("tokenizer", "max_len", "mode", "stride", "slot_filling")
    ]
    stated.append(("max_len", f"{params_path}: train.{name}.max_len", params.max_len))
    words = load_confusables(params, confusables, f"train.{name}", entry=True)
    metrics = Path(metrics) if metrics else Path(reports_dir) / f"train_{name}.json"
    return train(
        params,
        name,
        folder,
        stated,
        Path(model_dir) if model_dir else Path(models_dir) / name,
        metrics,
        plots_dir,
        confusables=words,
        checkpoint_dir=checkpoint_dir,
        resume=resume,
    )


def train_config(
    config_path,
    dataset,
    out,
    sequences=None,
    *,
    name: str | None = None,
    metrics=None,
    plots_dir=None,
    confusables=None,
    checkpoint_dir=None,
    resume: bool = False,
) -> dict:
    """Train the keys of a ``train.<name>`` entry written alone in the YAML file ``config_path`` on
    the dataset folder ``dataset``; the model into ``out``, the metrics to ``metrics`` (default
    ``out/metrics.json``).  ``sequences``: the sequence options the caller states (``{key: (option,
    value)}``, e.g. ``{"max_len": ("--max-len", 64)}``), which must be those the dataset records."""
    from pipeline import params as P
    from pipeline.engine.reading import read_text
    from pipeline.errors import InputError, ParamsError
    from pipeline.training.checks import load_confusables

    _require_local(config_path, dataset, out, metrics, plots_dir, confusables, checkpoint_dir)
    try:
        text = read_text(config_path)
    except InputError as exc:
        raise ParamsError(str(exc)) from None
    data = P.load_yaml(text, str(config_path)) or {}
    if not isinstance(data, dict):
        raise ParamsError(f"{config_path}: expected a mapping of train keys")
    params = P.validate(P.TrainParams, data, str(config_path))
    stated = [(key, what, value) for key, (what, value) in (sequences or {}).items()]
    stated.append(("max_len", f"{config_path}: max_len", params.max_len))
    out = Path(out)
    name = name or out.name
    words = load_confusables(params, confusables, str(config_path), entry=False)
    return train(
        params,
        name,
        Path(dataset),
        stated,
        out,
        Path(metrics) if metrics else out / "metrics.json",
        plots_dir,
        confusables=words,
        checkpoint_dir=checkpoint_dir,
        resume=resume,
    )
