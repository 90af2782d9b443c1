"""The one place that owns parallelism: run a function over work items, results in input order.

A step never knows how it is run.  :func:`executor` gives an :class:`Executor` for an engine:

* ``local``: worker processes on this machine (forked: they start in milliseconds with the
  loaded modules and caches); one worker, or one item, runs in this process.  Workers end
  with their driver (``PR_SET_PDEATHSIG`` on Linux, a parent watch elsewhere), so a killed
  run leaves none blocked behind.
* ``dask``: ``dask.distributed`` — a ``LocalCluster`` of ``workers`` processes, or the
  scheduler at ``scheduler`` / ``$PUNCT_DASK_SCHEDULER`` (a cluster); a task whose worker
  dies is retried on another.

Results come back in the order of the items whatever the engine and the number of workers,
so outputs never depend on them.  Items and results should be small (shard descriptions,
counts): steps write their own outputs.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import TypeVar

from pipeline.errors import ParamsError

T = TypeVar("T")
R = TypeVar("R")

ENGINES = ("local", "dask")
log = logging.getLogger(__name__)


def resolve_workers(workers: int | None) -> int:
    """0 or None: one worker per available core."""
    if not workers:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if workers < 0:
        raise ParamsError(f"workers must be >= 0, not {workers}")
    return workers


def _die_with_parent(parent: int) -> None:
    """Worker initializer: end when the driver ends, however it ended."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the driver handles ^C and stops the pool
    if sys.platform.startswith("linux"):
        try:
            libc = ctypes.CDLL("libc.so.6", use_errno=True)
            libc.prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
            if os.getppid() != parent:  # the driver died before prctl took effect
                os._exit(1)
            return
        except OSError:
            pass

    def watch():
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(1)

    threading.Thread(target=watch, daemon=True).start()


class Executor:
    """Runs ``fn`` over items; ``map`` returns the results in item order."""

    engine = "inline"
    workers = 1

    def imap(self, fn: Callable[[T], R], items: Iterable[T]) -> Iterator[R]:
        for item in items:
            yield fn(item)

    def each(self, fn: Callable[[T], R], items: Iterable[T], label: str | None = None) -> Iterator[R]:
        """The results one by one in item order, with progress under ``label``: a driver that folds
        them as they come holds one, not one per shard."""
        items = list(items)
        began = shown = time.perf_counter()
        for done, result in enumerate(self.imap(fn, items), 1):
            yield result
            now = time.perf_counter()
            if label and done == len(items):
                log.info("%s: %d/%d shards in %.1f s", label, done, len(items), now - began)
            elif label and now - shown > 2.0:
                log.info("%s: %d/%d shards", label, done, len(items))
                shown = now

    def map(self, fn: Callable[[T], R], items: Iterable[T], label: str | None = None) -> list[R]:
        return list(self.each(fn, items, label))

    def close(self) -> None:
        pass


class LocalExecutor(Executor):
    engine = "local"

    def __init__(self, workers: int):
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None

    def imap(self, fn, items):
        items = list(items)
        if self.workers <= 1 or len(items) <= 1:
            yield from super().imap(fn, items)
            return
        if self.pool is None:
            self.pool = ProcessPoolExecutor(
                self.workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_die_with_parent,
                initargs=(os.getpid(),),
            )
        yield from self.pool.map(fn, items)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None


class DaskExecutor(Executor):
    engine = "dask"

    def __init__(self, workers: int, scheduler: str | None = None):
        from distributed import Client, LocalCluster

        self.cluster = None
        address = scheduler or os.environ.get("PUNCT_DASK_SCHEDULER")
        if address:
            self.client = Client(address)
        else:
            self.cluster = LocalCluster(
                n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
            )
            self.client = Client(self.cluster)
        self.workers = len(self.client.scheduler_info().get("workers", {})) or workers

    def imap(self, fn, items):
        futures = self.client.map(fn, list(items), pure=False, retries=2)
        try:
            for future in futures:
                yield future.result()
        finally:
            for future in futures:
                future.release()

    def close(self) -> None:
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


@contextmanager
def executor(engine: str = "local", workers: int | None = 0, scheduler: str | None = None) -> Iterator[Executor]:
    """An executor for ``engine``, closed (its workers stopped) when the block ends."""
    if engine not in (*ENGINES, "inline"):
        raise ParamsError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    if engine == "inline":
        runner: Executor = Executor()
    elif engine == "local":
        runner = LocalExecutor(resolve_workers(workers))
    else:
        runner = DaskExecutor(resolve_workers(workers), scheduler)
    try:
        yield runner
    finally:
        runner.close()


# the items of the map in progress: forked workers inherit them, so only index ranges travel to
# the workers and only results travel back (for items too big to send: whole documents in memory)
_ITEMS: list = []


def _run_range(fn: Callable[[T], R], start: int, stop: int) -> list[R]:
    return [fn(item) for item in _ITEMS[start:stop]]


def map_ordered(
    fn: Callable[[T], R], items: Iterable[T], workers: int | None = 1, chunks_per_worker: int = 4
) -> list[R]:
    """``[fn(item) for item in items]`` on ``workers`` forked processes; the items are inherited, not sent."""
    items = list(items)
    workers = min(resolve_workers(workers), max(len(items), 1))
    if workers <= 1:
        return [fn(item) for item in items]
    global _ITEMS
    n_chunks = min(len(items), workers * chunks_per_worker)
    bounds = [round(i * len(items) / n_chunks) for i in range(n_chunks + 1)]
    _ITEMS = items
    try:
        with ProcessPoolExecutor(
            workers,
            mp_context=multiprocessing.get_context("fork"),
            initializer=_die_with_parent,
            initargs=(os.getpid(),),
        ) as pool:
            results = pool.map(_run_range, [fn] * n_chunks, bounds[:-1], bounds[1:])
            return [r for chunk in results for r in chunk]
    finally:
        _ITEMS = []
