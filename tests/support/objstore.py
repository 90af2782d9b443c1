"""A test file system that behaves like object storage behind an fsspec URL (``objstore://...``):
its paths are not local paths (code that took one for a path would write a folder named
``objstore:`` where it runs), and it renames by copying, as S3 and GCS do.  Its files live under
``$PUNCT_TEST_OBJSTORE``, so forked workers see what the driver wrote."""

from __future__ import annotations

import os

import fsspec
from fsspec.implementations.dirfs import DirFileSystem
from fsspec.implementations.local import LocalFileSystem

PROTOCOL = "objstore"


class ObjectStore(DirFileSystem):
    protocol = PROTOCOL
    cachable = False  # the root comes from the environment, which a test changes

    def __init__(self, *args, **kwargs):
        super().__init__(path=os.environ["PUNCT_TEST_OBJSTORE"], fs=LocalFileSystem())

    @classmethod
    def _strip_protocol(cls, path):
        path = path[len(PROTOCOL) + 3 :] if path.startswith(f"{PROTOCOL}://") else path
        return path.strip("/")

    def mv(self, path1, path2, recursive=False, **kwargs):  # no rename on an object store
        self.copy(path1, path2, recursive=recursive)
        self.rm(path1, recursive=recursive)


def register(root: str) -> None:
    os.environ["PUNCT_TEST_OBJSTORE"] = root
    fsspec.register_implementation(PROTOCOL, ObjectStore, clobber=True)
