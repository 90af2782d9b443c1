"""Punctuated text, one sentence or segment per line.

Blank lines separate documents by default (``doc_boundary``: ``blank_line``, ``file`` or
``line``).  ``quoting: csv`` reads lines written as CSV fields (FLORES Tamil: a line in double
quotes, ``""`` for a quote inside).  Labels come from the marks in the text
(:func:`pipeline.text.labelling.label_lines`).  Lines end at LF, CRLF or a lone CR.

Files are cut into shards of lines (:mod:`pipeline.engine.textfiles`); a shard numbers its documents
and segments from the counts the scan carries, so any shard size gives the same table:
documents ``<file stem>#<k>`` (``blank_line``: k blank lines before it; ``line``: k is the
line's index) or ``<file stem>`` (``file``); a segment's ``seg_id`` is its position among the
non-blank lines of its document.
"""

from __future__ import annotations

from typing import Literal

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import Field

from pipeline.engine.step import Counts, StepResult
from pipeline.engine.textfiles import LineShard, line_shards, read_shard_lines
from pipeline.errors import InputError
from pipeline.ingest import ReaderOptions
from pipeline.text.labelling import label_lines, split_pattern

from .base import lines_table, prepare_with, stem


class Options(ReaderOptions):
    doc_boundary: Literal["blank_line", "file", "line"] = Field(
        "blank_line",
        description="what separates documents: blank lines, nothing (the file is one document), every line",
    )
    quoting: Literal["none", "csv"] = Field("none", description="csv: lines may be CSV fields (FLORES Tamil)")


def shards(files, options, lines_per_shard: int, runner=None) -> list[LineShard]:
    return line_shards(files, lines_per_shard, options.doc_boundary, runner)


def drops_other_scripts(options) -> bool:
    """The words are :func:`label_lines`'s with the language's filter of other scripts on (the
    transcript reader, which keeps every word, does not say so)."""
    return True


def unquote_csv(text: str, path, first_line: int = 1) -> str:
    """Lines written as CSV fields (FLORES: ``"a ""quoted"" word"``) back to plain text, line count kept."""
    import csv

    out = []
    for lineno, line in enumerate(text.split("\n"), first_line):
        if line.startswith('"'):
            try:
                fields = next(csv.reader([line]))
            except (csv.Error, StopIteration) as exc:
                raise InputError(f"{path}:{lineno}: malformed CSV quoting: {exc}") from None
            line = ",".join(fields)
        out.append(line)
    return "\n".join(out)


def shard_lines(shard: LineShard, quoting: str) -> tuple[pa.Array, np.ndarray]:
    """The shard's raw lines (one per line of the file, CR endings handled) and their blank flags."""
    lines, blank = read_shard_lines(shard)
    if quoting == "csv":  # only lines that start with a quote are CSV fields
        quoted = np.flatnonzero(pc.starts_with(lines, '"').to_numpy(zero_copy_only=False))
        if len(quoted):
            first = shard.first_line + 1
            fixed = [unquote_csv(line, shard.path, first + int(i)) for i, line in
                     zip(quoted, lines.take(pa.array(quoted)).to_pylist())]  # fmt: skip
            mask = np.zeros(len(lines), bool)
            mask[quoted] = True
            lines = pc.replace_with_mask(lines, pa.array(mask), pa.array(fixed, pa.string()))
    if len(lines) != len(blank):  # cannot happen: both split at the same line ends
        raise RuntimeError(f"{shard.path}: {len(lines)} lines but {len(blank)} blank flags")
    return lines, blank


def numbering(shard: LineShard, blank: np.ndarray, doc_boundary: str) -> tuple[pa.Array, np.ndarray]:
    """Document name and segment number of each line of the shard (see the module doc); the names
    are made in Arrow (a Python string per line would cost more than the rest of the numbering)."""
    n = len(blank)
    name = stem(shard.path)
    nonblank = ~blank
    if doc_boundary == "line":
        return _numbered(name, np.arange(shard.first_line, shard.first_line + n)), np.zeros(n, np.int64)
    if doc_boundary == "file":
        return pa.array([name] * n, pa.string()), shard.nonblank_before + np.cumsum(nonblank) - 1
    docs = shard.blank_before + np.cumsum(blank)
    # non-blank lines since the last blank line (the shard's first run continues the carried one)
    count = np.cumsum(nonblank)
    last_blank = np.maximum.accumulate(np.where(blank, np.arange(n), -1))
    before = np.where(last_blank >= 0, count[np.maximum(last_blank, 0)], -shard.nonblank_run)
    return _numbered(name, docs), count - before - 1


def _numbered(name: str, numbers: np.ndarray) -> pa.Array:
    """``<name>#<k>`` for each k of ``numbers`` (non-negative integers, written as Python writes them)."""
    return pc.binary_join_element_wise(f"{name}#", pa.array(numbers, pa.int64()).cast(pa.string()), "")


def read(shard: LineShard, language, corpus: str, options: Options, transcript: bool = False) -> StepResult:
    counts = Counts()
    lines, blank = shard_lines(shard, options.quoting)
    if shard.start_byte == 0:  # the file's first shard speaks for the file
        counts.stats["files"] += 1
        counts.stats["empty_files"] += int(shard.file_lines == shard.file_blank)
    counts.stats["lines"] += len(lines)
    counts.stats["blank_lines"] += int(blank.sum())
    # the scan that finds the lines to normalize finds those the labelling's split looks at
    lines, candidates = language.normalize_finding(lines, counts.stats, split_pattern(language))
    names, seg = numbering(shard, blank, options.doc_boundary)
    # the words encoded as they are written: the writer keeps them so
    labelled = label_lines(
        lines, language, keep_other_scripts=transcript, documents=names, encoded=True, candidates=candidates
    )
    counts.dropped.update(labelled.dropped)
    if not transcript:  # a transcript's labels are stripped: how its abbreviations read does not matter
        counts.stats.update(labelled.stats)
    labels = None
    if transcript:  # an ASR hypothesis: marks found anyway are stripped, counted
        flat = pc.list_flatten(labelled.labels)
        counts.stats["marks_stripped"] += int(pc.sum(pc.not_equal(flat, "O")).as_py() or 0)
        labels = pa.ListArray.from_arrays(labelled.labels.offsets, pa.array(["O"] * len(flat), pa.string()))
    lengths = pc.list_value_length(labelled.words).to_numpy(zero_copy_only=False)
    counts.dropped["line_without_words"] += int(((lengths == 0) & ~blank).sum())
    keep = lengths > 0
    return StepResult(lines_table(corpus, language.code, names, seg, labelled, keep, labels), counts)


def prepare(paths, lang: str, corpus: str, **options):
    return prepare_with("text", paths, lang, corpus, **options)
