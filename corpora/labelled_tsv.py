"""Labelled TSV: ``word<TAB>LABEL``, one word per line (xashru/punctuation-restoration, Che et al. 2016).

A segment ends at a PERIOD or QUESTION label (and at a blank line); each file is one
document (a shard: the format has no document boundaries to cut at).  Words are normalized
for the language but never dropped, so the label counts of the file are reproduced exactly:
a word that normalization empties (the IWSLT and Bangla sets have a few zero-width "words")
stays, as an empty word, counted under ``empty_words``; a word written with spaces inside
stays one word, its spaces removed, counted under ``words_with_spaces_joined`` (a control
character inside a word is such a space, also counted under ``control_characters_made_spaces``).
Case labels come from the words as written (these sources are lowercase: all O, which the
report notes).
"""

from __future__ import annotations

from collections import Counter

import numpy as np
import pyarrow as pa

from pipeline.engine.reading import read_text
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import InputError
from pipeline.ingest import FileShard, ReaderOptions
from pipeline.labels import PAPERS, LabelSet
from pipeline.schema import segments_table
from pipeline.text.labelling import case_labels
from pipeline.text.normalize import replace_controls

from .base import prepare_with, stem


class Options(ReaderOptions):
    pass


def parse(text: str, path, label_set: LabelSet = PAPERS) -> tuple[list[list[str]], list[list[str]], Counter]:
    """Segments of words and labels (of ``label_set``) from the text of one TSV file."""
    segments_words: list[list[str]] = []
    segments_labels: list[list[str]] = []
    words: list[str] = []
    labels: list[str] = []
    counts: Counter = Counter()
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the final newline
    for lineno, line in enumerate(lines, 1):
        if not line.strip():
            counts["blank_lines"] += 1
            if words:
                segments_words.append(words)
                segments_labels.append(labels)
                words, labels = [], []
            continue
        word, tab, label = line.partition("\t")
        if not tab:
            raise InputError(f"{path}:{lineno}: no tab between word and label in {line[:60]!r}")
        label = label.strip()
        label_id = label_set.to_id.get(label)
        if label_id is None:
            raise InputError(
                f"{path}:{lineno}: unknown label {label[:30]!r} (expected one of {', '.join(label_set.labels)}: "
                f"label set {label_set.name})"
            )
        words.append(word)
        labels.append(label)
        if label_id in label_set.sentence_end_ids:
            segments_words.append(words)
            segments_labels.append(labels)
            words, labels = [], []
    if words:
        segments_words.append(words)
        segments_labels.append(labels)
    counts["lines"] += len(lines)
    return segments_words, segments_labels, counts


def read(shard: FileShard, language, corpus: str, options: Options) -> StepResult:
    counts = Counts()
    seg_words, seg_labels, parsed = parse(read_text(shard.path), shard.path, language.labels)
    counts.stats.update(parsed)
    counts.stats["files"] += 1
    if not seg_words:
        counts.stats["empty_files"] += 1
        return StepResult(
            segments_table(corpus, language.code, [], [], [], [], vocabulary=language.labels.labels), counts
        )
    # control characters become spaces first (counted), so a word they split is joined and counted too
    flat = replace_controls(pa.array([w for seg in seg_words for w in seg], pa.string()), counts.stats).to_pylist()
    counts.stats["words_with_spaces_joined"] += sum(1 for w in flat if len(w.split()) > 1)
    written = pa.array(language.normalize_words(flat), pa.string())
    stored = pa.array([w.lower() for w in written.to_pylist()], pa.string()) if language.lowercase else written
    case, surface = case_labels(written, stored)
    counts.stats["empty_words"] += sum(1 for w in stored.to_pylist() if not w)
    lengths = np.array([len(s) for s in seg_words], dtype=np.int32)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    table = segments_table(
        corpus,
        language.code,
        [stem(shard.path)] * len(seg_words),
        list(range(len(seg_words))),
        pa.ListArray.from_arrays(offsets, stored),
        pa.ListArray.from_arrays(offsets, pa.array([l for seg in seg_labels for l in seg], pa.string())),
        case=pa.ListArray.from_arrays(offsets, case),
        surface=pa.ListArray.from_arrays(offsets, surface),
        vocabulary=language.labels.labels,
    )
    return StepResult(table, counts)


def prepare(paths, lang: str, corpus: str, **options):
    return prepare_with("tsv", paths, lang, corpus, **options)
