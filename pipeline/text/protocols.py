"""A paper's preprocessing as data: the rewrites before labelling, the labelling rule and the
counting of the paper's tables, from ``lexicons/protocols/<name>.yaml``.

``papers`` (no file) is the project's own labelling (:mod:`pipeline.text.labelling`).  A protocol
names the languages it covers; a language whose section says ``labelling: papers`` is labelled
the project's way (the protocol then only adds its tables), any other section replaces the
labelling:

* the segments of a document are joined by a space and rewritten as one text, as the papers
  rewrite a whole talk: the rewrites reach across segment ends, and the segments are cut back
  where they were (a unit that spans a segment end stays in the segment it starts in);
* ``suffix_marks``: every space-separated word is a slot (see the protocol file);
* ``mark_tokens``: the text is segmented into words, each mark token is a slot; a word followed
  by a space has no slot of its own and is held with the next words as one unit.

The tables a protocol publishes (``tables``) are compared with the audit's counts by
:func:`paper_tables`.
"""

from __future__ import annotations

import bisect
import functools
import itertools
import re
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from pipeline.errors import ParamsError
from pipeline.text.lexicon import LEXICON_DIR

PAPERS = "papers"
PROTOCOL_DIR = LEXICON_DIR / "protocols"
LABELLINGS = ("papers", "suffix_marks", "mark_tokens")
SEGMENTERS = ("jieba",)
COUNTINGS = ("slots", "words", "sentence_words_before_end")


class ProtocolError(ParamsError):
    pass


@dataclass(frozen=True)
class Rules:
    """One language's section of a protocol."""

    labelling: str
    marks: tuple[tuple[str, str], ...] = ()
    rewrites: tuple[tuple[re.Pattern, str], ...] = ()
    segmenter: str | None = None
    lowercase: bool = False

    @property
    def relabels(self) -> bool:
        return self.labelling != "papers"


@dataclass(frozen=True)
class Table:
    name: str
    columns: tuple[str, ...]
    counting: str
    rows: tuple[dict, ...]


@dataclass(frozen=True)
class Protocol:
    name: str
    title: str
    languages: dict[str, Rules]
    tables: tuple[Table, ...]

    def rules(self, lang: str) -> Rules:
        try:
            return self.languages[lang]
        except KeyError:
            raise ProtocolError(
                f"protocol: {self.name} has no rules for language {lang!r} "
                f"(it covers {', '.join(sorted(self.languages))})"
            ) from None


def available() -> list[str]:
    return [PAPERS, *sorted(p.stem for p in PROTOCOL_DIR.glob("*.yaml"))]


def _rules(where: str, data) -> Rules:
    if not isinstance(data, dict):
        raise ProtocolError(f"{where}: expected a mapping")
    unknown = set(data) - {"labelling", "marks", "rewrites", "segmenter", "lowercase"}
    if unknown:
        raise ProtocolError(f"{where}: unknown key {sorted(unknown)[0]!r}")
    labelling = data.get("labelling")
    if labelling not in LABELLINGS:
        raise ProtocolError(f"{where}.labelling: {labelling!r} is not one of {', '.join(LABELLINGS)}")
    if labelling == "papers":
        if set(data) != {"labelling"}:
            raise ProtocolError(f"{where}: labelling papers takes no other key")
        return Rules("papers")
    marks = data.get("marks")
    if not isinstance(marks, dict) or not marks:
        raise ProtocolError(f"{where}.marks: expected a mapping of mark -> PERIOD, QUESTION or COMMA")
    for mark, label in marks.items():
        if label not in ("PERIOD", "QUESTION", "COMMA") or not isinstance(mark, str) or not mark:
            raise ProtocolError(f"{where}.marks: {mark!r}: {label!r} is not PERIOD, QUESTION or COMMA")
    rewrites = []
    for i, pair in enumerate(data.get("rewrites") or []):
        if not (isinstance(pair, list) and len(pair) == 2 and all(isinstance(p, str) for p in pair)):
            raise ProtocolError(f"{where}.rewrites[{i}]: expected [pattern, replacement]")
        try:
            rewrites.append((re.compile(pair[0]), pair[1]))
        except re.error as exc:
            raise ProtocolError(f"{where}.rewrites[{i}]: {pair[0]!r}: {exc}") from None
    segmenter = data.get("segmenter")
    if labelling == "mark_tokens" and segmenter not in SEGMENTERS:
        raise ProtocolError(f"{where}.segmenter: {segmenter!r} is not one of {', '.join(SEGMENTERS)}")
    lowercase = data.get("lowercase", False)
    if not isinstance(lowercase, bool):
        raise ProtocolError(f"{where}.lowercase: expected true or false")
    return Rules(labelling, tuple(marks.items()), tuple(rewrites), segmenter, lowercase)


def _table(where: str, data) -> Table:
    if not isinstance(data, dict) or not {"name", "columns", "counting", "rows"} <= set(data):
        raise ProtocolError(f"{where}: expected name, columns, counting and rows")
    if data["counting"] not in COUNTINGS:
        raise ProtocolError(f"{where}.counting: {data['counting']!r} is not one of {', '.join(COUNTINGS)}")
    columns = tuple(data["columns"])
    for i, row in enumerate(data["rows"]):
        if not isinstance(row, dict) or len(row.get("values") or ()) != len(columns):
            raise ProtocolError(f"{where}.rows[{i}]: expected row, lang, sources and {len(columns)} values")
    return Table(data["name"], columns, data["counting"], tuple(data["rows"]))


@functools.cache
def load(name: str) -> Protocol | None:
    """The protocol ``name`` (None for ``papers``); an unknown name or a malformed file is refused."""
    import yaml

    if name == PAPERS:
        return None
    path = PROTOCOL_DIR / f"{name}.yaml"
    if not re.fullmatch(r"[a-z0-9_]+", name) or not path.is_file():
        raise ProtocolError(f"protocol: unknown protocol {name!r}; available: {', '.join(available())}")
    data = yaml.safe_load(path.read_text(encoding="utf-8"))
    if not isinstance(data, dict) or not isinstance(data.get("languages"), dict):
        raise ProtocolError(f"{path}: expected a mapping with languages")
    languages = {lang: _rules(f"{path}: languages.{lang}", rules) for lang, rules in data["languages"].items()}
    tables = tuple(_table(f"{path}: tables[{i}]", t) for i, t in enumerate(data.get("tables") or []))
    return Protocol(name, str(data.get("title", name)), languages, tables)


def check(name: str, lang: str, label_set: str, reader: str | None = None, user_dict: str | None = None) -> None:
    """Refuse a protocol that cannot label this corpus: a language it does not cover, another label
    set than ``papers`` (its rules label PERIOD, QUESTION, COMMA), a reader whose labels are given,
    a user dictionary (the paper segments with the segmenter's own)."""
    protocol = load(name)
    if protocol is None:
        return
    rules = protocol.rules(lang)
    if rules.relabels and label_set != "papers":
        raise ProtocolError(f"protocol: {name} labels in the papers label set, not {label_set!r}")
    if rules.segmenter and user_dict:
        raise ProtocolError(f"protocol: {name} segments {lang} with {rules.segmenter}'s own dictionary: drop user_dict")
    if rules.relabels and reader in ("tsv", "transcript"):
        raise ProtocolError(f"protocol: {name} relabels punctuated text; reader {reader} has no marks to relabel")


def record(name: str, lang: str, corpus: str, files, reader: str, stats=None) -> dict:
    """What a dataset's manifest keeps of its protocol (nothing under ``papers``): the source files'
    names find the paper's row; the reader places the audit page's notes on a source format;
    ``dropped``: the empty words the reader dropped (``stats``, its counts) and the labels the
    dataset no longer holds because of them, which the paper's files, and so its tables, count."""
    from pathlib import Path

    if name == PAPERS:
        return {}
    sources = sorted(Path(str(f)).name for f in files)
    out = {"name": name, "lang": lang, "corpus": corpus, "reader": reader, "sources": sources}
    stats = stats or {}
    if words := int(stats.get("empty_words", 0)):
        prefix = "empty_word_labels_lost:"
        labels = {k.removeprefix(prefix): int(v) for k, v in sorted(stats.items()) if k.startswith(prefix) and v}
        out["dropped"] = {"words": words, "labels": labels}
    return {"protocol": out}


# ------------------------------------------------------------------------------ rewriting


def _substitute(pattern: re.Pattern, template: str, text: str, ends: list[int]) -> tuple[str, list[int]]:
    """``pattern.sub(template, text)``, and where each segment end (a position of ``text``, in
    order) lands in the result: shifted with the text around it, or, inside a match, just after
    the match's replacement."""
    pieces, moved = [], []
    last = delta = i = 0
    for match in pattern.finditer(text):
        start, stop = match.span()
        replacement = match.expand(template)
        while i < len(ends) and ends[i] <= start:
            moved.append(ends[i] + delta)
            i += 1
        while i < len(ends) and ends[i] < stop:
            moved.append(start + delta + len(replacement))
            i += 1
        pieces += [text[last:start], replacement]
        last = stop
        delta += len(replacement) - (stop - start)
    pieces.append(text[last:])
    moved += [end + delta for end in ends[i:]]
    return "".join(pieces), moved


def rewrite(text: str, rules: Rules, ends: list[int] | None = None) -> tuple[str, list[int]]:
    """``text`` through the rewrites in order, stripped of spaces at its ends (the case is kept: the
    rewrites do not depend on it, and the words keep their case labels), and where the segment
    ``ends`` (positions of ``text``) land in it."""
    ends = list(ends or [])
    for pattern, template in rules.rewrites:
        text, ends = _substitute(pattern, template, text, ends)
    stripped = text.lstrip(" ")
    cut = len(text) - len(stripped)
    stripped = stripped.rstrip(" ")
    return stripped, [min(max(end - cut, 0), len(stripped)) for end in ends]


@functools.cache
def _jieba():
    import logging

    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.initialize()
    return jieba


def _suffix_units(text: str, marks: tuple[tuple[str, str], ...]) -> list[tuple[str, str, int]]:
    """(word, label, start) of each space-separated token."""
    units, position = [], 0
    for token in text.split(" "):
        start, position = position, position + len(token) + 1
        if not token:
            continue
        word, label = token, "O"
        for mark, name in marks:
            if word.endswith(mark):
                word, label = word.rstrip(mark), name
        # a token of marks only is still the paper's slot: the marks are its word
        units.append((word or token, label, start))
    return units


def _token_units(text: str, marks: tuple[tuple[str, str], ...]) -> list[tuple[str, str, int]]:
    """(unit, label, start) of the segmenter's words and marks (see the module doc)."""
    labels = dict(marks)
    # the paper segments lowercased text (the dictionary's entries are case-sensitive); the words
    # are cut from the text as written where lowercasing kept every character's place
    lowered = text.lower()
    tokens = list(_jieba().cut(lowered, HMM=True))
    starts = np.r_[0, np.cumsum([len(t) for t in tokens])].tolist()
    if len(lowered) == len(text):
        tokens = [text[a:b] for a, b in itertools.pairwise(starts)]
    units: list[tuple[str, str, int]] = []
    open_unit: list | None = None  # [text, start] of words with no slot yet
    for i, token in enumerate(tokens):
        if token.isspace():
            if open_unit is not None:
                open_unit[0] += " "
            continue
        if token in labels:
            if open_unit is not None:
                units.append((open_unit[0].rstrip(" "), labels[token], open_unit[1]))
                open_unit = None
            else:
                units.append((token, labels[token], starts[i]))
            continue
        if open_unit is None:
            open_unit = [token, starts[i]]
        else:
            open_unit[0] += token
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if following is None or not (following.isspace() or following in labels):
            units.append((open_unit[0], "O", open_unit[1]))
            open_unit = None
    if open_unit is not None:  # words followed by spaces only: the last slot of the text
        units.append((open_unit[0].rstrip(" "), "O", open_unit[1]))
    return units


def label_document(segments: list[str], rules: Rules) -> list[list[tuple[str, str]]]:
    """(word, label) per segment of one document under ``rules``: the segments are joined by a
    space and rewritten as one text; a unit belongs to the segment it starts in."""
    ends, position = [], 0
    for segment in segments[:-1]:
        position += len(segment) + 1
        ends.append(position)
    text, ends = rewrite(" ".join(segments), rules, ends)
    if rules.labelling == "suffix_marks":
        units = _suffix_units(text, rules.marks)
    else:
        units = _token_units(text, rules.marks)
    out: list[list[tuple[str, str]]] = [[] for _ in segments]
    for word, label, start in units:
        out[bisect.bisect_right(ends, start)].append((word, label))
    return out


def label_lines(lines: pa.Array, language, documents=None):
    """:func:`pipeline.text.labelling.label_lines` under the language's protocol: ``documents`` (a
    key per line; None: the lines are one document) groups the lines rewritten together."""
    from pipeline.labels import PAPERS as PAPERS_SET
    from pipeline.schema import encoded_codes
    from pipeline.text.labelled import Labelled, _lower, case_labels

    rules = load(language.protocol).rules(language.code)
    texts = lines.to_pylist()
    if documents is None:
        keys = [0] * len(texts)
    else:
        keys = documents.to_pylist() if isinstance(documents, pa.Array) else list(documents)
    labelled: list[list[tuple[str, str]]] = []
    start = 0
    while start < len(texts):
        end = start + 1
        while end < len(texts) and keys[end] == keys[start]:
            end += 1
        labelled += label_document([t or "" for t in texts[start:end]], rules)
        start = end
    lengths = np.array([len(units) for units in labelled], dtype=np.int32)
    offsets = pa.array(np.r_[0, np.cumsum(lengths)].astype(np.int32))
    original = pa.array([w for units in labelled for w, _ in units], pa.string())
    words = _lower(original) if rules.lowercase or language.lowercase else original
    case, surface = case_labels(original, words)
    ids = PAPERS_SET.to_id
    codes = np.array([ids[label] for units in labelled for _, label in units], dtype=np.int8)
    labels = encoded_codes(PAPERS_SET.values, codes)
    return Labelled(
        words=pa.ListArray.from_arrays(offsets, words),
        labels=pa.ListArray.from_arrays(offsets, labels),
        case=pa.ListArray.from_arrays(offsets, case),
        surface=pa.ListArray.from_arrays(offsets, surface),
        dropped=Counter(),
        label_set=PAPERS_SET,
    )


# ------------------------------------------------------------------------------ tables


def _counted(table: Table, summary: dict, dropped: dict | None = None) -> list:
    """The table's columns of one dataset's audit ``summary``; ``dropped``: the words (and their
    labels) the reader dropped, which the paper counted (its files hold them)."""
    labels = dict(summary.get("merged_labels", summary.get("labels", {})))
    words = summary.get("words", 0)
    if dropped:
        words += dropped.get("words", 0)
        for label, n in dropped.get("labels", {}).items():
            labels[label] = labels.get(label, 0) + n
    if table.counting == "slots":
        by_column = {"Word": labels.get("O", 0), "Period": labels.get("PERIOD", 0)}
        by_column |= {"Question": labels.get("QUESTION", 0), "Comma": labels.get("COMMA", 0)}
    elif table.counting == "words":
        by_column = {"Total": words, "Period": labels.get("PERIOD", 0)}
        by_column |= {"Comma": labels.get("COMMA", 0), "Question": labels.get("QUESTION", 0)}
        by_column |= {"Other": labels.get("O", 0)}
    else:  # the words before the one carrying the end mark: one fewer per sentence; std unchanged
        lengths = summary.get("sentence_length") or {}
        mean, std = lengths.get("mean"), lengths.get("std")
        by_column = {
            "Mean": None if mean is None else round(mean - 1, 1),
            "Std": None if std is None else round(std, 1),
        }
    return [by_column.get(column) for column in table.columns]


def paper_tables(result: dict, records: dict[str, dict]) -> dict:
    """Each dataset's rows of its protocol's tables, counted the paper's way, beside the published
    row read from the same source files (``published`` None where the paper has no such row).
    ``records``: dataset name -> the protocol record of its manifest."""
    out: dict = {}
    for name, rec in sorted(records.items()):
        protocol = load(rec["name"])
        if protocol is None or name not in result or "labels" not in result[name]:
            continue
        for table in protocol.tables:
            published = next(
                (
                    row
                    for row in table.rows
                    if row.get("lang") == rec.get("lang") and sorted(row.get("sources") or []) == rec.get("sources")
                ),
                None,
            )
            ours = _counted(table, result[name], rec.get("dropped"))
            entry = {
                "protocol": protocol.name,
                "table": table.name,
                "counting": table.counting,
                "dataset": name,
                "row": published["row"] if published else None,
                "columns": dict(zip(table.columns, ours)),
                "published": dict(zip(table.columns, published["values"])) if published else None,
            }
            if published:
                tolerance = published.get("tolerance") or {}
                entry["exact"] = [c for c, a, b in zip(table.columns, ours, published["values"]) if a == b]
                entry["within_tolerance"] = all(
                    a is not None and abs(a - b) <= tolerance.get(c, 0)
                    for c, a, b in zip(table.columns, ours, published["values"])
                )
                if published.get("note"):
                    entry["note"] = published["note"]
            out.setdefault(f"{protocol.name}: {table.name}", []).append(entry)
    return out
