"""Training throughput of the project's loop (``pipeline.training.loop``) against a minimal plain-PyTorch loop at the
same batch, timed in the same run, warm-up steps excluded; and ``punctuate`` throughput (words/s).

Models: an xlm-roberta-large-shaped encoder built from a config (24 layers, hidden 1024) and the packaged
MiniLM-L6, in bf16 (autocast over fp32 weights) and fp32.  Per model and precision:

* ``plain``: encoder + linear head, bf16 autocast, fused AdamW, batches padded and on the GPU beforehand;
* ``project``: ``pipeline.training.loop.train`` at the same batch size (data from Parquet through the loader);
* ``budget``: the project's loop with token-budget batches (``max_tokens``).

Tokens are non-padding tokens.  Data: synthetic sequences, half of them ``max_len`` long (chunks), half
uniform in [16, max_len] (document ends, segments).  Targets on an H100 (``--check`` exits 1 when one is
missed): project >= 0.95x plain at the same batch (MiniLM >= 0.9x); XLM-R-large bf16 with the token
budget >= 110 k tokens/s; bf16 >= 1.8x fp32 on XLM-R-large; MiniLM bf16 not slower than fp32.

    python benchmarks/bench_train_gpu.py                 # CUDA: both models, bf16 and fp32
    python benchmarks/bench_train_gpu.py --cpu           # CI: a tiny model on the CPU, no targets

Where the project is not installed (a GPU machine with a copy of the tree): ``PYTHONPATH=. python ...``.
"""

from __future__ import annotations

import argparse
import json
import logging
import math
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import torch
from _common import save_results

from pipeline.datasets.sequences import IGNORE, SEQUENCE_SCHEMA

XLMR_LARGE = {
    "model_type": "xlm-roberta",
    "hidden_size": 1024,
    "num_hidden_layers": 24,
    "num_attention_heads": 16,
    "intermediate_size": 4096,
    "max_position_embeddings": 514,
    "vocab_size": 250_002,
    "pad_token_id": 1,
    "type_vocab_size": 1,
}
TINY = {
    "model_type": "bert",
    "hidden_size": 64,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 128,
    "max_position_embeddings": 128,
    "vocab_size": 30_522,
    "pad_token_id": 0,
}


def model_params(name: str) -> dict:
    if name == "minilm":
        return {"pretrained": "packaged:minilm"}
    return {"config": {"xlmr-large": XLMR_LARGE, "tiny": TINY}[name]}


def pad_id_of(name: str) -> int:
    return 1 if name == "xlmr-large" else 0  # MiniLM's BERT vocabulary pads with 0


class SyntheticTokenizer:
    """What training reads of a tokenizer, for sequences of random ids: the padding id and the
    vocabulary's size (that of the model's embeddings, which the ids are drawn below)."""

    def __init__(self, name: str):
        self.pad_token_id = pad_id_of(name)
        self.size = XLMR_LARGE["vocab_size"] if name == "xlmr-large" else TINY["vocab_size"]

    def __len__(self) -> int:
        return self.size


def synthetic_dataset(folder: Path, rows: int, max_len: int, seed: int = 0) -> Path:
    """A sequences.parquet of random token ids and labels: half full-length, half shorter."""
    rng = np.random.default_rng(seed)
    lengths = np.where(rng.random(rows) < 0.5, max_len, rng.integers(16, max_len + 1, rows)).astype(np.int32)
    offsets = np.r_[0, np.cumsum(lengths)].astype(np.int32)
    total = int(offsets[-1])
    starts, ends = offsets[:-1], offsets[1:] - 1
    ids = rng.integers(1000, 30_000, total).astype(np.int32)
    ids[starts], ids[ends] = 101, 102  # [CLS] ... [SEP]
    labels = rng.choice(4, total, p=[0.8, 0.1, 0.08, 0.02]).astype(np.int16)
    labels[rng.random(total) < 0.2] = IGNORE  # subword continuations
    labels[starts] = labels[ends] = IGNORE
    position = np.arange(total, dtype=np.int32) - np.repeat(starts, lengths) - 1

    def lists(values):
        return pa.ListArray.from_arrays(pa.array(offsets), pa.array(values))

    table = pa.table(
        {
            "corpus": pa.array(["synthetic"] * rows),
            "lang": pa.array(["en"] * rows),
            "split": pa.array(["train"] * rows),
            "doc_id": pa.array([f"d{i}" for i in range(rows)]),
            "chunk_id": pa.array(np.zeros(rows, np.int32)),
            "input_ids": lists(ids),
            "labels": lists(labels),
            "case_labels": lists(np.where(labels == IGNORE, IGNORE, 0).astype(np.int8)),
            "word_index": lists(position),
        }
    ).cast(SEQUENCE_SCHEMA)
    (folder / "sequences.parquet").mkdir(parents=True, exist_ok=True)
    pq.write_table(table, folder / "sequences.parquet" / "part-00000.parquet", row_group_size=65_536)
    return folder


def sync(device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize()


def project_loop(args, name, precision, folder, max_tokens=0) -> dict:
    from pipeline.training.data import SequenceOptions, TrainingData
    from pipeline.training.loop import train
    from pipeline.training.model import build_model

    # the sequences are the pretrained model's own ids: its tokenizer, as training's checks see it
    data = TrainingData.from_folder(
        folder,
        SequenceOptions(max_len=args.max_len),
        tokenizer=SyntheticTokenizer(name),
        tokenizer_source=model_params(name).get("pretrained"),
    )
    params = {
        **model_params(name),
        "epochs": 1000,
        "max_steps": args.warmup + args.steps,
        "batch_size": args.batch,
        "max_tokens": max_tokens,
        "precision": precision,
        "device": "cpu" if args.cpu else "cuda",
        "loader_workers": args.loader_workers,
        "warmup": 0.0,
        "encoder_lr": 1e-5,
        "log_every": 10**9,
        "progress": False,
        "seed": 0,
        "window": 1 << 20,
    }
    model = build_model(params)  # the configs name their vocabulary and padding
    marks = {}

    def on_step(step, state):
        if step in (args.warmup, args.warmup + args.steps):
            sync(torch.device("cuda" if not args.cpu else "cpu"))
            marks[step] = (time.perf_counter(), state.tokens)

    train(model, data, params, on_step=on_step)
    (t0, n0), (t1, n1) = marks[args.warmup], marks[args.warmup + args.steps]
    del model
    return {"tokens_per_s": (n1 - n0) / (t1 - t0), "seconds": t1 - t0}


def plain_loop(args, name, precision, folder) -> dict:
    """Encoder + linear head, autocast, fused AdamW, batches padded and moved to the device beforehand."""
    from pipeline.training.data import collate
    from pipeline.training.model import build_model

    device = torch.device("cpu" if args.cpu else "cuda")
    table = pq.read_table(folder / "sequences.parquet")
    rng = np.random.default_rng(0)
    order = rng.permutation(table.num_rows)
    batches, tokens = [], []
    for k in range(args.warmup + args.steps):
        rows = order[(k * args.batch) % (table.num_rows - args.batch) :][: args.batch]
        batch = collate(table.take(pa.array(rows)), pad_id_of(name), 8)
        batches.append({key: value.to(device) for key, value in batch.items()})
        tokens.append(int(batch["attention_mask"].sum()))
    model = build_model({**model_params(name), "seed": 0}).to(device).train()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-5, fused=device.type == "cuda")
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16" and device.type == "cuda")
    start = 0.0
    for k, batch in enumerate(batches):
        if k == args.warmup:
            sync(device)
            start = time.perf_counter()
        with autocast:
            logits = model(batch["input_ids"], batch["attention_mask"])["logits"]
        loss = torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), batch["labels"].flatten())
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
    sync(device)
    seconds = time.perf_counter() - start
    del model, optimizer, batches
    return {"tokens_per_s": sum(tokens[args.warmup :]) / seconds, "seconds": seconds}


def punctuate_rate(args, name) -> dict:
    """Words/s of ``predict_words`` on 20,000 words of text (MiniLM's tokenizer)."""
    from transformers import AutoTokenizer

    from pipeline.datasets.pretrained import pretrained_path
    from pipeline.training.inference import predict_words
    from pipeline.training.model import build_model

    device = torch.device("cpu" if args.cpu else "cuda")
    tokenizer = AutoTokenizer.from_pretrained(pretrained_path("packaged:minilm"))
    vocabulary = [w for w in tokenizer.get_vocab() if w.isalpha() and len(w) > 2][:5000]
    rng = np.random.default_rng(1)
    words = [vocabulary[i] for i in rng.integers(0, len(vocabulary), args.punctuate_words)]
    model = build_model({**model_params(name), "seed": 0}, tokenizer).to(device).eval()
    bf16 = device.type == "cuda"
    predict_words(model, tokenizer, words[:2000], device, max_len=args.max_len, batch_size=64, bf16=bf16)  # warm-up
    sync(device)
    start = time.perf_counter()
    predict_words(model, tokenizer, words, device, max_len=args.max_len, batch_size=64, bf16=bf16)
    sync(device)
    return {"words_per_s": len(words) / (time.perf_counter() - start), "words": len(words)}


def check(results: dict) -> list[str]:
    """The issue's targets, where their rows were run (CUDA only)."""
    failures = []

    def get(model, precision, mode):
        return results.get(f"{model}/{precision}/{mode}", {}).get("tokens_per_s")

    for model, floor in (("xlmr-large", 0.95), ("minilm", 0.9)):
        for precision in ("bf16", "fp32"):
            project, plain = get(model, precision, "project"), get(model, precision, "plain")
            if project and plain and project < floor * plain:
                failures.append(f"{model} {precision}: project {project:.0f} < {floor} x plain {plain:.0f} tokens/s")
    budget = get("xlmr-large", "bf16", "budget")
    if budget and budget < 110_000:
        failures.append(f"xlmr-large bf16 token budget: {budget:.0f} < 110000 tokens/s")
    bf16, fp32 = get("xlmr-large", "bf16", "project"), get("xlmr-large", "fp32", "project")
    if bf16 and fp32 and bf16 < 1.8 * fp32:
        failures.append(f"xlmr-large: bf16 {bf16:.0f} < 1.8 x fp32 {fp32:.0f} tokens/s")
    bf16, fp32 = get("minilm", "bf16", "project"), get("minilm", "fp32", "project")
    if bf16 and fp32 and bf16 < fp32:
        failures.append(f"minilm: bf16 {bf16:.0f} slower than fp32 {fp32:.0f} tokens/s")
    return failures


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cpu", action="store_true", help="tiny model on the CPU, fp32, no targets (CI)")
    parser.add_argument("--models", help="comma-separated: xlmr-large, minilm, tiny")
    parser.add_argument("--precisions", help="comma-separated: bf16, fp32")
    parser.add_argument("--batch", type=int, help="sequences per batch (GPU 16, CPU 8)")
    parser.add_argument("--max-tokens", type=int, help="token budget of the 'budget' runs (GPU 16384, CPU 512)")
    parser.add_argument("--max-len", type=int, help="sequence length (GPU 256, CPU 64)")
    parser.add_argument("--steps", type=int, help="timed steps (GPU 60, CPU 12)")
    parser.add_argument("--warmup", type=int, help="steps before the timing starts (GPU 10, CPU 3)")
    parser.add_argument("--loader-workers", type=int, default=None, help="DataLoader workers (GPU 4, CPU 0)")
    parser.add_argument("--punctuate-words", type=int, default=None, help="words for the punctuate rate")
    parser.add_argument("--json", help="also write the results here")
    parser.add_argument("--check", action="store_true", help="exit 1 when a target is missed (CUDA)")
    args = parser.parse_args(argv)
    if not args.cpu and not torch.cuda.is_available():
        print("no CUDA device: running the CPU mode (--cpu)", file=sys.stderr)
        args.cpu = True
    gpu = not args.cpu
    args.models = (args.models or ("xlmr-large,minilm" if gpu else "tiny")).split(",")
    args.precisions = (args.precisions or ("bf16,fp32" if gpu else "fp32")).split(",")
    args.batch = args.batch or (16 if gpu else 8)
    args.max_tokens = args.max_tokens or (16_384 if gpu else 512)
    args.max_len = args.max_len or (256 if gpu else 64)
    args.steps = args.steps or (60 if gpu else 12)
    args.warmup = args.warmup if args.warmup is not None else (10 if gpu else 3)
    args.loader_workers = args.loader_workers if args.loader_workers is not None else (4 if gpu else 0)
    args.punctuate_words = args.punctuate_words or (20_000 if gpu else 3_000)
    logging.basicConfig(level=logging.WARNING)
    if gpu:
        torch.backends.cuda.matmul.allow_tf32 = False  # fp32 means fp32
    device = torch.cuda.get_device_name() if gpu else "cpu"
    results: dict = {"device": device, "batch": args.batch, "max_tokens": args.max_tokens, "max_len": args.max_len}
    # enough rows that the timed steps never cross an epoch
    rows = math.ceil((args.warmup + args.steps) * max(args.batch, 2 * args.max_tokens // args.max_len) * 1.3)
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.models:
            folder = synthetic_dataset(Path(tmp) / name, rows, args.max_len)
            for precision in args.precisions:
                for mode in ("plain", "project", "budget"):
                    if mode == "plain":
                        result = plain_loop(args, name, precision, folder)
                    else:
                        result = project_loop(args, name, precision, folder, args.max_tokens if mode == "budget" else 0)
                    results[f"{name}/{precision}/{mode}"] = result
                    print(f"{name:10s} {precision} {mode:8s} {result['tokens_per_s']:12,.0f} tokens/s", flush=True)
                    if gpu:
                        torch.cuda.empty_cache()
                plain = results[f"{name}/{precision}/plain"]["tokens_per_s"]
                for mode in ("project", "budget"):
                    ratio = results[f"{name}/{precision}/{mode}"]["tokens_per_s"] / plain
                    results[f"{name}/{precision}/{mode}"]["vs_plain"] = round(ratio, 3)
                print(f"{name:10s} {precision} project/plain {results[f'{name}/{precision}/project']['vs_plain']:.3f}")
            rate = punctuate_rate(args, name)
            results[f"{name}/punctuate"] = rate
            print(f"{name:10s} punctuate {rate['words_per_s']:12,.0f} words/s", flush=True)
    failures = check(results) if gpu else []
    results["targets"] = "not checked (CPU)" if not gpu else (failures or "met")
    for line in failures:
        print(f"TARGET MISSED: {line}")
    print(json.dumps(results, default=float))
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=2, default=float) + "\n")
    if gpu:  # the CPU mode is a smoke test of the script, with no targets: not saved
        rows = []
        for key, r in results.items():
            if isinstance(r, dict) and key.count("/") == 2:
                name, precision, mode = key.split("/")
                speed, ratio = f"{r['tokens_per_s']:,.0f}", f"{r.get('vs_plain', 1.0):.2f}x"
                rows.append([f"{name} ({mode})", precision, speed, ratio])
        targets = "missed: " + "; ".join(failures) if failures else "met"
        save_results(
            "train_gpu",
            title="Training loop",
            what=f"optimizer steps of the project's loop on {device} (batch {args.batch}, max_len {args.max_len}, "
            f"{args.steps} timed steps; budget: a {args.max_tokens}-token budget); targets {targets}",
            baseline="a plain PyTorch loop over the same data and model in the same run (the plain rows)",
            columns=["model (loop)", "precision", "tokens/s", "against the plain loop"],
            rows=rows,
            metrics=results,
        )
    return 1 if failures and args.check else 0


if __name__ == "__main__":
    sys.exit(main())
