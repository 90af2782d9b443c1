"""Writing outputs atomically: a run writes everything in staging paths beside its outputs and
promotes them together when it succeeded (:class:`Outputs`), so an output appears whole or not at all.

Paths are compared resolved (a ``file://`` URL and its path, symlinks, ``..``, a trailing slash,
hard links): an output is never an input, nor another output of the same run.  An output path is
replaced only when it holds an earlier output of the same kind: a dataset folder whose manifest
records the same kind, or a single file this tool wrote (its hidden ``.NAME.punct`` marker holds
the file's sha256; a lone Parquet file of an earlier version proves itself by its schema): the
run never deletes what it did not write.  Files and folders get the permissions any tool gives
under the caller's umask.  A lock beside the output refuses a second run writing the same path at
the same time.  The promotion is driven by a journal written beside every output before the
first rename: a failure rolls every output back, and a run killed during it is finished by the
next run at any of its outputs; staging left by a killed run is removed by the next run.  Object
stores rename by copying and have no locks, so on a URL the outputs are copied into place file by
file over their earlier versions (a dataset's manifest first), and the earlier files the new
output lacks are removed last.
"""

from __future__ import annotations

import contextlib
import fcntl
import glob
import hashlib
import json
import logging
import os
import shutil
import tempfile
import threading
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
    inside,
    is_file,
    is_short_write,
    is_url,
    join,
    local_of,
    make_folder,
    name_of,
    parent_of,
    same_file,
    shown,
    url_fs,
)
from pipeline.engine.reading import open_input, open_parquet, read_bytes, read_json
from pipeline.errors import InputError, OutputError
from pipeline.schema import as_dictionaries, parquet_options

log = logging.getLogger(__name__)


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


def write_parquet(table: pa.Table, path: str | os.PathLike, metadata: dict[bytes, bytes] | None = None) -> None:
    """One Parquet file written in place (inside a staging folder, or a lone file: see :func:`atomic_path`).

    List columns of strings are written from dictionaries (a column read as a dictionary is
    written without being decoded: 1.5x faster) and no Arrow schema is stored, so every reader
    sees plain strings whichever way the table was built.  ``metadata``: the file's key-value
    metadata (a dataset's label set: :func:`pipeline.labels.file_metadata`)."""
    path = path if is_url(path) else Path(path)
    table = as_dictionaries(table)
    options = parquet_options(table.schema)
    try:
        if is_url(path):
            with open_output(path) as sink:
                _write_parquet(table, sink, options, metadata)
        else:
            _write_parquet(table, path, options, metadata)
    except OSError as exc:
        raise write_failed(exc, path) from None
    make_readable(path)


def _write_parquet(table: pa.Table, where, options: dict, metadata: dict[bytes, bytes] | None) -> None:
    """``pq.write_table``, with ``metadata`` in the file's footer: without a stored Arrow schema, the
    table's own schema metadata is not written, so it is added as the footer's key-value metadata."""
    if not metadata:
        pq.write_table(table, where, **options)
        return
    options = dict(options)
    row_group_size = options.pop("row_group_size")
    with pq.ParquetWriter(where, table.schema, **options) as writer:
        writer.write_table(table, row_group_size=row_group_size)
        writer.add_key_value_metadata(metadata)


def _is_dataset(path: Path) -> bool:
    return is_file(join(path, MANIFEST))


def _kind_of(folder) -> str | None:
    """The kind a dataset folder's manifest records (None: unreadable, or written without one)."""
    try:
        manifest = read_json(join(folder, MANIFEST))
    except (InputError, OSError):
        return None
    return manifest.get("kind") if isinstance(manifest, dict) else None


def _is_parquet_of_ours(path: Path) -> bool:
    """A lone Parquet file an earlier version of this tool wrote (its schema carries our name)."""
    try:
        metadata = open_parquet(path).schema_arrow.metadata or {}
    except (OSError, pa.ArrowInvalid, InputError):
        return False
    return metadata.get(b"schema", b"").startswith(b"punct-")


#: the marker beside a single-file output (``.NAME.punct``) holds the sha256 of the file this tool
#: wrote there: only such a file (unchanged since) is replaced by a later run
MARKER_SUFFIX = ".punct"


def marker_of(final):
    """The marker path of the single-file output ``final``."""
    return join(parent_of(final), f".{name_of(final)}{MARKER_SUFFIX}")


def _sha256(path) -> str:
    digest = hashlib.sha256()
    with open_input(path) as source:
        while block := source.read(1 << 20):
            digest.update(block)
    return digest.hexdigest()


def _marker_text(path) -> str:
    return json.dumps({"written_by": "punct-corpora", "sha256": _sha256(path)}) + "\n"


def _is_marked(final) -> bool:
    """Whether ``final`` is a file this tool wrote and nobody changed since (its marker's sha256)."""
    try:
        marker = json.loads(read_bytes(marker_of(final)))
        return isinstance(marker, dict) and marker.get("sha256") == _sha256(final)
    except (InputError, OSError, ValueError):
        return False


def _refuse_foreign_file(final) -> None:
    raise OutputError(
        f"{final}: exists and is not an output of this tool: not replaced; "
        "choose another output path or remove it yourself"
    )


def _replaceable(final, dataset: bool, kind: str | None = None) -> None:
    """Refuse to replace anything but an earlier output of the same kind: a dataset folder whose
    manifest records ``kind`` (any kind when ``kind`` is None), or a single file this tool wrote
    (its marker), or a lone Parquet file an earlier version wrote (its schema names this tool)."""
    if is_url(final):
        fs, inner = url_fs(final)
        if not fs.exists(inner):
            return
        folder, regular = fs.isdir(inner), fs.isfile(inner)
    else:
        if not (final.exists() or final.is_symlink()):
            return
        folder = final.is_dir() and not final.is_symlink()
        regular = final.is_file()
    if folder:
        if not _is_dataset(final):
            raise OutputError(
                f"{final}: exists and is a folder this tool did not write (no {MANIFEST}), or a dataset where "
                "a file goes: not replaced; choose another output path or remove it yourself"
            )
        if not dataset:
            raise OutputError(f"{final}: is a dataset folder, not a file: not replaced; choose another output path")
        found = _kind_of(final)
        if kind is not None and found != kind:
            raise OutputError(
                f"{final}: holds an output of another kind ({found or 'unknown'}, not {kind}): not replaced; "
                "choose another output path"
            )
        return
    if regular and name_of(final).endswith(".parquet") and _is_parquet_of_ours(final):
        return  # a single-file output of an earlier version: its schema proves it
    if dataset:
        raise OutputError(f"{final}: exists and is not an output of this kind: not replaced")
    if regular and _is_marked(final):
        return
    _refuse_foreign_file(final)


def _resolved(path: Path) -> Path:
    """``path`` with its folder's spelling resolved (the name itself kept: it may be a link we replace)."""
    return Path(os.path.realpath(path.parent)) / path.name


def check_not_input(outputs, inputs) -> None:
    """An output must not be (or hold) an input: writing it would destroy what is being read.
    Spellings are compared resolved: a ``file://`` URL and its path, symlinks, ``..``, a trailing
    slash, hard links."""
    for out in outputs:
        for source in inputs:
            if same_file(out, source) or inside(source, out):
                raise OutputError(f"{out}: is also an input ({source}): choose another output path")
            # a dataset or a folder of inputs is read whole: an output inside it would be read too
            local = local_of(source)
            if inside(out, source) and (is_url(local) or Path(local).is_dir()):
                raise OutputError(f"{out}: lies inside an input ({source}): choose another output path")


def _check_not_output(final, others) -> None:
    """Two outputs of one run must not be one path, or one inside the other."""
    for other in others:
        if same_file(final, other) or inside(final, other) or inside(other, final):
            raise OutputError(f"{final}: is also an output ({other}): choose another output path")


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


#: the journal of a promotion, beside each of its outputs (a staging name: hidden from DVC and git)
_JOURNAL = "-journal"


def _staging_prefix(final) -> str:
    """The name this run's staging and scratch beside ``final`` begin with (a killed run's are removed by
    the next: :func:`_remove_stale`)."""
    return f".{name_of(final)}{_STAGING}{os.getpid()}-"


def _lexists(path: Path) -> bool:
    return os.path.lexists(path)


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        path.unlink(missing_ok=True)


def _remove_stale(final: Path) -> None:
    """Staging left beside ``final`` by a run that was killed (the lock is held; its journal, if any,
    was replayed first: :func:`_recover`).  A set-aside copy with no journal (an earlier version's)
    goes back in place when the output is missing, and is removed only when the output is there."""
    if is_url(final):
        fs, inner = url_fs(final)
        parent, _, name = inner.rstrip("/").rpartition("/")
        for leftover in fs.glob(f"{parent}/.{name}{_STAGING}*"):
            fs.rm(leftover, recursive=True)
        return
    for leftover in sorted(final.parent.glob(f".{glob.escape(final.name)}{_STAGING}*")):
        _remove(leftover)
    for leftover in sorted(final.parent.glob(f".{glob.escape(final.name)}{_OLD}*")):
        if not _lexists(final):
            os.replace(leftover, final)
        else:
            _remove(leftover)


def _write_journal(path: Path, journal: dict) -> None:
    """A journal copy, whole or absent (written beside and renamed), flushed to the disk."""
    scratch = path.with_name(path.name + ".tmp")
    with open(scratch, "w", encoding="utf-8") as sink:
        json.dump(journal, sink)
        sink.flush()
        os.fsync(sink.fileno())
    os.replace(scratch, path)


def _journals(final: Path) -> list[Path]:
    return sorted(final.parent.glob(f".{glob.escape(final.name)}{_STAGING}*{_JOURNAL}"))


def _recover(final: Path) -> None:
    """Finish a promotion that a killed run left half done beside ``final`` (its journal lists every
    output of that run): the staged outputs were complete before the first rename, so each is put in
    place, then the set-aside copies and the journal copies are removed."""
    for path in _journals(final):
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
            entries = [(Path(e["final"]), Path(e["staging"]), Path(e["old"])) for e in journal["entries"]]
            copies = [Path(p) for p in journal["journals"]]
        except (OSError, ValueError, KeyError, TypeError):
            raise OutputError(
                f"{final}: an interrupted run left a journal that cannot be read ({path}): "
                "check the outputs and remove it yourself"
            ) from None
        for target, staging, old in entries:
            if not _lexists(staging):
                continue  # put in place before the kill
            if _lexists(target) and not _lexists(old):
                os.replace(target, old)
            os.replace(staging, target)
        for _, _, old in entries:
            _remove(old)
        for copy in copies:
            copy.unlink(missing_ok=True)
        log.warning("%s: finished the promotion a killed run left half done (journal %s)", final, path.name)


def _roll_back(entries) -> None:
    """Undo a promotion in this process: each new output back to its staging path, each set-aside
    output back in place."""
    for target, staging, old in reversed(entries):
        if not _lexists(staging) and _lexists(target):
            os.replace(target, staging)
        if _lexists(old) and not _lexists(target):
            os.replace(old, target)


class Outputs:
    """The outputs of one run, staged beside their final paths and promoted together.

    >>> with Outputs(inputs=[src]) as out:
    ...     folder = out.dataset("data/segments/x.parquet", kind="segments")  # a staging folder for parts
    ...     stats = out.file("data/stats/x.json")             # a staging file path
    ...     ...
    # both are in place now, or (on an exception) neither changed

    The promotion is one step driven by a journal written beside every output before the first
    rename: a run killed during it is finished by the next run that writes any of those outputs.
    """

    def __init__(self, inputs=()):
        self.inputs = list(inputs)
        self.staged: list[tuple[Path, Path, bool, str | None]] = []  # (staging, final, is_dataset, kind)
        self.finals: list = []  # every output of the run, for the check that two are not one
        self.locks: list[_Lock] = []
        self.scratches: list[Path] = []
        self.scratch_for: list[Path] = []  # the outputs the scratch folders are for
        self.folders: list[Path] = []  # parent folders this run created, removed at the end if empty
        self.discarding: list[threading.Thread] = []  # removals of scratch the run no longer needs

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

    def _stage(self, final, dataset: bool, kind: str | None = None) -> Path:
        final = local_of(final)
        final = final if is_url(final) else Path(final)
        check_not_input([final], self.inputs)
        _check_not_output(final, self.finals)
        self.finals.append(final)
        if is_url(final) or not _journals(_resolved(final)):  # a killed promotion's journal is replayed first
            _replaceable(final, dataset, kind)  # before any folder or lock is made
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
            self.staged.append((staging, final, dataset, kind))
            return staging
        final = _resolved(final)
        lock = _Lock(final)
        lock.acquire()
        self.locks.append(lock)
        _recover(final)
        _remove_stale(final)
        _replaceable(final, dataset, kind)  # again: a finished promotion may have put an output there
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
        self.staged.append((staging, final, dataset, kind))
        return staging

    def dataset(self, final, kind: str | None = None) -> Path:
        """A staging folder for a dataset of parts (``final`` is replaced by it at commit).  ``kind``:
        what its manifest will record (``segments``, ``sequences``, ...); an existing dataset of
        another kind is refused now (without it, at commit, from the manifest written)."""
        return self._stage(final, dataset=True, kind=kind)

    def file(self, final) -> Path:
        """A staging path for one file (it replaces only a file this tool wrote: its marker)."""
        return self._stage(final, dataset=False)

    def scratch(self, beside) -> Path:
        """A working folder beside ``beside`` (an output of this run) for data exchanged between
        passes; removed when the run ends, whatever happens."""
        final = local_of(beside)
        final = final if is_url(final) else Path(final)
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

    def discard(self, *paths) -> None:
        """Remove ``paths`` (files or folders in this run's scratch folders) that the run no longer
        needs, in a thread, while the run goes on: on a disk that discards freed blocks, unlinking
        a folder of large files costs a fraction of a millisecond a file, which at the end of the
        run (:meth:`close`) is time that nothing else uses.  ``close`` waits for them, and removes
        the scratch folders whole in any case; a path outside them is refused (a bug)."""
        scratches = [Path(os.path.abspath(folder)) for folder in self.scratches if not is_url(folder)]
        local = []
        for path in paths:
            if is_url(path):
                continue  # an object store's scratch goes at close, with its folder
            path = Path(os.path.abspath(path))  # ".." resolved: the check is on the path removed
            if not any(folder in path.parents for folder in scratches):
                raise ValueError(f"{path}: not in a scratch folder of this run")
            local.append(path)
        if local:
            thread = threading.Thread(target=_remove_paths, args=(local,), name="discard", daemon=True)
            thread.start()
            self.discarding.append(thread)

    def _with_markers(self) -> list[tuple[Path, Path]]:
        """(staging, final) of every local output, each single file followed by its marker (staged
        too); each output checked again against what is there now, a dataset by the kind its
        manifest records."""
        moves: list[tuple[Path, Path]] = []
        for staging, final, dataset, kind in self.staged:
            make_readable(staging)
            if dataset:
                _replaceable(final, True, kind or _kind_of(staging))
                moves.append((staging, final))
                continue
            _replaceable(final, False)
            marker = Path(f"{staging}{MARKER_SUFFIX}")
            write_text_in_place(_marker_text(staging), marker)
            moves += [(staging, final), (marker, Path(marker_of(final)))]
        return moves

    def commit(self) -> None:
        """Put every staged output in place together: a journal is written beside each output, then
        each earlier output is set aside and the new one renamed in; the set-aside copies are removed
        only once every new output is in place.  A failure rolls every output back; a kill is finished
        by the next run (:func:`_recover`).  On a URL: file by file, no rollback (an object store
        renames by copying)."""
        for staging, final, dataset, kind in self.staged:
            if is_url(final):
                if dataset:
                    _replaceable(final, True, kind or _kind_of(staging))
                else:
                    _replaceable(final, False)
                _put_url_in_place(staging, final, dataset)
                if not dataset:
                    write_bytes_in_place(_marker_text(final).encode(), marker_of(final))
        self.staged = [entry for entry in self.staged if not is_url(entry[1])]
        if not self.staged:
            return
        moves = self._with_markers()
        pid = os.getpid()
        entries = [(final, staging, final.parent / f".{final.name}{_OLD}{pid}") for staging, final in moves]
        copies = [final.parent / f".{final.name}{_STAGING}{pid}{_JOURNAL}" for _, final, _, _ in self.staged]
        journal = {
            "entries": [{"final": str(f), "staging": str(s), "old": str(o)} for f, s, o in entries],
            "journals": [str(c) for c in copies],
        }
        outputs = [final for _, final, _, _ in self.staged]
        failed = outputs[0]  # the output whose journal copy or rename failed, for the message
        try:
            for output, copy in zip(outputs, copies, strict=True):
                failed = output
                _write_journal(copy, journal)
            for final, staging, old in entries:
                # a marker's rename is named by its output
                failed = (
                    final.with_name(final.name[1 : -len(MARKER_SUFFIX)])
                    if final.name.endswith(MARKER_SUFFIX)
                    else final
                )
                if _lexists(final):
                    os.replace(final, old)
                os.replace(staging, final)
        except BaseException as exc:
            _roll_back(entries)
            for copy in copies:
                copy.unlink(missing_ok=True)
                Path(f"{copy}.tmp").unlink(missing_ok=True)
            if isinstance(exc, OSError):
                raise OutputError(f"{shown(failed)}: cannot put the output in place ({_os_reason(exc)})") from None
            raise
        self.staged = []
        # every new output is in place: a kill from here leaves a journal whose replay only removes
        # what is left (no staging remains to put in place)
        for _, _, old in entries:
            _remove(old)
        for copy in copies:
            copy.unlink(missing_ok=True)

    def abort(self) -> None:
        for staging, _, dataset, _ in self.staged:
            if is_url(staging):
                _remove_url(staging)
            elif dataset:
                shutil.rmtree(staging, ignore_errors=True)
            else:
                staging.unlink(missing_ok=True)
                Path(f"{staging}{MARKER_SUFFIX}").unlink(missing_ok=True)
        self.staged = []

    def close(self) -> None:
        for thread in self.discarding:
            thread.join()
        self.discarding = []
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
        finals = [final for _, final, _, _ in self.staged] or self.scratch_for
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
        if isinstance(value, OSError) and (_errno_of(value) in _DISK_ERRNOS or is_short_write(value)):
            # a writer that words no path (a file object's write, a library's): name the outputs
            where = [value.filename] if value.filename else finals
            if where:
                raise write_failed(value, *where) from None


def _remove_paths(paths: list[Path]) -> None:
    """Each of ``paths`` removed (:func:`_remove`); what cannot be removed is left, for
    :meth:`Outputs.close`, which removes the scratch folders whole after."""
    for path in paths:
        with contextlib.suppress(OSError):
            _remove(path)


def _remove_url(url: str) -> None:
    fs, inner = url_fs(url)
    with contextlib.suppress(FileNotFoundError):
        fs.rm(inner, recursive=True)


def _put_url_in_place(staging: str, final: str, dataset: bool) -> None:
    """A staged output moved to its URL, each file copied over its earlier version (an object store
    has no rename), a dataset's manifest first, then the earlier output's files that the new one
    does not have removed: the earlier output is never removed before the new one is in place, and
    a reader that comes in between finds parts that disagree with the manifest and refuses them."""
    fs, source = url_fs(staging)
    _, target = url_fs(final)
    try:
        if not dataset:
            if fs.isdir(target):
                fs.rm(target, recursive=True)
            fs.mv(source, target)
            return
        files = sorted(fs.find(source), key=lambda f: (not f.endswith("/" + MANIFEST), f))
        earlier = set(fs.find(target)) if fs.exists(target) else set()
        placed = set()
        for file in files:
            moved = target.rstrip("/") + file[len(source.rstrip("/")) :]
            fs.makedirs(moved.rpartition("/")[0], exist_ok=True)
            fs.mv(file, moved)
            placed.add(moved)
        for stale in sorted(earlier - placed):
            fs.rm(stale)
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


def upload_folder(local: Path, path) -> None:
    """A local folder's files into ``path`` (a staging folder): for libraries that write only local
    folders."""
    for file in sorted(p for p in Path(local).rglob("*") if p.is_file()):
        target = join(path, *file.relative_to(local).parts)
        make_folder(parent_of(target))
        write_bytes_in_place(file.read_bytes(), target)
