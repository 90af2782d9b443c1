"""punct-corpora: punctuation-restoration corpora from raw text to labelled, audited datasets and models.

The library: pure functions and steps over Arrow tables (``io`` is the module that touches files,
``executor`` the one that owns parallelism).  The command line is ``punct-corpora`` (``pipeline.cli``).
"""

__version__ = "0.5.0"


def _arrow_memory_pool() -> None:
    """Arrow allocations from jemalloc on Linux unless $ARROW_DEFAULT_MEMORY_POOL says otherwise:
    Arrow's default there, mimalloc, keeps what a finished shard freed, so a worker's resident
    memory crept up with the number of shards it ran (oversample at 10 M words: 241 MB against
    169 MB with jemalloc).  Arrow reads the variable once, at its first allocation, so it is set
    here, before any module of the package imports pyarrow; forked and Dask LocalCluster workers
    inherit it."""
    import os
    import sys

    if sys.platform.startswith("linux"):
        os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")


_arrow_memory_pool()
