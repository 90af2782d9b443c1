"""``punctuate``: raw text punctuated (and, with a case head, capitalized) by a trained model, a
checkpoint folder of the train stage or a folder of ``export-model`` (run by ONNX Runtime)."""

from __future__ import annotations

import logging
import sys

log = logging.getLogger(__name__)

#: the name that stands for standard input among the inputs
STDIN = "-"


def pyarrow_without_pandas() -> None:
    """Let pyarrow's one look for pandas find none, in a process that hands pyarrow no pandas
    object (the ``punctuate`` command): pyarrow imports pandas the first time it builds an array,
    to recognize pandas objects, and that import is about a third of the command's start-up.  An
    explicit pandas call (``to_pandas``) still imports it later."""
    if "pandas" in sys.modules:
        return

    class NoPandas:
        def find_spec(self, name, path=None, target=None):
            if name == "pandas":
                raise ModuleNotFoundError("pandas is not imported by this command", name=name)
            return None

    blocker = NoPandas()
    sys.meta_path.insert(0, blocker)
    try:
        import pyarrow as pa

        pa.array([0])
    finally:
        sys.meta_path.remove(blocker)


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
    join=False,
) -> int:
    """Read ``inputs`` (files, ``-`` for stdin; stdin when empty), normalize them as in training,
    predict one mark per word with overlapping windows batched together (at most ``batch_size``
    windows and ``batch_tokens`` padded tokens at once), write to stdout.  Each input line is a
    segment of its own and gives one output line (an empty line stays empty; a long line is still
    cut into windows); with ``join`` each input is one running text and gives one line.  ``format``
    text writes the punctuated lines, jsonl one JSON record per line (per input with ``join``) with
    every word's label and probabilities.  The summary (words, seconds, words/s) is logged at INFO
    (``-q`` silences it).  The number of words punctuated."""
    import json
    import time

    from pipeline.engine import reading
    from pipeline.training.punctuator import Punctuator, segments_of

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
    sources = [str(path) for path in inputs] if inputs else [STDIN]
    segments = []  # (source, line number or None, text)
    for source in sources:
        text = reading.read_stdin() if source == STDIN else reading.read_text(source)
        for number, line in enumerate(segments_of(text, join), start=1):
            segments.append((source, None if join else number, line))
    started, total = time.perf_counter(), 0
    # the same normalization as training; marks already in the text are dropped, not trusted
    predictions = punctuator.predict_many([punctuator.words_of(text) for _, _, text in segments])
    for (source, number, _), prediction in zip(segments, predictions, strict=True):
        if format == "jsonl":
            record = {"input": source, **({} if number is None else {"line": number})}
            record.update(text=prediction.text, words=prediction.records())
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(prediction.text + "\n")
        total += len(prediction.words)
    seconds = time.perf_counter() - started
    log.info(
        "punctuate: %d words in %.2f s (%.0f words/s) on %s",
        total,
        seconds,
        total / max(seconds, 1e-9),
        punctuator.device,
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
