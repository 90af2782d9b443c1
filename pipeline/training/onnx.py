"""A trained checkpoint exported for ONNX Runtime (``punct-corpora export-model``).

The exported folder holds ``model.onnx`` (the encoder with its punctuation head and, when trained
with one, its case head: inputs ``input_ids`` and ``attention_mask``, outputs ``logits`` and
``case_logits``, batch and sequence axes dynamic), ``tokenizer/`` (``tokenizer.json`` and its
config, read by ``tokenizers`` alone), ``punctuation.json`` (the checkpoint's labels, head, params
and sequence options, plus an ``onnx`` entry; a CRF head's scores under ``crf``, decoded in numpy),
``mixed_case.json`` and the manifest that lets a later export replace the folder.
:class:`pipeline.training.Punctuator` loads it without torch or transformers.

With ``int8`` the graph's weights are int8 by ONNX Runtime's dynamic quantization (activations
quantized per batch at run time).  Only the encoder's matrix products are quantized, weights per
output channel; the embeddings, the classifier heads and the feed-forward output products stay
fp32 (``benchmarks/bench_inference.py`` compares the alternatives).
"""

from __future__ import annotations

import logging
import os
import shutil
from pathlib import Path

from pipeline.engine import location, writing
from pipeline.errors import InputError, OutputError, ParamsError

log = logging.getLogger(__name__)

FORMATS = ("onnx",)
#: ONNX operator set of the exported graph (ONNX Runtime 1.16 and later run it)
OPSET = 17


def _wrapper(model):
    import torch

    class Exported(torch.nn.Module):
        """The model's forward as plain tensors (the ONNX graph's outputs), not a dict."""

        def __init__(self, inner):
            super().__init__()
            self.inner = inner

        def forward(self, input_ids, attention_mask):
            out = self.inner(input_ids, attention_mask)
            if "case_logits" in out:
                return out["logits"], out["case_logits"]
            return out["logits"]

    return Exported(model).eval()


def export_graph(model, path: Path) -> list[str]:
    """``model`` (a PunctuationModel in eval mode) as an ONNX graph at ``path``; its output names."""
    import warnings

    import torch

    outputs = ["logits"] + (["case_logits"] if model.capitalization else [])
    axes = {"input_ids": {0: "batch", 1: "tokens"}, "attention_mask": {0: "batch", 1: "tokens"}}
    axes.update({name: {0: "batch", 1: "tokens"} for name in outputs})
    # a padded row in the example: an all-ones mask lets the attention code drop the mask from the graph
    ids = torch.full((2, 12), 5, dtype=torch.long)
    mask = torch.ones_like(ids)
    mask[1, 7:] = 0
    wrapped = _wrapper(model)
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's warnings about Python values in the attention code
        # the TorchScript exporter: the dynamo one needs onnxscript, which the project does not install
        torch.onnx.export(
            wrapped,
            (ids, mask),
            str(path),
            dynamo=False,
            input_names=["input_ids", "attention_mask"],
            output_names=outputs,
            dynamic_axes=axes,
            opset_version=OPSET,
        )
    return outputs


def quantize_int8(source: Path, target: Path, **overrides) -> dict:
    """``source`` with int8 weights at ``target``; what was quantized (recorded in punctuation.json).
    ``overrides`` change the settings (the benchmark compares them)."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    graph = onnx.load(str(source), load_external_data=False).graph
    # nodes are named after the torch modules by the exporter.  The heads: an error there reaches the
    # label directly.  The feed-forward output products (BERT-style ``layer.N.output.dense``): their
    # input, after the activation, spans a range one per-batch int8 scale rounds coarsely.
    heads = [n.name for n in graph.node if "classifier" in n.name or "/lstm" in n.name or "/crf" in n.name]
    feed_forward_out = [n.name for n in graph.node if "/output/dense/" in n.name and "/attention/" not in n.name]
    settings = {
        "method": "onnxruntime dynamic quantization",
        "weight_type": "int8",
        "op_types": ["MatMul"],
        "per_channel": True,
        "reduce_range": False,
        "excluded_nodes": sorted(heads + feed_forward_out),
    }
    settings.update(overrides)
    previous = logging.root.manager.disable
    logging.disable(logging.WARNING)  # the quantizer logs every tensor it skips, and advice, at the root logger
    try:
        _quantize(quantize_dynamic, QuantType, source, target, settings)
    finally:
        logging.disable(previous)
    return settings


def _quantize(quantize_dynamic, QuantType, source: Path, target: Path, settings: dict) -> None:
    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=settings["op_types"],
        per_channel=settings["per_channel"],
        reduce_range=settings["reduce_range"],
        nodes_to_exclude=settings["excluded_nodes"],
    )


def export_model(model_dir, out, fmt: str = "onnx", int8: bool = False) -> dict:
    """Export the checkpoint folder ``model_dir`` to the folder ``out`` (see the module doc); the
    ``onnx`` entry written into its punctuation.json is returned."""
    from pipeline.training.model import load_checkpoint
    from pipeline.training.punctuator import META, ONNX_FILE, crf_arrays

    if fmt not in FORMATS:
        raise ParamsError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if location.is_url(str(out)) or location.is_url(str(model_dir)):
        raise ParamsError(f"export-model: {out if location.is_url(str(out)) else model_dir}: local folders only")
    model_dir, out = Path(model_dir), Path(out)
    model, _, meta = load_checkpoint(model_dir)
    if not (model_dir / "tokenizer" / "tokenizer.json").is_file():
        raise InputError(f"{model_dir / 'tokenizer'}: no tokenizer.json (a slow tokenizer cannot be exported)")
    mixed_case = meta.pop("mixed_case", {})
    with writing.Outputs(inputs=[model_dir]) as outputs:
        folder = outputs.dataset(out, kind="punct-model/onnx")
        work = outputs.scratch(out)
        try:
            plain = (work if int8 else folder) / ONNX_FILE
            names = export_graph(model, plain)
            entry = {"file": ONNX_FILE, "opset": OPSET, "outputs": names, "quantization": None}
            if int8:
                entry["quantization"] = quantize_int8(plain, folder / ONNX_FILE)
            shutil.copytree(model_dir / "tokenizer", folder / "tokenizer")
        except OSError as exc:
            raise OutputError(f"{out}: cannot write the exported model ({exc.strerror or exc})") from None
        meta["onnx"] = entry
        if getattr(model, "crf", None) is not None:
            meta["crf"] = crf_arrays(model.crf)
        meta["exported_from"] = os.path.basename(os.path.normpath(model_dir))
        writing.write_json_in_place(dict(sorted(mixed_case.items())), folder / "mixed_case.json")
        writing.write_json_in_place(meta, folder / META)
        writing.write_manifest(folder, {"kind": "punct-model/onnx", "files": sorted(_files(folder))})
        for path in folder.rglob("*"):  # copied and library-written files alike follow the umask
            writing.make_readable(path)
    size = (out / ONNX_FILE).stat().st_size
    log.info("export-model: %s -> %s (%s, %.1f MB)", model_dir, out, "int8" if int8 else "fp32", size / 1e6)
    return entry


def _files(folder: Path) -> list[str]:
    return [str(p.relative_to(folder)) for p in folder.rglob("*") if p.is_file()]
