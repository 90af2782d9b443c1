"""Reading inputs strictly and writing outputs atomically: the one module of the library that touches files.

Inputs: every error names its file and the line, record or byte offset (:class:`InputError`).

Outputs: a run writes everything in staging paths beside its outputs and promotes them
together when it succeeded (:class:`Outputs`), so an output appears whole or not at all and a
dataset and its stats never disagree.  An output path is replaced only when it holds an earlier
output of the same kind (a file, or a dataset folder marked by its manifest): the run never
deletes what it did not write.  Files and folders get the permissions any tool gives under the
caller's umask (0644 / 0755 under 022), not those of a temporary file.  A lock beside the
output refuses a second run writing the same path at the same time; staging left by a killed
run is removed by the next run.

Locations: every input and output may also be an fsspec URL (``s3://bucket/data``,
``gs://...``, ``memory://...``; see :func:`is_url`), read and written through fsspec where the
protocol's package is installed, so a cluster without a shared disk reads and writes object
storage.  A URL stays a string (``pathlib`` would fold ``s3://b`` into ``s3:/b``): join with
:func:`join`.  Object stores rename by copying and have no locks, so on a URL the outputs are
put in place file by file (a dataset's manifest first: a run killed then leaves an output the
next run recognizes and replaces) and a second run writing the same URL is not refused.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .schema import PARQUET_OPTIONS, SchemaError, as_dictionaries, conform, statistics_columns

BOM = b"\xef\xbb\xbf"
_STAGED_NAME = re.compile(r"^\.(.+)\.staging-\d+-.*$")
#: the manifest that marks a dataset folder (a folder of part-NNNNN.parquet files) as this tool's
MANIFEST = "_punct.json"


class InputError(ValueError):
    """Bad input: the message names the file and the line, record or byte offset."""


class OutputError(ValueError):
    """An output cannot be written: the message names the path and why."""


# -------------------------------------------------------------------------------------- locations

_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path) -> bool:
    """Whether ``path`` is an fsspec URL (``protocol://...``) rather than a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def url_fs(url: str):
    """(fsspec file system, path inside it) of ``url``; an unknown protocol, or one whose package is
    not installed, is an InputError naming the URL."""
    import fsspec

    try:
        return fsspec.core.url_to_fs(url)
    except (ImportError, ValueError) as exc:
        raise InputError(f"{url}: cannot use this URL ({exc})") from None


def join(base, *names: str):
    """``base/names...``: a Path for a local path, a string for a URL."""
    if is_url(base):
        return "/".join([base.rstrip("/"), *names])
    return Path(base).joinpath(*names)


def name_of(path) -> str:
    """The last part of ``path`` (a local path or a URL)."""
    return str(path).rstrip("/").rsplit("/", 1)[-1] if is_url(path) else Path(path).name


def parent_of(path):
    return str(path).rstrip("/").rsplit("/", 1)[0] if is_url(path) else Path(path).parent


def exists(path) -> bool:
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.exists(inner)
    return Path(path).exists()


def is_dir(path) -> bool:
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.isdir(inner)
    return Path(path).is_dir()


def is_file(path) -> bool:
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.isfile(inner)
    return Path(path).is_file()


def require_local(path, what: str) -> None:
    """Refuse a URL where a step reads or writes local folders only (a library that knows no fsspec)."""
    if is_url(path):
        raise OutputError(f"{path}: {what} reads and writes local paths only, not URLs: give a local path")


def file_size(path) -> int:
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.size(inner)
    return os.path.getsize(path)


def make_folder(path) -> None:
    """``path`` and its parents as folders (an object store needs none: a no-op there)."""
    if is_url(path):
        fs, inner = url_fs(path)
        fs.makedirs(inner, exist_ok=True)
    else:
        Path(path).mkdir(parents=True, exist_ok=True)


def open_input(path):
    """A binary file object to read ``path`` (a local path or a URL)."""
    if is_url(path):
        fs, inner = url_fs(path)
        return fs.open(inner, "rb")
    return open(path, "rb")


@contextmanager
def open_output(path) -> Iterator:
    """A binary file object writing ``path`` in place (a staging path: see :class:`Outputs`)."""
    if is_url(path):
        fs, inner = url_fs(path)
        with fs.open(inner, "wb") as sink:
            yield sink
    else:
        with open(path, "wb") as sink:
            yield sink


def write_bytes_in_place(data, path) -> None:
    """A buffer (bytes, a numpy array) as the file ``path``, in place."""
    view = memoryview(data)
    try:
        with open_output(path) as sink:
            sink.write(view.cast("B") if view.nbytes else b"")
    except OSError as exc:
        raise write_failed(exc, path) from None


def read_array(path, dtype) -> np.ndarray:
    """A headerless array file: mapped when local, read when a URL."""
    if is_url(path):
        return np.frombuffer(read_bytes(path), dtype)
    return np.memmap(path, dtype, mode="r") if file_size(path) else np.zeros(0, dtype)


def open_arrow_file(path) -> pa.RecordBatchFileReader:
    """An Arrow IPC file: mapped when local, read when a URL."""
    source = pa.BufferReader(read_bytes(path)) if is_url(path) else pa.memory_map(str(path))
    return pa.ipc.open_file(source)


def write_arrow_in_place(table: pa.Table, path) -> None:
    """An Arrow IPC file (uncompressed: mapped by its readers when local), in place."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    write_bytes_in_place(sink.getvalue(), path)


@contextmanager
def local_folder(path) -> Iterator[Path]:
    """A folder as a local path: itself, or a URL's files copied to a temporary folder (for
    libraries that read only local folders: a tokenizer)."""
    if not is_url(path):
        yield Path(path)
        return
    fs, inner = url_fs(path)
    with tempfile.TemporaryDirectory(prefix="punct-") as local:
        for file in fs.find(inner):
            relative = file[len(inner.rstrip("/")) + 1 :]
            target = Path(local, relative)
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(fs.cat_file(file))
        yield Path(local)


def upload_folder(local: Path, path) -> None:
    """A local folder's files into ``path`` (a staging folder): for libraries that write only local
    folders."""
    for file in sorted(p for p in Path(local).rglob("*") if p.is_file()):
        target = join(path, *file.relative_to(local).parts)
        make_folder(parent_of(target))
        write_bytes_in_place(file.read_bytes(), target)


#: a full disk, a quota or a file-size limit: writing failed, whichever writer it was
_DISK_ERRNOS = {
    errno.ENOSPC: "no space left on the device",
    errno.EDQUOT: "disk quota exceeded",
    errno.EFBIG: "file too large",
}


def _errno_of(exc: OSError) -> int | None:
    """The errno of ``exc``; Arrow raises a plain OSError that words it only in the message."""
    if exc.errno is not None:
        return exc.errno
    found = re.search(r"\[errno (\d+)\]", str(exc), re.IGNORECASE)
    return int(found.group(1)) if found else None


def _os_reason(exc: OSError) -> str:
    number = _errno_of(exc)
    if number in _DISK_ERRNOS:
        return _DISK_ERRNOS[number]
    return exc.strerror or str(exc)


def shown(path: str | os.PathLike):
    """``path`` as the user knows it: a staging name (``.NAME.staging-PID-XXXX``) becomes the output's
    ``NAME``, so a message names the output, not a temporary path the run removes."""
    if is_url(path):
        return "/".join(_STAGED_NAME.sub(r"\1", part) for part in path.split("/"))
    return Path(*(_STAGED_NAME.sub(r"\1", part) for part in Path(path).parts))


def write_failed(exc: OSError, *paths: str | os.PathLike) -> OutputError:
    """The one wording of a failed write of ``paths`` (the outputs it may have been)."""
    return OutputError(f"{', '.join(str(shown(p)) for p in paths)}: cannot write ({_os_reason(exc)})")


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


# ----------------------------------------------------------------------------------------- inputs


def input_files(path: str | os.PathLike, pattern: str = "*", skipped: dict | None = None) -> list[Path]:
    """A file, or the regular files of a directory matching ``pattern``, sorted by name.

    What a directory holds but is not read is counted in ``skipped`` by reason (hidden files,
    subdirectories, broken links), never passed over silently."""
    if is_url(path):
        return _url_files(path, pattern, skipped)
    path = Path(path)
    if path.is_dir():
        files = []
        for entry in sorted(path.glob(pattern)):
            reason = None
            if entry.name.startswith("."):
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


def read_segments(path: str | os.PathLike) -> pa.Table:
    """A whole segment dataset (a file, or a folder of parts) in memory: for small data and tests;
    the stages stream (:func:`iter_batches`)."""
    tables = [conform_segments(open_parquet(file).read(), file) for file in parquet_files(path)]
    return tables[0] if len(tables) == 1 else pa.concat_tables(tables)


def iter_batches(path: str | os.PathLike, columns: list[str] | None = None, batch_size: int = 65_536):
    """Record batches of a dataset (file or folder of parts), streamed: memory is one batch."""
    for file in parquet_files(path):
        yield from open_parquet(file).iter_batches(columns=columns, batch_size=batch_size)


def read_json(path: str | os.PathLike):
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: invalid JSON (column {exc.colno}): {exc.msg}") from None


# ---------------------------------------------------------------------------------------- outputs


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def make_readable(path: Path) -> None:
    """The mode a plainly created file or folder gets under the umask (mkstemp gives 0600, mkdtemp 0700);
    an object store keeps no modes."""
    if is_url(path):
        return
    path = Path(path)
    mode = (0o777 if path.is_dir() else 0o666) & ~_umask()
    os.chmod(path, mode)


def write_parquet(table: pa.Table, path: str | os.PathLike) -> None:
    """One Parquet file written in place (inside a staging folder, or a lone file: see :func:`atomic_path`).

    List columns of strings are written from dictionaries (a column read as a dictionary is
    written without being decoded: 1.5x faster) and no Arrow schema is stored, so every reader
    sees plain strings whichever way the table was built."""
    path = path if is_url(path) else Path(path)
    table = as_dictionaries(table)
    options = dict(write_statistics=statistics_columns(table.schema), store_schema=False, **PARQUET_OPTIONS)
    try:
        if is_url(path):
            with open_output(path) as sink:
                pq.write_table(table, sink, **options)
        else:
            pq.write_table(table, path, **options)
    except OSError as exc:
        raise write_failed(exc, path) from None
    make_readable(path)


def _is_dataset(path: Path) -> bool:
    return is_file(join(path, MANIFEST))


def _is_parquet_of_ours(path: Path) -> bool:
    """A lone Parquet file an earlier version of this tool wrote (its schema carries our name)."""
    try:
        metadata = open_parquet(path).schema_arrow.metadata or {}
    except (OSError, pa.ArrowInvalid, InputError):
        return False
    return metadata.get(b"schema", b"").startswith(b"punct-")


def _replaceable(final: Path, dataset: bool) -> None:
    """Refuse to replace anything but an earlier output of the same kind."""
    if is_url(final):
        fs, inner = url_fs(final)
        if not fs.exists(inner):
            return
        if fs.isdir(inner):
            if dataset and _is_dataset(final):
                return
            raise OutputError(
                f"{final}: exists and is a folder this tool did not write (no {MANIFEST}), or a dataset where "
                "a file goes: not replaced; choose another output path"
            )
        if dataset and final.endswith(".parquet") and _is_parquet_of_ours(final):
            return
        if not dataset:
            return
        raise OutputError(f"{final}: exists and is not an output of this kind: not replaced")
    if not (final.exists() or final.is_symlink()):
        return
    if final.is_dir() and not final.is_symlink():
        if dataset and _is_dataset(final):
            return
        if _is_dataset(final):
            raise OutputError(f"{final}: is a dataset folder, not a file: not replaced; choose another output path")
        raise OutputError(
            f"{final}: exists and is a folder this tool did not write (no {MANIFEST}): not replaced; "
            "choose another output path or remove it yourself"
        )
    if dataset and final.suffix == ".parquet" and _is_parquet_of_ours(final):
        return  # a single-file output of an earlier version
    if not dataset and final.is_file():
        return
    raise OutputError(f"{final}: exists and is not an output of this kind: not replaced")


def _same_path(a: Path, b: Path) -> bool:
    try:
        return a.resolve() == b.resolve() or (a.exists() and b.exists() and os.path.samefile(a, b))
    except OSError:
        return False


def check_not_input(outputs, inputs) -> None:
    """An output must not be (or hold) an input: writing it would destroy what is being read."""
    for out in (str(p).rstrip("/") for p in outputs if is_url(p)):
        for source in (str(p).rstrip("/") for p in inputs if is_url(p)):
            if out == source or source.startswith(out + "/"):
                raise OutputError(f"{out}: is also an input ({source}): choose another output path")
            if out.startswith(source + "/"):
                raise OutputError(f"{out}: lies inside an input ({source}): choose another output path")
    for out in (Path(p) for p in outputs if not is_url(p)):
        for source in (Path(p) for p in inputs if not is_url(p)):
            if _same_path(out, source) or source.resolve().is_relative_to(out.resolve()):
                raise OutputError(f"{out}: is also an input ({source}): choose another output path")
            # a dataset or a folder of inputs is read whole: an output inside it would be read too
            if source.is_dir() and out.resolve().is_relative_to(source.resolve()):
                raise OutputError(f"{out}: lies inside an input ({source}): choose another output path")


class _Lock:
    """An exclusive lock file beside an output (fcntl: released by the kernel if the process dies)."""

    def __init__(self, final: Path):
        self.path = final.parent / f".{final.name}.lock"
        self.handle = None

    def acquire(self) -> None:
        while True:
            handle = open(self.path, "a+")  # noqa: SIM115 (held until release)
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                raise OutputError(f"{self.path.parent / self.path.name[1:-5]}: another run is writing it now") from None
            # the file may have been removed by the run that held it: then lock the new one
            try:
                if os.fstat(handle.fileno()).st_ino == os.stat(self.path).st_ino:
                    self.handle = handle
                    return
            except FileNotFoundError:
                pass
            handle.close()

    def release(self) -> None:
        if self.handle is not None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            self.handle.close()
            self.handle = None


_STAGING = ".staging-"
_OLD = ".old-"


def _staging_prefix(final) -> str:
    """The name this run's staging and scratch beside ``final`` begin with (a killed run's are removed by
    the next: :func:`_remove_stale`)."""
    return f".{name_of(final)}{_STAGING}{os.getpid()}-"


def _remove_stale(final: Path) -> None:
    """Staging and set-aside copies left beside ``final`` by a run that was killed (the lock is held)."""
    if is_url(final):
        fs, inner = url_fs(final)
        parent, _, name = inner.rstrip("/").rpartition("/")
        for leftover in fs.glob(f"{parent}/.{name}{_STAGING}*"):
            fs.rm(leftover, recursive=True)
        return
    for prefix in (f".{final.name}{_STAGING}", f".{final.name}{_OLD}"):
        for leftover in final.parent.glob(prefix + "*"):
            if leftover.is_dir() and not leftover.is_symlink():
                shutil.rmtree(leftover, ignore_errors=True)
            else:
                leftover.unlink(missing_ok=True)


class Outputs:
    """The outputs of one run, staged beside their final paths and promoted together.

    >>> with Outputs(inputs=[src]) as out:
    ...     folder = out.dataset("data/segments/x.parquet")   # a staging folder to write parts in
    ...     stats = out.file("data/stats/x.json")             # a staging file path
    ...     ...
    # both are in place now, or (on an exception) neither changed
    """

    def __init__(self, inputs=()):
        self.inputs = [Path(p) for p in inputs]
        self.staged: list[tuple[Path, Path, bool]] = []  # (staging, final, is_dataset)
        self.locks: list[_Lock] = []
        self.scratches: list[Path] = []
        self.scratch_for: list[Path] = []  # the outputs the scratch folders are for
        self.folders: list[Path] = []  # parent folders this run created, removed at the end if empty

    def _make_parent(self, final: Path) -> None:
        if is_url(final):
            try:
                make_folder(parent_of(final))
            except OSError as exc:
                raise OutputError(f"{parent_of(final)}: cannot create ({_os_reason(exc)})") from None
            return
        missing = [p for p in [final.parent, *final.parent.parents] if not p.exists()]
        try:
            final.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise OutputError(f"{final.parent}: cannot create ({_os_reason(exc)})") from None
        self.folders += reversed(missing)

    def _stage(self, final, dataset: bool) -> Path:
        final = final if is_url(final) else Path(final)
        check_not_input([final], self.inputs)
        _replaceable(final, dataset)
        self._make_parent(final)
        if is_url(final):
            _remove_stale(final)  # no lock on an object store: a second run at once is not refused
            staging = join(parent_of(final), _staging_prefix(final) + uuid.uuid4().hex[:8])
            try:
                if dataset:
                    make_folder(staging)
                else:
                    write_bytes_in_place(b"", staging)
            except OSError as exc:
                raise OutputError(f"{parent_of(final)}: cannot write ({_os_reason(exc)})") from None
            self.staged.append((staging, final, dataset))
            return staging
        lock = _Lock(final)
        lock.acquire()
        self.locks.append(lock)
        _remove_stale(final)
        prefix = _staging_prefix(final)
        try:
            if dataset:
                staging = Path(tempfile.mkdtemp(prefix=prefix, dir=final.parent))
            else:
                fd, name = tempfile.mkstemp(prefix=prefix, dir=final.parent)
                os.close(fd)
                staging = Path(name)
        except OSError as exc:
            raise OutputError(f"{final.parent}: cannot write ({_os_reason(exc)})") from None
        self.staged.append((staging, final, dataset))
        return staging

    def dataset(self, final) -> Path:
        """A staging folder for a dataset of parts (``final`` is replaced by it at commit)."""
        return self._stage(final, dataset=True)

    def file(self, final) -> Path:
        """A staging path for one file."""
        return self._stage(final, dataset=False)

    def scratch(self, beside) -> Path:
        """A working folder beside ``beside`` (an output of this run) for data exchanged between
        passes; removed when the run ends, whatever happens."""
        final = beside if is_url(beside) else Path(beside)
        check_not_input([final], self.inputs)
        self._make_parent(final)
        if is_url(final):
            folder = join(parent_of(final), f"{_staging_prefix(final)}scratch-{uuid.uuid4().hex[:8]}")
            make_folder(folder)
            self.scratches.append(folder)
            self.scratch_for.append(final)
            return folder
        try:
            folder = Path(tempfile.mkdtemp(prefix=f"{_staging_prefix(final)}scratch-", dir=final.parent))
        except OSError as exc:
            raise OutputError(f"{final.parent}: cannot write ({_os_reason(exc)})") from None
        self.scratches.append(folder)
        self.scratch_for.append(final)
        return folder

    def commit(self) -> None:
        """Put every staged output in place; if one cannot be, the earlier ones are rolled back
        (on a URL: file by file, and no rollback: an object store renames by copying)."""
        for staging, final, dataset in self.staged:
            if is_url(final):
                _put_url_in_place(staging, final, dataset)
        self.staged = [entry for entry in self.staged if not is_url(entry[1])]
        for staging, _, _ in self.staged:
            make_readable(staging)
        moved: list[tuple[Path, Path, Path | None]] = []  # (final, staging, set-aside old)
        for staging, final, _ in self.staged:
            old = None
            try:
                if final.exists() or final.is_symlink():
                    old = final.parent / f".{final.name}{_OLD}{os.getpid()}"
                    os.replace(final, old)
                os.replace(staging, final)
            except OSError as exc:
                # the earlier outputs go back to staging and every set-aside output back in place
                if old is not None and not (final.exists() or final.is_symlink()):
                    os.replace(old, final)
                for done_final, done_staging, done_old in reversed(moved):
                    os.replace(done_final, done_staging)
                    if done_old is not None:
                        os.replace(done_old, done_final)
                raise OutputError(f"{final}: cannot put the output in place ({_os_reason(exc)})") from None
            moved.append((final, staging, old))
        for _, _, old in moved:
            if old is not None:
                shutil.rmtree(old, ignore_errors=True) if old.is_dir() else old.unlink(missing_ok=True)
        self.staged = []

    def abort(self) -> None:
        for staging, _, dataset in self.staged:
            if is_url(staging):
                _remove_url(staging)
            elif dataset:
                shutil.rmtree(staging, ignore_errors=True)
            else:
                staging.unlink(missing_ok=True)
        self.staged = []

    def close(self) -> None:
        for folder in self.scratches:
            if is_url(folder):
                _remove_url(folder)
            else:
                shutil.rmtree(folder, ignore_errors=True)
        self.scratches = []
        for lock in self.locks:
            lock.release()
        self.locks = []
        for folder in reversed(self.folders):
            with contextlib.suppress(OSError):  # not empty: an output is in it
                folder.rmdir()
        self.folders = []

    def __enter__(self) -> Outputs:
        return self

    def __exit__(self, kind, value, traceback) -> None:
        finals = [final for _, final, _ in self.staged] or self.scratch_for
        try:
            if kind is None:
                try:
                    self.commit()
                except BaseException:
                    self.abort()  # what was not put in place (commit rolled back) is removed
                    raise
            else:
                self.abort()
        finally:
            self.close()
        if isinstance(value, OSError) and _errno_of(value) in _DISK_ERRNOS:
            # a writer that words no path (a file object's write, a library's): name the outputs
            where = [value.filename] if value.filename else finals
            if where:
                raise write_failed(value, *where) from None


def _remove_url(url: str) -> None:
    fs, inner = url_fs(url)
    with contextlib.suppress(FileNotFoundError):
        fs.rm(inner, recursive=True)


def _put_url_in_place(staging: str, final: str, dataset: bool) -> None:
    """A staged output moved to its URL: the earlier output removed, then the files moved, a
    dataset's manifest first, so a run killed in between leaves a folder the next run replaces."""
    fs, source = url_fs(staging)
    _, target = url_fs(final)
    try:
        if fs.exists(target):
            fs.rm(target, recursive=True)
        if not dataset:
            fs.mv(source, target)
            return
        files = sorted(fs.find(source), key=lambda f: (not f.endswith("/" + MANIFEST), f))
        for file in files:
            moved = target.rstrip("/") + file[len(source.rstrip("/")) :]
            fs.makedirs(moved.rpartition("/")[0], exist_ok=True)
            fs.mv(file, moved)
        _remove_url(staging)
    except OSError as exc:
        raise OutputError(f"{final}: cannot put the output in place ({_os_reason(exc)})") from None


def write_manifest(folder: Path, manifest: dict) -> None:
    """The dataset folder's manifest: what it holds (deterministic content: no times, no engine)."""
    write_json_in_place(manifest, join(folder, MANIFEST))


def read_manifest(path: str | os.PathLike) -> dict | None:
    return read_json(join(path, MANIFEST)) if is_dir(path) and is_file(join(path, MANIFEST)) else None


def write_json_in_place(obj, path: Path) -> None:
    write_text_in_place(json.dumps(obj, indent=2, ensure_ascii=False) + "\n", path)


def write_text_in_place(text: str, path: Path) -> None:
    """One UTF-8 text file written in place (a staging path, or a file inside a staging folder)."""
    if is_url(path):
        write_bytes_in_place(text.encode("utf-8"), path)
        return
    path = Path(path)
    try:
        path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise write_failed(exc, path) from None
    make_readable(path)


@contextmanager
def atomic_path(path: str | os.PathLike) -> Iterator[Path]:
    """One file written through a staging path and put in place on success (see :class:`Outputs`)."""
    with Outputs() as outputs:
        yield outputs.file(path)


def write_json(obj, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        write_json_in_place(obj, tmp)


def write_text(text: str, path: str | os.PathLike) -> None:
    with atomic_path(path) as tmp:
        write_text_in_place(text, tmp)


def write_table(table: pa.Table, path: str | os.PathLike) -> None:
    """A lone Parquet file (a small output such as a confusable vocabulary), atomically."""
    with atomic_path(path) as tmp:
        write_parquet(table, tmp)


class Terminated(BaseException):
    """The run was ended by a signal; a BaseException, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signal = signal.Signals(signum)


def exit_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP end the run through the normal error path, so staging is removed and
    locks released (SIGKILL cannot be caught: the next run removes what it left)."""

    def handler(signum, _frame):
        raise Terminated(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, handler)
