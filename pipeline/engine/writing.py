"""Writing outputs atomically: a run writes everything in staging paths beside its outputs and
promotes them together when it succeeded (:class:`Outputs`), so an output appears whole or not at all.

An output path is replaced only when it holds an earlier output of the same kind (a file, or a
dataset folder marked by its manifest): the run never deletes what it did not write.  Files and
folders get the permissions any tool gives under the caller's umask.  A lock beside the output
refuses a second run writing the same path at the same time; staging left by a killed run is
removed by the next run.  Object stores rename by copying and have no locks, so on a URL the
outputs are put in place file by file (a dataset's manifest first).
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import signal
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from pipeline.engine.location import (
    _DISK_ERRNOS,
    MANIFEST,
    _errno_of,
    _os_reason,
    is_file,
    is_url,
    join,
    make_folder,
    name_of,
    parent_of,
    shown,
    url_fs,
)
from pipeline.engine.reading import open_parquet
from pipeline.errors import InputError, OutputError
from pipeline.schema import PARQUET_OPTIONS, as_dictionaries, statistics_columns


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


def write_arrow_in_place(table: pa.Table, path) -> None:
    """An Arrow IPC file (uncompressed: mapped by its readers when local), in place."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_file(sink, table.schema) as writer:
        writer.write_table(table)
    write_bytes_in_place(sink.getvalue(), path)


def write_failed(exc: OSError, *paths: str | os.PathLike) -> OutputError:
    """The one wording of a failed write of ``paths`` (the outputs it may have been)."""
    return OutputError(f"{', '.join(str(shown(p)) for p in paths)}: cannot write ({_os_reason(exc)})")


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


def upload_folder(local: Path, path) -> None:
    """A local folder's files into ``path`` (a staging folder): for libraries that write only local
    folders."""
    for file in sorted(p for p in Path(local).rglob("*") if p.is_file()):
        target = join(path, *file.relative_to(local).parts)
        make_folder(parent_of(target))
        write_bytes_in_place(file.read_bytes(), target)
