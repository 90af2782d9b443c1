"""One reader per source format, each a module with ``prepare(paths, lang, corpus, **options)``.

``prepare`` returns a :class:`Prepared`: the canonical segment table
(:data:`pipeline.schema.SEGMENT_SCHEMA`) and counts of what was read and dropped.  Each module
is also a reader plugin of :mod:`pipeline.ingest` (``Options``, ``read``, optionally
``shards``), registered under its name in the project's entry points.
"""

from __future__ import annotations

from collections.abc import Callable

from pipeline.ingest import readers

from .base import Prepared


def get_reader(name: str) -> Callable[..., Prepared]:
    """The ``prepare`` function of the reader called ``name``."""
    from pipeline.ingest import reader_module as plugin

    return plugin(name).prepare


__all__ = ["Prepared", "get_reader", "readers"]
