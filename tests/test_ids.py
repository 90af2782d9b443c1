"""Ids that cannot collide silently (issue 32 item 5, issue 34 item 3): a repeated TED talk id, or
input files of one stem, are made unique and counted; leakage and duplicates are keyed by
(corpus, doc_id), and the leakage report names what it found."""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.ingesting import ingest_files

from pipeline.audit.stats import TableShard, aggregate, audit
from pipeline.engine.executor import executor
from pipeline.ingest import id_suffixes, ingest_table
from pipeline.labels import LABELS, PAPERS
from pipeline.schema import segments_table

ROOT = Path(__file__).resolve().parent.parent

TED = """<mteval>
<srcset setid="x" srclang="en">
<doc docid="talk-a"><talkid>535</talkid>
<seg id="1">We began here.</seg>
<seg id="2">Then what?</seg>
</doc>
<doc docid="talk-b"><talkid>535</talkid>
<seg id="1">A second talk, the same id.</seg>
</doc>
<doc docid="talk-c"><talkid>535</talkid>
<seg id="1">And a third.</seg>
</doc>
</srcset>
</mteval>
"""


def _docs(table: pa.Table) -> list[str]:
    return list(dict.fromkeys(table["doc_id"].to_pylist()))


def test_a_repeated_ted_talk_id_becomes_unique_and_is_counted(tmp_path):
    path = tmp_path / "talks.xml"
    path.write_text(TED, encoding="utf-8")
    table, report = ingest_table("ted_xml", path, "en", "ted")
    assert _docs(table) == ["535", "535~2", "535~3"]
    assert report["ids_made_unique"] == 2
    assert report["documents"] == 3
    assert table.filter(pc.equal(table["doc_id"], "535~2"))["words"].to_pylist() == [
        ["a", "second", "talk", "the", "same", "id"]
    ]


def test_a_talk_id_of_two_files_becomes_two_documents(tmp_path):
    """The first file's last talk and the second file's first share an id: adjacent rows, which
    would otherwise read as one document."""
    first = TED.replace('<doc docid="talk-b"><talkid>535</talkid>', '<doc docid="talk-b"><talkid>536</talkid>')
    first = first.replace('<doc docid="talk-c"><talkid>535</talkid>', '<doc docid="talk-c"><talkid>700</talkid>')
    second = first.replace("<talkid>536</talkid>", "<talkid>537</talkid>").replace(
        "<talkid>535</talkid>", "<talkid>700</talkid>", 1
    )
    (tmp_path / "a.xml").write_text(first, encoding="utf-8")
    (tmp_path / "b.xml").write_text(second, encoding="utf-8")
    table, report = ingest_table("ted_xml", [tmp_path / "a.xml", tmp_path / "b.xml"], "en", "ted")
    assert _docs(table) == ["535", "536", "700", "700~2", "537", "700~3"]
    assert report["ids_made_unique"] == 2
    assert report["documents"] == 6


def test_files_of_one_stem_in_different_folders_keep_their_documents_apart(tmp_path):
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a/talks.txt").write_text("First file, first talk.\n\nFirst file, second talk.\n", encoding="utf-8")
    (tmp_path / "b/talks.txt").write_text("Second file, first talk.\n", encoding="utf-8")
    inputs = [tmp_path / "a/talks.txt", tmp_path / "b/talks.txt"]
    table, report = ingest_table("text", inputs, "en", "talks")
    assert _docs(table) == ["talks#0", "talks#1", "talks#0~2"]
    assert report["ids_made_unique"] == 1


def test_one_stem_two_extensions_in_one_folder(tmp_path):
    (tmp_path / "notes.md").write_text("one\tO\n", encoding="utf-8")
    (tmp_path / "notes.tsv").write_text("two\tPERIOD\n", encoding="utf-8")
    table, report = ingest_table("tsv", tmp_path, "en", "n")
    assert _docs(table) == ["notes", "notes~2"]
    assert report["ids_made_unique"] == 1


def test_the_sharded_ingest_gives_the_same_ids(tmp_path):
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "talks.txt").write_text("One talk.\n\nAnother talk.\n" * 3, encoding="utf-8")
    inputs = [tmp_path / "a/talks.txt", tmp_path / "b/talks.txt"]
    memory, _ = ingest_table("text", inputs, "en", "talks")
    report = ingest_files(
        "text", inputs, "en", "talks", tmp_path / "out.parquet", tmp_path / "stats.json", lines_per_shard=2
    )
    import pyarrow.parquet as pq

    written = pq.read_table(tmp_path / "out.parquet")
    assert written["doc_id"].to_pylist() == memory["doc_id"].to_pylist()
    assert len(set(written["doc_id"].to_pylist())) == 8  # four documents a file
    assert report["ids_made_unique"] == 1


def test_id_suffixes_follow_the_given_order():
    files = ["x/a.txt", "y/a.txt", "y/b.txt", "z/a.tsv"]
    assert id_suffixes(files) == {"y/a.txt": "~2", "z/a.tsv": "~3"}
    assert id_suffixes(["a.txt", "b.txt"]) == {}


def _split_table(corpus: str, lang: str, rows) -> pa.Table:
    return segments_table(
        corpus,
        lang,
        [doc for doc, _, _ in rows],
        list(range(len(rows))),
        [words for _, _, words in rows],
        [["O"] * (len(words) - 1) + ["PERIOD"] for _, _, words in rows],
        [split for _, split, _ in rows],
        vocabulary=LABELS,
    )


def test_the_same_doc_id_in_two_corpora_is_not_leakage():
    en = _split_table("en_talks", "en", [("talks#1", "train", ["hello", "there"]), ("talks#2", "dev", ["so", "on"])])
    zh = _split_table("zh_talks", "zh", [("talks#1", "test", ["你好", "吗"])])
    shards = [TableShard(en, 0, 0), TableShard(zh, 1, 1)]
    with executor("inline") as runner:
        import tempfile

        with tempfile.TemporaryDirectory() as folder:
            result, _ = aggregate(runner, shards, folder, names=["ds", "ds"], label_set=PAPERS)
    assert result["ds"]["leakage"] == {"documents_in_several_splits": 0, "segments_in_several_splits": 0}
    assert result["ds"]["documents"] == 3


def test_leakage_names_the_documents_per_pair_of_splits():
    rows = [(f"d{i}", "train", ["w", str(i)]) for i in range(8)]
    rows += [(f"d{i}", "test", ["x", str(i)]) for i in range(7)]
    rows += [("d0", "dev", ["y", "0"])]
    result = audit([_split_table("c", "en", rows)], label_set=PAPERS)["c"]
    leakage = result["leakage"]
    assert leakage["documents_in_several_splits"] == 7
    found = leakage["documents_found"]
    assert found["train+test"] == [["c", f"d{i}"] for i in range(1, 6)]  # d0 is in three splits
    assert found["train+dev+test"] == [["c", "d0"]]


@pytest.mark.skipif(not (ROOT / "corpora/samples/zh/talks.txt").exists(), reason="samples")
def test_sample_corpora_en_and_zh_share_ids_but_are_different_documents():
    en, _ = ingest_table("text", ROOT / "corpora/samples/en/talks.txt", "en", "en_talks")
    zh, _ = ingest_table("text", ROOT / "corpora/samples/zh/talks.txt", "zh", "zh_talks")
    assert set(en["doc_id"].to_pylist()) & set(zh["doc_id"].to_pylist())
    tagged = [
        en.set_column(en.schema.get_field_index("split"), "split", pa.array(["train"] * en.num_rows)),
        zh.set_column(zh.schema.get_field_index("split"), "split", pa.array(["test"] * zh.num_rows)),
    ]
    shards = [TableShard(t, i, i) for i, t in enumerate(tagged)]
    import tempfile

    with executor("inline") as runner, tempfile.TemporaryDirectory() as folder:
        result, _ = aggregate(runner, shards, folder, names=["multi", "multi"], label_set=PAPERS)
    assert result["multi"]["leakage"]["documents_in_several_splits"] == 0
