"""Reading inputs strictly and writing outputs atomically.

The only module of the library that touches files: readers and stages call it so
every input error names its file and every output appears whole or not at all.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from .schema import PARQUET_OPTIONS, conform, statistics_columns

BOM = b"\xef\xbb\xbf"


class InputError(ValueError):
    """Bad input: the message names the file and the line, record or byte offset."""


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 file as text, BOM stripped; invalid bytes -> InputError with the byte offset."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({exc.strerror})") from None
    start = len(BOM) if data.startswith(BOM) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = data.count(b"\n", 0, offset) + 1
        raise InputError(
            f"{path}: invalid UTF-8 at byte offset {offset} (line {line}): {data[offset : offset + 4]!r}"
        ) from None


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if path.is_dir():  # a sharded output of an earlier run
            import shutil

            shutil.rmtree(path)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_parquet(table: pa.Table, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        pq.write_table(table, tmp, write_statistics=statistics_columns(table.schema), **PARQUET_OPTIONS)


def input_files(path: str | os.PathLike, pattern: str = "*") -> list[Path]:
    """A file, or the regular files of a directory matching ``pattern``, sorted by name (hidden ones skipped)."""
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob(pattern) if p.is_file() and not p.name.startswith("."))
        if not files:
            raise InputError(f"{path}: directory has no input files matching {pattern!r}")
        return files
    if not path.exists():
        raise InputError(f"{path}: input does not exist")
    return [path]


def parquet_files(path: str | os.PathLike) -> list[Path]:
    """A Parquet file, or the part-*.parquet files of a sharded directory in name order."""
    return input_files(path, "part-*.parquet")


def open_parquet(path: str | os.PathLike) -> pq.ParquetFile:
    try:
        return pq.ParquetFile(path)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def conform_segments(table: pa.Table, path: str | os.PathLike) -> pa.Table:
    """``table`` (read from ``path``) in the segment schema, or InputError naming the file."""
    try:
        return conform(table)
    except (KeyError, pa.ArrowInvalid, ValueError) as exc:
        raise InputError(f"{path}: not a segment table ({exc})") from None


def read_segments(path: str | os.PathLike) -> pa.Table:
    """A segment Parquet file, or a directory of shards (part-*.parquet, read in name order)."""
    tables = [conform_segments(open_parquet(file).read(), file) for file in parquet_files(path)]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def write_json(obj, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, sort_keys=False) + "\n", encoding="utf-8")


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
