import json

import pyarrow as pa
import pytest

from pipeline import errors
from pipeline.engine import reading, writing
from pipeline.labels import LABELS
from pipeline.schema import SchemaError, segments_table


def sample_table():
    return segments_table(
        "c", "en", ["d", "d"], [0, 1], [["a", "b"], ["c"]], [["O", "PERIOD"], ["QUESTION"]], vocabulary=LABELS
    )


def test_parquet_round_trip_and_determinism(tmp_path):
    table = sample_table()
    writing.write_parquet(table, tmp_path / "a.parquet")
    writing.write_parquet(table, tmp_path / "b.parquet")
    assert (tmp_path / "a.parquet").read_bytes() == (tmp_path / "b.parquet").read_bytes()
    back = reading.read_segments(tmp_path / "a.parquet")
    assert back.equals(table)
    assert back.schema.field("words").type == pa.list_(pa.string())


def test_failed_write_leaves_nothing(tmp_path, monkeypatch):
    target = tmp_path / "out" / "x.parquet"
    writing.write_table(sample_table(), target)
    before = target.read_bytes()

    def boom(*args, **kwargs):
        raise RuntimeError("disk full")

    monkeypatch.setattr(writing.pq, "write_table", boom)
    with pytest.raises(RuntimeError):
        writing.write_table(sample_table(), target)
    assert target.read_bytes() == before  # the old output is untouched
    # no temporary or lock left behind: the output and its marker (which lets a later run replace it)
    assert sorted(p.name for p in target.parent.iterdir()) == [".x.parquet.punct", "x.parquet"]
    with pytest.raises(RuntimeError):
        writing.write_table(sample_table(), tmp_path / "out" / "new.parquet")
    assert not (tmp_path / "out" / "new.parquet").exists()


def test_schema_checks():
    with pytest.raises(SchemaError, match="row 0 has 2 words but 1 labels"):
        segments_table("c", "en", ["d"], [0], [["a", "b"]], [["O"]], vocabulary=LABELS)
    with pytest.raises(SchemaError, match="unknown label 'BANG'"):
        segments_table("c", "en", ["d"], [0], [["a"]], [["BANG"]], vocabulary=LABELS)


def test_not_a_parquet(tmp_path):
    path = tmp_path / "x.parquet"
    path.write_text("nope")
    with pytest.raises(errors.InputError, match=r"x\.parquet: not a readable Parquet"):
        reading.read_segments(path)


def test_write_json_atomic(tmp_path):
    writing.write_json({"a": 1}, tmp_path / "d" / "m.json")
    assert json.loads((tmp_path / "d" / "m.json").read_text()) == {"a": 1}


def test_encoded_label_columns_write_the_bytes_of_plain_ones(tmp_path):
    """A segment table whose label and case lists are dictionary-encoded (as the labeller builds
    them) stays encoded, writes the same bytes as the plain table, and reads back as strings."""
    import pyarrow.compute as pc

    words, labels, case = [["a", "b"], [], ["c"]], [["PERIOD", "O"], [], ["QUESTION"]], [["U", "O"], [], ["A"]]

    def encoded(lists):
        plain = pa.array(lists, pa.list_(pa.string()))
        return pa.ListArray.from_arrays(plain.offsets, pc.dictionary_encode(plain.values))

    plain = segments_table("c", "en", ["d"] * 3, [0, 1, 2], words, labels, case=case, vocabulary=LABELS)
    coded = segments_table(
        "c", "en", ["d"] * 3, [0, 1, 2], words, encoded(labels), case=encoded(case), vocabulary=LABELS
    )
    assert pa.types.is_dictionary(coded.schema.field("labels").type.value_type)
    writing.write_parquet(plain, tmp_path / "plain.parquet")
    writing.write_parquet(coded, tmp_path / "coded.parquet")
    assert (tmp_path / "plain.parquet").read_bytes() == (tmp_path / "coded.parquet").read_bytes()
    assert reading.read_segments(tmp_path / "coded.parquet").equals(plain)


def test_schema_checks_the_labels_an_encoded_column_uses():
    """An unknown label in an encoded column is refused; a dictionary value no word uses is not a label."""
    dictionary = pa.array(["O", "BANG"], pa.string())

    def column(indices):
        values = pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), dictionary)
        return pa.ListArray.from_arrays(pa.array([0, len(indices)], pa.int32()), values)

    assert segments_table("c", "en", ["d"], [0], [["a", "b"]], column([0, 0]), vocabulary=LABELS)[
        "labels"
    ].to_pylist() == [["O", "O"]]
    with pytest.raises(SchemaError, match="unknown label 'BANG'"):
        segments_table("c", "en", ["d"], [0], [["a", "b"]], column([0, 1]), vocabulary=LABELS)
    # of several unknown labels, the first a word uses is named
    dictionary = pa.array(["O", "BANG", "WHAT"], pa.string())
    with pytest.raises(SchemaError, match="unknown label 'WHAT'"):
        segments_table("c", "en", ["d"], [0], [["a", "b", "c"]], column([0, 2, 1]), vocabulary=LABELS)


def test_integer_lists_are_written_without_a_dictionary(tmp_path):
    """The sequences' integer lists get byte-stream-split (32-bit) or delta (narrower) pages at
    zstd level 1; every other column keeps the dictionary pages and level of ``PARQUET_OPTIONS``,
    and the values read back unchanged."""
    import pyarrow.parquet as pq

    from pipeline.datasets.sequences import SEQUENCE_SCHEMA
    from pipeline.schema import PARQUET_OPTIONS, parquet_options, statistics_columns

    lists = [[101, 7, 102], [101, 102]]
    table = pa.Table.from_pydict(
        {
            "corpus": ["c", "c"], "lang": ["en", "en"], "split": ["train", "dev"], "doc_id": ["a", "b"],
            "chunk_id": [0, 0], "input_ids": lists,
            "labels": [[-100, 2, -100], [-100, -100]], "case_labels": [[-100, 1, -100], [-100, -100]],
            "word_index": [[-1, 0, -1], [-1, -1]],
        },
        schema=SEQUENCE_SCHEMA,
    )  # fmt: skip
    writing.write_parquet(table, tmp_path / "s.parquet")
    columns = pq.ParquetFile(tmp_path / "s.parquet").metadata.row_group(0)
    encodings = {columns.column(i).path_in_schema: columns.column(i).encodings for i in range(columns.num_columns)}
    assert "BYTE_STREAM_SPLIT" in encodings["input_ids.list.element"]
    assert "BYTE_STREAM_SPLIT" in encodings["word_index.list.element"]
    assert "DELTA_BINARY_PACKED" in encodings["labels.list.element"]
    assert "RLE_DICTIONARY" not in encodings["case_labels.list.element"]
    assert "RLE_DICTIONARY" in encodings["doc_id"]
    assert pq.read_table(tmp_path / "s.parquet").equals(table)
    # a table without integer lists: the shared options as they are
    segments = sample_table()
    plain = dict(PARQUET_OPTIONS, write_statistics=statistics_columns(segments.schema), store_schema=False)
    assert parquet_options(segments.schema) == plain
