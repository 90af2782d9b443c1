import numpy as np
import pytest

from pipeline.audit.stats import audit, sentence_lengths
from pipeline.labels import LABELS, PAPERS
from pipeline.schema import segments_table


def test_sentence_lengths_span_segments_not_documents():
    table = segments_table(
        "c",
        "en",
        ["a", "a", "b"],
        [0, 1, 0],
        [["w1", "w2"], ["w3", "w4", "w5"], ["x1", "x2", "x3"]],
        [["O", "O"], ["PERIOD", "O", "QUESTION"], ["O", "PERIOD", "O"]],
        vocabulary=LABELS,
    )
    # doc a: w1..w3 (3 words) and w4..w5 (2); doc b: x1..x2 (2); x3 ends no sentence
    assert sentence_lengths(table, PAPERS).tolist() == [3, 2, 2]
    summary = audit([table], label_set=PAPERS)["c"]
    assert summary["sentence_length"]["mean"] == round(np.mean([3, 2, 2]), 4)
    assert summary["sentence_length"]["std"] == round(np.std([3, 2, 2]), 4)
    assert summary["labels"] == {"O": 5, "COMMA": 0, "PERIOD": 2, "QUESTION": 1}


def test_empty_table_and_missing_labels():
    empty = segments_table("c", "en", [], [], [], [], vocabulary=LABELS)
    summary = audit([empty], label_set=PAPERS)["(empty)"]
    assert summary["words"] == 0 and summary["labels"] == {"O": 0, "COMMA": 0, "PERIOD": 0, "QUESTION": 0}
    assert summary["sentence_length"]["mean"] == summary["sentence_length"]["std"] == 0.0
    no_end = segments_table("c", "en", ["d"], [0], [["a", "b"]], [["O", "COMMA"]], vocabulary=LABELS)
    assert audit([no_end], label_set=PAPERS)["c"]["sentence_length"]["mean"] == 0.0


def test_a_document_is_its_corpus_and_id_when_corpora_share_a_shard(tmp_path):
    """Documents are keyed once per run of rows: a corpus change with the same doc id starts
    another document (two corpora pooled under one name keep theirs apart), and a document of
    several rows counts once."""
    import pyarrow as pa

    from pipeline.audit.stats import TableShard, aggregate
    from pipeline.engine.executor import executor

    first = segments_table(
        "c1", "en", ["a", "a", "b"], [0, 1, 0], [["x"], ["y", "z"], ["q"]], [["PERIOD"], ["O", "PERIOD"], ["O"]],
        vocabulary=LABELS,
    )  # fmt: skip
    second = segments_table("c2", "en", ["b", "b"], [0, 1], [["x"], ["y"]], [["O"], ["PERIOD"]], vocabulary=LABELS)
    table = pa.concat_tables([first, second])
    with executor("inline") as runner:
        own, _ = aggregate(runner, [TableShard(table, 0)], tmp_path / "own", label_set=PAPERS)
        pooled, _ = aggregate(runner, [TableShard(table, 0)], tmp_path / "pooled", names=["all"], label_set=PAPERS)
    assert own["c1"]["documents"] == 2 and own["c2"]["documents"] == 1
    assert pooled["all"]["documents"] == 3 and pooled["all"]["segments"] == 5


def test_words_coded_by_the_caller_audit_alike(tmp_path):
    """A shard whose words' codes the caller made (as the sequences stage shares them with its
    packing) gives the tallies and hash groups of the same shard coded by the audit."""
    import pyarrow as pa

    from pipeline.audit.stats import AuditShard, TableShard
    from pipeline.engine.hashsets import word_codes

    table = segments_table(
        "c", "en", ["a", "a", "b"], [0, 1, 0], [["x", "y"], ["y", "z"], ["x"]],
        [["O", "PERIOD"], ["O", "QUESTION"], ["O"]], vocabulary=LABELS,
    )  # fmt: skip
    table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(["train", "train", "dev"]))
    own = AuditShard(tmp_path / "own", label_set=PAPERS)(TableShard(table, 0))
    given = AuditShard(tmp_path / "given", label_set=PAPERS)(TableShard(table, 0, 0, word_codes(table["words"])))
    assert own == given
    assert (tmp_path / "own/00000.bin").read_bytes() == (tmp_path / "given/00000.bin").read_bytes()


@pytest.mark.parametrize("spanning", [False, True])
def test_tallies_per_split_and_language_are_those_of_their_rows(tmp_path, spanning):
    """Every (corpus, split, lang) tally of a shard, wildcards included, equals the tally of just
    those rows: with each document in one split and language (the sentences found once over the
    shard) and with a document whose rows fall into two splits (found per set of rows)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from pipeline.audit.stats import AuditShard, TableShard, tally

    rng = np.random.default_rng(11)
    doc_ids, seg_ids, words, labels, splits, langs = [], [], [], [], [], []
    for d in range(40):
        split, lang = rng.choice(["train", "dev", "test"]), rng.choice(["en", "fr"])
        for s in range(int(rng.integers(1, 5))):
            n = int(rng.integers(0, 9))
            doc_ids.append(f"d{d}")
            seg_ids.append(s)
            words.append([f"w{int(rng.integers(0, 30))}" for _ in range(n)])
            labels.append([str(rng.choice(["O", "O", "O", "COMMA", "PERIOD", "QUESTION"])) for _ in range(n)])
            splits.append(str(split) if not (spanning and d == 7 and s == 1) else "dev" if split != "dev" else "test")
            langs.append(str(lang))
    table = segments_table("c", "en", doc_ids, seg_ids, words, labels, vocabulary=LABELS)
    table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(splits))
    table = table.set_column(table.schema.get_field_index("lang"), "lang", pa.array(langs))
    (tallies,), _ = AuditShard(tmp_path, label_set=PAPERS)(TableShard(table, 0))
    assert len(tallies) > 8
    for (_corpus, split, lang), found in tallies.items():
        keep = np.ones(table.num_rows, bool)
        if split != "*":
            keep &= pc.equal(table["split"], split).to_numpy(zero_copy_only=False)
        if lang != "*":
            keep &= pc.equal(table["lang"], lang).to_numpy(zero_copy_only=False)
        expected = tally(table.filter(pa.array(keep)), PAPERS)
        assert (found.words, found.segments, found.labels, found.case) == (
            expected.words, expected.segments, expected.labels, expected.case
        ), (split, lang)  # fmt: skip
        assert found.sentences == expected.sentences and found.segment_lengths == expected.segment_lengths
