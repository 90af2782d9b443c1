"""From labelled segments to model-ready datasets: splits, oversampling, augmentation, sequences, exports."""

from collections import Counter
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from corpora import get_reader
from pipeline.augment import alam, three_r
from pipeline.io import write_parquet
from pipeline.schema import segments_table
from pipeline.sequences import build_sequences, export_nemo, export_tsv, train_tokenizer, words_from_sequences
from pipeline.splits import (
    apply_splits,
    assign_splits,
    drop_train_duplicates,
    duplicates_across_splits,
    oversample_questions,
    question_share,
)


@pytest.fixture(scope="module")
def news(shared):
    """Bangla news articles (one document each), the stand-in corpus of the Bangla recipe."""
    return get_reader("news_json")(
        [shared / "bangla_news/articles_2025-12-29.json"],
        lang="bn",
        corpus="bn_news",
        fields={"title": "headline", "text": "article", "source": "paper_name", "id": "url"},
    ).table


def test_splits_are_stable_and_disjoint(news):
    docs = sorted(set(news["doc_id"].to_pylist()))
    first = assign_splits(docs, ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=5)
    again = assign_splits(list(reversed(docs)), ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=5)
    assert first == again
    more = assign_splits(docs + [f"new-{i}" for i in range(50)], ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=5)
    assert all(more[d] == first[d] for d in docs)  # old documents keep their split
    counts = Counter(first.values())
    assert abs(counts["train"] / len(docs) - 0.8) < 0.08
    table = apply_splits(news, first)
    per_doc = {}
    for d, s in zip(table["doc_id"].to_pylist(), table["split"].to_pylist()):
        per_doc.setdefault(d, set()).add(s)
    assert all(len(s) == 1 for s in per_doc.values())
    by_count = assign_splits(docs, counts={"train": 200, "dev": 50, "test": 20}, seed=5)
    assert Counter(by_count.values()) == Counter({"train": 200, "dev": 50, "test": 20, None: len(docs) - 270})


def test_duplicate_report_and_drop():
    table = segments_table(
        "c",
        "en",
        ["a", "b", "c"],
        [0, 0, 0],
        [["hello", "there"], ["hello", "there"], ["bye"]],
        [["O", "PERIOD"], ["O", "PERIOD"], ["PERIOD"]],
        ["train", "test", "dev"],
    )
    assert duplicates_across_splits(table) == Counter({"test+train": 1})
    kept, dropped = drop_train_duplicates(table)
    assert dropped == 1 and kept["split"].to_pylist() == ["test", "dev"]


def test_question_oversampling_train_only(news):
    table = apply_splits(
        news, assign_splits(news["doc_id"].to_pylist(), ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=1)
    )
    before_rest = table.filter(pc.not_equal(table["split"], "train"))
    out, report = oversample_questions(table, 0.02, seed=3)
    train = out.filter(pc.equal(out["split"], "train"))
    assert abs(question_share(train) - 0.02) < 0.005
    assert report["inserted"] > 0 and report["after"] == pytest.approx(question_share(train), abs=1e-6)
    assert out.filter(pc.not_equal(out["split"], "train")).equals(before_rest)  # dev/test untouched


def test_augmentation_rates_on_100k_words():
    rng = np.random.default_rng(11)
    counts = Counter()
    for _ in range(2000):
        alam(["w"] * 60, ["O"] * 59 + ["PERIOD"], rng, counts=counts)
    assert counts["tokens"] >= 100_000
    for op, expected in (("substituted", 0.15 * 0.4), ("deleted", 0.15 * 0.4), ("inserted", 0.15 * 0.2)):
        assert abs(counts[op] / counts["tokens"] - expected) <= 0.1 * expected, op
    counts = Counter()
    vocab = ["a", "b", "c"]
    for _ in range(2000):
        three_r(
            ["like"] * 60, ["O"] * 60, rng, vocabulary=vocab, confusables={"like": ["alike", "bike"]}, counts=counts
        )
    for op in ("deleted", "substituted", "phoneme_edited"):
        assert abs(counts[op] / counts["tokens"] - 0.05) <= 0.005, op


class _Fixed:
    """A generator whose draws are given: which words RWD deletes."""

    def __init__(self, draws):
        self.draws = np.array(draws)

    def random(self, n):
        return self.draws[:n]


def test_rwd_forward_label_rule_table_i():
    words = ["i", "like", "cooking", "mom", "and", "dad"]
    labels = ["O", "O", "COMMA", "O", "O", "PERIOD"]
    # Scenario 1: deleting "mom" removes its label
    assert three_r(words, labels, _Fixed([0.9, 0.9, 0.9, 0.01, 0.9, 0.9])) == (
        ["i", "like", "cooking", "and", "dad"],
        ["O", "O", "COMMA", "O", "PERIOD"],
    )
    # Scenario 2: deleting "dad" keeps its PERIOD on the word before it
    assert three_r(words, labels, _Fixed([0.9, 0.9, 0.9, 0.9, 0.9, 0.01])) == (
        ["i", "like", "cooking", "mom", "and"],
        ["O", "O", "COMMA", "O", "PERIOD"],
    )


@pytest.fixture(scope="module")
def dev_sample(shared):
    table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev").table.slice(0, 600)
    return table.set_column(table.schema.get_field_index("split"), "split", pa.array(["train"] * 600))


@pytest.mark.parametrize(
    "mode,stride,slot", [("chunk", 0, False), ("segment", 0, False), ("chunk", 8, False), ("chunk", 0, True)]
)
def test_sequences_fit_and_reconstruct(dev_sample, mode, stride, slot):
    tokenizer = train_tokenizer((w for ws in dev_sample["words"].to_pylist() for w in ws), vocab_size=800)
    sequences, _counts = build_sequences(dev_sample, tokenizer, max_len=48, mode=mode, stride=stride, slot_filling=slot)
    assert max(len(ids) for ids in sequences["input_ids"].to_pylist()) <= 48
    recovered = words_from_sequences(sequences, tokenizer)[("dev2012", "train")]
    gold = [l for labels in dev_sample["labels"].to_pylist() for l in labels]
    assert [i for i, _ in recovered] == list(range(len(gold)))
    assert [l for _, l in recovered] == gold
    if slot:
        for ids, index in zip(sequences["input_ids"].to_pylist(), sequences["word_index"].to_pylist()):
            words_here = {w for w in index if w >= 0}
            assert ids.count(tokenizer.mask_token_id) == len(words_here)


def test_exports_round_trip(dev_sample, tmp_path):
    tsv = tmp_path / "dev.tsv"
    tsv.write_text(export_tsv(dev_sample))
    back = get_reader("tsv")([tsv], lang="en", corpus="dev").table
    assert back["words"].to_pylist() == dev_sample["words"].to_pylist()
    assert back["labels"].to_pylist() == dev_sample["labels"].to_pylist()
    text, labels = export_nemo(dev_sample)
    assert len(text.splitlines()) == len(labels.splitlines()) == dev_sample.num_rows
    assert all(len(t.split()) == len(l.split()) for t, l in zip(text.splitlines(), labels.splitlines()))
    import datasets

    tokenizer = train_tokenizer((w for ws in dev_sample["words"].to_pylist() for w in ws), vocab_size=500)
    sequences, _ = build_sequences(dev_sample, tokenizer, max_len=64)
    write_parquet(sequences, tmp_path / "seq.parquet")
    loaded = datasets.load_dataset("parquet", data_files=str(tmp_path / "seq.parquet"), split="train")
    assert loaded.num_rows == sequences.num_rows
    assert str(loaded.features["labels"].feature.dtype) == "int16"
    assert loaded[0]["input_ids"] == sequences["input_ids"][0].as_py()


def test_corpus_tokenizer_is_the_same_every_run(dev_sample, tmp_path):
    """The trained tokenizer is a stage output: the same words must give the same file, in any process
    (the WordPiece trainer of `tokenizers` does not: huggingface/tokenizers#1794)."""
    import subprocess
    import sys

    words = [w for ws in dev_sample["words"].to_pylist() for w in ws]
    (tmp_path / "words.txt").write_text("\n".join(words), encoding="utf-8")
    script = (
        "import sys; from pipeline.sequences import train_tokenizer; "
        "words = open(sys.argv[1], encoding='utf-8').read().split('\\n'); "
        "print(train_tokenizer(iter(words), vocab_size=1500).backend_tokenizer.to_str())"
    )
    runs = {
        subprocess.run(
            [sys.executable, "-c", script, str(tmp_path / "words.txt")],
            capture_output=True,
            text=True,
            check=True,
            cwd=Path(__file__).parent.parent,
        ).stdout
        for _ in range(3)
    }
    runs.add(train_tokenizer(iter(words), vocab_size=1500).backend_tokenizer.to_str() + "\n")
    assert len(runs) == 1
    assert len(train_tokenizer(iter(words), vocab_size=1500)) == 1500
