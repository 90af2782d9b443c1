"""Segment datasets written in other tools' formats, streamed (memory: one batch).

* ``tsv``: xashru/punctuation-restoration's ``word<TAB>LABEL`` per line, one file per split
  (``--case-column``: a third column, the case label O/U/A/M).
* ``nemo``: NVIDIA NeMo's punctuation-capitalization format, a folder per split with
  ``text.txt`` (one segment per line: its words, lowercased, no marks) and ``labels.txt``
  (per word its punctuation label, ``O , . ?``, followed by ``U`` or ``O``: ``OU OO ,O .U``).
  The lines are what NeMo's own preparation script writes for the segment's text as written
  (each word in its case, followed by its mark): NVIDIA/NeMo
  ``examples/nlp/token_classification/data/prepare_data_for_punctuation_capitalization.py``
  (commit de1b1f23) calls ``create_text_and_labels`` (``get_tatoeba_data.py``, later
  ``nemo/collections/nlp/data/token_classification/token_classification_utils.py``; the same in
  nemo_toolkit 1.23.0).  Per whitespace token: the punctuation label is its last
  character if that is ``,`` ``.`` or ``?``, else ``O``; every ASCII punctuation character
  but the apostrophe and the backslash is removed from it (``well-being`` -> ``wellbeing``,
  ``U.S.`` -> ``US``, ``3.5`` -> ``35``; other marks, ``’`` or ``—``, stay); a token left empty is no word (its
  mark goes with it); the capitalization label is ``U`` when the first character left is an
  uppercase letter (``Paris``, ``NASA``, ``McDonald``), else ``O`` (``iPhone``, ``'Twas``,
  ``1990s``); the word is written lowercased.  So an abbreviation's own period is a ``.``
  label (``Dr.`` -> ``dr .U``), as NeMo would write it.  One deliberate difference: a
  segment with no word left is not written (NeMo's script writes an empty line pair).
  The marks are the project's labels, rendered ``,`` ``.`` ``?``: the source's ``!`` and ``;``
  are PERIOD, ``:`` COMMA, by the language's mark table (NeMo's script, given the raw text,
  would label them ``O``), and quotes and brackets are already gone from the words.
* ``hf``: a Hugging Face datasets folder: ``data/<split>-NNNNN.parquet`` plus a README whose
  card lists the splits, so ``datasets.load_dataset(folder)`` gives a DatasetDict.

Rows without a split are written as split ``all``.
"""

from __future__ import annotations

import contextlib
import os
import re
import string
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine import reading, writing
from pipeline.errors import ParamsError
from pipeline.labels import RENDERED_MARK
from pipeline.schema import SEGMENT_SCHEMA
from pipeline.text.case import apply_case

FORMATS = ("tsv", "nemo", "hf")
NO_SPLIT = "all"


#: the marks NeMo's script labels (its default ``punct_marks``), and the characters it removes
#: from words: Python's ASCII punctuation but the apostrophe (don't, it's) and the backslash (its
#: regex puts ``string.punctuation`` unescaped in brackets, where ``\]`` is an escaped bracket)
NEMO_MARKS = ",.?"
_NEMO_REMOVED = re.compile("[" + re.escape(string.punctuation.replace("'", "").replace("\\", "")) + "]")


def nemo_lines(words: list[str], labels: list[str], case: list[str], surface: list[str | None]) -> tuple[str, str]:
    """NeMo's ``text.txt`` and ``labels.txt`` lines for one segment (module documentation)."""
    text, out = [], []
    for word, label, case_label, form in zip(words, labels, case, surface):
        token = apply_case(word, case_label, form) + RENDERED_MARK[label]
        bare = _NEMO_REMOVED.sub("", token)
        if bare:
            text.append(bare.lower())
            out.append((token[-1] if token[-1] in NEMO_MARKS else "O") + ("U" if bare[0].isupper() else "O"))
    return " ".join(text), " ".join(out)


def tsv_lines(words, labels, case=None) -> str:
    if case is None:
        return "".join(f"{w}\t{l}\n" for w, l in zip(words, labels))
    return "".join(f"{w}\t{l}\t{c}\n" for w, l, c in zip(words, labels, case))


def _batches(inputs):
    for source in inputs:
        for batch in reading.iter_batches(source):
            table = reading.conform_segments(pa.Table.from_batches([batch]), source)
            split = pc.fill_null(table["split"], NO_SPLIT)
            for name in pc.unique(split).to_pylist():
                yield name, table.filter(pc.equal(split, name))


def export_datasets(inputs, fmt: str, out: str | os.PathLike, case_column: bool = False) -> list[str]:
    """Write ``inputs`` (segment datasets) into the folder ``out`` in format ``fmt``; returns the splits."""
    if fmt not in FORMATS:
        raise ParamsError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    inputs = [Path(p) for p in inputs]
    with writing.Outputs(inputs=inputs) as outputs:
        folder = outputs.dataset(out)
        handles: dict[str, list] = {}
        hf_parts: dict[str, int] = {}
        if fmt == "hf":
            (folder / "data").mkdir()
        with contextlib.ExitStack() as files:
            for split, table in _batches(inputs):
                if fmt == "hf":
                    k = hf_parts[split] = hf_parts.get(split, -1) + 1
                    writing.write_parquet(
                        table.select(SEGMENT_SCHEMA.names), folder / "data" / f"{split}-{k:05d}.parquet"
                    )
                    continue
                if split not in handles:
                    names = [f"{split}.tsv"] if fmt == "tsv" else [f"{split}/text.txt", f"{split}/labels.txt"]
                    (folder / names[0]).parent.mkdir(exist_ok=True)
                    handles[split] = [files.enter_context(open(folder / n, "w", encoding="utf-8")) for n in names]
                columns = [table[name].to_pylist() for name in ("words", "labels", "case", "surface")]
                for words, labels, case, surface in zip(*columns):
                    if fmt == "tsv":
                        handles[split][0].write(tsv_lines(words, labels, case if case_column else None))
                    else:
                        text, label_line = nemo_lines(words, labels, case, surface)
                        if text:
                            handles[split][0].write(text + "\n")
                            handles[split][1].write(label_line + "\n")
        splits = sorted(handles) if fmt != "hf" else sorted(hf_parts)
        if fmt == "hf":
            _write_card(folder, splits)
        for path in folder.rglob("*"):
            writing.make_readable(path)
        writing.write_manifest(folder, {"kind": f"export-{fmt}", "splits": splits})
    return splits


def _write_card(folder: Path, splits: list[str]) -> None:
    card = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits:
        card += [f"  - split: {split}", f"    path: data/{split}-*.parquet"]
    card += ["---", "", "Segments with punctuation and case labels, written by punct-corpora.", ""]
    (folder / "README.md").write_text("\n".join(card), encoding="utf-8")
