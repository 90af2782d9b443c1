"""Where inputs and outputs live: local paths and fsspec URLs, joined, tested and shown the same way.

A URL stays a string (``pathlib`` would fold ``s3://b`` into ``s3:/b``): join with :func:`join`.
Every input and output may be an fsspec URL (``s3://bucket/data``, ``memory://...``), read and
written through fsspec where the protocol's package is installed.
"""

from __future__ import annotations

import errno
import os
import re
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from pipeline.errors import InputError, OutputError

#: the manifest that marks a dataset folder (a folder of part-NNNNN.parquet files) as this tool's
_STAGED_NAME = re.compile(r"^\.(.+)\.staging-\d+-.*$")
MANIFEST = "_punct.json"


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://")


def is_url(path) -> bool:
    """Whether ``path`` is an fsspec URL (``protocol://...``) rather than a local path."""
    return isinstance(path, str) and _URL.match(path) is not None


def local_of(path):
    """``path`` with a ``file://`` (or ``local://``) URL spelled as the local path it names: the
    same file must be recognised whichever way the user spelled it; any other path as it is."""
    if is_url(path):
        protocol, _, rest = path.partition("://")
        if protocol.lower() in ("file", "local"):
            return Path("/" + rest.lstrip("/"))
        return path
    return path


def identity(path):
    """What ``path`` names, every spelling folded: a local path absolute with symlinks, ``..`` and a
    trailing slash resolved (a ``file://`` URL is its local path); any other URL without the
    trailing slash.  Hard links are equal only by :func:`same_file` (they have two names)."""
    path = local_of(path)
    if is_url(path):
        return str(path).rstrip("/")
    try:
        return Path(os.path.realpath(os.path.abspath(path)))
    except (OSError, ValueError):
        return Path(os.path.abspath(path))


def same_file(a, b) -> bool:
    """Whether ``a`` and ``b`` are one file or folder: the same spelling once resolved, or the same
    inode (a hard link)."""
    a, b = identity(a), identity(b)
    if a == b:
        return True
    if isinstance(a, str) or isinstance(b, str):
        return False
    try:
        return os.path.samefile(a, b)
    except (OSError, ValueError):
        return False


def inside(inner, outer) -> bool:
    """Whether ``inner`` lies strictly inside the folder ``outer`` (spellings resolved)."""
    inner, outer = identity(inner), identity(outer)
    if isinstance(inner, str) or isinstance(outer, str):
        return isinstance(inner, str) and isinstance(outer, str) and inner.startswith(outer + "/")
    return inner != outer and inner.is_relative_to(outer)


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


#: Arrow's wording of a short write (its file writer reports no errno): a full disk or a quota
_SHORT_WRITE = re.compile(r"(\d+) requested and (\d+) written")


def is_short_write(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and _SHORT_WRITE.search(str(exc)) is not None


def _os_reason(exc: OSError) -> str:
    if is_short_write(exc):
        found = _SHORT_WRITE.search(str(exc))
        return f"short write, {found[2]} of {found[1]} bytes: the disk may be full"
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
