"""Reading inputs strictly: every error names its file and the line, record or byte offset
(:class:`pipeline.errors.InputError`).  Text is strict UTF-8; Parquet is conformed to the segment schema.
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.location import MANIFEST, _os_reason, file_size, is_dir, is_file, is_url, join, url_fs
from pipeline.errors import InputError, ParamsError, SchemaError
from pipeline.schema import conform

BOM = b"\xef\xbb\xbf"
log = logging.getLogger(__name__)


def escaped(path) -> str:
    """``path`` printable whatever bytes its name holds: bytes that are not UTF-8 as ``\\xNN``."""
    return os.fsencode(path).decode("utf-8", "backslashreplace") if not is_url(path) else str(path)


def _utf8_name(path) -> bool:
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def open_input(path):
    """A binary file object to read ``path`` (a local path or a URL)."""
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.open(inner, "rb")
    return open(path, "rb")


def read_array(path, dtype) -> np.ndarray:
    """A headerless array file: mapped when local, read when a URL."""
    if is_url(path):
        return np.frombuffer(read_bytes(path), dtype)
    return np.memmap(path, dtype, mode="r") if file_size(path) else np.zeros(0, dtype)


def open_arrow_file(path) -> pa.RecordBatchFileReader:
    """An Arrow IPC file: mapped when local, read when a URL."""
    source = pa.BufferReader(read_bytes(path)) if is_url(path) else pa.memory_map(str(path))
    return pa.ipc.open_file(source)


def _missing(path: Path) -> InputError | None:
    """Why ``path`` cannot be read at all (nothing there, a link to nothing), or None."""
    if path.is_symlink() and not path.exists():
        return InputError(f"{path}: broken symbolic link")
    if not path.exists():
        return InputError(f"{path}: input does not exist")
    return None


def read_bytes(path: str | os.PathLike) -> bytes:
    if is_url(path):
        fs, inner = url_fs(path)
        try:
            return fs.cat_file(inner)
        except FileNotFoundError:
            raise InputError(f"{path}: input does not exist") from None
        except IsADirectoryError:
            raise InputError(f"{path}: is a directory, not a file") from None
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({_os_reason(exc)})") from None
    path = Path(path)
    try:
        return path.read_bytes()
    except FileNotFoundError:
        raise _missing(path) or InputError(f"{path}: input does not exist") from None
    except IsADirectoryError:
        raise InputError(f"{path}: is a directory, not a file") from None
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({_os_reason(exc)})") from None


def read_stdin(stream=None) -> str:
    """Standard input as strict UTF-8 text: invalid bytes named by their byte offset and line, as
    in a file (the text layer's codec error names neither)."""
    import sys

    source = stream if stream is not None else getattr(sys.stdin, "buffer", None)
    if source is None:  # a text stream put in its place (an embedding program): already decoded
        return sys.stdin.read()
    try:
        data = source.read()
    except OSError as exc:
        raise InputError(f"<stdin>: cannot read ({_os_reason(exc)})") from None
    return decode_utf8(data, "<stdin>")


def decode_utf8(data: bytes, path, first_line: int = 1, base_offset: int = 0) -> str:
    """``data`` (read from ``path`` at ``base_offset``) as text; BOM stripped at the file's start;
    invalid bytes -> InputError with the byte offset in the file and the line."""
    start = len(BOM) if base_offset == 0 and data.startswith(BOM) else 0
    try:
        return data[start:].decode("utf-8")
    except UnicodeDecodeError as exc:
        offset = start + exc.start
        line = first_line + data.count(b"\n", 0, offset)
        raise InputError(
            f"{path}: invalid UTF-8 at byte offset {base_offset + offset} (line {line}): {data[offset : offset + 4]!r}"
        ) from None


def read_text(path: str | os.PathLike) -> str:
    """A UTF-8 file as text, BOM stripped; invalid bytes -> InputError with the byte offset."""
    return decode_utf8(read_bytes(path), path if is_url(path) else Path(path))


def read_range(path: str | os.PathLike, start: int, stop: int | None) -> bytes:
    """Bytes [start, stop) of a file (stop None: to its end)."""
    if is_url(path):
        fs, inner = url_fs(path)
        try:
            return fs.cat_file(inner, start, stop)
        except OSError as exc:
            raise InputError(f"{path}: cannot read ({_os_reason(exc)})") from None
    try:
        with open(path, "rb") as handle:
            handle.seek(start)
            return handle.read(-1 if stop is None else stop - start)
    except OSError as exc:
        raise InputError(f"{path}: cannot read ({_os_reason(exc)})") from None


def _relative_pattern(pattern: str, folder: Path) -> str:
    """``pattern`` relative to ``folder``: an absolute one must lie inside it (it is taken relative to
    it), an empty one is refused."""
    if not pattern:
        raise ParamsError("glob: an empty pattern (give one such as '*.txt')")
    if not os.path.isabs(pattern):
        return pattern
    inner = os.path.relpath(pattern, os.path.abspath(folder))
    if inner == os.curdir or inner.split(os.sep)[0] == os.pardir:
        raise ParamsError(f"glob {pattern!r}: an absolute pattern must lie inside the input folder {folder}")
    return inner


def input_files(path: str | os.PathLike, pattern: str = "*", skipped: dict | None = None) -> list[Path]:
    """A file, or the regular files of a directory matching ``pattern``, sorted by name.

    What a directory holds but is not read is counted in ``skipped`` by reason (hidden files,
    subdirectories, broken links), never passed over silently."""
    if is_url(path):
        return _url_files(path, pattern, skipped)
    path = Path(path)
    if path.is_dir():
        files = []
        for entry in sorted(path.glob(_relative_pattern(pattern, path))):
            reason = None
            if not _utf8_name(entry):
                # its name cannot be a document id, nor shown: that file only is refused, by name
                reason = "name_not_utf8"
                log.warning("%s: file name is not valid UTF-8: not read (rename it to read it)", escaped(entry))
            elif entry.name.startswith("."):
                reason = "hidden_file"
            elif entry.is_symlink() and not entry.exists():
                reason = "broken_link"
            elif entry.is_dir():
                reason = "subdirectory"
            elif not entry.is_file():
                reason = "not_a_regular_file"
            if reason:
                if skipped is not None:
                    skipped[reason] = skipped.get(reason, 0) + 1
                continue
            files.append(entry)
        if not files:
            raise InputError(f"{path}: directory has no input files matching {pattern!r}")
        return files
    if problem := _missing(path):
        raise problem
    if not _utf8_name(path):
        raise InputError(f"{escaped(path)}: file name is not valid UTF-8: rename it")
    return [path]


def _url_files(url: str, pattern: str, skipped: dict | None, empty: str | None = None) -> list[str]:
    """:func:`input_files` for a URL: the file, or the folder's files matching ``pattern`` (``empty``:
    the message when there are none)."""
    fs, inner = url_fs(url)
    if not fs.exists(inner):
        raise InputError(f"{url}: input does not exist")
    if not fs.isdir(inner):
        return [url]
    files = []
    for entry in sorted(fs.glob(f"{inner.rstrip('/')}/{pattern}", detail=True).items()):
        name, info = entry[0], entry[1]
        reason = None
        if name.rstrip("/").rsplit("/", 1)[-1].startswith("."):
            reason = "hidden_file"
        elif info.get("type") == "directory":
            reason = "subdirectory"
        if reason:
            if skipped is not None:
                skipped[reason] = skipped.get(reason, 0) + 1
            continue
        files.append(join(url, name[len(inner.rstrip("/")) + 1 :]))
    if not files:
        raise InputError(empty or f"{url}: directory has no input files matching {pattern!r}")
    return files


def parquet_files(path: str | os.PathLike) -> list:
    """A Parquet file, or the part-*.parquet files of a dataset folder in name order."""
    if is_url(path):
        empty = f"{path}: folder holds no part-*.parquet files (not a dataset of this tool)"
        return _url_files(path, "part-*.parquet", None, empty)
    path = Path(path)
    if path.is_dir():
        files = sorted(p for p in path.glob("part-*.parquet") if p.is_file())
        if not files:
            raise InputError(f"{path}: folder holds no part-*.parquet files (not a dataset of this tool)")
        return files
    if problem := _missing(path):
        raise problem
    return [path]


def open_parquet(path: str | os.PathLike, **options) -> pq.ParquetFile:
    try:
        if is_url(path):
            return pq.ParquetFile(open_input(path), **options)
        return pq.ParquetFile(path, **options)
    except (OSError, pa.ArrowInvalid) as exc:
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def conform_segments(table: pa.Table, path: str | os.PathLike) -> pa.Table:
    """``table`` (read from ``path``) in the segment schema, or InputError naming the file."""
    try:
        return conform(table, str(path))
    except SchemaError as exc:
        raise InputError(str(exc)) from None
    except (KeyError, pa.ArrowInvalid, ValueError) as exc:
        raise InputError(f"{path}: not a segment table ({exc})") from None


def _read_whole(file) -> pa.Table:
    reader = open_parquet(file)
    try:
        return reader.read()
    except (OSError, pa.ArrowException) as exc:
        raise unreadable(exc, file) from None


def read_segments(path: str | os.PathLike) -> pa.Table:
    """A whole segment dataset (a file, or a folder of parts) in memory: for small data and tests;
    the stages stream, their parts checked (:func:`pipeline.engine.dataset.iter_batches`)."""
    tables = [conform_segments(_read_whole(file), file) for file in parquet_files(path)]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def unreadable(exc: Exception, path) -> InputError:
    """A Parquet file whose pages cannot be read (a corrupt page, a failed decompression), named."""
    return InputError(f"{path}: cannot read its data, the file is damaged ({exc})")


def require_columns(reader: pq.ParquetFile, columns, path) -> None:
    """A file of another schema, refused by name before a read would fail with a KeyError."""
    missing = [c for c in columns or () if c not in reader.schema_arrow.names]
    if missing:
        raise InputError(f"{path}: not a table of this kind: no column {', '.join(map(repr, missing))}")


def batches_of(reader: pq.ParquetFile, path, columns: list[str] | None = None, batch_size: int = 65_536):
    """``reader``'s record batches, streamed; a missing column or a damaged page named by ``path``."""
    require_columns(reader, columns, path)
    try:
        yield from reader.iter_batches(columns=columns, batch_size=batch_size)
    except (OSError, pa.ArrowException) as exc:
        raise unreadable(exc, path) from None


def read_json(path: str | os.PathLike):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: invalid JSON (column {exc.colno}): {exc.msg}") from None
    except RecursionError:
        raise InputError(f"{path}: invalid JSON: nested too deeply to read") from None


def read_manifest(path: str | os.PathLike) -> dict | None:
    return read_json(join(path, MANIFEST)) if is_dir(path) and is_file(join(path, MANIFEST)) else None
