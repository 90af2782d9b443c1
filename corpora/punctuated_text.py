"""Punctuated text, one sentence or segment per line.

Blank lines separate documents by default (``doc_boundary``: ``blank_line``,
``file`` or ``line``).  ``quoting: csv`` reads lines written as CSV fields (FLORES
Tamil: a line in double quotes, ``""`` for a quote inside).  Labels come from the marks in the text
(:func:`pipeline.labelling.label_lines`).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.io import InputError, read_text
from pipeline.labelling import label_lines
from pipeline.languages import get_language
from pipeline.schema import concat

from .base import Prepared, as_paths, table_from_lines


def unquote_csv(text: str, path) -> str:
    """Lines written as CSV fields (FLORES: ``"a ""quoted"" word"``) back to plain text, line count kept."""
    import csv

    out = []
    for lineno, line in enumerate(text.split("\n"), 1):
        if line.startswith('"'):
            try:
                fields = next(csv.reader([line]))
            except (csv.Error, StopIteration) as exc:
                raise InputError(f"{path}:{lineno}: malformed CSV quoting: {exc}") from None
            line = ",".join(fields)
        out.append(line)
    return "\n".join(out)


def read_lines(path, language, quoting: str = "none") -> tuple[pa.Array, np.ndarray]:
    text = read_text(path)
    if quoting == "csv":
        text = unquote_csv(text, path)
    elif quoting != "none":
        raise ValueError(f"quoting must be none or csv, not {quoting!r}")
    lines = language.normalize_text(text)
    blank = pc.equal(pc.utf8_length(pc.utf8_trim_whitespace(lines)), 0).to_numpy(zero_copy_only=False)
    return lines, np.asarray(blank, dtype=bool)


def prepare(
    paths, lang: str, corpus: str, doc_boundary: str = "blank_line", strip_labels: bool = False, quoting: str = "none"
) -> Prepared:
    language = get_language(lang)
    prepared = Prepared(table=None)
    tables = []
    for path in as_paths(paths):
        lines, blank = read_lines(path, language, quoting)
        prepared.stats["files"] += 1
        prepared.stats["lines"] += len(lines)
        prepared.stats["blank_lines"] += int(blank.sum())
        if len(lines) == int(blank.sum()):
            prepared.stats["empty_files"] += 1
        labelled = label_lines(lines, language)
        prepared.dropped.update(labelled.dropped)
        labels = labelled.labels
        if strip_labels:
            flat = pc.list_flatten(labels)
            n_marks = int(pc.sum(pc.not_equal(flat, "O")).as_py() or 0)
            if n_marks:
                prepared.stats["marks_stripped"] += n_marks
            labels = pa.ListArray.from_arrays(labels.offsets, pa.array(["O"] * len(flat), pa.string()))
        tables.append(table_from_lines(corpus, lang, path.stem, labelled.words, labels, blank, doc_boundary, prepared))
    prepared.table = concat(tables)
    prepared.stats["segments"] = prepared.table.num_rows
    prepared.stats["words"] = int(pc.sum(pc.list_value_length(prepared.table["words"])).as_py() or 0)
    return prepared
