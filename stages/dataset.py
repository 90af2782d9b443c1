"""DVC stages: a model-ready dataset (``datasets.<name>``): split -> oversample -> sequences.

Each step is its own DVC stage (``--step``) with its own params section:
``split`` (ratios or counts, seed, stratify, min_sentences, min_marks, fixed, test_corpora,
drop_train_duplicates), ``oversample`` (question_share, augment), ``sequences``.

Inputs: corpora of the registry (``data/segments/<corpus>.parquet``); a corpus named in
``test_corpora`` is a fixed test set.  Outputs under ``data/datasets/<name>/``:
``segments.parquet`` (with splits), ``sequences.parquet``, ``tokenizer/`` and
``report.json`` (split sizes, duplicates, oversampling, label distribution per split).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline import io
from pipeline.audit import audit
from pipeline.schema import concat
from pipeline.sequences import build_sequences, train_tokenizer
from pipeline.splits import (
    apply_splits,
    assign_splits,
    drop_train_duplicates,
    duplicates_across_splits,
    marks_of,
    oversample_questions,
)
from stages.common import load_params


def load_tokenizer(spec: str, table: pa.Table, vocab_size: int, lowercase: bool):
    """``train``: a BPE tokenizer trained on the training words; otherwise a named or local pretrained one."""
    if spec == "train":
        words = pc.list_flatten(table.filter(pc.equal(table["split"], "train"))["words"]).to_pylist()
        return train_tokenizer(iter(words), vocab_size=vocab_size, lowercase=lowercase)
    from transformers import AutoTokenizer

    from pipeline.model import pretrained_path

    return AutoTokenizer.from_pretrained(pretrained_path(spec))


def step_split(entry: dict, name: str, data_dir: Path) -> None:
    """Corpora -> ``split.parquet`` (filter, document-level split, fixed splits, duplicates)."""
    out = data_dir / "datasets" / name
    split_params = entry.get("split", {})
    seed = int(split_params.get("seed", 0))
    tables, fixed_tables = [], []
    for corpus in entry.get("corpora", []):
        tables.append(io.read_segments(data_dir / "segments" / f"{corpus}.parquet"))
    # corpora with a split of their own: test_corpora, or fixed: {corpus: split} (the given files of a benchmark)
    fixed = {**{c: "test" for c in split_params.get("test_corpora", [])}, **split_params.get("fixed", {})}
    for corpus, split_name in fixed.items():
        table = io.read_segments(data_dir / "segments" / f"{corpus}.parquet")
        fixed_tables.append(
            table.set_column(
                table.schema.get_field_index("split"), "split", pa.array([split_name] * table.num_rows, pa.string())
            )
        )
    table = concat(tables)
    report = {}
    min_marks = int(split_params.get("min_marks", 0))
    if min_marks:  # indic-punct: keep only lines that contain a mark
        keep = [sum(1 for l in labels if l != "O") >= min_marks for labels in table["labels"].to_pylist()]
        report["segments_without_marks_dropped"] = keep.count(False)
        table = table.filter(pa.array(keep))
    min_sentences = int(split_params.get("min_sentences", 0))
    if min_sentences:
        ends = {}
        for doc, labels in zip(table["doc_id"].to_pylist(), table["labels"].to_pylist()):
            ends[doc] = ends.get(doc, 0) + sum(1 for l in labels if l in ("PERIOD", "QUESTION"))
        table = table.filter(pa.array([ends[d] > min_sentences for d in table["doc_id"].to_pylist()]))
    strata = None
    if split_params.get("stratify"):
        strata = {}
        for doc, labels in zip(table["doc_id"].to_pylist(), table["labels"].to_pylist()):
            strata[doc] = marks_of(labels) if doc not in strata else strata[doc] + "|" + marks_of(labels)
    if table.num_rows:
        assignment = assign_splits(
            table["doc_id"].to_pylist(),
            ratios=split_params.get("ratios"),
            counts=split_params.get("counts"),
            seed=seed,
            strata=strata,
        )
        table = apply_splits(table, assignment)
    if fixed_tables:
        table = concat([table, *fixed_tables])
    report["duplicates_across_splits"] = dict(duplicates_across_splits(table))
    if split_params.get("drop_train_duplicates"):
        table, dropped = drop_train_duplicates(table)
        report["train_duplicates_dropped"] = dropped
    io.write_parquet(table, out / "split.parquet")
    io.write_json(report, out / "split_report.json")


def step_oversample(entry: dict, name: str, data_dir: Path) -> None:
    """``split.parquet`` -> ``oversampled.parquet`` (questions in train) and ``augmented.parquet``."""
    out = data_dir / "datasets" / name
    seed = int(entry.get("split", {}).get("seed", 0))
    table = io.read_segments(out / "split.parquet")
    report = {}
    target = entry.get("oversample", {}).get("question_share")
    if target:
        table, report["oversampling"] = oversample_questions(table, float(target), seed=seed)
    augment = entry.get("oversample", {}).get("augment")
    copies = []
    if augment:  # copies of train with one augmentation draw each, for audit (training draws anew every epoch)
        from pipeline.train import augmented

        train_part = table.filter(pc.equal(table["split"], "train"))
        vocabulary = sorted({w for ws in train_part["words"].to_pylist() for w in ws})
        copies = [
            augmented(train_part, augment, copy, seed, vocabulary, None)
            for copy in range(int(augment.get("copies", 1)))
        ]
        before = sum(len(w) for w in train_part["words"].to_pylist())
        after = sum(len(w) for c in copies for w in c["words"].to_pylist()) / max(len(copies), 1)
        report["augmentation"] = {
            "kind": augment.get("kind"),
            "copies": len(copies),
            "train_words": before,
            "augmented_words_per_copy": round(after, 1),
        }
    io.write_parquet(table, out / "oversampled.parquet")
    io.write_parquet(concat(copies), out / "augmented.parquet")
    io.write_json(report, out / "oversample_report.json")


def step_sequences(entry: dict, name: str, data_dir: Path) -> None:
    """``oversampled.parquet`` -> ``segments.parquet``, ``sequences.parquet``, ``tokenizer/``, ``report.json``."""
    out = data_dir / "datasets" / name
    table = io.read_segments(out / "oversampled.parquet")
    seq = entry.get("sequences", {})
    tokenizer = load_tokenizer(
        seq.get("tokenizer", "train"), table, int(seq.get("vocab_size", 2000)), bool(seq.get("lowercase", False))
    )
    options = dict(
        max_len=int(seq.get("max_len", 256)),
        mode=seq.get("mode", "chunk"),
        stride=int(seq.get("stride", 0)),
        slot_filling=bool(seq.get("slot_filling", False)),
    )
    from pipeline.model import save_tokenizer

    save_tokenizer(tokenizer, out / "tokenizer")
    if seq.get("engine"):  # sharded, streaming: sequences.parquet is a directory of part files
        from pipeline.engine import sequences_sharded

        counts = sequences_sharded(
            out / "oversampled.parquet",
            out / "tokenizer",
            out / "sequences.parquet",
            engine=seq["engine"],
            workers=int(seq.get("workers", 0)),
            shard_rows=int(seq.get("shard_rows", 20_000)),
            **options,
        )
    else:
        sequences, counts = build_sequences(table, tokenizer, **options)
        io.write_parquet(sequences, out / "sequences.parquet")
    io.write_parquet(table, out / "segments.parquet")
    report = {}
    for part in ("split_report.json", "oversample_report.json"):
        if (out / part).exists():
            report.update(json.loads((out / part).read_text()))
    report["sequences"] = dict(counts)
    pooled = table.set_column(
        table.schema.get_field_index("corpus"), "corpus", pa.array([name] * table.num_rows, pa.string())
    )
    report["distribution"] = audit([pooled], expected_splits=("train", "dev", "test"))
    if len(set(table["corpus"].to_pylist())) > 1:
        report["per_corpus"] = audit([table])
    io.write_json(report, out / "report.json")
    splits = report["distribution"].get(name, {}).get("splits", {})
    print(
        f"dataset {name}: " + ", ".join(f"{k} {v['documents']} docs/{v['words']} words" for k, v in splits.items()),
        file=sys.stderr,
    )


STEPS = {"split": step_split, "oversample": step_oversample, "sequences": step_sequences}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name")
    parser.add_argument("--step", choices=[*STEPS, "all"], default="all", help="one step (a DVC stage each) or all")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data-dir", default="data")
    args = parser.parse_args(argv)
    entry = load_params(args.params, "datasets", args.name)
    for step in STEPS if args.step == "all" else [args.step]:
        STEPS[step](entry, args.name, Path(args.data_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main())
