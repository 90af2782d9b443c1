"""Segment datasets written in other tools' formats, streamed (memory: one batch).

Every export carries the project's own words and labels: nothing is re-derived from text.

* ``tsv``: xashru/punctuation-restoration's ``word<TAB>LABEL`` per line, one file per split
  (``--case-column``: a third column, the case label O/U/A/M).
* ``nemo``: NVIDIA NeMo's punctuation-capitalization format, a folder per split with
  ``text.txt`` (one segment per line: its words, lowercased, separated by one space) and
  ``labels.txt`` (per word two characters: its punctuation label, ``O , . ?`` or the marks of the
  dataset's label set, in the script of the row's language, then ``U`` when the word is written
  with a capital first letter, else ``O``: ``OU OO ,O .U``).  NeMo's
  dataset reads exactly this (one example per line, as many labels as words).  The words are
  the project's words, so ``$15.50``, ``30%``, ``dr.`` and ``u.k.`` stay whole with the project's
  label (O after ``dr.`` and ``u.k.`` mid-sentence): NeMo's own preparation script would strip
  their ASCII marks and take an abbreviation's period for a PERIOD label.  Such words (holding a
  character NeMo's script removes) are counted in the manifest's ``kept_whole``.
* ``hf``: a Hugging Face datasets folder: ``data/<split>-<fingerprint>-NNNNN.parquet`` and a
  ``README.md`` dataset card whose YAML header lists the splits and the features (``labels`` and
  ``case`` as ``ClassLabel`` sequences of the label set's names, stored as their class ids), so
  ``datasets.load_dataset(folder)`` gives a DatasetDict; the card's text gives the label set, the
  label counts per split, the sources and how the dataset was made.  The fingerprint (a digest of
  the parts' bytes) is in the file names and so in the card's ``data_files`` patterns: ``datasets``
  keys its cache of a local folder on the folder's name and the card's header alone, so without it
  two exports to folders of one name, or a re-export over a folder, would load the rows cached first.

Rows without a split are written as one split, ``train`` unless named (``split_name``); a split
name is a word (letters, digits, ``_``) and never ``all``, which ``datasets`` reserves.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import string
from collections import Counter
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from pipeline.engine import reading, writing
from pipeline.engine.dataset import iter_batches, labels_of
from pipeline.errors import InputError, ParamsError
from pipeline.labels import CASE_LABELS, RENDERED_MARK, LabelSet
from pipeline.schema import SEGMENT_SCHEMA
from pipeline.text.case import apply_case

FORMATS = ("tsv", "nemo", "hf")
DEFAULT_SPLIT = "train"
#: split names ``datasets`` gives a meaning of its own (``load_dataset(split="all")``)
RESERVED_SPLITS = frozenset({"all"})
#: a split name ``datasets`` accepts (``\w+``), kept ASCII since it is also a file name
SPLIT_NAME = re.compile(r"[A-Za-z0-9_]+")

#: the characters NeMo's preparation script removes from words: Python's ASCII punctuation but the
#: apostrophe and the backslash (its regex puts ``string.punctuation`` unescaped in brackets, where
#: ``\]`` is an escaped bracket).  A word holding one is kept whole here and counted
_NEMO_REMOVED = re.compile("[" + re.escape(string.punctuation.replace("'", "").replace("\\", "")) + "]")


def split_name_problem(name: str) -> str | None:
    """Why ``name`` cannot name a split of an export (None: it can)."""
    if not SPLIT_NAME.fullmatch(name or ""):
        return f"split name {name!r} must be letters, digits and '_' only"
    if name.lower() in RESERVED_SPLITS:
        return f"split name {name!r} is reserved by Hugging Face datasets; choose another (e.g. {DEFAULT_SPLIT!r})"
    return None


def nemo_lines(
    words: list[str],
    labels: list[str],
    case: list[str],
    surface: list[str | None],
    marks: dict[str, str] = RENDERED_MARK,
) -> tuple[str, str]:
    """NeMo's ``text.txt`` and ``labels.txt`` lines for one segment: the project's words, lowercased,
    and per word its mark (``marks``: label -> mark, the label set's in the segment's script) and
    whether its written form starts with a capital."""
    out = []
    for word, label, case_label, form in zip(words, labels, case, surface):
        written = apply_case(word, case_label, form)
        out.append((marks[label] or "O") + ("U" if written[:1].isupper() else "O"))
    return " ".join(w.lower() for w in words), " ".join(out)


def nemo_splits_word(word: str) -> bool:
    """Whether NeMo's preparation script would change ``word`` (strip an ASCII mark from it)."""
    return _NEMO_REMOVED.search(word) is not None


def tsv_lines(words, labels, case=None) -> str:
    if case is None:
        return "".join(f"{w}\t{l}\n" for w, l in zip(words, labels))
    return "".join(f"{w}\t{l}\t{c}\n" for w, l, c in zip(words, labels, case))


def _batches(inputs, split_name: str, unsplit: set):
    """(split, rows) per batch of the inputs; the sources with rows without a split go to ``unsplit``."""
    named: set[str] = set()
    for source in inputs:
        for batch in iter_batches(source):
            table = reading.conform_segments(pa.Table.from_batches([batch]), source)
            if table["split"].null_count:
                unsplit.add(str(source))
            named.update(pc.unique(table["split"].drop_null()).to_pylist())
            if unsplit and split_name in named:
                raise InputError(
                    f"{', '.join(sorted(unsplit))}: rows without a split would join the split {split_name!r} "
                    f"of {source}; name them apart (--split-name)"
                )
            split = pc.fill_null(table["split"], split_name)
            for name in pc.unique(split).to_pylist():
                if name != split_name and (problem := split_name_problem(name)):
                    raise InputError(f"{source}: column split: {problem}")
                yield name, table.filter(pc.equal(split, name))


def _script_marks(lang: str, label_set: LabelSet) -> dict[str, str]:
    """Label -> mark for the rows of ``lang``: in its script where the label set has that script's own
    marks (the first script of the language; a language not installed gets the plain marks)."""
    if not label_set.script_marks:
        return label_set.rendered()
    from pipeline.text.languages import get_language

    try:
        scripts = get_language(lang).scripts
    except ParamsError:
        scripts = ()
    return label_set.rendered(scripts[0] if scripts else None)


def _hf_table(table: pa.Table, label_set: LabelSet) -> pa.Table:
    """The segment columns with labels and case as class ids (the ``ClassLabel`` storage)."""
    columns = []
    for name in SEGMENT_SCHEMA.names:
        column = table[name]
        if name in ("labels", "case"):
            lists = column.combine_chunks()
            names = pa.array(label_set.labels if name == "labels" else CASE_LABELS)
            ids = pc.index_in(lists.flatten(), value_set=names).cast(pa.int64())
            column = pa.ListArray.from_arrays(pc.subtract(lists.offsets, lists.offsets[0]), ids)
        columns.append(column)
    return pa.table(columns, names=SEGMENT_SCHEMA.names)


class _Tally:
    """What an export counts as it writes: per split its segments, words and labels; (nemo) the
    words kept whole, with a few examples, and the segments without words left out."""

    def __init__(self):
        self.segments: Counter = Counter()
        self.words: Counter = Counter()
        self.labels: dict[str, Counter] = {}
        self.kept_whole: Counter = Counter()
        self.kept_examples: list[str] = []
        self.empty: Counter = Counter()

    def add(self, split: str, table: pa.Table) -> None:
        flat_labels = pc.list_flatten(table["labels"])
        self.segments[split] += table.num_rows
        self.words[split] += len(flat_labels)
        counts = self.labels.setdefault(split, Counter())
        for item in pc.value_counts(flat_labels).to_pylist():
            counts[item["values"]] += item["counts"]

    def keep_whole(self, split: str, words: list[str]) -> None:
        for word in words:
            if nemo_splits_word(word):
                self.kept_whole[split] += 1
                if len(self.kept_examples) < 10 and word not in self.kept_examples:
                    self.kept_examples.append(word)


class _HfParts:
    """hf: each batch a Parquet part of its split, ``data/<split>-NNNNN.parquet`` (fingerprinted
    once all are written, :func:`_fingerprint_parts`); ``parts``: the last part's number per split."""

    def __init__(self, folder: Path, label_set: LabelSet):
        self.data, self.label_set = folder / "data", label_set
        self.parts: dict[str, int] = {}
        self.data.mkdir()

    def write(self, split: str, table: pa.Table) -> None:
        k = self.parts[split] = self.parts.get(split, -1) + 1
        writing.write_parquet(_hf_table(table, self.label_set), self.data / f"{split}-{k:05d}.parquet")


class _TextFiles:
    """tsv and nemo: a split's lines appended to its file (tsv) or its two files (nemo), opened on
    the split's first rows and closed with ``files``."""

    def __init__(self, folder: Path, fmt: str, files: contextlib.ExitStack, case_column: bool, label_set, tally):
        self.folder, self.fmt, self.files, self.case_column = folder, fmt, files, case_column
        self.label_set, self.tally = label_set, tally
        self.handles: dict[str, list] = {}
        self.marks_of_lang: dict[str, dict[str, str]] = {}

    def _open(self, split: str) -> list:
        if split not in self.handles:
            names = [f"{split}.tsv"] if self.fmt == "tsv" else [f"{split}/text.txt", f"{split}/labels.txt"]
            (self.folder / names[0]).parent.mkdir(exist_ok=True)
            handles = self.handles[split] = []
            for n in names:
                handle = open(self.folder / n, "w", encoding="utf-8")  # noqa: SIM115 (closed with files)
                handles.append(self.files.enter_context(handle))
        return self.handles[split]

    def write(self, split: str, table: pa.Table) -> None:
        handles = self._open(split)
        columns = [table[name].to_pylist() for name in ("words", "labels", "case", "surface", "lang")]
        for seg_words, labels, case, surface, lang in zip(*columns):
            if self.fmt == "tsv":
                handles[0].write(tsv_lines(seg_words, labels, case if self.case_column else None))
                continue
            if not seg_words:  # NeMo would read an empty line as an example without words
                self.tally.empty[split] += 1
                continue
            self.tally.keep_whole(split, seg_words)
            if lang not in self.marks_of_lang:
                self.marks_of_lang[lang] = _script_marks(lang, self.label_set)
            text, label_line = nemo_lines(seg_words, labels, case, surface, self.marks_of_lang[lang])
            handles[0].write(text + "\n")
            handles[1].write(label_line + "\n")


def _export_report(fmt: str, tally: _Tally, label_set: LabelSet, unsplit: set, split_name: str) -> dict:
    splits = sorted(tally.segments)
    report = {
        "kind": f"export-{fmt}",
        "splits": splits,
        "segments": {s: tally.segments[s] for s in splits},
        "words": {s: tally.words[s] for s in splits},
        "labels": {s: {label: tally.labels[s][label] for label in label_set.labels} for s in splits},
    }
    if not label_set.is_papers:
        report["label_set"] = label_set.record()
    if unsplit:
        report["unsplit_rows_as"] = split_name
    if fmt == "nemo":
        report["kept_whole"] = dict(sorted(tally.kept_whole.items()))
        report["kept_whole_examples"] = tally.kept_examples
        report["skipped_empty_segments"] = dict(sorted(tally.empty.items()))
    return report


def export_datasets(
    inputs,
    fmt: str,
    out: str | os.PathLike,
    case_column: bool = False,
    split_name: str = DEFAULT_SPLIT,
    card: dict | None = None,
) -> dict:
    """Write ``inputs`` (segment datasets) into the folder ``out`` in format ``fmt``.

    Rows without a split go to the split ``split_name``.  ``card`` (hf): what the dataset card
    says of the sources (``{"sources": [{"corpus", "input", "licence"}], "command": str,
    "params": dict}``).  Returns the report the manifest also holds: the format, the splits,
    segments and words per split, label counts per split, and (nemo) the words kept whole."""
    if fmt not in FORMATS:
        raise ParamsError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    if problem := split_name_problem(split_name):
        raise ParamsError(problem)
    inputs = [Path(p) for p in inputs]
    label_set = labels_of(inputs)  # one label set, or a one-line refusal naming two
    unsplit: set[str] = set()
    tally = _Tally()
    with writing.Outputs(inputs=inputs) as outputs:
        folder = outputs.dataset(out, kind=f"export-{fmt}")
        with contextlib.ExitStack() as files:
            if fmt == "hf":
                writer = _HfParts(folder, label_set)
            else:
                writer = _TextFiles(folder, fmt, files, case_column, label_set, tally)
            for split, table in _batches(inputs, split_name, unsplit):
                tally.add(split, table)
                writer.write(split, table)
        report = _export_report(fmt, tally, label_set, unsplit, split_name)
        if fmt == "hf":
            report["fingerprint"] = _fingerprint_parts(folder / "data", writer.parts)
            _write_card(folder, report, card or {}, label_set)
        for path in folder.rglob("*"):
            writing.make_readable(path)
        writing.write_manifest(folder, report)
    return report


def _fingerprint_parts(data: Path, parts: dict[str, int]) -> str:
    """A digest of the hf export's rows (its parts' bytes, split by split), put into the parts' names:
    ``data/<split>-NNNNN.parquet`` becomes ``data/<split>-<fingerprint>-NNNNN.parquet``."""
    digest = hashlib.sha256()
    for split in sorted(parts):
        for k in range(parts[split] + 1):
            digest.update(f"{split}-{k:05d}\n".encode())
            digest.update(hashlib.sha256((data / f"{split}-{k:05d}.parquet").read_bytes()).digest())
    fingerprint = digest.hexdigest()[:16]
    for split in sorted(parts):
        for k in range(parts[split] + 1):
            os.replace(data / f"{split}-{k:05d}.parquet", data / f"{split}-{fingerprint}-{k:05d}.parquet")
    return fingerprint


def export_warnings(report: dict) -> list[str]:
    """What a user should know of an export: the words NeMo's own preparation would have split."""
    warnings = []
    if kept := report.get("kept_whole"):
        examples = ", ".join(report.get("kept_whole_examples", [])[:5])
        counts = ", ".join(f"{split} {n}" for split, n in kept.items())
        warnings.append(
            f"words kept whole where NeMo's preparation script would strip marks from them: {counts} (e.g. {examples})"
        )
    if empty := report.get("skipped_empty_segments"):
        counts = ", ".join(f"{split} {n}" for split, n in empty.items())
        warnings.append(f"segments without words not written (NeMo would read an empty example): {counts}")
    return warnings


def dataset_card(params, name: str, command: str) -> dict:
    """What the card of dataset ``name`` says of its sources and making, from the params."""
    dataset = params.datasets[name]
    sources = []
    for corpus in dataset.corpora:
        entry = params.corpora.get(corpus)
        if entry is None and corpus in params.alignments:
            alignment = params.alignments[corpus]
            entry = {"input": f"aligned: reference {alignment.ref}, hypothesis {alignment.hyp}"}
        entry = entry or {}
        licence = entry.get("licence") or entry.get("license")
        source = {"corpus": corpus, "input": str(entry.get("input")) if entry.get("input") else None}
        sources.append({**source, "licence": licence})
    return {
        "sources": sources,
        "command": command,
        "params": {name: dataset.model_dump(mode="json", exclude_none=True)},
    }


def hf_features(label_set: LabelSet) -> dict:
    """The features of an hf export in the YAML of a dataset card (``dataset_info.features``)."""

    def class_label(names):
        return {"list": {"class_label": {"names": {str(i): n for i, n in enumerate(names)}}}}

    types = {
        "corpus": {"dtype": "string"},
        "lang": {"dtype": "string"},
        "doc_id": {"dtype": "string"},
        "seg_id": {"dtype": "int32"},
        "words": {"list": "string"},
        "labels": class_label(label_set.labels),
        "case": class_label(CASE_LABELS),
        "surface": {"list": "string"},
        "split": {"dtype": "string"},
    }
    return [{"name": name, **types[name]} for name in SEGMENT_SCHEMA.names]


def _write_card(folder: Path, report: dict, card: dict, label_set: LabelSet) -> None:
    splits = report["splits"]
    header = {
        "configs": [
            {
                "config_name": "default",
                "data_files": [{"split": s, "path": f"data/{s}-{report['fingerprint']}-*.parquet"} for s in splits],
            }
        ],
        "dataset_info": {
            "config_name": "default",
            "features": hf_features(label_set),
        },
    }
    if languages := card.get("languages"):
        header = {"language": list(languages), **header}
    lines = ["---", yaml.safe_dump(header, sort_keys=False, allow_unicode=True).rstrip(), "---", ""]
    lines += [
        "# Punctuation and case labels",
        "",
        "Segments of text, one row per segment, with per word the punctuation that follows it",
        "and its capitalization, written by punct-corpora.",
        "",
        "## Labels",
        "",
        "`labels` (a `ClassLabel` per word, the punctuation that follows the word):",
        "",
    ]
    marks = label_set.rendered()
    lines += [
        f"- {i}: `{name}`" + (f" (`{marks[name]}`)" if marks[name] else " (no mark)")
        for i, name in enumerate(label_set.labels)
    ]
    if not label_set.is_papers:
        merges = ", ".join(
            f"`{label}` -> `{merge}`" for label, merge in zip(label_set.labels[1:], label_set.merges[1:])
        )
        lines += ["", f"Label set `{label_set.name}`; merged to the four classes O/COMMA/PERIOD/QUESTION: {merges}."]
    lines += [
        "",
        "`case` (a `ClassLabel` per word): " + ", ".join(f"{i}: `{n}`" for i, n in enumerate(CASE_LABELS)),
        "(O lower, U capitalized, A all capitals, M mixed: `surface` holds the word as written).",
        "",
        "## Splits and label counts",
        "",
        "| split | segments | words | " + " | ".join(label_set.labels) + " |",
        "|---|---:|---:|" + "---:|" * len(label_set.labels),
    ]
    for s in splits:
        counts = " | ".join(str(report["labels"][s][label]) for label in label_set.labels)
        lines.append(f"| {s} | {report['segments'][s]} | {report['words'][s]} | {counts} |")
    if report.get("unsplit_rows_as"):
        lines += ["", f"Rows that were never split are the split `{report['unsplit_rows_as']}`."]
    lines += ["", "## Sources", ""]
    sources = card.get("sources") or []
    if not sources:
        lines.append("Not stated (the dataset was exported without its params).")
    for source in sources:
        licence = source.get("licence") or "licence not stated in the params"
        where = f" from `{source['input']}`" if source.get("input") else ""
        lines.append(f"- `{source['corpus']}`{where}: {licence}")
    lines += ["", "## How it was made", ""]
    if command := card.get("command"):
        lines += ["```", command, "```"]
    else:
        lines.append("`punct-corpora export --format hf`.")
    if params := card.get("params"):
        lines += ["", "With these params:", "", "```yaml", yaml.safe_dump(params, sort_keys=False).rstrip(), "```"]
    (folder / "README.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
