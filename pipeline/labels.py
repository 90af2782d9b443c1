"""Label sets, in one place.

Labels name the punctuation that *follows* a word.  A label set is a table in
``lexicons/label_sets/<name>.tsv`` (or a user's file named by path): its labels in order, each
with the mark it renders and the papers' class it merges to (O/COMMA/PERIOD/QUESTION), and rows
that relabel marks of the mark table (``lexicons/common/punctuation.tsv``).  A label's id is its
position, and ids double as priorities: when several marks follow one word, the highest id wins
(in ``papers``: QUESTION > PERIOD > COMMA > O, so ``?!`` is a QUESTION and ``,.`` a PERIOD).

The table's rows, tab-separated (``#`` starts a comment line)::

    label  NAME  MERGE  MARK  [SCRIPT:MARK ...]   a label, in priority order (O first)
    mark   CHAR  NAME                             the mark table's CHAR is labelled NAME

Labels are ordered by their merge (every COMMA-class label before every PERIOD-class one, before
every QUESTION-class one), so merging a set's labels gives exactly the papers' labelling.
``papers`` is the default: its constants below (``LABELS``, ``RENDERED_MARK``...) are what
every dataset without a recorded label set has.
"""

from __future__ import annotations

import functools
import importlib.resources
import re
from dataclasses import dataclass
from pathlib import Path

from pipeline.errors import InputError, ParamsError

#: the four classes of the papers, which every label of every set merges to
PAPERS_CLASSES: tuple[str, ...] = ("O", "COMMA", "PERIOD", "QUESTION")
#: the folder of the built-in label sets
LABEL_SET_DIR = Path(str(importlib.resources.files("lexicons"))) / "label_sets"
DEFAULT_LABEL_SET = "papers"
_LABEL_NAME = re.compile(r"[A-Z][A-Z0-9_]*")
_BUILT_IN_NAME = re.compile(r"[a-z][a-z0-9_]*")
#: words of the mark table, not labels
_RESERVED = frozenset({"OPEN", "CLOSE", "NONE"})


class LabelSetError(InputError):
    """A malformed label-set table: the message names the file and the line."""


@dataclass(frozen=True)
class LabelSet:
    """A label set: ``labels[i]`` has id (and priority) ``i``, merges to ``merges[i]`` (a papers
    class), renders as ``marks[i]`` (or, in a script of ``script_marks[i]``, that script's mark).
    ``relabel``: (mark, label) pairs applied to the mark table at ingest."""

    name: str
    labels: tuple[str, ...]
    merges: tuple[str, ...]
    marks: tuple[str, ...]
    script_marks: tuple[tuple[tuple[str, str], ...], ...] = ()
    relabel: tuple[tuple[str, str], ...] = ()

    @functools.cached_property
    def to_id(self) -> dict[str, int]:
        return {label: i for i, label in enumerate(self.labels)}

    def id(self, label: str) -> int:
        try:
            return self.to_id[label]
        except KeyError:
            raise ValueError(f"unknown label {label!r} (expected one of {', '.join(self.labels)})") from None

    @functools.cached_property
    def is_papers(self) -> bool:
        """The papers' labels, merges and marks (whatever the set is named): datasets record no set then."""
        return self.same_labels(PAPERS)

    @functools.cached_property
    def sentence_end_ids(self) -> frozenset[int]:
        """Ids of the labels that end a sentence (those merging to PERIOD or QUESTION)."""
        return frozenset(i for i, merge in enumerate(self.merges) if merge in ("PERIOD", "QUESTION"))

    @functools.cached_property
    def merge_ids(self):
        """A numpy array: label id -> id of its papers class (``merge_ids[codes]`` merges a column)."""
        import numpy as np

        return np.array([PAPERS_CLASSES.index(m) for m in self.merges], dtype=np.int64)

    @functools.cached_property
    def values(self):
        """The labels as an Arrow string array (codes -> strings by ``take``)."""
        import pyarrow as pa

        return pa.array(self.labels, pa.string())

    def mark(self, label: str, script: str | None = None) -> str:
        """The mark ``label`` renders as (in ``script``, where the set gives that script its own)."""
        i = self.id(label)
        if script and self.script_marks:
            for name, mark in self.script_marks[i]:
                if name == script:
                    return mark
        return self.marks[i]

    def rendered(self, script: str | None = None) -> dict[str, str]:
        """Label -> the mark written after its word, in ``script``."""
        return {label: self.mark(label, script) for label in self.labels}

    def record(self) -> dict:
        """What a dataset's manifest and a model's metadata record: the labels, their merges and
        marks (the relabelling rows serve ingest only)."""
        labels = []
        for i, label in enumerate(self.labels):
            row = {"label": label, "merge": self.merges[i], "mark": self.marks[i]}
            if self.script_marks and self.script_marks[i]:
                row["scripts"] = dict(self.script_marks[i])
            labels.append(row)
        return {"name": self.name, "labels": labels}

    def same_labels(self, other: LabelSet) -> bool:
        """The same labels, merges and marks (whatever the names or files they came from)."""
        return self.record()["labels"] == other.record()["labels"]


def from_record(record, where: str) -> LabelSet:
    """The label set a manifest or a model's metadata records (:meth:`LabelSet.record`)."""
    try:
        rows = record["labels"]
        labels = tuple(str(row["label"]) for row in rows)
        merges = tuple(str(row["merge"]) for row in rows)
        marks = tuple(str(row["mark"]) for row in rows)
        scripts = tuple(tuple(sorted(dict(row.get("scripts") or {}).items())) for row in rows)
        name = str(record["name"])
    except (KeyError, TypeError, ValueError, AttributeError):
        raise InputError(f"{where}: a malformed label set record: rewrite it with this version") from None
    label_set = LabelSet(name, labels, merges, marks, scripts if any(scripts) else ())
    _check(label_set, where)
    return label_set


#: the key of a Parquet file's schema metadata that holds its label set (:meth:`LabelSet.record` as
#: JSON): every segment and sequence file carries it, so a part copied out of its folder keeps its labels
METADATA_KEY = b"punct.label_set"


def file_metadata(label_set: LabelSet) -> dict[bytes, bytes]:
    """The schema metadata a Parquet file of ``label_set`` carries (deterministic bytes)."""
    import json

    return {METADATA_KEY: json.dumps(label_set.record(), ensure_ascii=False, separators=(",", ":")).encode()}


def from_file_metadata(metadata: dict | None, where) -> LabelSet | None:
    """The label set a Parquet file's schema metadata records (None: it records none, a file written
    before label sets travelled with files)."""
    import json

    raw = (metadata or {}).get(METADATA_KEY)
    if raw is None:
        return None
    try:
        record = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        raise InputError(f"{where}: a malformed label set in its metadata: rewrite it with this version") from None
    return from_record(record, f"{where}: label set")


def model_labels(meta: dict, where) -> LabelSet:
    """The label set a model's metadata (``punctuation.json``) records: its ``label_set``, whose labels
    must be the ``labels`` listed; ``papers`` for a model without one (its labels must be papers')."""
    label_set = from_record(meta["label_set"], f"{where}: label_set") if "label_set" in meta else PAPERS
    if meta.get("labels") != list(label_set.labels):
        raise InputError(f"{where}: checkpoint labels {meta.get('labels')} are not {list(label_set.labels)}")
    return label_set


def _check(label_set: LabelSet, where: str) -> None:
    labels, merges = label_set.labels, label_set.merges
    if not labels or labels[0] != "O" or merges[0] != "O":
        raise LabelSetError(f"{where}: the first label must be O, merging to O (it is the word without a mark)")
    if len(set(labels)) != len(labels):
        raise LabelSetError(f"{where}: duplicate label {next(l for l in labels if labels.count(l) > 1)!r}")
    ranks = [PAPERS_CLASSES.index(m) for m in merges]
    if any(r == 0 for r in ranks[1:]):
        raise LabelSetError(f"{where}: only O merges to O")
    if ranks != sorted(ranks):
        raise LabelSetError(f"{where}: labels must be ordered by their merge (COMMA, then PERIOD, then QUESTION)")


def _one_mark(mark: str, empty: bool = False) -> bool:
    """A rendered mark is one visible character (NeMo's labels are one character; O has none)."""
    return mark == "" if empty else len(mark) == 1 and not mark.isspace() and mark.isprintable()


def parse_label_set(path: Path, name: str) -> LabelSet:
    """A label-set table (see the module's docstring); a bad row is a one-line :class:`LabelSetError`
    naming the file and line."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise LabelSetError(f"{path}: cannot read the label set: {exc.__class__.__name__}: {exc}") from None
    labels: list[str] = []
    merges: list[str] = []
    marks: list[str] = []
    scripts: list[tuple[tuple[str, str], ...]] = []
    relabel: dict[str, tuple[int, str]] = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        where = f"{path}:{lineno}"
        kind, *fields = line.split("\t")
        if kind == "label":
            if len(fields) < 2:
                raise LabelSetError(f"{where}: expected label<TAB>NAME<TAB>MERGE<TAB>MARK, got {line!r}")
            label, merge, mark, *extra = [*fields, ""] if len(fields) == 2 else fields
            if not _LABEL_NAME.fullmatch(label) or label in _RESERVED:
                raise LabelSetError(
                    f"{where}: label {label!r} is not a name of capitals, digits and _ (nor OPEN, CLOSE, NONE)"
                )
            if label in labels:
                raise LabelSetError(f"{where}: duplicate label {label!r}")
            if merge not in PAPERS_CLASSES:
                classes = ", ".join(PAPERS_CLASSES)
                raise LabelSetError(f"{where}: label {label} merges to {merge!r}, not one of {classes}")
            if (label == "O") != (mark == "") or not _one_mark(mark, label == "O"):
                raise LabelSetError(f"{where}: label {label}: O renders no mark, every other label one character")
            own = []
            for item in (e for e in extra if e):
                script, colon, script_mark = item.partition(":")
                if not colon or not script or not _one_mark(script_mark):
                    raise LabelSetError(f"{where}: expected SCRIPT:MARK (Devanagari:।), got {item!r}")
                own.append((script, script_mark))
            labels.append(label)
            merges.append(merge)
            marks.append(mark)
            scripts.append(tuple(sorted(own)))
        elif kind == "mark":
            if len(fields) < 2 or not fields[0] or not fields[1]:
                raise LabelSetError(f"{where}: expected mark<TAB>CHAR<TAB>LABEL, got {line!r}")
            if fields[0] in relabel:
                raise LabelSetError(f"{where}: mark {fields[0]!r} relabelled twice")
            relabel[fields[0]] = (lineno, fields[1])
        else:
            raise LabelSetError(f"{where}: a row starts with label or mark, not {kind[:30]!r}")
    if "O" not in labels:
        raise LabelSetError(f"{path}: no label O (the word without a mark): add `label<TAB>O<TAB>O` first")
    for mark, (lineno, label) in relabel.items():
        if label not in labels or label == "O":
            raise LabelSetError(
                f"{path}:{lineno}: mark {mark!r} relabelled {label!r}, not a label of the set "
                f"but O ({', '.join(labels[1:])})"
            )
    label_set = LabelSet(
        name,
        tuple(labels),
        tuple(merges),
        tuple(marks),
        tuple(scripts) if any(scripts) else (),
        tuple(sorted((mark, label) for mark, (_, label) in relabel.items())),
    )
    _check(label_set, str(path))
    return label_set


def built_in_label_sets() -> list[str]:
    return sorted(p.stem for p in LABEL_SET_DIR.glob("*.tsv"))


def label_set_file(spec: str) -> Path | None:
    """The file of the label set ``spec``: a built-in's table, or the path given (None: unknown)."""
    if _BUILT_IN_NAME.fullmatch(spec):
        path = LABEL_SET_DIR / f"{spec}.tsv"
        return path if path.is_file() else None
    return Path(spec)


def is_built_in(spec: str) -> bool:
    return bool(_BUILT_IN_NAME.fullmatch(spec))


@functools.cache
def label_set(spec: str = DEFAULT_LABEL_SET) -> LabelSet:
    """The label set ``spec``: a built-in's name (``papers``, ``extended``...) or a table's path."""
    path = label_set_file(spec)
    if path is None:
        raise ParamsError(
            f"label_set: unknown label set {spec!r}; built in: {', '.join(built_in_label_sets())}, "
            "or a path to a table (.tsv)"
        )
    if not path.is_file():
        raise ParamsError(f"label_set: {spec}: no such label-set table")
    return parse_label_set(path, spec)


PAPERS = label_set(DEFAULT_LABEL_SET)

#: the papers' label set, which a dataset without a recorded set has
LABELS: tuple[str, ...] = PAPERS.labels
LABEL_TO_ID: dict[str, int] = PAPERS.to_id
O, COMMA, PERIOD, QUESTION = range(4)

#: labels that end a sentence (used for segmenting labelled streams and for
#: sentence-length statistics)
SENTENCE_END_IDS = PAPERS.sentence_end_ids

#: the marks written back when rendering labels as text
RENDERED_MARK: dict[str, str] = PAPERS.rendered()

#: class merges of the papers' classes used for reporting (Alam 2020, Table 5)
MERGES: dict[int, dict[str, str]] = {
    4: {label: label for label in PAPERS_CLASSES},
    3: {"O": "O", "COMMA": "COMMA", "PERIOD": "PERIOD", "QUESTION": "PERIOD"},
    2: {"O": "O", "COMMA": "PUNCT", "PERIOD": "PUNCT", "QUESTION": "PUNCT"},
}


def merge_label(label: str, n_classes: int) -> str:
    """Map a 4-class label onto the 4-, 3- or 2-class scheme."""
    try:
        return MERGES[n_classes][label]
    except KeyError:
        raise ValueError(
            f"cannot merge label {label!r} to {n_classes} classes "
            f"(labels: {', '.join(LABELS)}; classes: {sorted(MERGES)})"
        ) from None


def merged_labels(n_classes: int) -> list[str]:
    """The label names of a merged scheme, in id order."""
    seen: list[str] = []
    for label in PAPERS_CLASSES:
        merged = merge_label(label, n_classes)
        if merged not in seen:
            seen.append(merged)
    return seen


def label_id(label: str) -> int:
    return PAPERS.id(label)


#: capitalization labels, one per word beside the punctuation label: ``O`` lowercase or caseless,
#: ``U`` first letter upper, ``A`` all upper, ``M`` mixed (the exact form is kept beside it)
CASE_LABELS: tuple[str, ...] = ("O", "U", "A", "M")
CASE_TO_ID: dict[str, int] = {label: i for i, label in enumerate(CASE_LABELS)}


def count_labels(column, vocabulary: tuple[str, ...]) -> dict[str, int]:
    """How many words carry each label in a list<string> column (every label present, 0 when absent)."""
    import pyarrow.compute as pc

    flat = pc.list_flatten(column)
    counts = dict.fromkeys(vocabulary, 0)
    if len(flat):
        for row in pc.value_counts(flat).to_pylist():
            counts[row["values"]] = int(row["counts"])
    return counts
