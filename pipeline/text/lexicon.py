"""Loading per-language data from ``lexicons/`` (punctuation tables, abbreviations, word lists).

The files are data, edited by linguists rather than programmers; this module only
parses them and reports a malformed row with its file and line.
"""

from __future__ import annotations

import functools
import importlib.resources
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError
from pipeline.labels import PAPERS_CLASSES, LabelSet, label_set

#: the data package ``lexicons`` (package data of the installed project, or the checkout's folder)
LEXICON_DIR = Path(str(importlib.resources.files("lexicons")))


class LexiconError(InputError):
    pass


@dataclass(frozen=True)
class PunctuationTable:
    """How the marks of a language map onto the labels of a label set."""

    marks: dict[str, str]  # mark character(s) -> a label of ``labels`` (not O)
    openers: frozenset[str]  # dropped where they start a word
    closers: frozenset[str]  # dropped where they end a word
    labels: LabelSet

    def label_of(self, cluster: str) -> str:
        """Label of a run of marks/closers that follows a word (priority: highest label id)."""
        to_id = self.labels.to_id
        best = 0
        i = 0
        while i < len(cluster):
            # longest match first so multi-character marks ("--") can be listed
            for size in (3, 2, 1):
                piece = cluster[i : i + size]
                if len(piece) == size and piece in self.marks:
                    best = max(best, to_id[self.marks[piece]])
                    i += size
                    break
            else:
                i += 1  # a closer
        return self.labels.labels[best]

    @property
    def trailing_chars(self) -> str:
        return "".join(sorted({c for m in self.marks for c in m} | set(self.closers)))


def read_tsv_rows(path: Path, n_fields: int) -> list[tuple[int, list[str]]]:
    """Rows of a lexicon TSV (comments and blank lines skipped), with line numbers."""
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split("\t")
        if len(fields) < n_fields or not fields[0]:
            raise LexiconError(f"{path}:{lineno}: expected {n_fields} tab-separated fields, got {line!r}")
        rows.append((lineno, fields))
    return rows


@functools.cache
def punctuation_table(lang: str, labels: str) -> PunctuationTable:
    """The mark table of ``lang`` (the common table, then the language's rows) in the label set
    ``labels``: the set's mark rows relabel its marks; every other mark keeps its table label,
    which the set must have."""
    chosen = label_set(labels)
    where: dict[str, str] = {}
    marks: dict[str, str] = {}
    openers: set[str] = set()
    closers: set[str] = set()
    for path in (LEXICON_DIR / "common" / "punctuation.tsv", LEXICON_DIR / lang / "punctuation.tsv"):
        if not path.exists():
            continue
        for lineno, (mark, label, *_) in read_tsv_rows(path, 2):
            if label == "OPEN":
                openers.add(mark)
            elif label == "CLOSE":
                closers.add(mark)
            elif label == "NONE":
                marks.pop(mark, None)
                openers.discard(mark)
                closers.discard(mark)
            elif label in PAPERS_CLASSES and label != "O":
                marks[mark] = label
                where[mark] = f"{path}:{lineno}"
            else:
                raise LexiconError(
                    f"{path}:{lineno}: label {label!r} for {mark!r} is not COMMA, PERIOD, QUESTION, OPEN, CLOSE or NONE"
                )
    relabel = dict(chosen.relabel)
    for mark, label in marks.items():
        marks[mark] = relabel.get(mark, label)
        if marks[mark] not in chosen.to_id:
            raise LexiconError(
                f"{where[mark]}: mark {mark!r} is a {label}, a label the label set {chosen.name} lacks: "
                f"add the label to the set, or a row relabelling the mark"
            )
    return PunctuationTable(marks, frozenset(openers), frozenset(closers), chosen)


#: the mark of an abbreviation written before a name (``dr.	before_name``): a capital after it
#: starts the name, not a sentence
BEFORE_NAME = "before_name"


@functools.cache
def abbreviation_table(lang: str) -> tuple[frozenset[str], frozenset[str]]:
    """``lexicons/<lang>/abbreviations.txt``: every abbreviation, and those marked ``before_name``
    (a second, tab-separated field).  Empty if the file is absent."""
    path = LEXICON_DIR / lang / "abbreviations.txt"
    if not path.exists():
        return frozenset(), frozenset()
    every, before_name = set(), set()
    for lineno, fields in read_tsv_rows(path, 1):
        word = fields[0].strip()
        kind = fields[1].strip() if len(fields) > 1 else ""
        if kind not in ("", BEFORE_NAME) or len(fields) > 2 or not word.endswith("."):
            raise LexiconError(
                f"{path}:{lineno}: expected an abbreviation ending in '.', optionally a tab and {BEFORE_NAME}"
            )
        every.add(word)
        if kind:
            before_name.add(word)
    return frozenset(every), frozenset(before_name)


@functools.cache
def word_set(lang: str, name: str) -> frozenset[str]:
    """A one-word-per-line list under ``lexicons/<lang>/`` (empty if the file is absent)."""
    path = LEXICON_DIR / lang / name
    if not path.exists():
        return frozenset()
    return frozenset(
        line.strip()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    )
