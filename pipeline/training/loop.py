"""Training, evaluation and inference for punctuation (and capitalization) models, on Hugging Face Accelerate.

One code path for CPU, one GPU, several GPUs (DDP) and several nodes: ``python -m stages.train``
runs on one device; ``accelerate launch [--multi_gpu --num_processes N] -m stages.train ...``
on several (see the README).  Per step:

* a step is ``grad_accumulation`` global batches (see ``pipeline.training.data``: every process
  gets its share of the same global batches); its loss is the sum over all its micro-batches and
  processes divided by their total labelled tokens (rows, for the CRF head), so one process with
  the whole batch and N processes with a share each take the same step; gradients are reduced
  only on the last micro-batch (``no_sync`` before), a last group shorter than
  ``grad_accumulation`` still makes a step, and nothing leaks into the next epoch;
* bf16 autocast on CUDA (``precision: bf16``) over fp32 master weights; gradient clipping;
  AdamW (fused on CUDA) with separate encoder and head learning rates, linear warm-up and decay;
  optional frozen encoder for the first epoch (Guerreiro 2021);
* the loss is kept on the device and read back every ``log_every`` steps (no per-step sync);
* with ``capitalization``: loss = punctuation + weight * case (each normalized by its own
  labelled tokens).

Each epoch ends with dev scores; the best model (dev overall F1) is saved, and training stops
after ``patience`` epochs without improvement.  ``checkpoint_every`` N steps saves model,
optimizer, scheduler, RNG states (``accelerator.save_state``) and the loop's own state (epoch, micro-batches done), so a
killed run resumed with ``resume=True`` ends with the same weights as an uninterrupted one.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import logging
import math
import os
import random
import shutil
import sys
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import torch

from pipeline.datasets.sequences import IGNORE
from pipeline.engine import writing
from pipeline.errors import InputError, ParamsError
from pipeline.params import TrainParams, validate_train_params
from pipeline.training.checks import check_inputs
from pipeline.training.data import (
    BatchSpec,
    EpochBatches,
    SequenceOptions,
    TrainingData,
    collate,
    count_batches,
    index_rows,
    loader,
    mixed_case_lexicon,
    mixing_counts,
    plan_windows,
    vocabulary_of,
)
from pipeline.training.metrics import case_scores, merged_scores, scores

logger = logging.getLogger(__name__)

try:  # a progress bar where tqdm is installed (it comes with transformers)
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover

    def tqdm(iterable=None, **_):
        return iterable


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def device_of(choice: str = "auto") -> str:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def mix_languages(segments: pa.Table, mixing, epoch: int, seed: int) -> pa.Table:
    """One epoch's rows of a multilingual table (see ``training_data.mixing_counts``), in table order."""
    if not mixing:
        return segments
    counts = mixing_counts(np.array(segments["lang"].to_pylist(), dtype=object), mixing, epoch, seed)
    return segments.take(pa.array(np.repeat(np.arange(segments.num_rows), counts)))


# ---------------------------------------------------------------------------------------------
# prediction and evaluation


def _autocast(device, bf16: bool):
    if bf16 and str(device).startswith("cuda"):
        return torch.autocast(device_type="cuda", dtype=torch.bfloat16)
    return contextlib.nullcontext()


@torch.no_grad()
def predict_sequences(
    model, sequences: pa.Table, pad_id: int, device, batch_size: int = 64, with_case: bool = False, bf16: bool = False
):
    """Predicted label ids at the labelled positions of each row (in row order); with ``with_case`` also
    the case label ids there (None without a case head).  Rows are batched by length."""
    model.eval()
    lengths = np.array([len(x) for x in sequences["input_ids"].to_pylist()]) if sequences.num_rows else np.zeros(0)
    order = np.argsort(-lengths, kind="stable")
    marks: list = [None] * sequences.num_rows
    cases: list = [None] * sequences.num_rows
    table = sequences.select(["input_ids", "labels"])
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        batch = collate(table.take(pa.array(rows)), pad_id)
        with _autocast(device, bf16):
            pred, case = model.decode(
                batch["input_ids"].to(device, non_blocking=True),
                batch["attention_mask"].to(device, non_blocking=True),
                (batch["labels"] != IGNORE).to(device, non_blocking=True),
            )
        for k, r in enumerate(rows):
            marks[r] = pred[k]
            if case is not None:
                cases[r] = case[k]
    if with_case:
        return marks, (cases if getattr(model, "capitalization", False) else None)
    return marks


def evaluate(model, sequences, pad_id: int, device, batch_size: int = 64, bf16: bool = False) -> dict:
    """Word-level scores (per class, overall, macro, SER, confusion, merged classes), overall, per
    language and per corpus (when there are several); ``case`` scores too when the model has a case
    head and the rows have case labels.  ``sequences``: a table, or an iterable of tables (a split
    streamed from Parquet)."""
    tables = [sequences] if isinstance(sequences, pa.Table) else sequences
    gold_all, pred_all, by_lang, by_corpus, case_gold, case_pred = [], [], {}, {}, [], []
    for table in tables:
        marks, cases = predict_sequences(model, table, pad_id, device, batch_size, with_case=True, bf16=bf16)
        has_case = cases is not None and "case_labels" in table.column_names
        case_rows = table["case_labels"].to_pylist() if has_case else [None] * table.num_rows
        corpora = table["corpus"].to_pylist() if "corpus" in table.column_names else [None] * table.num_rows
        for k, (labels, lang) in enumerate(zip(table["labels"].to_pylist(), table["lang"].to_pylist())):
            gold = [l for l in labels if l != IGNORE]
            gold_all += gold
            pred_all += marks[k]
            for groups, key in ((by_lang, lang), (by_corpus, corpora[k])):
                g, p = groups.setdefault(key, ([], []))
                g += gold
                p += marks[k]
            if has_case:
                at = [c for l, c in zip(labels, case_rows[k]) if l != IGNORE]
                kept = [(c, q) for c, q in zip(at, cases[k]) if c != IGNORE]
                case_gold += [c for c, _ in kept]
                case_pred += [q for _, q in kept]
    label_set = model.label_set  # the labels its head predicts
    labels = label_set.labels
    result = {
        "overall": scores(np.array(gold_all, dtype=np.int64), np.array(pred_all, dtype=np.int64), labels),
        "merged": merged_scores(np.array(gold_all, dtype=np.int64), np.array(pred_all, dtype=np.int64), label_set),
    }
    if len(by_lang) > 1:
        result["per_language"] = {lang: scores(np.array(g), np.array(p), labels) for lang, (g, p) in by_lang.items()}
    if len(by_corpus) > 1:
        result["per_corpus"] = {name: scores(np.array(g), np.array(p), labels) for name, (g, p) in by_corpus.items()}
    if case_gold:
        result["case"] = case_scores(np.array(case_gold), np.array(case_pred))
    return result


# ---------------------------------------------------------------------------------------------
# training


@dataclass
class LoopState:
    """What the training loop needs, besides model/optimizer/scheduler/RNG, to continue a run."""

    epoch: int = 0
    batches_done: int = 0  # micro-batches of ``epoch`` already trained on
    step: int = 0
    best: float = -1.0
    waited: int = 0
    stopped: bool = False
    tokens: int = 0  # this process's non-padding tokens trained on
    history: dict = field(default_factory=lambda: {"steps": [], "epochs": []})


CHECKPOINT_PREFIX = "step-"


def checkpoints(folder) -> list[Path]:
    """Complete resumable checkpoints in ``folder``, oldest first (a complete one has loop_state.json)."""
    folder = Path(folder)
    if not folder.is_dir():
        return []
    found = [p for p in folder.glob(f"{CHECKPOINT_PREFIX}*") if (p / "loop_state.json").is_file()]
    return sorted(found, key=lambda p: int(p.name.removeprefix(CHECKPOINT_PREFIX)))


def _save_checkpoint(accelerator, folder: Path, state: LoopState, keep: int) -> None:
    final = folder / f"{CHECKPOINT_PREFIX}{state.step:08d}"
    tmp = folder / f".{final.name}.tmp"
    if accelerator.is_main_process and tmp.exists():
        shutil.rmtree(tmp)
    accelerator.wait_for_everyone()
    accelerator.save_state(str(tmp))  # every process writes its own RNG states
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        writing.write_json(asdict(state), tmp / "loop_state.json")
        if final.exists():
            shutil.rmtree(final)
        os.replace(tmp, final)
        for old in checkpoints(folder)[:-keep]:
            shutil.rmtree(old)
    accelerator.wait_for_everyone()


def make_accelerator(params: TrainParams):
    """The Accelerator: CPU (gloo between processes) or the launch's GPUs; DDP with unused parameters
    allowed only when the encoder sits out the first epoch.  Mixed precision is this loop's own
    autocast (``precision``), so one process can run bf16 and fp32 one after the other."""
    from accelerate import Accelerator
    from accelerate.utils import DistributedDataParallelKwargs

    if params.device == "cuda" and not torch.cuda.is_available():
        raise ParamsError("device: cuda was asked for, but no CUDA device is available")
    cpu = params.device == "cpu" or not torch.cuda.is_available()
    ddp = DistributedDataParallelKwargs(find_unused_parameters=params.freeze_encoder_first_epoch)
    return Accelerator(cpu=cpu, mixed_precision="no", kwargs_handlers=[ddp])


def _batch_spec(model, data: TrainingData, params: TrainParams) -> BatchSpec:
    """How the train split becomes micro-batches: sizes, padding, and (with ``augmentation``)
    the segments augmentation draws from."""
    tokenizer = data.tokenizer
    return BatchSpec(
        batch_size=params.batch_size,
        max_tokens=params.max_tokens,
        pad_id=tokenizer.pad_token_id,
        pad_multiple=params.pad_to_multiple_of,
        max_len=data.options.max_len,
        seed=params.seed,
        case=model.capitalization,
        segments=params.augmentation is not None,
        tokenizer=tokenizer,
        options=data.options,
        augmentation=params.augmentation.model_dump() if params.augmentation else None,
        confusables=data.confusables,
        label_set=data.label_set,
    )


def _train_rows(data: TrainingData, params: TrainParams, spec: BatchSpec):
    """The train split's sequences (they size the schedule) and the rows the epochs draw from:
    the sequences, or the segments where augmentation rebuilds sequences every epoch."""
    sequence_index = index_rows(data.sequences, "train", lengths=True)
    if not len(sequence_index):
        raise InputError(f"{data.sequences[0].parent}: no train rows")
    if not spec.segments:
        return sequence_index, sequence_index
    index = index_rows(data.segments, "train")
    if params.augmentation.kind == "3r" and params.augmentation.p_substitute > 0:
        spec.vocabulary = vocabulary_of(data.segments)
    return sequence_index, index


def _total_steps(per_epoch: int, params: TrainParams) -> int:
    """The schedule's length: the dataset's sequences (augmented epochs have about as many)."""
    total = max(1, math.ceil(per_epoch / params.grad_accumulation) * params.epochs)
    return min(total, params.max_steps) if params.max_steps else total


def _prepare(accelerator, model, params: TrainParams, total: int):
    """The model and AdamW (separate encoder and head learning rates) prepared by the accelerator,
    and the linear warm-up and decay schedule over ``total`` steps, checkpointed with them."""
    from transformers import get_linear_schedule_with_warmup

    groups = model.parameter_groups(params.encoder_lr, params.head_lr, params.weight_decay)
    optimizer = torch.optim.AdamW(groups, fused=accelerator.device.type == "cuda")
    scheduler = get_linear_schedule_with_warmup(optimizer, int(params.warmup * total), total)
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    return model, optimizer, scheduler


def _folders(model_dir, checkpoint_dir) -> tuple[Path | None, Path | None]:
    """The best model's folder and the resumable checkpoints' (by default ``model_dir/checkpoints``)."""
    model_dir = Path(model_dir) if model_dir is not None else None
    if checkpoint_dir is None and model_dir is not None:
        checkpoint_dir = model_dir / "checkpoints"
    return model_dir, Path(checkpoint_dir) if checkpoint_dir is not None else None


def _resumed_state(accelerator, checkpoint_dir: Path | None, resume: bool) -> LoopState:
    """A fresh loop state, or (``resume``) the newest checkpoint's, loaded into the prepared
    model, optimizer, scheduler and RNGs."""
    found = checkpoints(checkpoint_dir) if resume and checkpoint_dir is not None else []
    if found:
        accelerator.load_state(str(found[-1]))
        state = LoopState(**json.loads((found[-1] / "loop_state.json").read_text()))
        logger.info("resuming from %s (epoch %d, step %d)", found[-1], state.epoch + 1, state.step)
        return state
    if resume:
        logger.info("resume: no checkpoint in %s, starting afresh", checkpoint_dir)
    return LoopState()


@dataclass
class _Run:
    """One training run's fixed parts, shared by its epochs and steps."""

    accelerator: object
    model: object  # as prepared: wrapped for DDP between processes
    unwrapped: object
    optimizer: object
    scheduler: object
    params: TrainParams
    data: TrainingData
    spec: BatchSpec
    index: object  # the rows the epochs draw from (:func:`_train_rows`)
    per_epoch: int  # micro-batches of an epoch, for the progress bar
    bf16: bool
    lexicon: dict
    model_dir: Path | None
    checkpoint_dir: Path | None
    on_step: object
    log: object
    pending: list = field(default_factory=list)  # (step's log entry, its losses on the device)

    @property
    def device(self):
        return self.accelerator.device

    @property
    def world(self) -> int:
        return self.accelerator.num_processes

    @property
    def case_weight(self) -> float:
        return self.params.capitalization.weight if self.params.capitalization else 0.0

    def flush(self, state: LoopState) -> None:
        """Read the pending steps' losses back from the device (summed over processes) into the log."""
        if not self.pending:
            return
        values = torch.stack([v for _, v in self.pending])
        if self.world > 1:
            values = self.accelerator.reduce(values, "sum")
        if self.world > 1:
            values[:, 2] /= self.world  # every process holds the same norm
        for (meta, _), v in zip(self.pending, values.tolist()):
            meta["loss"] = round(v[0], 5)
            if self.case_weight:
                meta["case_loss"] = round(v[1], 5)
            meta["grad_norm"] = round(v[2], 5)
            state.history["steps"].append(meta)
        self.pending.clear()

    def save_best(self) -> None:
        from pipeline.training.model import save_checkpoint

        if self.model_dir is not None and self.accelerator.is_main_process:
            tokenizer, options = self.data.tokenizer, self.data.options.as_dict()
            save_checkpoint(self.unwrapped, tokenizer, self.params, self.model_dir, options, self.lexicon)
        self.accelerator.wait_for_everyone()


def _step(run: _Run, state: LoopState, group: list[dict], augmentation: dict) -> torch.Tensor:
    """One optimizer step over a group of micro-batches; returns its loss, case loss and gradient
    norm, on the device."""
    accelerator, model, device, weight = run.accelerator, run.model, run.device, run.case_weight
    crf = run.params.head == "bilstm_crf"
    norm = max(sum(b["n_rows"] if crf else b["n_labels"] for b in group), 1)
    case_norm = max(sum(b["n_case"] for b in group), 1)
    step_loss = torch.zeros(3, device=device)  # loss, case loss, gradient norm
    for j, batch in enumerate(group):
        for key, value in batch["stats"].items():
            augmentation[key] = augmentation.get(key, 0) + value
        inputs = {
            k: batch[k].to(device, non_blocking=True)
            for k in ("input_ids", "attention_mask", "labels", "case_labels")
            if k in batch
        }
        sync = j == len(group) - 1
        with contextlib.nullcontext() if sync else accelerator.no_sync(model):
            with _autocast(device, run.bf16):
                out = model(**inputs)
            loss = out["loss_sum"] / norm
            parts = [loss.detach()]
            if weight:
                case_loss = out["case_loss_sum"] / case_norm
                loss = loss + weight * case_loss
                parts = [loss.detach(), case_loss.detach()]
            # DDP averages gradients over the processes: scaled back to the sum over all of them
            accelerator.backward(loss * run.world)
        step_loss[: len(parts)] += torch.stack(parts)
        state.tokens += batch["tokens"]
    # the norm before clipping, logged with the loss (no clipping: an infinite bound)
    step_loss[2] = accelerator.clip_grad_norm_(model.parameters(), run.params.max_grad_norm or math.inf)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return step_loss


def _train_epoch(run: _Run, state: LoopState, epoch: int) -> None:
    """The epoch's steps (from where a resumed run stopped), with logging, checkpoints and ``max_steps``."""
    params, rank = run.params, run.accelerator.process_index
    run.unwrapped.frozen_encoder = epoch == 0 and params.freeze_encoder_first_epoch
    windows = plan_windows(run.index, epoch, params.seed, params.window, params.mixing)
    dataset = EpochBatches(run.index, windows, run.spec, epoch, rank, run.world)
    batches = iter(loader(dataset, params.loader_workers, run.device.type == "cuda", params.seed + epoch))
    if state.batches_done:  # resumed inside this epoch: the same batches, up to where it stopped
        for _ in itertools.islice(batches, state.batches_done):
            pass
    augmentation = dict(state.history.get("augmentation", {}).get(str(epoch), {}))
    run.model.train()
    bar = tqdm(
        total=run.per_epoch,
        initial=state.batches_done,
        desc=f"epoch {epoch + 1}/{params.epochs}",
        disable=not (params.progress and run.accelerator.is_main_process),
        file=sys.stderr,
    )
    while group := list(itertools.islice(batches, params.grad_accumulation)):
        step_loss = _step(run, state, group, augmentation)
        state.step += 1
        state.batches_done += len(group)
        run.pending.append(({"step": state.step, "epoch": epoch, "lr": run.scheduler.get_last_lr()[0]}, step_loss))
        bar.update(len(group))
        if state.step % params.log_every == 0:
            run.flush(state)
            bar.set_postfix(loss=f"{state.history['steps'][-1]['loss']:.3f}")
        reached = bool(params.max_steps) and state.step >= params.max_steps
        if run.checkpoint_dir is not None and params.checkpoint_every and state.step % params.checkpoint_every == 0:
            run.flush(state)
            state.history.setdefault("augmentation", {})[str(epoch)] = augmentation
            _save_checkpoint(run.accelerator, run.checkpoint_dir, state, params.keep_checkpoints)
        if run.on_step is not None:
            run.on_step(state.step, state)
        if reached:
            state.stopped = True
            break
    bar.close()
    run.flush(state)
    del batches
    if augmentation:
        state.history.setdefault("augmentation", {})[str(epoch)] = augmentation


def _score_epoch(run: _Run, state: LoopState, epoch: int) -> None:
    """Dev scores after an epoch: the best model so far is saved; ``patience`` epochs without
    improvement stop the run.  Without a dev set the last epoch's model is the one kept."""
    record = {"epoch": epoch}
    pad_id, batch_size = run.data.tokenizer.pad_token_id, run.params.eval_batch_size
    dev = evaluate(run.unwrapped, run.data.split("dev"), pad_id, run.device, batch_size, run.bf16)
    if dev["overall"]["overall"]["support"]:
        f1 = dev["overall"]["overall"]["f1"]
        record.update(dev_f1=f1, dev_ser=dev["overall"]["ser"])
        if "case" in dev:
            record["dev_case_f1"] = dev["case"]["overall"]["f1"]
        run.log("epoch %d: dev overall F1 %.4f, SER %.4f", epoch + 1, f1, dev["overall"]["ser"])
        if f1 > state.best:
            state.best, state.waited = f1, 0
            run.save_best()
        else:
            state.waited += 1
            if state.waited >= run.params.patience:
                run.log("early stop: no dev improvement in %d epochs", run.params.patience)
                state.stopped = True
    else:
        run.save_best()
    state.history["epochs"].append(record)


def _remove_checkpoints(accelerator, checkpoint_dir: Path | None) -> None:
    """A complete run's resumable checkpoints, and their folder if nothing else is in it."""
    if checkpoint_dir is not None and accelerator.is_main_process:
        for old in checkpoints(checkpoint_dir):
            shutil.rmtree(old)
        with contextlib.suppress(OSError):
            checkpoint_dir.rmdir()  # only if empty
    accelerator.wait_for_everyone()


def train(
    model,
    data: TrainingData,
    params: TrainParams | dict,
    *,
    model_dir: str | os.PathLike | None = None,
    checkpoint_dir: str | os.PathLike | None = None,
    resume: bool = False,
    on_step=None,
    where: str = "training",
) -> dict:
    """Train ``model`` in place on ``data``'s train split, scoring its dev split after every epoch.

    ``model_dir``: the best model is saved there (``save_checkpoint``).  ``checkpoint_dir`` (default
    ``model_dir/checkpoints``): resumable checkpoints every ``checkpoint_every`` steps; removed when
    the run ends.  ``resume``: continue from the newest one there.  ``on_step(step, state)`` is
    called after every optimizer step (benchmarks time with it).  ``where`` begins a refusal's line
    (:func:`pipeline.training.checks.check_inputs`, run before any step).  Returns the per-step and
    per-epoch logs."""
    if isinstance(params, dict):
        params = validate_train_params(params)
    check_inputs(model, data, params, where)
    accelerator = make_accelerator(params)
    world, device = accelerator.num_processes, accelerator.device
    set_seed(params.seed)
    spec = _batch_spec(model, data, params)
    sequence_index, index = _train_rows(data, params, spec)
    lexicon = mixed_case_lexicon(data.segments) if model.capitalization and data.segments else {}
    per_epoch = count_batches(sequence_index, spec, 0, params.window, world, params.mixing)
    total = _total_steps(per_epoch, params)
    model, optimizer, scheduler = _prepare(accelerator, model, params, total)
    model_dir, checkpoint_dir = _folders(model_dir, checkpoint_dir)
    state = _resumed_state(accelerator, checkpoint_dir, resume)
    if checkpoint_dir is not None and params.checkpoint_every and accelerator.is_main_process:
        checkpoint_dir.mkdir(parents=True, exist_ok=True)
    run = _Run(
        accelerator=accelerator,
        model=model,
        unwrapped=accelerator.unwrap_model(model),
        optimizer=optimizer,
        scheduler=scheduler,
        params=params,
        data=data,
        spec=spec,
        index=index,
        per_epoch=per_epoch,
        bf16=params.precision == "bf16" and device.type == "cuda",
        lexicon=lexicon,
        model_dir=model_dir,
        checkpoint_dir=checkpoint_dir,
        on_step=on_step,
        log=logger.info if accelerator.is_main_process else logger.debug,
    )
    run.log(
        "training on %s x %d: %d train rows, about %d steps per epoch, %d steps in all",
        device,
        world,
        len(index),
        math.ceil(per_epoch / params.grad_accumulation),
        total,
    )
    for epoch in range(state.epoch, params.epochs):
        if state.stopped:
            break
        _train_epoch(run, state, epoch)
        _score_epoch(run, state, epoch)
        state.epoch, state.batches_done = epoch + 1, 0
    _remove_checkpoints(accelerator, checkpoint_dir)
    state.history.update(device=str(device), processes=world, tokens=state.tokens, mixed_case_words=len(lexicon))
    return state.history


__all__ = [
    "SequenceOptions",
    "TrainingData",
    "evaluate",
    "predict_sequences",
    "train",
]
