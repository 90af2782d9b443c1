"""Inference with a trained model: one punctuation label (and case label) per word for text of any
length, by overlapping windows predicted in batches, and words cased back from their labels."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import torch

from pipeline.datasets.sequences import IGNORE, build_sequences
from pipeline.errors import ParamsError
from pipeline.labels import LABELS
from pipeline.text.case import apply_case, capitalize_first
from pipeline.training.loop import predict_sequences


def restore_case(words: list[str], cases: list[str], mixed_case: dict[str, str] | None = None) -> list[str]:
    """Words cased by their labels; an ``M`` word takes its surface form from the lexicon saved with the
    model (mixed-case forms seen in train), else its first letter raised."""
    mixed_case = mixed_case or {}
    out = []
    for word, label in zip(words, cases):
        if label == "M":
            surface = mixed_case.get(word.lower())
            out.append(surface if surface else capitalize_first(word.lower()))
        else:
            out.append(apply_case(word, label))
    return out


@torch.no_grad()
def predict_words(
    model,
    tokenizer,
    words: list[str],
    device="cpu",
    window: int = 200,
    overlap: int = 50,
    max_len: int = 512,
    batch_size: int = 32,
    slot_filling: bool = False,
    bf16: bool = False,
) -> tuple[list[str], list[str] | None]:
    """One punctuation label per word (and one case label, with a case head) for any length: overlapping
    windows of ``window`` words, predicted ``batch_size`` sequences at a time; each word takes the
    prediction of the window in which it sits farthest from a cut edge (the text's own ends are no
    cut), so every word gets exactly one decision and seams get no gap or duplicate."""
    from pipeline.labels import CASE_LABELS

    if not words:
        return [], ([] if getattr(model, "capitalization", False) else None)
    if not 0 <= overlap < window:
        raise ParamsError("overlap must be at least 0 and smaller than the window")
    n = len(words)
    starts = list(range(0, max(n - overlap, 1), window - overlap))
    chunks = [words[s : min(s + window, n)] for s in starts]
    table = pa.table(
        {
            "corpus": ["x"] * len(chunks),
            "lang": ["x"] * len(chunks),
            "doc_id": [f"{k:09d}" for k in range(len(chunks))],
            "seg_id": pa.array([0] * len(chunks), pa.int32()),
            "words": chunks,
            "labels": [["O"] * len(c) for c in chunks],
            "split": ["x"] * len(chunks),
        }
    )
    sequences, _ = build_sequences(table, tokenizer, max_len=max_len, mode="chunk", slot_filling=slot_filling)
    marks, cases = predict_sequences(
        model, sequences, tokenizer.pad_token_id, device, batch_size, with_case=True, bf16=bf16
    )
    margin = np.full(n, -1)
    decision = np.zeros(n, dtype=np.int64)
    case_decision = np.zeros(n, dtype=np.int64)
    for k, (doc, index, labels) in enumerate(
        zip(sequences["doc_id"].to_pylist(), sequences["word_index"].to_pylist(), sequences["labels"].to_pylist())
    ):
        start = starts[int(doc)]
        end = min(start + window, n)
        positions = [w for w, l in zip(index, labels) if l != IGNORE]
        if slot_filling:  # labels sit on the mask after each word: its word is the one before
            last, positions = None, []
            for w, l in zip(index, labels):
                if w >= 0:
                    last = w
                if l != IGNORE:
                    positions.append(last)
        for j, w in enumerate(positions):
            i = start + w
            left = i - start if start > 0 else n
            right = end - 1 - i if end < n else n
            if min(left, right) > margin[i]:
                margin[i], decision[i] = min(left, right), marks[k][j]
                if cases is not None:
                    case_decision[i] = cases[k][j]
    if (margin < 0).any():
        raise RuntimeError("a word got no prediction")  # cannot happen: every word lies in a window
    return [LABELS[d] for d in decision], ([CASE_LABELS[c] for c in case_decision] if cases is not None else None)


def punctuate_words(
    model, tokenizer, words: list[str], device="cpu", window: int = 200, overlap: int = 50, max_len: int = 512, **kw
) -> list[str]:
    """One punctuation label per word (:func:`predict_words` without the case labels)."""
    return predict_words(model, tokenizer, words, device, window, overlap, max_len, **kw)[0]
