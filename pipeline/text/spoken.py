"""Spoken-form step: written numbers in labelled segments replaced by their spoken words.

``$45 billion.`` (words ``$45 billion``, labels ``O PERIOD``) becomes ``forty five billion
dollars`` with the PERIOD on ``dollars``: each input word's label goes to the output word
that :meth:`pipeline.text.verbalize.Verbalizer.speak` names as its source, every other output
word gets ``O``.  So reference text looks like ASR output (Rao 2022's Malay
normalization; English reference text made ASR-like) and no mark is lost.  A word the step
leaves as it was keeps its case label and form; spoken words are lowercase (case O).
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.labels import LabelSet
from pipeline.schema import segments_table


def speak_table(table: pa.Table, verbalizer, label_set: LabelSet) -> tuple[pa.Table, Counter]:
    """The table with every group of words a grammar reads replaced by its spoken form.

    Counts: ``spoken:<class>`` and ``left_written:<reason>`` per group (see
    :class:`pipeline.text.verbalize.Spoken`), and ``words_spoken``, their sum over spoken classes.
    """
    counts: Counter = Counter()
    if table.num_rows == 0:
        return table, counts
    flat = pc.list_flatten(table["words"])
    if not pc.any(
        pc.match_substring_regex(flat, "[0-9\u0966-\u096f\u09e6-\u09ef\u00bc-\u00be\u2150-\u215e]|^www\\.|^https?://")
    ).as_py():
        return table, counts
    # labels after which a group of words may not go on (a sentence ends there)
    sentence_ends = frozenset(label_set.labels[i] for i in label_set.sentence_end_ids)
    columns = {name: [] for name in ("words", "labels", "case", "surface")}
    for words, labels, case, surface in zip(*(table[name].to_pylist() for name in columns)):
        if not any(verbalizer.might_apply(w) for w in words):
            for name, value in zip(columns, (words, labels, case, surface)):
                columns[name].append(value)
            continue
        stops = [i for i, label in enumerate(labels) if label in sentence_ends]
        spoken = verbalizer.speak(words, stops)
        kept = [i >= 0 and out == words[i] for out, i in zip(spoken.words, spoken.source)]
        columns["words"].append(spoken.words)
        columns["labels"].append([labels[i] if i >= 0 else "O" for i in spoken.source])
        columns["case"].append([case[i] if k else "O" for i, k in zip(spoken.source, kept)])
        columns["surface"].append([surface[i] if k else None for i, k in zip(spoken.source, kept)])
        counts.update(spoken.counts)
    counts["words_spoken"] = sum(n for key, n in counts.items() if key.startswith("spoken:"))
    first = table.slice(0, 1)
    out = segments_table(
        first["corpus"][0].as_py(),
        first["lang"][0].as_py(),
        table["doc_id"],
        table["seg_id"],
        columns["words"],
        columns["labels"],
        table["split"],
        case=columns["case"],
        surface=columns["surface"],
        vocabulary=label_set.labels,
    )
    return out, counts
