"""The canonical segment table: one row per segment, one schema for every stage.

Every reader returns this table, every corpus stage writes it, and the audit,
alignment, split and sequence stages read it.  Columns:

corpus   the dataset name from the corpus registry (``iwslt_en_dev2012``)
lang     ISO 639-1 code of the language module that normalized the text
doc_id   document the segment belongs to (a talk, an article, a file)
seg_id   0-based position of the segment inside its document
words    the words, normalized (lowercased where the language says so), in order
labels   one label per word: the punctuation that follows it, a label of the dataset's label set
         (:mod:`pipeline.labels`; ``papers``: O/COMMA/PERIOD/QUESTION)
case     one capitalization label per word (O/U/A/M, :mod:`pipeline.text.case`): with ``words``
         they give back the source's form of every word
surface  per word, the exact source form where ``case`` is M (``iPhone``), null elsewhere
split    train/dev/test once a split stage assigned one; null before

Version 2 added ``case`` and ``surface``; a version-1 file is refused with the fix (rerun
its ingest), since its words cannot be given their case back.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.errors import SchemaError
from pipeline.labels import CASE_LABELS, LABELS, LabelSet

SCHEMA_NAME = "punct-segments/2"

SEGMENT_SCHEMA = pa.schema(
    [
        pa.field("corpus", pa.string(), nullable=False),
        pa.field("lang", pa.string(), nullable=False),
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("seg_id", pa.int32(), nullable=False),
        pa.field("words", pa.list_(pa.string()), nullable=False),
        pa.field("labels", pa.list_(pa.string()), nullable=False),
        pa.field("case", pa.list_(pa.string()), nullable=False),
        pa.field("surface", pa.list_(pa.string()), nullable=False),
        pa.field("split", pa.string(), nullable=True),
    ],
    metadata={b"schema": SCHEMA_NAME.encode()},
)

#: Parquet options shared by every writer, so outputs are byte-identical.  Row groups of 64k rows
#: (about a million words) let sharded stages read a slice of a big file, or filter it, without
#: loading the whole file.  A dictionary page may hold a whole row group's vocabulary: past the
#: default 1 MB limit the writer falls back to plain pages, and the column then cannot be read
#: back as one dictionary
PARQUET_OPTIONS = dict(
    compression="zstd",
    compression_level=3,
    use_dictionary=True,
    row_group_size=65_536,
    dictionary_pagesize_limit=256 << 20,
)


def statistics_columns(schema: pa.Schema) -> list[str]:
    """Columns whose min/max statistics the Parquet files keep: the flat ones (doc_id serves
    filtered reads).  Min/max of the words in a list column serve nothing and cost a fifth of
    the write."""
    return [f.name for f in schema if not pa.types.is_nested(f.type)]


def _leaf(field: pa.Field) -> str:
    """A column's Parquet path (a list column's values: ``name.list.element``)."""
    return f"{field.name}.list.element" if pa.types.is_list(field.type) else field.name


def _integer_lists(schema: pa.Schema) -> dict[str, int]:
    """The Parquet path of each list column of 8-, 16- or 32-bit integers, with the values' width."""
    return {
        _leaf(f): f.type.value_type.bit_width
        for f in schema
        if pa.types.is_list(f.type) and pa.types.is_integer(f.type.value_type) and f.type.value_type.bit_width <= 32
    }


def parquet_options(schema: pa.Schema) -> dict:
    """``pq.write_table``'s options for a table of ``schema``: :data:`PARQUET_OPTIONS`, statistics
    of the flat columns only, and no Arrow schema stored.

    Lists of integers up to 32 bits (the sequences' token ids, label ids and word positions) are
    written without a dictionary: byte-stream-split for 32-bit values, delta-coded for narrower
    ones, at zstd level 1.  Their values are a few hundred thousand a shard, and hashing each into
    a dictionary page, then compressing at level 3, made their write the sequences stage's
    largest cost.  Wider integers (an export's class ids, read by other tools) keep the plain
    options."""
    options = dict(PARQUET_OPTIONS, write_statistics=statistics_columns(schema), store_schema=False)
    integer_lists = _integer_lists(schema)
    if integer_lists:
        # a per-column level leaves the others at zstd's default unless each is named
        leaves = [_leaf(f) for f in schema]
        options["use_dictionary"] = [leaf for leaf in leaves if leaf not in integer_lists]
        options["column_encoding"] = {
            leaf: "BYTE_STREAM_SPLIT" if bits == 32 else "DELTA_BINARY_PACKED" for leaf, bits in integer_lists.items()
        }
        level = PARQUET_OPTIONS["compression_level"]
        options["compression_level"] = {leaf: 1 if leaf in integer_lists else level for leaf in leaves}
    return options


def segments_table(
    corpus: str,
    lang: str,
    doc_ids: Sequence[str] | pa.Array,
    seg_ids: Sequence[int] | pa.Array,
    words: Sequence[Sequence[str]] | pa.Array,
    labels: Sequence[Sequence[str]] | pa.Array,
    split: Sequence[str | None] | pa.Array | None = None,
    case: Sequence[Sequence[str]] | pa.Array | None = None,
    surface: Sequence[Sequence[str | None]] | pa.Array | None = None,
    *,
    vocabulary: Sequence[str],
) -> pa.Table:
    """Build a segment table from columns (lists or Arrow arrays); case defaults to O, surface to null;
    ``vocabulary``: the labels of its label set.

    A list column of dictionary-encoded strings stays encoded (as it is written)."""
    n = len(doc_ids)
    words = _as(words, pa.list_(pa.string()))
    columns = [
        _constant(corpus, n),
        _constant(lang, n),
        _as(doc_ids, pa.string()),
        _as(seg_ids, pa.int32()),
        words,
        _as(labels, pa.list_(pa.string())),
        _as(case, pa.list_(pa.string())) if case is not None else constant_per_word(words, "O"),
        _as(surface, pa.list_(pa.string())) if surface is not None else constant_per_word(words, None),
        _as(split, pa.string()) if split is not None else pa.nulls(n, pa.string()),
    ]
    fields = [field.with_type(column.type) for field, column in zip(SEGMENT_SCHEMA, columns)]
    schema = pa.schema(fields, metadata=SEGMENT_SCHEMA.metadata)
    table = pa.Table.from_arrays(columns, schema=schema)
    validate(table, "segment table", vocabulary)
    return table


def empty_segments() -> pa.Table:
    return SEGMENT_SCHEMA.empty_table()


def constant_per_word(words: pa.ListArray, value: str | None) -> pa.ListArray:
    """A list column shaped like ``words`` holding ``value`` (a label, or null) for every word."""
    words = words.combine_chunks() if isinstance(words, pa.ChunkedArray) else words
    offsets = pc.subtract(words.offsets, words.offsets[0]) if len(words) else pa.array([0], pa.int32())
    n = int(offsets[-1].as_py()) if len(words) else 0
    values = _constant(value, n) if value is not None else pa.nulls(n, pa.string())
    return pa.ListArray.from_arrays(offsets, values)


def _constant(value: str, n: int) -> pa.Array:
    return pa.array([value], pa.string()).take(np.zeros(n, dtype=np.int32))


def _as(values, type_):
    if isinstance(values, pa.ChunkedArray):
        values = values.combine_chunks()
    if isinstance(values, pa.Array):
        if values.type == type_ or (type_ == _STRINGS and values.type == ENCODED_STRINGS):
            return values
        return values.cast(type_)
    return pa.array(values, type_)


def _check_per_word(table: pa.Table, column: str, where: str, lengths) -> None:
    other = pc.list_value_length(table.column(column))
    mismatch = pc.not_equal(lengths, other)
    if pc.any(mismatch).as_py():
        row = pc.index(mismatch, True).as_py()
        raise SchemaError(f"{where}: row {row} has {lengths[row]} words but {other[row]} {column}")


def _check_vocabulary(table: pa.Table, column: str, allowed, where: str) -> None:
    flat = pc.list_flatten(table.column(column))
    if pa.types.is_dictionary(flat.type):  # the values used, not every word's
        flat = flat.combine_chunks() if isinstance(flat, pa.ChunkedArray) else flat
        if not flat.indices.null_count:  # a count of each index (a handful of labels) beats a hash
            used = np.bincount(flat.indices.to_numpy(zero_copy_only=False), minlength=len(flat.dictionary))
            if pc.all(
                pc.is_in(flat.dictionary.take(pa.array(np.flatnonzero(used))), value_set=pa.array(allowed))
            ).as_py():
                return
        flat = flat.dictionary.take(pc.unique(flat.indices).drop_null())
    unknown = pc.invert(pc.is_in(flat, value_set=pa.array(allowed)))
    if pc.any(unknown).as_py():
        bad = flat.filter(unknown)[0].as_py()
        what = "label" if column == "labels" else f"{column} label"
        raise SchemaError(f"{where}: unknown {what} {bad!r} (expected one of {', '.join(allowed)})")


def validate(table: pa.Table, where: str, vocabulary: Sequence[str]) -> None:
    """Check the columns, one label, case and surface value per word, and the label vocabularies
    (``vocabulary``: the labels of the table's label set)."""
    missing = [f.name for f in SEGMENT_SCHEMA if f.name not in table.column_names]
    if missing:
        raise SchemaError(f"{where}: missing column(s) {', '.join(missing)}")
    if table.num_rows == 0:
        return
    lengths = pc.list_value_length(table.column("words"))
    for column in ("labels", "case", "surface"):
        _check_per_word(table, column, where, lengths)
    _check_vocabulary(table, "labels", list(vocabulary), where)
    _check_vocabulary(table, "case", CASE_LABELS, where)


def conform(table: pa.Table, where: str = "segment table") -> pa.Table:
    """Cast a table read from Parquet (or built elsewhere) to the canonical schema.

    A table without case columns is a version-1 table: refused, since nothing can give its words
    their case back."""
    if "case" not in table.column_names or "surface" not in table.column_names:
        version = (table.schema.metadata or {}).get(b"schema", b"no schema name").decode()
        raise SchemaError(
            f"{where}: segment table of an older version ({version}, without case labels): "
            f"rerun the stage that wrote it (this version writes {SCHEMA_NAME})"
        )
    if "split" not in table.column_names:
        table = table.append_column("split", pa.nulls(table.num_rows, pa.string()))
    table = table.select(SEGMENT_SCHEMA.names).cast(SEGMENT_SCHEMA)
    return table.replace_schema_metadata(SEGMENT_SCHEMA.metadata)


def concat(tables: Iterable[pa.Table]) -> pa.Table:
    tables = [conform(t) for t in tables]
    if not tables:
        return empty_segments()
    return pa.concat_tables(tables).combine_chunks()


def with_column(table: pa.Table, name: str, values) -> pa.Table:
    """``table`` with column ``name`` replaced (the schema's type kept)."""
    index = table.schema.get_field_index(name)
    return table.set_column(index, table.schema.field(index), values)


# ----------------------------------------------------------------- words and labels as codes


_STRINGS = pa.list_(pa.string())
#: a list<string> column dictionary-encoded, as :func:`as_dictionaries` writes it
ENCODED_STRINGS = pa.list_(pa.dictionary(pa.int32(), pa.string()))
#: the label sets as Arrow arrays: codes -> strings by ``take``, or by :func:`encoded_codes`
LABEL_VALUES = pa.array(LABELS, pa.string())
CASE_VALUES = pa.array(CASE_LABELS, pa.string())


def dictionary_columns(schema: pa.Schema) -> list[str]:
    """The list<string> columns of a table (words, labels, case, surface): stored and read as
    dictionaries, so a pass that only counts or filters them never builds millions of strings."""
    return [f.name for f in schema if pa.types.is_list(f.type) and pa.types.is_string(f.type.value_type)]


def as_dictionaries(table: pa.Table) -> pa.Table:
    """``table`` with its list<string> columns dictionary-encoded (as they are written)."""
    for name in dictionary_columns(table.schema):
        column = table[name].combine_chunks()
        encoded = pa.ListArray.from_arrays(
            pc.subtract(column.offsets, column.offsets[0]) if len(column) else pa.array([0], pa.int32()),
            pc.dictionary_encode(pc.list_flatten(column)),
        )
        table = table.set_column(
            table.schema.get_field_index(name), pa.field(name, encoded.type, table.schema.field(name).nullable), encoded
        )
    return table


def flat_dictionary(column) -> tuple[np.ndarray, pa.Array]:
    """The items of a list column as integer codes into its distinct values (an Arrow array; a
    dictionary column's own dictionary)."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    flat = pc.list_flatten(column)
    if not pa.types.is_dictionary(flat.type):
        flat = pc.dictionary_encode(flat)
    return flat.indices.to_numpy(zero_copy_only=False).astype(np.int64), flat.dictionary


def encoded_codes(vocabulary: pa.Array, codes: np.ndarray) -> pa.DictionaryArray:
    """``vocabulary.take(codes)`` dictionary-encoded exactly as ``pc.dictionary_encode`` encodes it
    (the values present, in order of first appearance), made from the codes (the inverse of
    :func:`flat_codes`): the column as it is written, without building and hashing a string per
    word (1.4 s of 25 s ingesting Hindi)."""
    codes = np.asarray(codes, dtype=np.intp)
    if len(vocabulary) <= _FEW_VALUES and (not len(codes) or 0 <= codes.min() <= codes.max() < len(vocabulary)):
        firsts = _first_positions(codes, len(vocabulary))
        present = np.flatnonzero(firsts < len(codes))
        order = present[np.argsort(firsts[present])]
    else:
        present = np.flatnonzero(np.bincount(codes, minlength=len(vocabulary)))
        order = present[np.argsort([int(np.argmax(codes == code)) for code in present])]
    position = np.zeros(len(vocabulary), dtype=np.int32)
    position[order] = np.arange(len(order), dtype=np.int32)
    return pa.DictionaryArray.from_arrays(pa.array(position[codes]), vocabulary.take(pa.array(order, pa.int64())))


#: a vocabulary of at most this many values (a label set, the case labels) has each value's first
#: position looked for in turn, the array's head first: most values occur in it
_FEW_VALUES, _HEAD = 16, 4096


def _first_positions(codes: np.ndarray, n_values: int) -> np.ndarray:
    """Where each of the values ``0 .. n_values - 1`` first occurs in ``codes`` (``len(codes)``: nowhere)."""
    firsts = np.full(n_values, len(codes), dtype=np.int64)
    head = codes[:_HEAD]
    for value in range(n_values):
        hits = np.flatnonzero(head == value)
        if len(hits):
            firsts[value] = hits[0]
        elif len(codes) > _HEAD:
            at = _HEAD + int(np.argmax(codes[_HEAD:] == value))
            if codes[at] == value:
                firsts[value] = at
    return firsts


def flat_codes(column, vocabulary: tuple[str, ...] | None = None) -> tuple[np.ndarray, list[str]]:
    """The items of a list column as integer codes: into ``vocabulary`` (-1 for others) if given,
    else into the distinct values (returned).  Dictionary columns are read off their indices."""
    indices, dictionary = flat_dictionary(column)
    values = dictionary.to_pylist()
    if vocabulary is None:
        return indices, values
    lut = np.array([vocabulary.index(v) if v in vocabulary else -1 for v in values] + [-1], dtype=np.int64)
    return lut[indices], list(vocabulary)


def papers_codes(column, label_set: LabelSet):
    """The labels of a list column as ids of their papers class (-1: a label not of ``label_set``):
    what stages that count marks or sentence ends (split, oversampling) read, whatever the set."""
    codes, _ = flat_codes(column, label_set.labels)
    if label_set.is_papers:
        return codes
    return np.where(codes >= 0, label_set.merge_ids[np.maximum(codes, 0)], -1)
