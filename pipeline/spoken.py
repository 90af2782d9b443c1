"""Spoken-form step: written numbers in labelled segments replaced by their spoken words.

``100,`` labelled COMMA becomes ``one hundred`` with the COMMA on ``hundred``: the mark
stays after the last spoken word, so reference text looks like ASR output (Rao
2022's Malay normalization; English reference text made ASR-like).  Spoken words are
lowercase (case O); a word left as it was keeps its case label and form.
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
    columns = {name: [] for name in ("words", "labels", "case", "surface")}
    for words, labels, case, surface in zip(*(table[name].to_pylist() for name in columns)):
        out = {name: [] for name in columns}
        for word, label, word_case, form in zip(words, labels, case, surface):
            spoken = verbalizer.verbalize(word) if verbalizer.might_apply(word) else None
            if spoken:
                parts = spoken.split()
                out["words"] += parts
                out["labels"] += ["O"] * (len(parts) - 1) + [label]
                out["case"] += ["O"] * len(parts)
                out["surface"] += [None] * len(parts)
                counts["words_spoken"] += 1
            else:
                if verbalizer.might_apply(word):
                    counts["numbers_left_written"] += 1
                for name, value in zip(columns, (word, label, word_case, form)):
                    out[name].append(value)
        for name in columns:
            columns[name].append(out[name])
    first = table.slice(0, 1)
    out_table = segments_table(
        first["corpus"][0].as_py(),
        first["lang"][0].as_py(),
        table["doc_id"],
        table["seg_id"],
        columns["words"],
        columns["labels"],
        table["split"],
        case=columns["case"],
        surface=columns["surface"],
    )
    return out_table, counts
