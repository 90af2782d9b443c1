"""Labelled TSV: ``word<TAB>LABEL``, one word per line (xashru/punctuation-restoration, Che et al. 2016).

A segment ends at a PERIOD or QUESTION label (and at a blank line); each file is one
document.  Words are normalized for the language but never dropped, so the label
counts of the file are reproduced exactly: a word that normalization empties (the
IWSLT and Bangla sets have a few zero-width "words") stays, as an empty word, and
is counted under ``empty_words``.
"""

from __future__ import annotations

from collections import Counter

from pipeline.io import InputError, read_text
from pipeline.labels import LABEL_TO_ID, SENTENCE_END_IDS
from pipeline.languages import get_language
from pipeline.schema import segments_table

from .base import Prepared, as_paths


def parse(text: str, path) -> tuple[list[list[str]], list[list[str]], Counter]:
    """Segments of words and labels from the text of one TSV file."""
    segments_words: list[list[str]] = []
    segments_labels: list[list[str]] = []
    words: list[str] = []
    labels: list[str] = []
    counts: Counter = Counter()
    lines = text.split("\n")
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
        word, tab, label = line.rstrip("\r").partition("\t")
        if not tab:
            raise InputError(f"{path}:{lineno}: no tab between word and label in {line[:60]!r}")
        label = label.strip()
        label_id = LABEL_TO_ID.get(label)
        if label_id is None:
            raise InputError(f"{path}:{lineno}: unknown label {label[:30]!r} (expected O, COMMA, PERIOD or QUESTION)")
        words.append(word)
        labels.append(label)
        if label_id in SENTENCE_END_IDS:
            segments_words.append(words)
            segments_labels.append(labels)
            words, labels = [], []
    if words:
        segments_words.append(words)
        segments_labels.append(labels)
    counts["lines"] += len(lines)
    return segments_words, segments_labels, counts


def prepare(paths, lang: str, corpus: str) -> Prepared:
    language = get_language(lang)
    prepared = Prepared(table=None)
    doc_ids, seg_ids, all_words, all_labels = [], [], [], []
    for path in as_paths(paths):
        seg_words, seg_labels, counts = parse(read_text(path), path)
        prepared.stats.update(counts)
        prepared.stats["files"] += 1
        if not seg_words:
            prepared.stats["empty_files"] += 1
            continue
        flat = [w for seg in seg_words for w in seg]
        normalized = language.normalize_words(flat)
        if language.lowercase:
            normalized = [w.lower() for w in normalized]
        prepared.stats["empty_words"] += sum(1 for w in normalized if not w)
        pos = 0
        for i, (seg, labels) in enumerate(zip(seg_words, seg_labels)):
            all_words.append(normalized[pos : pos + len(seg)])
            all_labels.append(labels)
            doc_ids.append(path.stem)
            seg_ids.append(i)
            pos += len(seg)
    prepared.table = segments_table(corpus, lang, doc_ids, seg_ids, all_words, all_labels)
    prepared.stats["segments"] = prepared.table.num_rows
    prepared.stats["words"] = sum(len(w) for w in all_words)
    return prepared
