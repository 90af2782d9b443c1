import numpy as np

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
