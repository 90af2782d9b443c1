"""The label set, in one place.

Labels name the punctuation that *follows* a word.  Their integer ids double as
priorities: when several marks follow one word, the highest id wins
(QUESTION > PERIOD > COMMA > O), so ``?!`` is a QUESTION and ``,.`` a PERIOD.
"""

from __future__ import annotations

LABELS: tuple[str, ...] = ("O", "COMMA", "PERIOD", "QUESTION")
LABEL_TO_ID: dict[str, int] = {label: i for i, label in enumerate(LABELS)}
O, COMMA, PERIOD, QUESTION = range(4)

#: labels that end a sentence (used for segmenting labelled streams and for
#: sentence-length statistics)
SENTENCE_END_IDS = frozenset({PERIOD, QUESTION})

#: the marks written back when rendering labels as text
RENDERED_MARK: dict[str, str] = {"O": "", "COMMA": ",", "PERIOD": ".", "QUESTION": "?"}

#: class merges used for reporting (Alam 2020, Table 5)
MERGES: dict[int, dict[str, str]] = {
    4: {label: label for label in LABELS},
    3: {"O": "O", "COMMA": "COMMA", "PERIOD": "PERIOD", "QUESTION": "PERIOD"},
    2: {"O": "O", "COMMA": "PUNCT", "PERIOD": "PUNCT", "QUESTION": "PUNCT"},
}


def merge_label(label: str, n_classes: int) -> str:
    """Map a 4-class label onto the 4-, 3- or 2-class scheme."""
    try:
        return MERGES[n_classes][label]
    except KeyError:
        raise ValueError(
            f"cannot merge label {label!r} to {n_classes} classes "
            f"(labels: {', '.join(LABELS)}; classes: {sorted(MERGES)})"
        ) from None


def merged_labels(n_classes: int) -> list[str]:
    """The label names of a merged scheme, in id order."""
    seen: list[str] = []
    for label in LABELS:
        merged = merge_label(label, n_classes)
        if merged not in seen:
            seen.append(merged)
    return seen


def label_id(label: str) -> int:
    try:
        return LABEL_TO_ID[label]
    except KeyError:
        raise ValueError(f"unknown label {label!r} (expected one of {', '.join(LABELS)})") from None


#: capitalization labels, one per word beside the punctuation label: ``O`` lowercase or caseless,
#: ``U`` first letter upper, ``A`` all upper, ``M`` mixed (the exact form is kept beside it)
CASE_LABELS: tuple[str, ...] = ("O", "U", "A", "M")
CASE_TO_ID: dict[str, int] = {label: i for i, label in enumerate(CASE_LABELS)}


def count_labels(column, vocabulary: tuple[str, ...] = LABELS) -> dict[str, int]:
    """How many words carry each label in a list<string> column (every label present, 0 when absent)."""
    import pyarrow.compute as pc

    flat = pc.list_flatten(column)
    counts = dict.fromkeys(vocabulary, 0)
    if len(flat):
        for row in pc.value_counts(flat).to_pylist():
            counts[row["values"]] = int(row["counts"])
    return counts
