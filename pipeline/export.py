"""Segment datasets written in other tools' formats, streamed (memory: one batch).

* ``tsv``: xashru/punctuation-restoration's ``word<TAB>LABEL`` per line, one file per split
  (``--case-column``: a third column, the case label O/U/A/M).
* ``nemo``: NVIDIA NeMo's punctuation-capitalization format, a folder per split with
  ``text.txt`` (one segment per line: its words, lowercased, no marks) and ``labels.txt``
  (per word its punctuation label, ``O , . ?``, followed by ``U`` when the word as written
  starts with a capital letter, else ``O``: ``OU OO ,O .O``).
* ``hf``: a Hugging Face datasets folder: ``data/<split>-NNNNN.parquet`` plus a README whose
  card lists the splits, so ``datasets.load_dataset(folder)`` gives a DatasetDict.

Rows without a split are written as split ``all``.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc

from . import io
from .case import apply_case
from .labels import RENDERED_MARK
from .schema import SEGMENT_SCHEMA

FORMATS = ("tsv", "nemo", "hf")
NO_SPLIT = "all"


def nemo_labels(words: list[str], labels: list[str], case: list[str], surface: list[str | None]) -> str:
    """NeMo's label line for one segment."""
    out = []
    for word, label, case_label, form in zip(words, labels, case, surface):
        written = apply_case(word, case_label, form)
        out.append((RENDERED_MARK[label] or "O") + ("U" if written[:1].isupper() else "O"))
    return " ".join(out)


def tsv_lines(words, labels, case=None) -> str:
    if case is None:
        return "".join(f"{w}\t{l}\n" for w, l in zip(words, labels))
    return "".join(f"{w}\t{l}\t{c}\n" for w, l, c in zip(words, labels, case))


def _batches(inputs):
    for source in inputs:
        for batch in io.iter_batches(source):
            table = io.conform_segments(pa.Table.from_batches([batch]), source)
            split = pc.fill_null(table["split"], NO_SPLIT)
            for name in pc.unique(split).to_pylist():
                yield name, table.filter(pc.equal(split, name))


def export_datasets(inputs, fmt: str, out: str | os.PathLike, case_column: bool = False) -> list[str]:
    """Write ``inputs`` (segment datasets) into the folder ``out`` in format ``fmt``; returns the splits."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    inputs = [Path(p) for p in inputs]
    with io.Outputs(inputs=inputs) as outputs:
        folder = outputs.dataset(out)
        handles: dict[str, list] = {}
        hf_parts: dict[str, int] = {}
        if fmt == "hf":
            (folder / "data").mkdir()
        with contextlib.ExitStack() as files:
            for split, table in _batches(inputs):
                if fmt == "hf":
                    k = hf_parts[split] = hf_parts.get(split, -1) + 1
                    io.write_parquet(table.select(SEGMENT_SCHEMA.names), folder / "data" / f"{split}-{k:05d}.parquet")
                    continue
                if split not in handles:
                    names = [f"{split}.tsv"] if fmt == "tsv" else [f"{split}/text.txt", f"{split}/labels.txt"]
                    (folder / names[0]).parent.mkdir(exist_ok=True)
                    handles[split] = [files.enter_context(open(folder / n, "w", encoding="utf-8")) for n in names]
                columns = [table[name].to_pylist() for name in ("words", "labels", "case", "surface")]
                for words, labels, case, surface in zip(*columns):
                    if fmt == "tsv":
                        handles[split][0].write(tsv_lines(words, labels, case if case_column else None))
                    elif words:
                        handles[split][0].write(" ".join(words) + "\n")
                        handles[split][1].write(nemo_labels(words, labels, case, surface) + "\n")
        splits = sorted(handles) if fmt != "hf" else sorted(hf_parts)
        if fmt == "hf":
            _write_card(folder, splits)
        for path in folder.rglob("*"):
            io.make_readable(path)
        io.write_manifest(folder, {"kind": f"export-{fmt}", "splits": splits})
    return splits


def _write_card(folder: Path, splits: list[str]) -> None:
    card = ["---", "configs:", "- config_name: default", "  data_files:"]
    for split in splits:
        card += [f"  - split: {split}", f"    path: data/{split}-*.parquet"]
    card += ["---", "", "Segments with punctuation and case labels, written by punct-corpora.", ""]
    (folder / "README.md").write_text("\n".join(card), encoding="utf-8")
