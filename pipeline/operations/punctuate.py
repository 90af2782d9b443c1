"""``punctuate``: raw text punctuated (and, with a case head, capitalized) by a trained model."""

from __future__ import annotations

import sys


def punctuate(model_dir, inputs, *, lang=None, window=200, overlap=50, device="auto", batch_size=32) -> None:
    """Read ``inputs`` (files; stdin when empty), normalize them as in training, predict one mark per
    word with overlapping windows batched together, write punctuated text to stdout."""
    import time

    from pipeline.engine import reading
    from pipeline.errors import ParamsError
    from pipeline.text.labelling import label_lines, render
    from pipeline.text.languages import get_language
    from pipeline.training.inference import predict_words, restore_case
    from pipeline.training.loop import device_of
    from pipeline.training.model import load_checkpoint

    if batch_size < 1:
        raise ParamsError(f"--batch-size must be at least 1, not {batch_size}")
    requested = device
    device = device_of(device)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ParamsError(f"--device {requested}: no CUDA device is available")
    model, tokenizer, meta = load_checkpoint(model_dir, device)
    params, sequence = meta.get("params", {}), meta.get("sequence", {})
    language = get_language(lang or params.get("lang", "en"))
    texts = [reading.read_text(path) for path in inputs] if inputs else [sys.stdin.read()]
    started, total = time.perf_counter(), 0
    for text in texts:
        # the same normalization as training; marks already in the text are dropped, not trusted
        labelled = label_lines(language.normalize_text(text), language)
        words = [w for line in labelled.words.to_pylist() for w in line]
        labels, cases = predict_words(
            model,
            tokenizer,
            words,
            device,
            window=window,
            overlap=overlap,
            max_len=int(sequence.get("max_len") or params.get("max_len") or 256),
            batch_size=batch_size,
            slot_filling=bool(sequence.get("slot_filling", False)),
            bf16=device.startswith("cuda") and params.get("precision", "bf16") == "bf16",
        )
        if cases is not None:  # a model with a case head restores capitalization too
            words = restore_case(words, cases, meta.get("mixed_case"))
        sys.stdout.write(render(words, labels) + "\n")
        total += len(words)
    seconds = time.perf_counter() - started
    print(
        f"punctuate: {total} words in {seconds:.2f} s ({total / max(seconds, 1e-9):.0f} words/s) on {device}",
        file=sys.stderr,
    )
