"""Running independent work items on local worker processes, results in input order.

A step function never knows how it is run: ``map_ordered(fn, items, workers=1)`` is a
plain loop, ``workers=N`` spreads chunks of items over N processes.  Either way
the results come back in the order of ``items``, so outputs do not depend on the
number of workers.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable
from concurrent.futures import ProcessPoolExecutor
from typing import TypeVar

T = TypeVar("T")
R = TypeVar("R")


def resolve_workers(workers: int | None) -> int:
    """0 or None: one worker per available core."""
    if not workers:
        return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    if workers < 0:
        raise ValueError(f"workers must be >= 0, not {workers}")
    return workers


# the items of the map in progress: forked workers inherit them, so only index
# ranges travel to the workers and only results travel back
_ITEMS: list = []


def _run_range(fn: Callable[[T], R], start: int, stop: int) -> list[R]:
    return [fn(item) for item in _ITEMS[start:stop]]


def map_ordered(
    fn: Callable[[T], R], items: Iterable[T], workers: int | None = 1, chunks_per_worker: int = 4
) -> list[R]:
    items = list(items)
    workers = min(resolve_workers(workers), max(len(items), 1))
    if workers <= 1:
        return [fn(item) for item in items]
    global _ITEMS
    n_chunks = min(len(items), workers * chunks_per_worker)
    bounds = [round(i * len(items) / n_chunks) for i in range(n_chunks + 1)]
    _ITEMS = items
    try:
        # fork: workers inherit loaded modules, caches (grammars) and the items, starting in milliseconds
        with ProcessPoolExecutor(workers, mp_context=multiprocessing.get_context("fork")) as pool:
            results = pool.map(_run_range, [fn] * n_chunks, bounds[:-1], bounds[1:])
            return [r for chunk in results for r in chunk]
    finally:
        _ITEMS = []
