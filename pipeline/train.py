"""Training, evaluation and inference for punctuation models.

Training: AdamW with separate encoder and head learning rates, optional frozen
encoder for the first epoch (Guerreiro 2021), linear warm-up and decay, bf16
autocast on CUDA, gradient accumulation, dynamic augmentation (a new draw every
epoch, from the segments), early stopping on dev overall F1, seeded; per-step
logs returned for DVC plots; the best checkpoint is kept.
"""

from __future__ import annotations

import math
import random
import sys

import numpy as np
import pyarrow as pa
import torch

from .augment import alam, epoch_rng, three_r
from .labels import LABELS
from .metrics import merged_scores, scores
from .sequences import IGNORE, build_sequences

try:  # a progress bar where tqdm is installed (it comes with transformers)
    from tqdm.auto import tqdm
except ImportError:  # pragma: no cover

    def tqdm(iterable, **_):
        return iterable


def set_seed(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)


def device_of(choice: str = "auto") -> str:
    if choice == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    return choice


def batches(sequences: pa.Table, batch_size: int, pad_id: int, shuffle: bool, rng: np.random.Generator | None = None):
    ids, labels = sequences["input_ids"].to_pylist(), sequences["labels"].to_pylist()
    order = np.arange(len(ids))
    if shuffle:
        rng.shuffle(order)
    for start in range(0, len(order), batch_size):
        rows = order[start : start + batch_size]
        width = max(len(ids[r]) for r in rows)
        input_ids = torch.full((len(rows), width), pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        labs = torch.full((len(rows), width), IGNORE, dtype=torch.long)
        for k, r in enumerate(rows):
            n = len(ids[r])
            input_ids[k, :n] = torch.tensor(ids[r])
            mask[k, :n] = 1
            labs[k, :n] = torch.tensor(labels[r])
        yield rows, input_ids, mask, labs


def augmented(segments: pa.Table, params: dict, epoch: int, seed: int, vocabulary, confusables) -> pa.Table:
    """The train segments with a fresh augmentation draw for this epoch."""
    kind = params.get("kind")
    if not kind:
        return segments
    words, labels = segments["words"].to_pylist(), segments["labels"].to_pylist()
    new_w, new_l = [], []
    for i, (w, l) in enumerate(zip(words, labels)):
        rng = epoch_rng(seed, epoch, i)
        if kind == "alam":
            w, l = alam(
                w,
                l,
                rng,
                alpha=params.get("alpha", 0.15),
                alpha_sub=params.get("alpha_sub", 0.4),
                alpha_del=params.get("alpha_del", 0.4),
            )
        elif kind == "3r":
            w, l = three_r(
                w,
                l,
                rng,
                vocabulary=vocabulary,
                confusables=confusables,
                p_delete=params.get("p_delete", 0.05),
                p_substitute=params.get("p_substitute", 0.05),
                p_phoneme=params.get("p_phoneme", 0.05),
            )
        else:
            raise ValueError(f"unknown augmentation {kind!r} (alam or 3r)")
        new_w.append(w)
        new_l.append(l)
    columns = {name: segments[name] for name in segments.column_names}
    columns["words"] = pa.array(new_w, pa.list_(pa.string()))
    columns["labels"] = pa.array(new_l, pa.list_(pa.string()))
    return pa.table(columns, schema=segments.schema)


def mix_languages(segments: pa.Table, mixing: dict, epoch: int, seed: int) -> pa.Table:
    """One epoch's train segments for a multilingual model (Guerreiro 2021, Rao 2022).

    ``temperature`` T: language l is drawn with probability proportional to n_l^(1/T)
    (T=1 keeps the data's proportions, larger T lifts the small languages);
    ``ratios``: explicit {lang: weight}.  The epoch keeps the total number of
    segments; a language's segments are sampled with replacement when it needs more.
    """
    if not mixing:
        return segments
    langs = np.array(segments["lang"].to_pylist())
    names, counts = np.unique(langs, return_counts=True)
    if "ratios" in mixing:
        weights = np.array([float(mixing["ratios"].get(n, 0.0)) for n in names])
    else:
        weights = counts.astype(float) ** (1.0 / float(mixing.get("temperature", 1.0)))
    if weights.sum() <= 0:
        raise ValueError(f"language mixing gives every language zero weight: {mixing}")
    share = weights / weights.sum()
    rng = np.random.default_rng([seed, epoch, 7])
    rows = []
    for name, p in zip(names, share):
        pool = np.flatnonzero(langs == name)
        take = round(p * len(langs))
        rows.append(rng.choice(pool, size=take, replace=take > len(pool)))
    return segments.take(pa.array(np.sort(np.concatenate(rows))))


@torch.no_grad()
def predict_sequences(model, sequences: pa.Table, pad_id: int, device: str, batch_size: int = 32) -> list[list[int]]:
    """Predicted label id at every labelled position of each sequence (same order as its labels != -100)."""
    model.eval()
    out: list[list[int]] = [None] * sequences.num_rows
    for rows, input_ids, mask, labels in batches(sequences, batch_size, pad_id, shuffle=False):
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=device.startswith("cuda")):
            decoded = model.decode(input_ids.to(device), mask.to(device), (labels != IGNORE).to(device))
        for k, r in enumerate(rows):
            out[r] = decoded[k]
    return out


def evaluate(model, sequences: pa.Table, pad_id: int, device: str) -> dict:
    """Word-level scores (per class, overall, macro, SER, confusion, merged classes), overall and per language."""
    predictions = predict_sequences(model, sequences, pad_id, device)
    gold_all, pred_all, by_lang = [], [], {}
    for labels, pred, lang in zip(sequences["labels"].to_pylist(), predictions, sequences["lang"].to_pylist()):
        gold = [l for l in labels if l != IGNORE]
        gold_all += gold
        pred_all += pred
        g, p = by_lang.setdefault(lang, ([], []))
        g += gold
        p += pred
    result = {
        "overall": scores(np.array(gold_all), np.array(pred_all)),
        "merged": merged_scores(np.array(gold_all), np.array(pred_all)),
    }
    if len(by_lang) > 1:
        result["per_language"] = {lang: scores(np.array(g), np.array(p)) for lang, (g, p) in by_lang.items()}
    return result


def train(
    model, tokenizer, train_segments: pa.Table, dev_sequences: pa.Table | None, params: dict, checkpoint=None, log=print
) -> dict:
    """Train in place; returns per-step logs and per-epoch dev scores."""
    seed = int(params.get("seed", 0))
    set_seed(seed)
    device = device_of(params.get("device", "auto"))
    model.to(device)
    epochs, batch_size = int(params.get("epochs", 3)), int(params.get("batch_size", 16))
    accumulate = int(params.get("grad_accumulation", 1))
    max_len = int(params.get("max_len", 256))
    seq_params = dict(
        max_len=max_len, mode=params.get("mode", "chunk"), slot_filling=bool(params.get("slot_filling", False))
    )
    optimizer = torch.optim.AdamW(
        model.parameter_groups(float(params.get("encoder_lr", 5e-5)), float(params.get("head_lr", 1e-3)))
    )
    first, _ = build_sequences(train_segments, tokenizer, **seq_params)
    steps_per_epoch = math.ceil(first.num_rows / batch_size / accumulate)
    total = max(1, steps_per_epoch * epochs)
    if params.get("max_steps"):
        total = min(total, int(params["max_steps"]))
    from transformers import get_linear_schedule_with_warmup

    scheduler = get_linear_schedule_with_warmup(optimizer, int(float(params.get("warmup", 0.1)) * total), total)
    vocabulary = sorted({w for ws in train_segments["words"].to_pylist() for w in ws})
    confusables = params.get("_confusables")
    history = {"steps": [], "epochs": []}
    best, patience, step, waited = -1.0, int(params.get("patience", 2)), 0, 0
    rng = np.random.default_rng(seed)
    use_bf16 = device.startswith("cuda") and params.get("precision", "bf16") == "bf16"
    for epoch in range(epochs):
        frozen = epoch == 0 and params.get("freeze_encoder_first_epoch", False)
        for p in model.encoder.parameters():
            p.requires_grad_(not frozen)
        segments = mix_languages(train_segments, params.get("mixing") or {}, epoch, seed)
        segments = augmented(segments, params.get("augmentation") or {}, epoch, seed, vocabulary, confusables)
        fresh = bool(params.get("augmentation") or params.get("mixing"))
        sequences = build_sequences(segments, tokenizer, **seq_params)[0] if fresh else first
        model.train()
        progress = tqdm(
            list(batches(sequences, batch_size, tokenizer.pad_token_id, True, rng)),
            desc=f"epoch {epoch + 1}/{epochs}",
            disable=not params.get("progress", True),
            file=sys.stderr,
        )
        for k, (_, input_ids, mask, labels) in enumerate(progress):
            with torch.autocast(device_type="cuda", dtype=torch.bfloat16, enabled=use_bf16):
                loss, _ = model(input_ids.to(device), mask.to(device), labels.to(device))
            (loss / accumulate).backward()
            if (k + 1) % accumulate == 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), float(params.get("max_grad_norm", 1.0)))
                optimizer.step()
                scheduler.step()
                optimizer.zero_grad()
                step += 1
                history["steps"].append(
                    {"step": step, "epoch": epoch, "loss": round(loss.item(), 5), "lr": scheduler.get_last_lr()[0]}
                )
                if hasattr(progress, "set_postfix"):
                    progress.set_postfix(loss=f"{loss.item():.3f}")
                if params.get("max_steps") and step >= int(params["max_steps"]):
                    break
        record = {"epoch": epoch}
        if dev_sequences is not None and dev_sequences.num_rows:
            dev = evaluate(model, dev_sequences, tokenizer.pad_token_id, device)["overall"]
            record.update(dev_f1=dev["overall"]["f1"], dev_ser=dev["ser"])
            log(f"epoch {epoch + 1}: dev overall F1 {dev['overall']['f1']:.4f}, SER {dev['ser']:.4f}")
            if dev["overall"]["f1"] > best:
                best, waited = dev["overall"]["f1"], 0
                if checkpoint:
                    checkpoint(model)
            else:
                waited += 1
                if waited >= patience:
                    history["epochs"].append(record)
                    log(f"early stop: no dev improvement in {patience} epochs")
                    break
        elif checkpoint:
            checkpoint(model)
        history["epochs"].append(record)
        if params.get("max_steps") and step >= int(params["max_steps"]):
            break
    return history


@torch.no_grad()
def punctuate_words(
    model, tokenizer, words: list[str], device: str = "cpu", window: int = 200, overlap: int = 50, max_len: int = 512
) -> list[str]:
    """One label per word for any length: overlapping windows of ``window`` words; each word takes the
    prediction of the window in which it sits farthest from a cut edge (the text's own ends are no cut),
    so every word gets exactly one decision and seams get no gap or duplicate."""
    if not words:
        return []
    if not 0 <= overlap < window:
        raise ValueError("overlap must be at least 0 and smaller than the window")
    n = len(words)
    starts = list(range(0, max(n - overlap, 1), window - overlap))
    margin = np.full(n, -1)
    decision = np.zeros(n, dtype=np.int64)
    for start in starts:
        end = min(start + window, n)
        chunk = words[start:end]
        table = pa.table(
            {
                "corpus": ["x"],
                "lang": ["x"],
                "doc_id": ["d"],
                "seg_id": pa.array([0], pa.int32()),
                "words": [chunk],
                "labels": [["O"] * len(chunk)],
                "split": ["x"],
            }
        )
        sequences, _ = build_sequences(table, tokenizer, max_len=max_len, mode="chunk")
        predictions = predict_sequences(model, sequences, tokenizer.pad_token_id, device)
        for index, labels, pred in zip(
            sequences["word_index"].to_pylist(), sequences["labels"].to_pylist(), predictions
        ):
            positions = [w for w, l in zip(index, labels) if l != IGNORE]
            for w, p in zip(positions, pred):
                i = start + w
                left = i - start if start > 0 else n
                right = end - 1 - i if end < n else n
                if min(left, right) > margin[i]:
                    margin[i], decision[i] = min(left, right), p
    if (margin < 0).any():
        raise RuntimeError("a word got no prediction")  # cannot happen: every word lies in a window
    return [LABELS[label] for label in decision]
