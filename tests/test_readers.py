"""Bad input and edge cases of the foundation readers (inline files)."""

import pytest

from corpora import get_reader
from pipeline.errors import InputError, ParamsError


def write(tmp_path, name, data):
    path = tmp_path / name
    path.write_bytes(data if isinstance(data, bytes) else data.encode("utf-8"))
    return path


def test_tsv_segments_end_at_period_and_question(tmp_path):
    path = write(tmp_path, "a.tsv", "hi\tCOMMA\nyou\tPERIOD\nwho\tO\nare\tO\nyou\tQUESTION\ntail\tO\n")
    table = get_reader("tsv")([path], lang="en", corpus="c").table
    assert table["words"].to_pylist() == [["hi", "you"], ["who", "are", "you"], ["tail"]]
    assert table["seg_id"].to_pylist() == [0, 1, 2]
    assert set(table["doc_id"].to_pylist()) == {"a"}


def test_tsv_line_without_tab_names_file_and_line(tmp_path):
    path = write(tmp_path, "bad.tsv", "hi\tO\nthere PERIOD\n")
    with pytest.raises(InputError, match=r"bad\.tsv:2: no tab"):
        get_reader("tsv")([path], lang="en", corpus="c")


def test_tsv_unknown_label_names_file_and_line(tmp_path):
    path = write(tmp_path, "bad.tsv", "hi\tO\nthere\tO\nyou\tEXCLAIM\n")
    with pytest.raises(InputError, match=r"bad\.tsv:3: unknown label 'EXCLAIM'"):
        get_reader("tsv")([path], lang="en", corpus="c")


@pytest.mark.parametrize("reader", ["tsv", "text", "transcript"])
def test_invalid_utf8_names_file_and_byte_offset(tmp_path, reader):
    path = write(tmp_path, "bad.txt", b"ok\tO\nbro\xffken\tO\n")
    with pytest.raises(InputError, match=r"bad\.txt: invalid UTF-8 at byte offset 8 \(line 2\)"):
        get_reader(reader)([path], lang="en", corpus="c")


@pytest.mark.parametrize("reader", ["tsv", "text", "transcript"])
def test_empty_file_is_counted_not_a_crash(tmp_path, reader):
    path = write(tmp_path, "empty.txt", "")
    prepared = get_reader(reader)([path], lang="en", corpus="c")
    assert prepared.table.num_rows == 0
    assert prepared.stats["empty_files"] == 1


def test_bom_is_stripped(tmp_path):
    path = write(tmp_path, "bom.tsv", "\ufeffআমি\tO\nযাই\tPERIOD\n")
    table = get_reader("tsv")([path], lang="bn", corpus="c").table
    assert table["words"][0].as_py() == ["আমি", "যাই"]
    path = write(tmp_path, "bom.txt", "\ufeffhello there.\n")
    table = get_reader("text")([path], lang="en", corpus="c").table
    assert table["words"][0].as_py() == ["hello", "there"]


def test_blank_lines_counted_and_separate_documents(tmp_path):
    path = write(tmp_path, "doc.txt", "One. Two.\n\n\nThree?\nFour!\n")
    prepared = get_reader("text")([path], lang="en", corpus="c")
    table = prepared.table
    assert prepared.stats["blank_lines"] == 2
    assert table["doc_id"].to_pylist() == ["doc#0", "doc#2", "doc#2"]
    assert table["seg_id"].to_pylist() == [0, 0, 1]
    assert table["labels"].to_pylist() == [["PERIOD", "PERIOD"], ["QUESTION"], ["PERIOD"]]
    prepared = get_reader("text")([path], lang="en", corpus="c", doc_boundary="file")
    assert set(prepared.table["doc_id"].to_pylist()) == {"doc"}


def test_tsv_blank_lines_counted(tmp_path):
    path = write(tmp_path, "a.tsv", "a\tO\n\nb\tPERIOD\n\n")
    prepared = get_reader("tsv")([path], lang="en", corpus="c")
    assert prepared.stats["blank_lines"] == 2  # line 2 and line 4
    assert prepared.table["words"].to_pylist() == [["a"], ["b"]]


def test_normalization_nfc_zero_width_nbsp(tmp_path):
    # decomposed e + acute, a zero-width space inside a word, a no-break space between words
    path = write(tmp_path, "n.txt", "cafe\u0301 wi\u200bki\u00a0page.\n")
    table = get_reader("text")([path], lang="en", corpus="c").table
    assert table["words"][0].as_py() == ["caf\u00e9", "wiki", "page"]


def test_bangla_uses_indic_normalizer(tmp_path):
    from indicnlp.normalize.indic_normalize import IndicNormalizerFactory

    # U+09DF (য়, a composition exclusion) becomes য + nukta; the joiner is left for
    # indic-nlp's normalizer to decide on (it drops it), not stripped beforehand
    raw = "\u09a8\u09df\u0964 \u09b0\u200d\u09cd\u09af"
    path = write(tmp_path, "n.txt", raw + "\n")
    words = get_reader("text")([path], lang="bn", corpus="c").table["words"][0].as_py()
    assert words[0] == "\u09a8\u09af\u09bc"
    expected = IndicNormalizerFactory().get_normalizer("bn", remove_nuktas=False).normalize(raw.split()[1])
    assert words[1] == expected


def test_transcript_all_labels_o_and_marks_counted(tmp_path):
    path = write(tmp_path, "asr.txt", "hello world\nthis, was punctuated.\n")
    prepared = get_reader("transcript")([path], lang="en", corpus="c")
    assert prepared.table["labels"].to_pylist() == [["O", "O"], ["O", "O", "O"]]
    assert prepared.stats["marks_stripped"] == 2
    assert set(prepared.table["doc_id"].to_pylist()) == {"asr"}


def test_unknown_reader():
    with pytest.raises(ParamsError, match="unknown reader 'xml'"):
        get_reader("xml")


def test_lines_without_words_leave_without_copying_the_others():
    """The rows a reader keeps of a labelled block: where the rows left out are empty (lines
    without words) only the offsets change; either way the result is ``take``'s, also on a slice
    whose offsets do not start at 0 and on dictionary-encoded values."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc

    from corpora.base import _keep_rows

    lists = [["a", "b"], [], ["c"], [], [], ["d", "e", "f"], ["g"], []]
    plain = pa.array(lists, pa.list_(pa.string()))
    encoded = pa.ListArray.from_arrays(plain.offsets, pc.dictionary_encode(plain.values))
    rng = np.random.default_rng(3)
    for column in (plain, encoded, plain.slice(2, 5), encoded.slice(1, 6)):
        n = len(column)
        nonempty = pc.list_value_length(column).to_numpy(zero_copy_only=False) > 0
        keeps = [nonempty, np.ones(n, bool), np.zeros(n, bool), *(rng.random(n) < 0.5 for _ in range(20))]
        for keep in keeps:
            expected = column.take(pa.array(np.flatnonzero(keep), pa.int64()))
            got = _keep_rows(column, keep)
            assert got.to_pylist() == expected.to_pylist(), keep
            assert got.type == column.type


@pytest.mark.parametrize("doc_boundary", ["line", "blank_line", "file"])
def test_text_documents_and_segments_are_numbered_by_the_rule(tmp_path, doc_boundary):
    """The text reader's document ids (``<stem>#<k>``, or ``<stem>``) and segment numbers, made in
    Arrow, are the module doc's rule written out in Python, over shards of any size (blank lines and
    a line without words dropped, numbers past a shard's start)."""
    import pyarrow as pa

    from pipeline.ingest import ingest_table

    lines = ["a b.", "c", "", "", "d, e", "f?", "", "g", "...", "h i", "", "j"] * 3
    path = write(tmp_path, "talk.txt", "\n".join(lines) + "\n")
    expected_docs, expected_segs, doc, seg = [], [], 0, 0
    for k, line in enumerate(lines):
        if not line:
            doc, seg = doc + 1, 0
            continue
        if line != "...":  # a line of marks only has no words: dropped, its number kept
            name = {"line": f"talk#{k}", "blank_line": f"talk#{doc}", "file": "talk"}[doc_boundary]
            expected_docs.append(name)
            expected_segs.append({"line": 0, "blank_line": seg, "file": k - lines[:k].count("")}[doc_boundary])
        seg += 1
    for lines_per_shard in (1, 5, 1000):
        table, _ = ingest_table(
            "text", path, "en", "c", {"doc_boundary": doc_boundary}, lines_per_shard=lines_per_shard
        )
        assert table.schema.field("doc_id").type == pa.string()
        assert table["doc_id"].to_pylist() == expected_docs
        assert table["seg_id"].to_pylist() == expected_segs
