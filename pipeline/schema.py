"""The canonical segment table: one row per segment, one schema for every stage.

Every reader returns this table, every corpus stage writes it, and the audit,
alignment, split and sequence stages read it.  Columns:

corpus   the dataset name from the corpus registry (``iwslt_en_dev2012``)
lang     ISO 639-1 code of the language module that normalized the text
doc_id   document the segment belongs to (a talk, an article, a file)
seg_id   0-based position of the segment inside its document
words    the words, normalized, in order
labels   one label per word: the punctuation that follows it (O/COMMA/PERIOD/QUESTION)
split    train/dev/test once a split stage assigned one; null before
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .labels import LABELS

SEGMENT_SCHEMA = pa.schema(
    [
        pa.field("corpus", pa.string(), nullable=False),
        pa.field("lang", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("seg_id", pa.int32(), nullable=False),
        pa.field("words", pa.list_(pa.string()), nullable=False),
        pa.field("labels", pa.list_(pa.string()), nullable=False),
        pa.field("split", pa.string(), nullable=True),
    ],
    metadata={b"schema": b"punct-segments/1"},
)

#: Parquet options shared by every writer, so outputs are byte-identical.  Row groups of 64k rows
#: (about a million words) let sharded stages read a slice of a big file, or filter it, without
#: loading the whole file
PARQUET_OPTIONS = dict(compression="zstd", compression_level=3, use_dictionary=True, row_group_size=65_536)


def statistics_columns(schema: pa.Schema) -> list[str]:
    """Columns whose min/max statistics the Parquet files keep: the flat ones (doc_id serves
    filtered reads).  Min/max of the words in a list column serve nothing and cost a fifth of
    the write."""
    return [f.name for f in schema if not pa.types.is_nested(f.type)]


class SchemaError(ValueError):
    pass


def segments_table(
    corpus: str,
    lang: str,
    doc_ids: Sequence[str] | pa.Array,
    seg_ids: Sequence[int] | pa.Array,
    words: Sequence[Sequence[str]] | pa.Array,
    labels: Sequence[Sequence[str]] | pa.Array,
    split: Sequence[str | None] | pa.Array | None = None,
) -> pa.Table:
    """Build a segment table from columns (lists or Arrow arrays)."""
    n = len(doc_ids)
    columns = [
        _constant(corpus, n),
        _constant(lang, n),
        _as(doc_ids, pa.string()),
        _as(seg_ids, pa.int32()),
        _as(words, pa.list_(pa.string())),
        _as(labels, pa.list_(pa.string())),
        _as(split, pa.string()) if split is not None else pa.nulls(n, pa.string()),
    ]
    table = pa.Table.from_arrays(columns, schema=SEGMENT_SCHEMA)
    validate(table)
    return table


def empty_segments() -> pa.Table:
    return SEGMENT_SCHEMA.empty_table()


def _constant(value: str, n: int) -> pa.Array:
    return pa.array([value], pa.string()).take(np.zeros(n, dtype=np.int32))


def _as(values, type_):
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        return values if values.type == type_ else values.cast(type_)
    return pa.array(values, type_)


def validate(table: pa.Table, where: str = "segment table") -> None:
    """Check schema, one label per word and the label vocabulary."""
    missing = [f.name for f in SEGMENT_SCHEMA if f.name not in table.column_names]
    if missing:
        raise SchemaError(f"{where}: missing column(s) {', '.join(missing)}")
    if table.num_rows == 0:
        return
    words, labels = table.column("words"), table.column("labels")
    word_lengths = pc.list_value_length(words)
    label_lengths = pc.list_value_length(labels)
    mismatch = pc.not_equal(word_lengths, label_lengths)
    if pc.any(mismatch).as_py():
        row = pc.index(mismatch, True).as_py()
        raise SchemaError(f"{where}: row {row} has {word_lengths[row]} words but {label_lengths[row]} labels")
    flat = pc.list_flatten(labels)
    unknown = pc.invert(pc.is_in(flat, value_set=pa.array(LABELS)))
    if pc.any(unknown).as_py():
        bad = flat.filter(unknown)[0].as_py()
        raise SchemaError(f"{where}: unknown label {bad!r} (expected one of {', '.join(LABELS)})")


def conform(table: pa.Table) -> pa.Table:
    """Cast a table read from Parquet (or built elsewhere) to the canonical schema."""
    if "split" not in table.column_names:
        table = table.append_column("split", pa.nulls(table.num_rows, pa.string()))
    table = table.select(SEGMENT_SCHEMA.names).cast(SEGMENT_SCHEMA)
    return table.replace_schema_metadata(SEGMENT_SCHEMA.metadata)


def concat(tables: Iterable[pa.Table]) -> pa.Table:
    tables = [conform(t) for t in tables]
    if not tables:
        return empty_segments()
    return pa.concat_tables(tables).combine_chunks()
