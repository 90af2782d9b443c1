"""Helpers the tests share: datasets on disk, digests, params files."""

from __future__ import annotations

import hashlib
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import yaml

from pipeline.engine import writing


def write_dataset(table: pa.Table, folder: Path, parts: int = 1, by_doc: bool = False) -> Path:
    """``table`` as a dataset folder of ``parts`` part files (``by_doc``: a part per document)."""
    folder.mkdir(parents=True, exist_ok=True)
    if by_doc:
        docs = list(dict.fromkeys(table["doc_id"].to_pylist()))
        pieces = [table.filter(pc.equal(table["doc_id"], d)) for d in docs]
    else:  # cut near equal sizes, but only where a document starts
        from pipeline.engine.dataset import document_index

        doc = document_index(table)
        n = table.num_rows
        bounds = [0]
        for i in range(1, parts):
            cut = round(i * n / parts)
            while 0 < cut < n and doc[cut] == doc[cut - 1]:
                cut += 1
            bounds.append(max(cut, bounds[-1]))
        bounds.append(n)
        pieces = [table.slice(a, b - a) for a, b in itertools.pairwise(bounds)]
    for i, piece in enumerate(pieces):
        writing.write_parquet(piece, folder / f"part-{i:05d}.parquet")
    writing.write_manifest(folder, {"kind": "segments", "parts": len(pieces)})
    return folder


def digests(folder: Path) -> dict:
    """sha256 of every file of a dataset folder (its parts and manifest)."""
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(Path(folder).glob("*")) if p.is_file()}


def write_params(path: Path, params: dict) -> Path:
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path
