"""Builders the training tests share: samples of the corpora as dataset folders, tiny model settings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pyarrow as pa

TINY_CONFIG = {
    "model_type": "bert",
    "hidden_size": 32,
    "num_hidden_layers": 2,
    "num_attention_heads": 2,
    "intermediate_size": 64,
    "max_position_embeddings": 128,
}

TINY = {
    "config": TINY_CONFIG,
    "epochs": 4,
    "batch_size": 8,
    "encoder_lr": 3e-3,
    "head_lr": 3e-3,
    "warmup": 0.0,
    "seed": 3,
    "progress": False,
    "device": "cpu",
    "loader_workers": 0,
    "log_every": 7,
    "patience": 10,
}

#: no dropout anywhere: runs that group the same sums differently must agree
NO_DROPOUT = {
    **TINY,
    "config": {**TINY_CONFIG, "hidden_dropout_prob": 0.0, "attention_probs_dropout_prob": 0.0},
    "dropout": 0.0,
}


def with_split(table: pa.Table, splits: list[str]) -> pa.Table:
    return table.set_column(table.schema.get_field_index("split"), "split", pa.array(splits, pa.string()))


def sample_talks(root: Path) -> pa.Table:
    """The committed English sample talks, one document a line, split train/dev/test by document."""
    from corpora import get_reader

    table = get_reader("text")([root / "corpora/samples/en/talks.txt"], lang="en", corpus="talks", doc_boundary="line")
    table = table.table
    docs = sorted(set(table["doc_id"].to_pylist()))
    role = {d: "test" if i % 5 == 0 else "dev" if i % 5 == 1 else "train" for i, d in enumerate(docs)}
    return with_split(table, [role[d] for d in table["doc_id"].to_pylist()])


def iwslt(shared: Path, rows: int, name: str = "dev2012") -> pa.Table:
    from corpora import get_reader

    table = get_reader("tsv")([shared / f"iwslt_en/{name}.tsv"], lang="en", corpus=name).table.slice(0, rows)
    return with_split(table, ["train"] * table.num_rows)


def as_documents(table: pa.Table, size: int) -> pa.Table:
    """The rows cut into documents of ``size`` segments (the TSV reader makes one long document)."""
    docs = [f"d{i // size:04d}" for i in range(table.num_rows)]
    seg = [i % size for i in range(table.num_rows)]
    table = table.set_column(table.schema.get_field_index("doc_id"), "doc_id", pa.array(docs, pa.string()))
    return table.set_column(table.schema.get_field_index("seg_id"), "seg_id", pa.array(seg, pa.int32()))


def cased_ted(shared: Path, name: str = "IWSLT12.TALK.dev2010.en-fr.en.xml", corpus: str = "ted") -> pa.Table:
    """Cased TED segments from the raw XML: lowercased words, punctuation labels, case and surface columns."""
    from corpora.ted_xml import parse
    from pipeline.engine.reading import read_text
    from pipeline.labels import LABELS
    from pipeline.schema import segments_table
    from pipeline.text.labelling import label_lines
    from pipeline.text.languages import get_language
    from pipeline.training.data import segments_with_case

    path = shared / "iwslt_en_raw" / name
    language = get_language("en")
    cased = dataclasses.replace(language, lowercase=False)
    docs, segs, words, labels = [], [], [], []
    for talk, segments in parse(read_text(path), path):
        labelled = label_lines(language.normalize(pa.array(segments, pa.string())), cased)
        for k, (w, l) in enumerate(zip(labelled.words.to_pylist(), labelled.labels.to_pylist())):
            if w:
                docs.append(talk)
                segs.append(k)
                words.append(w)
                labels.append(l)
    table = segments_table(corpus, "en", docs, segs, words, labels, ["train"] * len(docs), vocabulary=LABELS)
    return segments_with_case(table)


def dataset(folder: Path, table: pa.Table, tokenizer, max_len: int = 64, parts: int = 2, **options):
    from pipeline.training.data import SequenceOptions, TrainingData, write_dataset

    opts = SequenceOptions(max_len=max_len, **options)
    write_dataset(folder, table, tokenizer, opts, parts=parts)
    return TrainingData.from_folder(folder, opts, tokenizer=tokenizer)


def tokenizer_of(table: pa.Table, vocab_size: int = 1500):
    from pipeline.datasets.sequences import train_tokenizer

    return train_tokenizer((w for ws in table["words"].to_pylist() for w in ws), vocab_size=vocab_size)
