"""``train``: a punctuation model trained on a dataset folder, scored on its test and dev splits.

:func:`train_entry` is the DVC stage's way in (``train.<name>`` of the params file, the dataset's
sequence options from ``datasets.<dataset>.sequences``); :func:`train_config` the command line's
(a YAML file of train keys, the sequence options given).  Both end in :func:`train`, which checks
the inputs against the model before the first step (:func:`check_inputs`).
"""

from __future__ import annotations

import csv
import io
import logging
import os
from pathlib import Path

log = logging.getLogger("punct-corpora.train")

#: model types whose position ids start after the padding id (RoBERTa's family): ``max_position_embeddings``
#: counts those offsets too
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart", "xlm-roberta-xl")


def usable_positions(config) -> int | None:
    """The longest sequence (in tokens) the encoder's position embeddings can take, or None when
    the encoder has no absolute positions."""
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int):
        return None
    if getattr(config, "model_type", None) in _OFFSET_POSITIONS:
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1
    return positions


def _max_of(files, column: str) -> int | None:
    """The largest value of a list column over the sequences' files: from the row groups'
    statistics where the files have them, else from the column itself (read alone)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    best = None
    for file in files:
        handle = pq.ParquetFile(file)
        leaf = [i for i in range(handle.metadata.num_columns) if handle.schema.column(i).path.split(".")[0] == column]
        groups = [handle.metadata.row_group(g) for g in range(handle.metadata.num_row_groups)]
        stats = [g.column(leaf[0]).statistics for g in groups] if len(leaf) == 1 else [None]
        if all(s is not None and s.has_min_max for s in stats):
            tops = [s.max for s in stats]
        else:
            values = pc.list_flatten(handle.read(columns=[column])[column])
            tops = [pc.max(values).as_py()] if len(values) else []
        for top in tops:
            if top is not None and (best is None or top > best):
                best = top
    return best


def check_inputs(model, data, where: str = "training") -> None:
    """Refuse, before any step and in one line, what would fail (or silently mislearn) in training: a
    dataset built for longer sequences than the encoder's positions, labels the heads cannot
    predict, a tokenizer whose ids the embeddings do not have."""
    from pipeline.errors import InputError, ParamsError
    from pipeline.labels import CASE_LABELS

    config = model.encoder.config
    positions = usable_positions(config)
    if positions is not None and data.options.max_len > positions:
        raise ParamsError(
            f"{where}: the dataset's sequences are up to max_len {data.options.max_len} tokens, but the model "
            f"({config.model_type}) takes at most {positions} positions (max_position_embeddings "
            f"{config.max_position_embeddings}): rebuild the dataset with a smaller max_len or use another model"
        )
    vocab = getattr(config, "vocab_size", None)
    if vocab is not None and len(data.tokenizer) > vocab:
        raise InputError(
            f"{where}: the dataset's tokenizer has {len(data.tokenizer)} tokens, the model's embeddings "
            f"{vocab}: the tokenizer is not the model's (rebuild the dataset with the model's tokenizer)"
        )
    top = _max_of(data.sequences, "input_ids")
    if vocab is not None and top is not None and top >= vocab:
        raise InputError(
            f"{where}: the dataset's sequences hold token id {top}, the model's embeddings only "
            f"{vocab} ids: the sequences were not made with this model's tokenizer"
        )
    head = model.classifier.out_features
    top = _max_of(data.sequences, "labels")
    if top is not None and top >= head:
        raise InputError(f"{where}: the dataset's labels go up to id {top}, the model's head predicts {head} labels")
    if model.capitalization:
        top = _max_of(data.sequences, "case_labels") if data.has_case_labels() else None
        if top is not None and top >= len(CASE_LABELS):
            raise InputError(
                f"{where}: the dataset's case labels go up to id {top}, the case head predicts {len(CASE_LABELS)}"
            )


def _confusion_csv(matrix: dict | None) -> str:
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["actual", "predicted", "percent"])
    if matrix:
        for i, gold in enumerate(matrix["labels"]):
            for j, pred in enumerate(matrix["labels"]):
                writer.writerow([gold, pred, matrix["percent"][i][j]])
    return out.getvalue()


def scored_splits(data, dataset, where: str) -> list[str]:
    """The splits the model is scored on (test, dev): an empty one is named in a warning line; none
    at all is refused before any step, since the run would end without a score."""
    from pipeline.errors import InputError
    from pipeline.training.data import split_tables

    scored = [s for s in ("test", "dev") if next(split_tables(data.sequences, s, ["split"]), None) is not None]
    for split in [s for s in ("test", "dev") if s not in scored] if scored else []:
        log.warning("%s: split %s of %s has no sequences: not scored", where, split, dataset)
    if not scored:
        raise InputError(
            f"{where}: {dataset}: the test and dev splits have no sequences, so the model cannot be scored "
            "(the split report names the empty splits: give them documents)"
        )
    return scored


def train(
    params,
    name: str,
    dataset,
    options,
    model_dir,
    metrics,
    plots_dir=None,
    *,
    confusables=None,
    checkpoint_dir=None,
    resume: bool = False,
) -> dict:
    """Train ``params`` (:class:`pipeline.training.config.TrainParams`) on the dataset folder
    ``dataset`` (its sequences built with ``options``, a ``SequenceOptions``), save the best model to
    ``model_dir``, score it on test and dev; write ``metrics`` and, in ``plots_dir`` (default: the
    metrics' folder), ``train_<name>_steps.csv`` and ``train_<name>_confusion.csv``."""
    from pipeline.engine import writing
    from pipeline.training.data import TrainingData
    from pipeline.training.loop import evaluate
    from pipeline.training.loop import train as train_loop
    from pipeline.training.model import build_model, load_checkpoint

    if params.workers:  # the data loader's workers are the parallelism, not the tokenizer's threads
        os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    data = TrainingData.from_folder(dataset, options, confusables)
    model = build_model(params, data.tokenizer, data.label_set)
    check_inputs(model, data, f"train {name}")
    scored_splits(data, dataset, f"train {name}")
    model_dir = Path(model_dir)
    history = train_loop(model, data, params, model_dir=model_dir, checkpoint_dir=checkpoint_dir, resume=resume)
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


def _confusables(params, path, what: str, check_name: bool):
    """The confusable words of 3R's phoneme edition, from ``path`` (refused when missing or empty)."""
    from pipeline.datasets.augment import load_confusables
    from pipeline.errors import ParamsError

    aug = params.augmentation
    if aug is None or aug.kind != "3r" or not aug.confusables:
        return None
    if not path:
        raise ParamsError(f"{what}.augmentation.confusables is {aug.confusables!r}: pass its Parquet (--confusables)")
    if check_name and Path(path).stem != aug.confusables:
        raise ParamsError(f"--confusables {path} is not the confusables entry {aug.confusables!r}")
    words = load_confusables(path)
    if not words:
        raise ParamsError(f"{path}: no confusable words")
    return words


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
    ``data_dir/datasets/<train.NAME.dataset>``) with that dataset's sequence options."""
    from pipeline.errors import ParamsError
    from pipeline.operations.entries import entry, load_entry
    from pipeline.training.data import SequenceOptions

    loaded, params = load_entry(params_path, "train_entries", name)
    folder = Path(dataset) if dataset else Path(data_dir) / "datasets" / str(params.dataset)
    dataset_name = params.dataset or folder.name
    if params.dataset and folder.name != params.dataset:
        raise ParamsError(f"--dataset {folder} is not the folder of train.{name}.dataset {params.dataset!r}")
    sequences = entry(loaded, "datasets", dataset_name, params_path).sequences
    options = SequenceOptions.from_params(sequences.model_dump())
    if params.max_len is not None and params.max_len != options.max_len:
        raise ParamsError(
            f"train.{name}.max_len: {params.max_len} differs from datasets.{dataset_name}.sequences.max_len "
            f"{options.max_len} (training uses the dataset's; drop the key)"
        )
    words = _confusables(params, confusables, f"train.{name}", check_name=True)
    metrics = Path(metrics) if metrics else Path(reports_dir) / f"train_{name}.json"
    return train(
        params,
        name,
        folder,
        options,
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
    sequences,
    *,
    name: str | None = None,
    metrics=None,
    plots_dir=None,
    confusables=None,
    checkpoint_dir=None,
    resume: bool = False,
) -> dict:
    """Train the keys of a ``train.<name>`` entry written alone in the YAML file ``config_path`` on
    the dataset folder ``dataset`` (its sequences built with ``sequences``, a
    :class:`pipeline.params.SequencesParams`); the model into ``out``, the metrics to ``metrics``
    (default ``out/metrics.json``)."""
    import yaml

    from pipeline import params as P
    from pipeline.engine.reading import read_text
    from pipeline.errors import InputError, ParamsError
    from pipeline.training.config import TrainParams
    from pipeline.training.data import SequenceOptions

    try:
        data = yaml.safe_load(read_text(config_path)) or {}
    except InputError as exc:
        raise ParamsError(str(exc)) from None
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ParamsError(f"{config_path}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
    if not isinstance(data, dict):
        raise ParamsError(f"{config_path}: expected a mapping of train keys")
    params = P.validate(TrainParams, data, str(config_path))
    options = SequenceOptions.from_params(sequences.model_dump())
    if params.max_len is not None and params.max_len != options.max_len:
        raise ParamsError(
            f"{config_path}: max_len: {params.max_len} differs from the dataset's --max-len {options.max_len}"
        )
    out = Path(out)
    name = name or out.name
    words = _confusables(params, confusables, str(config_path), check_name=False)
    return train(
        params,
        name,
        Path(dataset),
        options,
        out,
        Path(metrics) if metrics else out / "metrics.json",
        plots_dir,
        confusables=words,
        checkpoint_dir=checkpoint_dir,
        resume=resume,
    )
