"""TED talks in mteval XML (IWSLT): ``<doc docid=...>`` holding ``<seg id=...>`` segments.

Each talk is a document (doc_id: its ``talkid``, else ``docid``); each ``<seg>`` a
segment, labelled from its own punctuation.  Metadata elements (title, url,
description, keywords) are not text of the talk and are skipped.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree

import numpy as np
import pyarrow as pa

from pipeline.io import InputError, read_text
from pipeline.labelling import label_lines
from pipeline.languages import get_language
from pipeline.schema import concat

from .base import Prepared, as_paths, table_from_lines


def parse(text: str, path) -> list[tuple[str, list[str]]]:
    """(talk id, segment texts) per ``<doc>``."""
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as exc:
        line, column = exc.position
        raise InputError(
            f"{path}:{line}: not well-formed XML (column {column}): {exc.msg if hasattr(exc, 'msg') else exc}"
        ) from None
    docs = []
    for doc in root.iter("doc"):
        talk = doc.findtext("talkid") or doc.get("docid")
        if not talk:
            raise InputError(f"{path}: a <doc> element has neither a docid attribute nor a <talkid>")
        docs.append((talk.strip(), [(seg.text or "").strip() for seg in doc.iter("seg")]))
    return docs


def prepare(paths, lang: str, corpus: str) -> Prepared:
    language = get_language(lang)
    prepared = Prepared(table=None)
    tables = []
    for path in as_paths(paths):
        docs = parse(read_text(path), path)
        prepared.stats["files"] += 1
        prepared.stats["documents"] += len(docs)
        for talk, segments in docs:
            lines = language.normalize(pa.array(segments, pa.string()))
            blank = np.array([not s.strip() for s in lines.to_pylist()], dtype=bool)
            prepared.stats["lines"] += len(segments)
            prepared.stats["blank_lines"] += int(blank.sum())
            labelled = label_lines(lines, language)
            prepared.dropped.update(labelled.dropped)
            tables.append(
                table_from_lines(corpus, lang, talk, labelled.words, labelled.labels, blank, "file", prepared)
            )
    prepared.table = concat(tables)
    prepared.stats["segments"] = prepared.table.num_rows
    prepared.stats["words"] = sum(len(w) for w in prepared.table["words"].to_pylist())
    return prepared
