import pytest

from pipeline.labels import LABELS, label_id, merge_label, merged_labels


def test_label_set_and_priority_order():
    assert LABELS == ("O", "COMMA", "PERIOD", "QUESTION")
    assert [label_id(l) for l in LABELS] == [0, 1, 2, 3]


def test_merges():
    assert merge_label("QUESTION", 3) == "PERIOD"
    assert merge_label("COMMA", 3) == "COMMA"
    assert {merge_label(l, 2) for l in ("COMMA", "PERIOD", "QUESTION")} == {"PUNCT"}
    assert merge_label("O", 2) == "O"
    assert merged_labels(3) == ["O", "COMMA", "PERIOD"]
    assert merged_labels(2) == ["O", "PUNCT"]


def test_unknown_label_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown label 'EXCLAMATION'"):
        label_id("EXCLAMATION")
    with pytest.raises(ValueError, match="cannot merge"):
        merge_label("O", 5)
