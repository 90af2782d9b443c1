"""What the readers share: the in-memory result of ``prepare`` and the segment-numbering helpers."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.engine.step import Counts
from pipeline.ingest import ingest_table
from pipeline.schema import segments_table
from pipeline.text.normalize import value_offsets


@dataclass
class Prepared:
    """A corpus read in memory: the segment table and its report (what was read and dropped)."""

    table: pa.Table
    counts: Counts

    @property
    def stats(self) -> Counter:
        return self.counts.stats

    @property
    def dropped(self) -> Counter:
        return self.counts.dropped

    def report(self) -> dict:
        return self.counts.report()


def prepare_with(
    reader: str,
    paths,
    lang: str,
    corpus: str,
    spoken: bool = False,
    glob: str = "*",
    user_dict: str | None = None,
    protocol: str = "papers",
    **options,
) -> Prepared:
    """``prepare`` of a reader: :func:`pipeline.ingest.ingest_table` (the same step as a sharded run);
    ``protocol``: a paper's preprocessing (:mod:`pipeline.text.protocols`)."""
    table, report = ingest_table(
        reader, paths, lang, corpus, options, spoken=spoken, glob=glob, user_dict=user_dict, protocol=protocol
    )
    counts = Counts()
    for key, value in report.items():
        if key == "dropped":
            counts.dropped.update(value)
        elif key == "notes":
            counts.notes |= set(value)
        elif isinstance(value, int):
            counts.stats[key] += value
        elif isinstance(value, dict):
            for name, tally in value.items():
                counts.tallies.setdefault(key, {})[name] = Counter(tally)
    return Prepared(table, counts)


def lines_table(
    corpus: str, lang: str, doc_names: list[str] | pa.Array, seg: np.ndarray, labelled, keep: np.ndarray, labels=None
) -> pa.Table:
    """Segments of the ``keep`` lines of a labelled block (``labels`` replaces the labelled ones)."""
    labels = labels if labels is not None else labelled.labels
    columns = (labelled.words, labels, labelled.case, labelled.surface)
    if not keep.all():
        columns = tuple(_keep_rows(column, keep) for column in columns)
        if isinstance(doc_names, pa.Array):
            doc_names = doc_names.filter(pa.array(keep))
        else:
            doc_names = [name for name, k in zip(doc_names, keep) if k]
        seg = seg[keep]
    words, labels, case, surface = columns
    vocabulary = labelled.label_set.labels
    return segments_table(
        corpus, lang, doc_names, seg, words, labels, case=case, surface=surface, vocabulary=vocabulary
    )


def _keep_rows(column: pa.ListArray, keep: np.ndarray) -> pa.ListArray:
    """The ``keep`` rows of a list column.  Where the rows left out are empty lists (lines without
    words), the kept rows' values are all the values: only the offsets change, nothing is copied."""
    offsets = value_offsets(column)
    if (offsets[1:][~keep] == offsets[:-1][~keep]).all():
        kept = np.append(offsets[:-1][keep], offsets[-1]) - offsets[0]
        return pa.ListArray.from_arrays(pa.array(kept), column.values.slice(offsets[0], kept[-1]))
    return column.take(pa.array(np.flatnonzero(keep)))


def stem(path) -> str:
    return Path(path).stem
