"""What every reader returns, and helpers the readers share."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa

from pipeline.schema import segments_table


@dataclass
class Prepared:
    table: pa.Table
    #: what was read (files, lines, segments, words) and, under "dropped", what was lost and why
    stats: Counter = field(default_factory=Counter)
    dropped: Counter = field(default_factory=Counter)

    def speak(self, lang: str) -> None:
        """Replace written numbers by their spoken form (the ``spoken`` option), counting what changed."""
        from pipeline.spoken import speak_table
        from pipeline.verbalize import get_verbalizer

        self.table, counts = speak_table(self.table, get_verbalizer(lang))
        self.stats.update(counts)
        self.stats["words"] = sum(len(w) for w in self.table["words"].to_pylist())

    def report(self) -> dict:
        out = {**dict(sorted(self.stats.items())), "dropped": dict(sorted(self.dropped.items()))}
        if getattr(self, "sources", None):
            out["sources"] = {k: {"seen": v[0], "kept": v[1]} for k, v in sorted(self.sources.items())}
        return out


def as_paths(paths: Iterable) -> list[Path]:
    paths = [Path(p) for p in ([paths] if isinstance(paths, (str, Path)) else paths)]
    if not paths:
        raise ValueError("no input files given")
    return paths


def document_ids(stem: str, blank: np.ndarray, doc_boundary: str) -> tuple[np.ndarray, np.ndarray]:
    """Document number and segment number of each line of a text file.

    doc_boundary: ``file`` (the file is one document), ``blank_line`` (blank lines
    separate documents) or ``line`` (every line is a document).
    """
    n = len(blank)
    if doc_boundary == "file":
        doc = np.zeros(n, dtype=np.int64)
    elif doc_boundary == "blank_line":
        doc = np.cumsum(blank)
    elif doc_boundary == "line":
        doc = np.arange(n)
    else:
        raise ValueError(f"doc_boundary must be file, blank_line or line, not {doc_boundary!r}")
    keep = ~blank
    seg = np.zeros(n, dtype=np.int64)
    if keep.any():
        kept_doc = doc[keep]
        # position among the kept lines of the same document
        starts = np.r_[0, np.flatnonzero(np.diff(kept_doc)) + 1]
        lengths = np.diff(np.r_[starts, len(kept_doc)])
        seg[keep] = np.arange(len(kept_doc)) - np.repeat(starts, lengths)
    return doc, seg


def doc_names(stem: str, doc: np.ndarray, doc_boundary: str) -> list[str]:
    if doc_boundary == "file":
        return [stem] * len(doc)
    return [f"{stem}#{d}" for d in doc.tolist()]


def table_from_lines(corpus, lang, stem, words, labels, blank, doc_boundary, prepared: Prepared) -> pa.Table:
    """Segment table for the lines of one text file (blank and wordless lines left out, counted)."""
    doc, seg = document_ids(stem, blank, doc_boundary)
    lengths = np.asarray(words.value_lengths().to_numpy(zero_copy_only=False))
    wordless = (lengths == 0) & ~blank
    if wordless.any():
        prepared.dropped["line_without_words"] += int(wordless.sum())
    keep = lengths > 0
    idx = pa.array(np.flatnonzero(keep))
    return segments_table(
        corpus,
        lang,
        [name for name, k in zip(doc_names(stem, doc, doc_boundary), keep) if k],
        seg[keep],
        words.take(idx),
        labels.take(idx),
    )
