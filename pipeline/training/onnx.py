"""A trained checkpoint exported for ONNX Runtime (``punct-corpora export-model``).

The exported folder holds ``model.onnx`` (the encoder with its punctuation head and, when trained
with one, its case head: inputs ``input_ids`` and ``attention_mask``, outputs ``logits`` and
``case_logits``, batch and sequence axes dynamic), ``tokenizer/`` (``tokenizer.json`` and its
config, read by ``tokenizers`` alone), ``punctuation.json`` (the checkpoint's labels, head, params
and sequence options, plus an ``onnx`` entry; a CRF head's scores under ``crf``, decoded in numpy),
``mixed_case.json`` and the manifest that lets a later export replace the folder.
:class:`pipeline.training.Punctuator` loads it without torch or transformers.

The graph is exported with the encoder's eager attention and then fused by ONNX Runtime's
transformer optimizer (attention, embedding and skip layer norms, bias + GELU: ONNX Runtime's own
operators, so the file runs in ONNX Runtime only): the exporter's graph of torch's SDPA attention
matches none of its attention fusions.

With ``int8`` the encoder's matrix products hold int8 weights in blocks of ``block_size`` along
the input axis, one scale per block (ONNX Runtime's ``MatMulNBits`` with 8 bits); at run time
the activations are quantized to int8 in blocks of the same size (``accuracy_level`` 4) and the
products are int8.  Dynamic quantization (``MatMulInteger``, one activation scale per batch) is
faster, but one scale for a whole batch rounds the activations coarsely and changes more labels
(``benchmarks/bench_inference.py`` compares them).  The classifier heads stay fp32.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
from pathlib import Path

from pipeline.engine import location, writing
from pipeline.errors import InputError, OutputError, ParamsError

log = logging.getLogger(__name__)

FORMATS = ("onnx",)
#: ONNX operator set of the exported graph (its fused and int8 operators are ONNX Runtime's own: int8
#: needs ONNX Runtime 1.22 or later)
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


def export_graph(model, path: Path, eager_attention: bool = True) -> list[str]:
    """``model`` (a PunctuationModel in eval mode) as an ONNX graph at ``path``; its output names.
    With ``eager_attention`` the encoder is switched to its eager attention (see the module doc)."""
    import warnings

    import torch

    encoder = getattr(model, "encoder", None)
    if eager_attention and hasattr(encoder, "set_attn_implementation"):
        # a model without an eager attention keeps its own
        with contextlib.suppress(ValueError, ImportError):
            encoder.set_attn_implementation("eager")
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


def fuse_graph(source: Path, target: Path, model=None, attention: bool = True) -> dict[str, int]:
    """``source`` with ONNX Runtime's transformer fusions at ``target``; the count of each fused
    operator.  ``attention`` False keeps the attention's projections as plain matrix products
    (int8 quantizes them; a fused attention holds them inside)."""
    from onnxruntime.transformers import optimizer
    from onnxruntime.transformers.fusion_options import FusionOptions

    config = getattr(getattr(model, "encoder", None), "config", None)
    options = FusionOptions("bert")
    options.enable_attention = attention
    with _quiet():  # the optimizer logs each fusion it tries at the root logger
        fused = optimizer.optimize_model(
            str(source),
            model_type="bert",
            num_heads=int(getattr(config, "num_attention_heads", 0) or 0),
            hidden_size=int(getattr(config, "hidden_size", 0) or 0),
            opt_level=0,
            optimization_options=options,
        )
        fused.save_model_to_file(str(target))
        statistics = fused.get_fused_operator_statistics()  # logs them too
    return {k: v for k, v in sorted(statistics.items()) if v}


class _quiet:
    """Root-logger messages below errors off (the quantizer and the optimizer log every step)."""

    def __enter__(self):
        self.previous = logging.root.manager.disable
        logging.disable(logging.WARNING)

    def __exit__(self, *exc):
        logging.disable(self.previous)


def _heads(graph) -> list[str]:
    """Nodes of the heads (named after the torch modules by the exporter): an error there reaches
    the label directly."""
    return [n.name for n in graph.node if "classifier" in n.name or "/lstm" in n.name or "/crf" in n.name]


def quantize_int8(source: Path, target: Path, **overrides) -> dict:
    """``source`` with int8 weights at ``target``; what was quantized (recorded in punctuation.json).
    ``overrides`` change the settings (the benchmark compares them): ``method`` ``dynamic`` is
    ONNX Runtime's dynamic quantization, with ``op_types``, ``per_channel`` and ``reduce_range``."""
    import onnx

    graph = onnx.load(str(source), load_external_data=False).graph
    settings: dict = {
        "method": "blockwise",
        "operator": "MatMulNBits",
        "weight_type": "int8",
        "block_size": 128,
        "accuracy_level": 4,
        "excluded_nodes": sorted(_heads(graph)),
    }
    if overrides.get("method") == "dynamic":
        settings = {
            "method": "dynamic",
            "operator": "MatMulInteger",
            "weight_type": "int8",
            "op_types": ["MatMul"],
            "per_channel": True,
            "reduce_range": False,
            "excluded_nodes": settings["excluded_nodes"],
        }
    settings.update(overrides)
    with _quiet():
        if settings["method"] == "dynamic":
            _quantize_dynamic(source, target, settings)
        else:
            settings["fp32_nodes"] = _quantize_blockwise(source, target, settings)
    return settings


def _quantize_dynamic(source: Path, target: Path, settings: dict) -> None:
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        str(source),
        str(target),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=settings["op_types"],
        per_channel=settings["per_channel"],
        reduce_range=settings["reduce_range"],
        nodes_to_exclude=settings["excluded_nodes"],
        # the fused operators' outputs have no type the quantizer's shape inference knows
        extra_options={"DefaultTensorType": onnx.TensorProto.FLOAT},
    )


def _quantize_blockwise(source: Path, target: Path, settings: dict) -> list[str]:
    """Each MatMul of a constant weight (K, N), outside ``excluded_nodes``, as a ``MatMulNBits`` of
    8 bits: per output column, blocks of ``block_size`` weights along K (fewer where K is not a
    multiple of it: the largest power of two from 16 that divides K), each ``round(w / s) + 128``
    with ``s = max |w| / 127``.  The names of the products left fp32 (K has no such block)."""
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(source))
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    excluded = set(settings["excluded_nodes"])
    nodes, replaced, left = [], set(), []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in weights or node.name in excluded:
            nodes.append(node)
            continue
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        k, n = w.shape if w.ndim == 2 else (0, 0)
        block = settings["block_size"]
        while block >= 16 and k % block:
            block //= 2
        if w.ndim != 2 or block < 16:
            nodes.append(node)
            left.append(node.name)
            continue
        blocks = w.T.reshape(n, k // block, block)
        scale = np.abs(blocks).max(axis=-1) / 127.0
        scale[scale == 0] = 1.0
        codes = (np.clip(np.rint(blocks / scale[..., None]), -127, 127) + 128).astype(np.uint8)
        name = node.input[1]
        graph.initializer.extend(
            [
                numpy_helper.from_array(codes, f"{name}_int8"),
                numpy_helper.from_array(scale.astype(np.float32).reshape(-1), f"{name}_scale"),
            ]
        )
        replaced.add(name)
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], f"{name}_int8", f"{name}_scale"],
                list(node.output),
                name=f"{node.name}_int8",
                domain="com.microsoft",
                K=k,
                N=n,
                bits=8,
                block_size=block,
                accuracy_level=settings["accuracy_level"],
            )
        )
    del graph.node[:]
    graph.node.extend(nodes)
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name not in replaced or t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
    return left


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
            plain, fused = work / "plain.onnx", (work if int8 else folder) / ONNX_FILE
            names = export_graph(model, plain)
            entry = {"file": ONNX_FILE, "opset": OPSET, "outputs": names, "quantization": None}
            entry["fused"] = fuse_graph(plain, fused, model, attention=not int8)
            if int8:
                entry["quantization"] = quantize_int8(fused, folder / ONNX_FILE)
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
