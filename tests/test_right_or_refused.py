"""Results that are the user's, or refused: empty TSV words, exports that load their own rows, empty
splits, the label set carried by every Parquet file, command-line values checked as params are."""

from __future__ import annotations

import json

from support.reliability import call, error_line

#: a user's labelled TSV: a zero-width "word" with a COMMA after "one", an empty word with a QUESTION
#: after "two" (its label merges: QUESTION > PERIOD), an empty word opening the file
TSV = "\tCOMMA\nzero\tO\none\tO\n\u200b\tCOMMA\nmore\tPERIOD\ntwo\tPERIOD\n\tQUESTION\nthree\tO\nend\tPERIOD\n"


def test_an_empty_tsv_word_is_dropped_and_counted_and_the_nemo_lines_agree(tmp_path):
    source = tmp_path / "mine.tsv"
    source.write_text(TSV, encoding="utf-8")
    out, stats = tmp_path / "mine.parquet", tmp_path / "stats.json"
    rc, err = call(
        "pipeline",
        ["ingest", "-q", "--reader", "tsv", "--lang", "en", "--corpus", "mine", source, "--out", out, "--stats", stats],
    )
    assert rc == 0, err
    counts = json.loads(stats.read_text(encoding="utf-8"))
    flat = json.dumps(counts)
    for key, n in (
        ("empty_words", 3),
        ("empty_word_labels_dropped", 1),
        ("empty_word_labels_moved", 1),
        ("empty_word_labels_merged", 1),
    ):
        assert f'"{key}": {n}' in flat, (key, counts)

    from pipeline.engine.reading import read_segments

    table = read_segments(out)
    assert table["words"].to_pylist() == [["zero", "one", "more"], ["two"], ["three", "end"]]
    assert table["labels"].to_pylist() == [["O", "COMMA", "PERIOD"], ["QUESTION"], ["O", "PERIOD"]]

    rc, err = call("pipeline", ["export", "-q", "--format", "nemo", out, "--out", tmp_path / "nemo"])
    assert rc == 0, err
    text = (tmp_path / "nemo/train/text.txt").read_text(encoding="utf-8").splitlines()
    labels = (tmp_path / "nemo/train/labels.txt").read_text(encoding="utf-8").splitlines()
    assert len(text) == len(labels) == 3
    for words, tags in zip(text, labels):
        assert words.split(" ") == words.split() and len(words.split(" ")) == len(tags.split(" "))
    assert labels[0] == "OO ,O .O"
