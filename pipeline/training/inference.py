"""Inference with a trained model in memory: one punctuation label (and case label) per word for text
of any length (the windows, batching and merging of :mod:`pipeline.training.punctuator`), and words cased
back from their labels.  Importing this module imports no torch."""

from __future__ import annotations

from pipeline.labels import CASE_LABELS
from pipeline.text.case import restore_case
from pipeline.training.punctuator import Punctuator, TorchRunner, WordPieces, crf_arrays

__all__ = ["predict_words", "punctuate_words", "restore_case"]


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
    batch_tokens: int | None = None,
) -> tuple[list[str], list[str] | None]:
    """One punctuation label per word (and one case label, with a case head) for any length, by a
    :class:`pipeline.training.Punctuator` over the model in memory: overlapping windows of at most
    ``window`` words and ``max_len`` tokens, batched ``batch_size`` windows (and ``batch_tokens``
    padded tokens) at a time; a word seen by two windows takes their probabilities averaged, weighted
    by its distance from each window's cut edges."""
    label_set = model.label_set  # the labels its head predicts
    meta = {
        "labels": list(label_set.labels),
        **({} if label_set.is_papers else {"label_set": label_set.record()}),
        "case_labels": list(CASE_LABELS) if getattr(model, "capitalization", False) else None,
        "sequence": {"max_len": max_len, "slot_filling": slot_filling},
    }
    if getattr(model, "crf", None) is not None:
        meta["crf"] = crf_arrays(model.crf)
    model.eval()
    punctuator = Punctuator(
        TorchRunner(model, str(device), bf16),
        WordPieces.from_tokenizer(tokenizer),
        meta,
        window=window,
        overlap=overlap,
        batch_size=batch_size,
        batch_tokens=batch_tokens or batch_size * max_len,
    )
    prediction = punctuator.predict(list(words))
    return prediction.labels, prediction.cases


def punctuate_words(
    model, tokenizer, words: list[str], device="cpu", window: int = 200, overlap: int = 50, max_len: int = 512, **kw
) -> list[str]:
    """One punctuation label per word (:func:`predict_words` without the case labels)."""
    return predict_words(model, tokenizer, words, device, window, overlap, max_len, **kw)[0]
