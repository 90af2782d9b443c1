"""TED talks in mteval XML (IWSLT): ``<doc docid=...>`` holding ``<seg id=...>`` segments.

Each talk is a document (doc_id: its ``talkid``, else ``docid``; a talk id the file repeats
gets ``~2``, ``~3``... on its later ``<doc>``s, in this file or a later one, counted as
``ids_made_unique``, so two talks never merge into one document); each ``<seg>`` a segment,
labelled from its own punctuation; all of a segment's text counts, inline elements' too
(``<seg>Before <i>inner</i> after.</seg>``).  Metadata elements (title, url, description,
keywords) are not text of the talk and are skipped; a ``<seg>`` outside any ``<doc>`` has no
talk to belong to: dropped, counted.  Each file is a shard.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.engine.reading import read_text
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import InputError
from pipeline.ingest import FileShard, ReaderOptions
from pipeline.schema import concat
from pipeline.text.labelling import label_lines

from .base import lines_table, prepare_with


class Options(ReaderOptions):
    pass


def parse(text: str, path, counts: Counts | None = None) -> list[tuple[str, list[str]]]:
    """(talk id, segment texts) per ``<doc>``."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise InputError(f"{path}:{line}: not well-formed XML (column {column}): {exc}") from None
    docs = []
    inside = 0
    for doc in root.iter("doc"):
        talk = doc.findtext("talkid") or doc.get("docid")
        if not talk:
            raise InputError(f"{path}: a <doc> element has neither a docid attribute nor a <talkid>")
        segments = ["".join(seg.itertext()).strip() for seg in doc.iter("seg")]
        inside += len(segments)
        docs.append((talk.strip(), segments))
    outside = sum(1 for _ in root.iter("seg")) - inside
    if outside and counts is not None:
        counts.dropped["segment_outside_any_document"] += outside
    return docs


@dataclass(frozen=True)
class TalksShard(FileShard):
    """A whole file, with the talk ids that earlier files hold: (id, how many ``<doc>``s carry it)."""

    earlier: tuple[tuple[str, int], ...] = ()


def shards(files, options: Options, lines_per_shard: int) -> list[TalksShard]:
    """A shard per file.  Each file is parsed once here for its talk ids (each worker parses its own
    file again): a talk id of two files must become two documents, and a worker sees one file."""
    seen: dict[str, int] = {}
    out = []
    for index, path in enumerate(files):
        talks = [talk for talk, _ in parse(read_text(path), path)]
        out.append(TalksShard(str(path), index, tuple(sorted((t, seen[t]) for t in set(talks) if t in seen))))
        for talk in talks:
            seen[talk] = seen.get(talk, 0) + 1
    return out


def read(shard: FileShard, language, corpus: str, options: Options) -> StepResult:
    counts = Counts()
    docs = parse(read_text(shard.path), shard.path, counts)
    counts.stats["files"] += 1
    counts.stats["documents"] += len(docs)
    tables = []
    seen: dict[str, int] = dict(getattr(shard, "earlier", ()))
    for talk, segments in docs:
        seen[talk] = seen.get(talk, 0) + 1
        if seen[talk] > 1:
            talk = f"{talk}~{seen[talk]}"
            counts.stats["ids_made_unique"] += 1
        lines = language.normalize(pa.array(segments, pa.string()), counts.stats)
        blank = np.array([not s.strip() for s in lines.to_pylist()], dtype=bool)
        counts.stats["lines"] += len(segments)
        counts.stats["blank_lines"] += int(blank.sum())
        labelled = label_lines(lines, language)
        counts.dropped.update(labelled.dropped)
        counts.stats.update(labelled.stats)
        lengths = np.array([len(w) for w in labelled.words.to_pylist()], dtype=np.int64)
        counts.dropped["line_without_words"] += int(((lengths == 0) & ~blank).sum())
        seg = np.cumsum(~blank) - 1
        tables.append(lines_table(corpus, language.code, [talk] * len(segments), seg, labelled, lengths > 0))
    return StepResult(concat(tables), counts)


def prepare(paths, lang: str, corpus: str, **options):
    return prepare_with("ted_xml", paths, lang, corpus, **options)
