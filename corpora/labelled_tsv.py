"""Labelled TSV: ``word<TAB>LABEL``, one word per line (xashru/punctuation-restoration, Che et al. 2016).

A segment ends at a PERIOD or QUESTION label (and at a blank line); each file is one
document (a shard: the format has no document boundaries to cut at).  Words are normalized
for the language; a word that is empty then (the IWSLT and Bangla sets have a few zero-width
"words") is dropped, counted under ``empty_words``, since every export writes words separated by
spaces and an empty one would shift every label after it.  Its label, when not O, moves to the
word before it in the file: counted under ``empty_word_labels_moved`` (that word's label was O),
``empty_word_labels_merged`` (it had a label: the higher one stays, as when two marks follow one
word) or ``empty_word_labels_dropped`` (no word before it), and the label the dataset no longer holds
under ``empty_word_labels_lost:LABEL``; a word written with spaces inside
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
from pipeline.labels import LabelSet
from pipeline.schema import segments_table
from pipeline.text.labelled import case_labels
from pipeline.text.normalize import replace_controls

from .base import prepare_with, stem


class Options(ReaderOptions):
    pass


def parse(text: str, path, label_set: LabelSet) -> tuple[list[list[str]], list[list[str]], Counter]:
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


def _drop_empty(seg_words, seg_labels, written, stored, label_set: LabelSet, counts: Counts):
    """The segments without their empty words (``stored`` empty), a dropped word's label moved onto the
    word before it in the file (the higher label wins); a segment left without words is dropped."""
    kept_written, kept_stored = [], []
    out_words, out_labels = [], []
    position = 0
    written, stored = written.to_pylist(), stored.to_pylist()
    for words, labels in zip(seg_words, seg_labels):
        new_words, new_labels = [], []
        for word, label in zip(words, labels):
            i, position = position, position + 1
            if stored[i]:
                new_words.append(word)
                new_labels.append(label)
                kept_written.append(written[i])
                kept_stored.append(stored[i])
                continue
            # the label a file's own counts hold and the dataset no longer does: a paper's table
            # counts it back (pipeline.text.protocols)
            if label_set.id(label) == 0:
                counts.stats["empty_word_labels_lost:O"] += 1
                continue
            before = new_labels if new_labels else (out_labels[-1] if out_labels else None)
            if before is None:
                counts.stats["empty_word_labels_dropped"] += 1
                counts.stats[f"empty_word_labels_lost:{label}"] += 1
            elif label_set.id(before[-1]) == 0:
                before[-1] = label
                counts.stats["empty_word_labels_moved"] += 1
                counts.stats["empty_word_labels_lost:O"] += 1
            else:  # two labels after one word: the higher one stays, as for two marks
                lower = min(before[-1], label, key=label_set.id)
                before[-1] = max(before[-1], label, key=label_set.id)
                counts.stats["empty_word_labels_merged"] += 1
                counts.stats[f"empty_word_labels_lost:{lower}"] += 1
        if new_words:
            out_words.append(new_words)
            out_labels.append(new_labels)
        else:
            counts.stats["segments_of_empty_words"] += 1
    return out_words, out_labels, pa.array(kept_written, pa.string()), pa.array(kept_stored, pa.string())


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
    if empties := sum(1 for w in stored.to_pylist() if not w):
        seg_words, seg_labels, written, stored = _drop_empty(
            seg_words, seg_labels, written, stored, language.labels, counts
        )
        counts.stats["empty_words"] += empties
    if not seg_words:  # every word of the file was empty (counted above)
        return StepResult(
            segments_table(corpus, language.code, [], [], [], [], vocabulary=language.labels.labels), counts
        )
    case, surface = case_labels(written, stored)
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
