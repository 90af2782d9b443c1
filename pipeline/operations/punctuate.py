"""``punctuate``: raw text punctuated (and, with a case head, capitalized) by a trained model, a
checkpoint folder of the train stage or a folder of ``export-model`` (run by ONNX Runtime)."""

from __future__ import annotations

import sys


def punctuate(
    model_dir,
    inputs,
    *,
    lang=None,
    window=200,
    overlap=50,
    device="auto",
    batch_size=32,
    batch_tokens=8192,
    format="text",
) -> int:
    """Read ``inputs`` (files; stdin when empty), normalize them as in training, predict one mark per
    word with overlapping windows batched together (at most ``batch_size`` windows and
    ``batch_tokens`` padded tokens at once), write to stdout: per input one punctuated line
    (``format`` text) or one JSON record with every word's label and probabilities (jsonl).
    The number of words punctuated."""
    import json
    import time

    from pipeline.engine import reading
    from pipeline.training.punctuator import Punctuator

    # an exported folder runs through onnxruntime: nothing here may import torch or transformers
    punctuator = Punctuator.load(
        model_dir,
        device=device,
        lang=lang,
        window=window,
        overlap=overlap,
        batch_size=batch_size,
        batch_tokens=batch_tokens,
    )
    texts = [reading.read_text(path) for path in inputs] if inputs else [reading.read_stdin()]
    started, total = time.perf_counter(), 0
    # the same normalization as training; marks already in the text are dropped, not trusted
    predictions = punctuator.predict_many([punctuator.words_of(text) for text in texts])
    for k, prediction in enumerate(predictions):
        if format == "jsonl":
            source = inputs[k] if inputs else "-"
            record = {"input": str(source), "text": prediction.text, "words": prediction.records()}
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(prediction.text + "\n")
        total += len(prediction.words)
    seconds = time.perf_counter() - started
    print(
        f"punctuate: {total} words in {seconds:.2f} s ({total / max(seconds, 1e-9):.0f} words/s) "
        f"on {punctuator.device}",
        file=sys.stderr,
    )
    return total


def export_model(model_dir, out, fmt: str = "onnx", *, int8: bool = False) -> None:
    """The checkpoint folder ``model_dir`` exported for ONNX Runtime into ``out`` (see
    :mod:`pipeline.training.onnx`); ``punctuate`` then runs it without torch."""
    from pipeline.training.onnx import export_model as export_onnx

    export_onnx(model_dir, out, fmt, int8=int8)


def export_model_entry(params_path, name: str, model_dir, out) -> None:
    """The params file's ``export_model.<name>``: the model ``train.<name>`` wrote (``model_dir``)
    exported into ``out``, as :func:`export_model` does."""
    from pipeline.operations.entries import load_entry

    _, entry = load_entry(params_path, "export_model", name)
    export_model(model_dir, out, entry.format, int8=entry.int8)
