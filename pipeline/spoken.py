"""Spoken-form step: written numbers in labelled segments replaced by their spoken words.

``100,`` labelled COMMA becomes ``one hundred`` with the COMMA on ``hundred``: the mark
stays after the last spoken word, so reference text looks like ASR output (Rao
2022's Malay normalization; English reference text made ASR-like).
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from .schema import segments_table


def speak_table(table: pa.Table, verbalizer) -> tuple[pa.Table, Counter]:
    """The table with every word a grammar accepts replaced by its spoken form."""
    counts: Counter = Counter()
    if table.num_rows == 0:
        return table, counts
    flat = pc.list_flatten(table["words"])
    if not pc.any(pc.match_substring_regex(flat, "[0-9]|^www\\.|^https?://")).as_py():
        return table, counts
    new_words, new_labels = [], []
    for words, labels in zip(table["words"].to_pylist(), table["labels"].to_pylist()):
        out_w, out_l = [], []
        for word, label in zip(words, labels):
            spoken = verbalizer.verbalize(word) if verbalizer.might_apply(word) else None
            if spoken:
                parts = spoken.split()
                out_w.extend(parts)
                out_l.extend(["O"] * (len(parts) - 1) + [label])
                counts["words_spoken"] += 1
            else:
                if verbalizer.might_apply(word):
                    counts["numbers_left_written"] += 1
                out_w.append(word)
                out_l.append(label)
        new_words.append(out_w)
        new_labels.append(out_l)
    first = table.slice(0, 1)
    out = segments_table(
        first["corpus"][0].as_py(),
        first["lang"][0].as_py(),
        table["doc_id"],
        table["seg_id"],
        new_words,
        new_labels,
        table["split"],
    )
    return out, counts
