"""export-model: a checkpoint (with its case head) to ONNX and int8 ONNX, run by ONNX Runtime with the
same labels as torch on real text; punctuate on such a folder imports neither torch nor transformers;
per-word confidences in JSONL; one-line refusals and outputs replaced only where the tool wrote them."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest
from support.training import TINY_CONFIG

from pipeline import cli
from pipeline.training.punctuator import Punctuator

HEADS = ("linear", "bilstm_crf", "layer_attention")


@pytest.fixture(scope="module")
def checkpoints(tmp_path_factory):
    """Tiny checkpoints (MiniLM's tokenizer, seeded weights, a case head) for three of the heads."""
    from pipeline.datasets.pretrained import load_tokenizer
    from pipeline.training.model import build_model, save_checkpoint

    root = tmp_path_factory.mktemp("models")
    tokenizer = load_tokenizer("packaged:minilm")
    for head in HEADS:
        params = {"config": TINY_CONFIG, "head": head, "capitalization": {"weight": 0.5}, "seed": 3}
        model = build_model(params, tokenizer)
        save_checkpoint(
            model, tokenizer, params, root / head, sequence={"max_len": 64}, mixed_case={"iphone": "iPhone"}
        )
    return root


@pytest.fixture(scope="module")
def exported(checkpoints):
    for head in HEADS:
        assert (
            cli.main(
                [
                    "export-model",
                    "--model",
                    str(checkpoints / head),
                    "--format",
                    "onnx",
                    "--out",
                    str(checkpoints / f"{head}-onnx"),
                ]
            )
            == 0
        )
    args = ["export-model", "--model", str(checkpoints / "linear"), "--format", "onnx", "--int8"]
    assert cli.main([*args, "--out", str(checkpoints / "linear-int8")]) == 0
    return checkpoints


@pytest.fixture(scope="module")
def talk(shared):
    """About 3,000 words of a real TED talk transcript (IWSLT dev2012), unpunctuated."""
    lines = (shared / "iwslt_en" / "dev2012.tsv").read_text(encoding="utf-8").splitlines()[:3000]
    return " ".join(line.split("\t")[0] for line in lines)


@pytest.mark.parametrize("head", HEADS)
def test_onnx_gives_the_labels_of_torch(exported, talk, head):
    torch_p = Punctuator.load(exported / head, window=60, overlap=15)
    onnx_p = Punctuator.load(exported / f"{head}-onnx", window=60, overlap=15)
    words = onnx_p.words_of(talk)
    assert len(words) > 2500 and words == torch_p.words_of(talk)
    a, b = torch_p.predict(words), onnx_p.predict(words)
    assert "onnxruntime" in onnx_p.device and "onnxruntime" not in torch_p.device
    assert np.mean(np.array(a.labels) == np.array(b.labels)) >= 0.999
    assert np.mean(np.array(a.cases) == np.array(b.cases)) >= 0.999
    assert np.allclose(a.probabilities, b.probabilities, atol=1e-4)
    assert np.allclose(a.case_probabilities, b.case_probabilities, atol=1e-4)


def test_the_exported_folder_carries_tokenizer_labels_and_lexicon(exported):
    folder = exported / "linear-onnx"
    meta = json.loads((folder / "punctuation.json").read_text())
    assert meta["labels"] == ["O", "COMMA", "PERIOD", "QUESTION"] and meta["case_labels"] == ["O", "U", "A", "M"]
    assert meta["onnx"]["outputs"] == ["logits", "case_logits"] and meta["onnx"]["quantization"] is None
    assert meta["sequence"]["max_len"] == 64
    assert (folder / "tokenizer" / "tokenizer.json").is_file()
    assert json.loads((folder / "mixed_case.json").read_text()) == {"iphone": "iPhone"}
    assert "crf" in json.loads((exported / "bilstm_crf-onnx" / "punctuation.json").read_text())
    # no staging or scratch folder left beside the output
    assert sorted(p.name for p in exported.iterdir() if p.name.startswith(".")) == []


def test_int8_quantizes_the_encoder_only_and_keeps_the_labels(exported, talk):
    import onnx
    from onnx import numpy_helper

    folder = exported / "linear-int8"
    entry = json.loads((folder / "punctuation.json").read_text())["onnx"]
    settings = entry["quantization"]
    assert settings["weight_type"] == "int8" and settings["method"] == "mixed" and settings["fp32_nodes"] == []
    assert any("classifier" in n for n in settings["excluded_nodes"])
    graph = onnx.load(str(folder / "model.onnx")).graph
    ops = [n.op_type for n in graph.node]
    # per layer: the attention's projections (fed by a layer norm) smoothed and dynamic, the
    # feed-forward's first product smoothed and per token, the attention's output product dynamic,
    # the feed-forward's second product (fed by the GELU) per token
    assert ops.count("QAttention") == 2 and "Attention" not in ops and "SkipLayerNormalization" in ops
    assert len(settings["smoothed_nodes"]) == 4 and len(settings["dynamic_nodes"]) == 4
    assert all("intermediate" in n or n.startswith("Attention") for n in settings["smoothed_nodes"])
    assert all("attention/output" in n or n.startswith("Attention") for n in settings["dynamic_nodes"])
    assert len(settings["per_token_nodes"]) == 4 and settings["blockwise_nodes"] == []
    assert all("/intermediate/" in n or "/output/dense" in n for n in settings["per_token_nodes"])
    assert ops.count("MatMulInteger") == 2 and ops.count("MatMulIntegerToFloat") == 4
    smoothing = [n for n in graph.node if n.op_type == "Mul" and n.name.endswith("_smoothing")]
    assert sorted(n.name.removesuffix("_smoothing") for n in smoothing) == settings["smoothed_nodes"]
    assert "MatMulNBits" not in ops
    heads = [n for n in graph.node if "classifier" in n.name]
    assert heads and all(n.op_type in ("MatMul", "Gemm", "Add") for n in heads)  # left in fp32
    # the dynamic products' weights take 7 bits: AVX2 without VNNI sums pairs of u8 * s8 products in
    # 16 bits (VPMADDUBSW), where 255 * 64 * 2 fits and 255 * 127 * 2 saturates (7 bits: |w| <= 64);
    # the per-token products' weights take 8 bits and their inputs 7 (127 * 127 * 2 fits)
    assert settings["reduce_range"] is True
    signed = [t for t in graph.initializer if t.data_type == onnx.TensorProto.INT8]
    assert len(signed) >= 8
    for tensor in signed:
        bound = 127 if tensor.name.endswith("_wq") else 64
        values = numpy_helper.to_array(tensor)
        assert np.abs(values.astype(np.int32)).max() <= bound, tensor.name
    torch_p = Punctuator.load(exported / "linear", window=60, overlap=15)
    int8_p = Punctuator.load(folder, window=60, overlap=15)
    words = torch_p.words_of(talk)
    a, b = torch_p.predict(words), int8_p.predict(words)
    assert np.mean(np.array(a.labels) == np.array(b.labels)) >= 0.99
    assert np.abs(a.probabilities - b.probabilities).max() < 0.05


def test_punctuate_on_onnx_imports_neither_torch_nor_transformers(exported, tmp_path):
    text = tmp_path / "talk.txt"
    text.write_text("so i bought an iphone and then i went home how are you\n")
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
from pipeline import cli
rc = cli.main(["punctuate", "--model", {str(exported / "linear-int8")!r}, {str(text)!r}])
loaded = sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "transformers"))
print("loaded", loaded, file=sys.stderr)
sys.exit(rc)
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "loaded []" in proc.stderr and "words/s) on cpu (onnxruntime)" in proc.stderr
    words = proc.stdout.split()
    assert [w.rstrip(",.?").lower() for w in words] == text.read_text().split()


def test_jsonl_gives_each_words_confidence_and_distribution(exported, tmp_path, capsys):
    a, b = tmp_path / "a.txt", tmp_path / "b.txt"
    a.write_text("hello there how are you\n")
    b.write_text("fine thanks\n")
    assert cli.main(["punctuate", "--model", str(exported / "linear-onnx"), "--format", "jsonl", str(a), str(b)]) == 0
    lines = capsys.readouterr().out.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["input"] for r in records] == [str(a), str(b)]
    assert [len(r["words"]) for r in records] == [5, 2]
    for word in records[0]["words"]:
        probs = word["probabilities"]
        assert set(probs) == {"O", "COMMA", "PERIOD", "QUESTION"} and abs(sum(probs.values()) - 1) < 1e-3
        assert word["label"] == max(probs, key=probs.get) and word["confidence"] == probs[word["label"]]
        assert word["case"] in ("O", "U", "A", "M") and 0 < word["case_confidence"] <= 1
    assert records[0]["text"].split()[0].rstrip(",.?").lower() == "hello"


def run(*args):
    proc = subprocess.run([sys.executable, "-m", "pipeline", *map(str, args)], capture_output=True, text=True)
    return proc.returncode, proc.stderr.strip().splitlines()


def test_refusals_are_one_line_and_foreign_folders_are_kept(exported, tmp_path):
    foreign = tmp_path / "mine"
    foreign.mkdir()
    (foreign / "notes.txt").write_text("keep")
    rc, err = run("export-model", "--model", exported / "linear", "--format", "onnx", "--out", foreign)
    assert rc == 2 and len(err) == 1 and err[0].startswith("error: ") and "not replaced" in err[0]
    assert (foreign / "notes.txt").read_text() == "keep" and len(list(foreign.iterdir())) == 1
    rc, err = run("export-model", "--model", tmp_path / "none", "--format", "onnx", "--out", tmp_path / "x")
    assert rc == 2 and len(err) == 1 and "does not exist" in err[0] and not (tmp_path / "x").exists()
    broken = tmp_path / "broken"
    import shutil

    shutil.copytree(exported / "linear-onnx", broken)
    (broken / "model.onnx").write_bytes(b"not a graph")
    rc, err = run("punctuate", "--model", broken, "--format", "jsonl")
    assert rc == 2 and len(err) == 1 and "model.onnx: cannot load the ONNX model" in err[0]
    meta = json.loads((broken / "punctuation.json").read_text())
    (broken / "punctuation.json").write_text(json.dumps({k: v for k, v in meta.items() if k != "labels"}))
    rc, err = run("punctuate", "--model", broken)
    assert rc == 2 and len(err) == 1 and "punctuation.json: not an exported model's description (no labels)" in err[0]
    rc, err = run("punctuate", "--model", exported / "linear-onnx", "--device", "cuda")
    assert rc == 2 and len(err) == 1 and "runs on the CPU" in err[0]


def test_a_second_export_replaces_the_first(exported, tmp_path):
    out = tmp_path / "again"
    for int8 in (False, True):
        args = ["export-model", "--model", str(exported / "linear"), "--format", "onnx", "--out", str(out)]
        assert cli.main(args + (["--int8"] if int8 else [])) == 0
        meta = json.loads((out / "punctuation.json").read_text())
        assert (meta["onnx"]["quantization"] is not None) == int8
    assert sorted(p.name for p in tmp_path.iterdir()) == ["again"]
    # the int8 export again is byte for byte the first: the calibration is seeded and single-threaded
    first = exported / "linear-int8"
    assert (out / "model.onnx").read_bytes() == (first / "model.onnx").read_bytes()
    assert (out / "punctuation.json").read_bytes() == (first / "punctuation.json").read_bytes()


def test_export_model_has_help(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["export-model", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    assert "usage: punct-corpora export-model" in out and "--int8" in out


def test_export_model_says_one_line(checkpoints, tmp_path):
    """The optimizer's and quantizer's own progress messages stay out of the command's output."""
    argv = ["export-model", "--model", str(checkpoints / "linear"), "--format", "onnx", "--int8"]
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", *argv, "--out", str(tmp_path / "int8")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    lines = (proc.stdout + proc.stderr).splitlines()
    assert len(lines) == 1 and lines[0].startswith("export-model: "), lines


def test_smoothing_keeps_the_fp32_graphs_outputs(exported, tmp_path):
    """The smoothing divides a product's input channels and multiplies its weight's rows by the same
    factors: in fp32 the graph gives what it gave; the calibration is seeded and holds real words."""
    import onnx
    import onnxruntime as ort

    from pipeline.training.onnx import INT8, _heads, _products, _smooth, calibration_feeds, input_ranges

    folder = exported / "linear-onnx"
    tokenizer = folder / "tokenizer" / "tokenizer.json"
    feeds = calibration_feeds(tokenizer, 64, sequences=6, seed=0)
    again = calibration_feeds(tokenizer, 64, sequences=6, seed=0)
    assert all((a["input_ids"] == b["input_ids"]).all() for a, b in zip(feeds, again, strict=True))
    assert [f["input_ids"].shape for f in feeds] == [(4, 64), (2, 64)]
    assert not (feeds[0]["input_ids"] == 100).any()  # no [UNK]: every word is the vocabulary's
    model = onnx.load(str(folder / "model.onnx"))
    plan = _products(model.graph, set(_heads(model.graph)))
    smoothed = sorted(n for n, how in plan.items() if how.startswith("smoothed"))
    assert len(smoothed) == 4  # per layer: the attention and the feed-forward's first product
    inputs = {n.name: n.input[0] for n in model.graph.node if n.input}
    ranges = input_ranges(model, sorted({inputs[n] for n in smoothed}), feeds)
    assert all(r.shape == (32,) and (r > 0).all() for r in ranges.values())
    _smooth(model, smoothed, ranges, INT8["alpha"])
    before = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    after = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    feed = calibration_feeds(tokenizer, 64, sequences=3, seed=1)[0]
    for a, b in zip(before.run(None, feed), after.run(None, feed), strict=True):
        assert np.allclose(a, b, atol=1e-4), np.abs(a - b).max()


def test_smoothing_is_the_same_whatever_the_last_bits_of_its_calibration(exported):
    """Another instruction set sums the calibration in another order (ONNX Runtime's kernels) and
    takes powers with other loops (numpy's): the smoothing factors are powers of two, so ranges a
    few units in the last place apart give the same graph, byte for byte."""
    import onnx

    from pipeline.training.onnx import INT8, _heads, _products, _smooth, calibration_feeds, input_ranges

    folder = exported / "linear-onnx"
    model = onnx.load(str(folder / "model.onnx"))
    plan = _products(model.graph, set(_heads(model.graph)))
    smoothed = sorted(n for n, how in plan.items() if how.startswith("smoothed"))
    inputs = {n.name: n.input[0] for n in model.graph.node if n.input}
    feeds = calibration_feeds(folder / "tokenizer" / "tokenizer.json", 64, sequences=6, seed=0)
    ranges = input_ranges(model, sorted({inputs[n] for n in smoothed}), feeds)
    graphs = []
    for ulps in (0, 3, -3):
        moved = {}
        for name, r in ranges.items():
            for _ in range(abs(ulps)):
                r = np.nextafter(r, np.float32(np.inf if ulps > 0 else 0))
            moved[name] = r
        assert ulps == 0 or all((moved[k] != ranges[k]).all() for k in ranges)
        copy = onnx.ModelProto.FromString(model.SerializeToString())
        _smooth(copy, smoothed, moved, INT8["alpha"])
        graphs.append(copy.SerializeToString())
    assert graphs[1] == graphs[0] and graphs[2] == graphs[0]
    factors = [onnx.numpy_helper.to_array(t) for t in copy.graph.initializer if t.name.endswith("_smoothing")]
    assert len(factors) == len(smoothed)
    for divisor in factors:  # 1 / s, a power of two: a mantissa of exactly 1/2
        assert (np.frexp(divisor)[0] == 0.5).all() and len(np.unique(divisor)) > 1


def test_the_int8_export_is_the_same_without_numpys_simd_loops(exported, tmp_path):
    """numpy without the loops it picks for this CPU (AVX2, AVX-512: ``NPY_DISABLE_CPU_FEATURES``)
    writes the same int8 graph as with them."""
    from numpy._core._multiarray_umath import __cpu_dispatch__

    out = tmp_path / "int8"
    argv = ["export-model", "--model", str(exported / "linear"), "--format", "onnx", "--int8", "--out", str(out)]
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": " ".join(__cpu_dispatch__)}
    proc = subprocess.run([sys.executable, "-m", "pipeline", *argv], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert (out / "model.onnx").read_bytes() == (exported / "linear-int8" / "model.onnx").read_bytes()


def _one_product(k: int, n: int, seed: int):
    """An ONNX graph of one product ``x @ W``, ``W`` (k, n) drawn (seeded), ``x`` of any batch."""
    from onnx import TensorProto, helper, numpy_helper

    w = (np.random.default_rng(seed).standard_normal((k, n)) * 0.05).astype(np.float32)
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"], name="product")],
        "one_product",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["batch", "tokens", k])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["batch", "tokens", n])],
        [numpy_helper.from_array(w, "w")],
    )
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model, w


@pytest.mark.parametrize("mode", ["symmetric", "range", "gelu"])
def test_a_per_token_product_is_within_a_step_of_each_tokens_own_scale(mode):
    """Each token's row of ``x @ W`` per token is within the rounding of that row's own 7-bit scale
    and the weights' 8-bit one, whatever the other rows hold (a row a hundred times larger, as the
    first token's GELU output in a pretrained encoder); the codes fit AVX2's 16-bit pair sums."""
    import math

    import onnx
    import onnxruntime as ort
    from onnx import helper

    from pipeline.training.onnx import GELU_MIN, GELU_ZERO, _per_token

    model, w = _one_product(96, 40, seed=3)
    _per_token(model, {"product": mode})
    model.graph.output.append(helper.make_tensor_value_info("product_q", onnx.TensorProto.UINT8, None))
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    x = np.random.default_rng(4).standard_normal((2, 7, 96)).astype(np.float32)
    x[0, 0] *= 100
    if mode == "gelu":  # a GELU's output
        x = (x * 0.5 * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))).astype(np.float32)
        assert x.min() >= GELU_MIN
    x[1, 3] = 0.0  # a row of zeros: its scale floored, its output (near) zero
    y, q = session.run(None, {"x": x})
    assert y.shape == (2, 7, 40) and q.dtype == np.uint8 and int(q.max()) <= 127
    w_step = np.abs(w).max(axis=0) / 127
    for b in range(2):
        for t in range(7):
            row = x[b, t]
            if mode == "symmetric":
                step = np.abs(row).max() / 63
            elif mode == "gelu":
                step = max(row.max() / (127 - GELU_ZERO), -GELU_MIN / GELU_ZERO)
            else:
                step = (max(row.max(), 0) - min(row.min(), 0)) / 127
            # half a step of the input's per element, plus half a step of the weights'; the zero
            # point's rounding moves the codes by at most half a step more
            bound = step * np.abs(w).sum(axis=0) + np.abs(row).sum() * w_step / 2
            assert np.all(np.abs(y[b, t] - row @ w) <= bound + 1e-5), (b, t)
    assert np.abs(y[1, 3]).max() < 1e-6
    # the large row did not coarsen the others: a row's error is far below what one scale gives
    assert np.abs(y[0, 1:] - x[0, 1:] @ w).max() < 0.05 * np.abs(x[0, 0]).max() / 127 * np.abs(w).sum(axis=0).max()


def test_per_token_products_run_on_one_and_two_token_inputs(exported, tmp_path):
    """The shipped int8 graph runs on sequences of one and two tokens and keeps the fp32 graph's
    labels on longer ones."""
    import onnxruntime as ort

    from pipeline.training.onnx import calibration_feeds, quantize_int8

    folder = exported / "linear-onnx"
    tokenizer = folder / "tokenizer" / "tokenizer.json"
    settings = quantize_int8(folder / "model.onnx", tmp_path / "int8.onnx", tokenizer, 64)
    assert len(settings["per_token_nodes"]) == 4
    session = ort.InferenceSession(str(tmp_path / "int8.onnx"), providers=["CPUExecutionProvider"])
    reference = ort.InferenceSession(str(folder / "model.onnx"), providers=["CPUExecutionProvider"])
    feed = calibration_feeds(tokenizer, 64, sequences=3, seed=1)[0]
    for length in (1, 2, 64):
        short = {k: v[:, :length] for k, v in feed.items()}
        got, want = session.run(None, short)[0], reference.run(None, short)[0]
        assert got.shape == want.shape == (len(short["input_ids"]), length, want.shape[-1])
        assert (got.argmax(-1) == want.argmax(-1)).mean() >= 0.9
