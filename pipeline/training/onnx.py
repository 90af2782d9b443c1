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

With ``int8`` each matrix product of the encoder holds int8 weights, its input quantized at run
time, by what feeds it.  A pretrained encoder's activations are uneven in two ways that one scale
per batch (ONNX Runtime's dynamic quantization) rounds badly: a few channels of a layer norm's
output are tens of times larger than the rest, and in the first layers the ``[CLS]`` token's GELU
output is tens of times any other token's.  So:

- a product fed by a layer norm is first *smoothed* (SmoothQuant, Xiao et al. 2023): the input's
  channel ``j`` is divided by ``s_j = a_j ** alpha / w_j ** (1 - alpha)`` and the weight's row
  ``j`` multiplied by it, ``a_j`` the channel's largest magnitude and ``w_j`` the row's.  The
  product is unchanged in exact arithmetic; the division is one ``Mul`` before it.  ``s_j`` is
  rounded to the nearest power of two, so that the division and the weight's scaling are exact
  and the export is the same on every CPU: the ranges and the power come from kernels that follow
  the instruction set (ONNX Runtime's, numpy's), and differ in their last bits.  ``a_j`` is
  measured without data: the fp32 graph is run on sequences of words drawn (seeded) from the
  tokenizer's vocabulary, since a model's large channels are the same whatever the text.  The
  attention's projections (one fused operator) then take ONNX Runtime's dynamic quantization
  (``QAttention``); the feed-forward's first product takes one scale per token, symmetric;
- a product fed by the attention takes the dynamic quantization, unsmoothed.  These dynamic
  products' weights take 7 bits (``reduce_range``): AVX2 without VNNI multiplies u8 inputs by s8
  weights with ``VPMADDUBSW``, which adds pairs of products in 16 bits and saturates with 8-bit
  weights (255 * 127 * 2 > 32767); with 7 bits the sums are exact there as with VNNI, so the
  labels do not depend on the instruction set;
- any other (the feed-forward's second product, fed by the GELU) takes one scale and zero point
  per token.

The per-token products (:func:`_per_token`) quantize their input to 7 bits and their weights to 8,
which fits the same 16-bit sums; they are ONNX operators around ONNX Runtime's
``MatMulIntegerToFloat``.  The classifier heads stay fp32.  ``benchmarks/bench_inference.py``
compares this with other schemes and with dynamic quantization everywhere.
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


#: what an int8 export is, unless the benchmark overrides it (see the module doc)
INT8 = {
    "method": "mixed",
    "weight_type": "int8",
    "alpha": 0.65,
    "calibration": {"sequences": 32, "seed": 0},
    "block_size": 512,
    "accuracy_level": 4,
    "per_channel": True,
    "reduce_range": True,
    "elsewhere": "per_token",
    "layer_norm": "per_token",
}
#: the operators whose output is a GELU's, and a bound below it: ``min x * Phi(x)`` is -0.16997 (at
#: x = -0.75), and the tanh form's is as near
GELUS = frozenset({"Gelu", "BiasGelu", "FastGelu"})
GELU_MIN = -0.1701
#: the zero point of a GELU's output in 7 bits: the codes below it reach GELU_MIN, which puts a floor
#: of -GELU_MIN / GELU_ZERO under a token's scale (a token's largest output under about 2.5 rounds a
#: little coarser than over its own range; one zero point for all tokens spares a product its own)
GELU_ZERO = 8
#: how :func:`_per_token` quantizes the input of each per-token product of :func:`_products`' plan
PER_TOKEN_MODES = {"smoothed_per_token": "symmetric", "per_token_gelu": "gelu", "per_token_range": "range"}
#: the operators whose output is a layer norm's (an input the dynamic products smooth)
LAYER_NORMS = frozenset(
    {
        "LayerNormalization",
        "SkipLayerNormalization",
        "EmbedLayerNormalization",
        "SimplifiedLayerNormalization",
        "SkipSimplifiedLayerNormalization",
    }
)


def quantize_int8(source: Path, target: Path, tokenizer: Path | None = None, max_len: int = 128, **overrides) -> dict:
    """``source`` (a fused fp32 graph) with int8 weights at ``target``; what was quantized, and how
    (recorded in punctuation.json).  ``tokenizer`` (a ``tokenizer.json``) and ``max_len`` give the
    calibration sequences of the smoothing.  ``overrides`` change :data:`INT8` (the benchmark
    compares them): ``alpha`` 0 smooths nothing; ``method`` ``blockwise`` quantizes every product
    in blocks; ``dynamic`` is ONNX Runtime's dynamic quantization of every product (``op_types``,
    ``per_channel``, ``reduce_range``).  ``elsewhere`` says how the GELU's products are quantized:
    ``per_token`` (the default), ``blockwise``, ``dynamic`` or ``fp32``; ``layer_norm`` how the
    products fed by a layer norm other than the attention's are, once smoothed: ``per_token`` (the
    default) or ``dynamic``."""
    import onnx

    heads = sorted(_heads(onnx.load(str(source), load_external_data=False).graph))
    if overrides.get("method") == "blockwise":
        settings: dict = {"method": "blockwise", "weight_type": "int8", "block_size": 128, "accuracy_level": 4}
    elif overrides.get("method") == "dynamic":
        settings = {"method": "dynamic", "operator": "MatMulInteger", "weight_type": "int8", "op_types": ["MatMul"]}
        settings.update(per_channel=True, reduce_range=False)
    else:
        settings = dict(INT8)
    settings["excluded_nodes"] = heads
    settings.update(overrides)
    with _quiet():
        if settings["method"] == "dynamic":
            _quantize_dynamic(
                source,
                target,
                settings["op_types"],
                excluded=settings["excluded_nodes"],
                per_channel=settings["per_channel"],
                reduce_range=settings["reduce_range"],
            )
        elif settings["method"] == "blockwise":
            settings["fp32_nodes"] = _quantize_blockwise(source, target, settings)
        else:
            _quantize_mixed(source, target, settings, tokenizer, max_len)
    return settings


def _products(graph, excluded, elsewhere: str = "per_token", layer_norm: str = "per_token") -> dict[str, str]:
    """Each matrix product of a constant weight outside ``excluded`` (node name), with how it is
    quantized: ``smoothed`` (an attention's projections, fed by a layer norm: smoothed, then
    dynamic), ``smoothed_per_token`` (another product fed by a layer norm, with ``layer_norm``
    ``per_token``), ``dynamic`` (fed by the attention) or ``elsewhere`` (anything else: the GELU's;
    ``per_token`` there is ``per_token_gelu`` or, fed by another operator, ``per_token_range``)."""
    weights = {t.name for t in graph.initializer}
    producer = {out: node.op_type for node in graph.node for out in node.output}
    plan = {}
    for node in graph.node:
        if node.op_type not in ("MatMul", "Attention") or node.input[1] not in weights or node.name in excluded:
            continue
        feeder = producer.get(node.input[0], "")
        if feeder in LAYER_NORMS:
            per_token = layer_norm == "per_token" and node.op_type == "MatMul"
            plan[node.name] = "smoothed_per_token" if per_token else "smoothed"
        elif feeder == "Attention":
            plan[node.name] = "dynamic"
        elif elsewhere == "per_token":
            plan[node.name] = "per_token_gelu" if feeder in GELUS else "per_token_range"
        else:
            plan[node.name] = elsewhere
        if node.op_type == "Attention" and plan[node.name] not in ("smoothed", "fp32"):
            plan[node.name] = "dynamic"  # an Attention's projections are quantized whole, or not at all
    return plan


def calibration_feeds(tokenizer: Path, max_len: int, sequences: int, seed: int, batch: int = 4) -> list[dict]:
    """Inputs of the graph with no data: ``sequences`` texts of words drawn at random (``seed``)
    from the tokenizer's vocabulary (entries that are letters once stripped of a word-piece mark),
    each tokenized and cut to ``max_len`` tokens, in batches of ``batch``."""
    import numpy as np
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    tok.no_padding()
    tok.enable_truncation(max_len)
    words = sorted({w.lstrip("#\u2581\u0120") for w in tok.get_vocab(with_added_tokens=False)} - {""})
    words = [w for w in words if w.isalpha()]
    rng = np.random.default_rng(seed)
    texts = [" ".join(rng.choice(words, size=max_len)) for _ in range(sequences)]
    # max_len words are at least max_len tokens: each sequence is cut to max_len exactly, unpadded
    ids = np.array([e.ids for e in tok.encode_batch(texts)], np.int64)
    return [
        {"input_ids": ids[start : start + batch], "attention_mask": np.ones_like(ids[start : start + batch])}
        for start in range(0, len(ids), batch)
    ]


def input_ranges(model, names: list[str], feeds: list[dict]) -> dict:
    """The largest magnitude of each channel (last axis) of the tensors ``names`` of ``model`` (an
    ONNX ModelProto, left unchanged) over the real tokens of ``feeds``."""
    import copy

    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import helper

    probe = copy.deepcopy(model)
    for name in names:
        probe.graph.output.append(helper.make_tensor_value_info(name, onnx.TensorProto.FLOAT, None))
    options = ort.SessionOptions()
    options.log_severity_level = 3
    # the same sums in the same order on any machine of one instruction set (the smoothing rounds
    # away what another set changes in the last bits)
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(probe.SerializeToString(), options, providers=["CPUExecutionProvider"])
    ranges: dict = {}
    for feed in feeds:
        real = feed["attention_mask"].astype(bool)
        for name, value in zip(names, session.run(names, feed), strict=True):
            largest = np.abs(value[real]).max(axis=0)
            ranges[name] = np.maximum(ranges[name], largest) if name in ranges else largest
    return ranges


def nearest_power_of_two(x):
    """Each of ``x`` (positive) as the power of two nearest to it on a log scale, as float32: from
    its float64 exponent and a comparison of its mantissa with sqrt(1/2), both exact."""
    import numpy as np

    mantissa, exponent = np.frexp(np.asarray(x, np.float64))  # x = mantissa * 2**exponent, mantissa in [1/2, 1)
    return np.ldexp(1.0, exponent - (mantissa < np.sqrt(0.5))).astype(np.float32)


def _smooth(model, nodes: list[str], ranges: dict, alpha: float) -> None:
    """The products ``nodes`` of ``model`` smoothed in place (see the module doc)."""
    import numpy as np
    from onnx import helper, numpy_helper

    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    chosen, rebuilt = set(nodes), []
    for node in graph.node:
        if node.name in chosen:
            w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
            a = np.maximum(ranges[node.input[0]].astype(np.float64), 1e-5)
            s = nearest_power_of_two(a**alpha / np.maximum(np.abs(w).max(axis=1), 1e-5) ** (1 - alpha))
            weights[node.input[1]].CopyFrom(numpy_helper.from_array(w * s[:, None], node.input[1]))
            divisor = f"{node.name}_smoothing"
            graph.initializer.append(numpy_helper.from_array((1 / s).astype(np.float32), divisor))
            smoothed = f"{node.name}_smoothed_input"
            rebuilt.append(helper.make_node("Mul", [node.input[0], divisor], [smoothed], name=divisor))
            node.input[0] = smoothed
        rebuilt.append(node)
    del graph.node[:]
    graph.node.extend(rebuilt)


def _per_token(model, nodes: dict[str, str]) -> None:
    """The products ``nodes`` of ``model`` (``x @ W``, ``W`` a constant ``(K, N)``) rewritten in place
    as int8 products whose input takes one scale per token (row), computed at run time, as each
    value says: ``symmetric``, ``gelu`` (a GELU's output) or ``range``.  The input takes 7 bits and
    the weight 8 (per output column): AVX2 without VNNI sums pairs of u8 * s8 products in 16 bits,
    where 127 * 127 * 2 still fits, so the products are exact on any x86 CPU.  Symmetric:
    ``q = round(x / s) + 64`` with ``s = max |x| / 63``.  GELU: ``q = round(x / s) + GELU_ZERO``
    with ``s = max(max x / (127 - GELU_ZERO), -GELU_MIN / GELU_ZERO)``.  Both hand their one zero
    point to ``MatMulIntegerToFloat``, and ``y = s * (q @ Wq) * w``.  Range: over the row's
    ``[min(x, 0), max(x, 0)]``, ``q = round(x / s) + z`` with a zero point per row, taken off after
    the product: ``y = s * ((q @ Wq) * w - z * sum_k Wq * w)``."""
    if not nodes:
        return
    import numpy as np
    from onnx import numpy_helper

    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    consts = {
        "per_token_zero": np.array(0.0, np.float32),
        "per_token_one": np.array(1.0, np.float32),
        "per_token_tiny": np.array(1e-12, np.float32),
        "per_token_steps": np.array(127.0, np.float32),
        "per_token_half_steps": np.array(63.0, np.float32),
        "per_token_middle": np.array(64, np.uint8),
        "per_token_gelu_zero": np.array(GELU_ZERO, np.uint8),
        "per_token_gelu_steps": np.array(127 - GELU_ZERO, np.float32),
        "per_token_gelu_step": np.array(-GELU_MIN / GELU_ZERO, np.float32),
        "per_token_last": np.array([-1], np.int64),
        "per_token_begin": np.array([0], np.int64),
    }
    graph.initializer.extend(numpy_helper.from_array(v, k) for k, v in consts.items())
    rebuilt, replaced = [], set(consts)
    for node in graph.node:
        if node.name not in nodes:
            rebuilt.append(node)
            continue
        p = node.name
        w = numpy_helper.to_array(weights[node.input[1]]).astype(np.float32)
        replaced.add(node.input[1])
        w_scale = np.abs(w).max(axis=0) / 127
        w_scale[w_scale == 0] = 1.0
        wq = np.clip(np.rint(w / w_scale), -127, 127).astype(np.int8)
        graph.initializer.extend(
            [
                numpy_helper.from_array(wq, f"{p}_wq"),
                numpy_helper.from_array(w_scale.astype(np.float32), f"{p}_wscale"),
                numpy_helper.from_array((wq.astype(np.int64).sum(axis=0) * w_scale).astype(np.float32), f"{p}_wsum"),
                numpy_helper.from_array(np.array([-1, w.shape[0]], np.int64), f"{p}_rows"),
                numpy_helper.from_array(np.array([w.shape[1]], np.int64), f"{p}_cols"),
            ]
        )
        rebuilt += _per_token_nodes(p, node.input[0], node.output[0], nodes[p])
    del graph.node[:]
    graph.node.extend(rebuilt)
    _drop_replaced(graph, replaced)  # and the constants no product of this graph reads


def _drop_replaced(graph, names: set[str]) -> None:
    """The initializers ``names`` (the weights a rewrite replaced) removed from ``graph`` where no
    node reads them any more; every other initializer kept."""
    used = {name for node in graph.node for name in node.input}
    kept = [t for t in graph.initializer if t.name not in names or t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)


def _per_token_nodes(p: str, x: str, y: str, mode: str) -> list:
    """The nodes of :func:`_per_token`'s product ``p`` from ``x`` to ``y``, its input quantized as
    ``mode`` says."""
    from onnx import TensorProto
    from onnx import helper as h

    def mk(op, inputs, name, **attrs):
        return h.make_node(op, inputs, [f"{p}_{name}"], name=f"{p}_{name}", **attrs)

    nodes = [mk("Reshape", [x, f"{p}_rows"], "x2")]
    if mode == "range":
        nodes += [
            mk("ReduceMax", [f"{p}_x2"], "hi0", axes=[1], keepdims=1),
            mk("Max", [f"{p}_hi0", "per_token_zero"], "hi"),
            mk("ReduceMin", [f"{p}_x2"], "lo0", axes=[1], keepdims=1),
            mk("Min", [f"{p}_lo0", "per_token_zero"], "lo"),
            mk("Sub", [f"{p}_hi", f"{p}_lo"], "span"),
            mk("Div", [f"{p}_span", "per_token_steps"], "s0"),
            mk("Max", [f"{p}_s0", "per_token_tiny"], "s"),
            mk("Div", [f"{p}_lo", f"{p}_s"], "nz"),
            mk("Neg", [f"{p}_nz"], "z0"),
            mk("Round", [f"{p}_z0"], "z"),
            mk("Reshape", [f"{p}_s", "per_token_last"], "s1"),
            mk("Reshape", [f"{p}_z", "per_token_last"], "z1f"),
            mk("Cast", [f"{p}_z1f"], "z1", to=TensorProto.UINT8),
        ]
    else:
        # one zero point for every row (MatMulIntegerToFloat subtracts it in its own kernel): the
        # middle for a symmetric input; for a GELU's, a few steps below zero, enough to reach
        # GELU_MIN on every row (a floor on the row's scale)
        if mode == "symmetric":
            nodes += [
                mk("ReduceMax", [f"{p}_x2"], "hi", axes=[1], keepdims=1),
                mk("ReduceMin", [f"{p}_x2"], "lo", axes=[1], keepdims=1),
                mk("Neg", [f"{p}_lo"], "nlo"),
                mk("Max", [f"{p}_hi", f"{p}_nlo"], "big"),
                mk("Div", [f"{p}_big", "per_token_half_steps"], "s0"),
                mk("Max", [f"{p}_s0", "per_token_tiny"], "s"),
            ]
            zero = "per_token_middle"
        else:
            nodes += [
                mk("ReduceMax", [f"{p}_x2"], "hi", axes=[1], keepdims=1),
                mk("Div", [f"{p}_hi", "per_token_gelu_steps"], "s0"),
                mk("Max", [f"{p}_s0", "per_token_gelu_step"], "s"),
            ]
            zero = "per_token_gelu_zero"
        nodes += [
            mk("Reshape", [f"{p}_s", "per_token_last"], "s1"),
            mk("Shape", [f"{p}_s1"], "rows_n"),
            mk("Expand", [zero, f"{p}_rows_n"], "z1"),
        ]
    nodes.append(mk("QuantizeLinear", [f"{p}_x2", f"{p}_s1", f"{p}_z1"], "q", axis=0))
    product = [f"{p}_q", f"{p}_wq", "per_token_one", f"{p}_wscale"]
    if mode == "range":
        nodes += [
            mk("MatMulIntegerToFloat", product, "int8", domain="com.microsoft"),
            mk("Mul", [f"{p}_z", f"{p}_wsum"], "shift"),
            mk("Sub", [f"{p}_int8", f"{p}_shift"], "centred"),
            mk("Mul", [f"{p}_centred", f"{p}_s"], "y2"),
        ]
    else:
        nodes += [
            mk("MatMulIntegerToFloat", [*product, zero], "int8", domain="com.microsoft"),
            mk("Mul", [f"{p}_int8", f"{p}_s"], "y2"),
        ]
    nodes += [
        mk("Shape", [x], "shape"),
        mk("Slice", [f"{p}_shape", "per_token_begin", "per_token_last"], "lead"),
        mk("Concat", [f"{p}_lead", f"{p}_cols"], "yshape", axis=0),
        h.make_node("Reshape", [f"{p}_y2", f"{p}_yshape"], [y], name=f"{p}_y"),
    ]
    return nodes


def _quantize_mixed(source: Path, target: Path, settings: dict, tokenizer: Path | None, max_len: int) -> None:
    import onnx

    model = onnx.load(str(source))
    plan = _products(model.graph, set(settings["excluded_nodes"]), settings["elsewhere"], settings["layer_norm"])
    smoothed = sorted(n for n, how in plan.items() if how.startswith("smoothed"))
    if settings["alpha"] and smoothed:
        if tokenizer is None:
            raise ValueError("smoothing needs the tokenizer of its calibration sequences")
        inputs = {n.name: n.input[0] for n in model.graph.node if n.input}
        calibration = settings["calibration"]
        feeds = calibration_feeds(tokenizer, max_len, calibration["sequences"], calibration["seed"])
        ranges = input_ranges(model, sorted({inputs[n] for n in smoothed}), feeds)
        _smooth(model, smoothed, ranges, settings["alpha"])
    else:
        smoothed = []
    modes = {n: PER_TOKEN_MODES[how] for n, how in plan.items() if how in PER_TOKEN_MODES}
    settings["per_token_nodes"] = sorted(modes)
    _per_token(model, modes)
    dynamic = sorted(n for n, how in plan.items() if how in ("smoothed", "dynamic"))
    settings.update(smoothed_nodes=smoothed, dynamic_nodes=dynamic)
    settings["blockwise_nodes"] = sorted(n for n, how in plan.items() if how == "blockwise")
    dynamic_out = target.with_name(target.name + ".dynamic.onnx")
    try:
        _quantize_dynamic(
            model,
            dynamic_out,
            ["MatMul", "Attention"],
            only=dynamic,
            reduce_range=settings["reduce_range"],
            per_channel=settings["per_channel"],
        )
        kept = sorted(n for n, how in plan.items() if how == "fp32")
        blockwise = {**settings, "excluded_nodes": settings["excluded_nodes"] + kept}
        settings["fp32_nodes"] = sorted(kept + _quantize_blockwise(dynamic_out, target, blockwise))
    finally:
        dynamic_out.unlink(missing_ok=True)


def _quantize_dynamic(
    model, target: Path, op_types: list[str], *, excluded=(), only=None, per_channel=True, reduce_range=False
) -> None:
    """ONNX Runtime's dynamic quantization of ``model`` (a path or a ModelProto) into ``target``:
    the products of ``op_types``, ``only`` those nodes where given, none of ``excluded``."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    quantize_dynamic(
        model if isinstance(model, onnx.ModelProto) else str(model),
        str(target),
        weight_type=QuantType.QInt8,
        op_types_to_quantize=op_types,
        per_channel=per_channel,
        reduce_range=reduce_range,
        nodes_to_quantize=list(only) if only is not None else None,
        nodes_to_exclude=list(excluded),
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
    _drop_replaced(graph, replaced)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    onnx.save(model, str(target))
    return left


def export_model(model_dir, out, fmt: str = "onnx", int8: bool = False) -> dict:
    """Export the checkpoint folder ``model_dir`` to the folder ``out`` (see the module doc); the
    ``onnx`` entry written into its punctuation.json is returned."""
    from pipeline.training import model_folder
    from pipeline.training.model import load_checkpoint
    from pipeline.training.model_folder import META, ONNX_FILE
    from pipeline.training.punctuator import crf_arrays

    if fmt not in FORMATS:
        raise ParamsError(f"--format {fmt!r}: choose one of {', '.join(FORMATS)}")
    if location.is_url(str(out)) or location.is_url(str(model_dir)):
        raise ParamsError(f"export-model: {out if location.is_url(str(out)) else model_dir}: local folders only")
    model_dir, out = Path(model_dir), Path(out)
    checked = model_folder.read(model_dir, checkpoint=True)
    model, _, meta = load_checkpoint(checked)
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
            entry.update(model_folder.export_record(checked))  # what loading checks the folder against
            entry["fused"] = fuse_graph(plain, fused, model)
            if int8:
                tokenizer = model_dir / "tokenizer" / "tokenizer.json"
                max_len = int((meta.get("sequence") or {}).get("max_len", 128))
                entry["quantization"] = quantize_int8(fused, folder / ONNX_FILE, tokenizer, max_len)
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
