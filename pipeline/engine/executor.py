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

Every labelled pass is timed in :data:`TIMINGS` (and, when ``$PUNCT_TIMINGS`` names a file, appended
to it as one JSON line): benchmarks read these records, not the log's wording.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
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

from pipeline.errors import ParamsError, UsageError

T = TypeVar("T")
R = TypeVar("R")

ENGINES = ("local", "dask")
log = logging.getLogger(__name__)

#: the timed passes of this process, in the order they ended: ``{"label", "seconds", "items", ...}``
TIMINGS: list[dict] = []


#: the label of the timing of a cluster's workers started (or added) inside a pass, with the modules
#: of the pass's function imported on each
ENGINE_START = "engine: workers started"


def record_timing(label: str, seconds: float, items: int, **extra) -> dict:
    """One timed pass (``items``: shards, or what the pass counts) kept in :data:`TIMINGS` and, when
    ``$PUNCT_TIMINGS`` names a file, appended to it as a JSON line (one write: lines of processes
    that run one after another, or at once, do not interleave)."""
    entry = {"label": label, "seconds": round(float(seconds), 6), "items": int(items), "pid": os.getpid(), **extra}
    TIMINGS.append(entry)
    path = os.environ.get("PUNCT_TIMINGS")
    if path:
        try:
            with open(path, "a", encoding="utf-8") as sink:
                sink.write(json.dumps(entry, ensure_ascii=False) + "\n")
        except OSError as exc:
            raise ParamsError(f"PUNCT_TIMINGS={path}: cannot write the timings ({exc.strerror or exc})") from None
    return entry


#: the label of the record of a process's peak memory (:func:`record_memory`), not a pass
MEMORY_LABEL = "peak memory"
_MEMORY_WATCHED: set[int] = set()


def record_memory() -> None:
    """When ``$PUNCT_TIMINGS`` names a file, append this process's peak RSS and that of its largest
    ended child (its workers, once stopped) in MB: which process a stage's peak is, for benchmarks."""
    import resource

    if not os.environ.get("PUNCT_TIMINGS"):
        return
    kilobytes = 1024 if sys.platform == "darwin" else 1  # ru_maxrss: kB on Linux, bytes on macOS
    driver = _own_peak_kb() or resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / kilobytes
    workers = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / kilobytes / 1024
    driver /= 1024
    record_timing(MEMORY_LABEL, 0.0, 0, driver_rss_mb=round(driver, 1), worker_rss_mb=round(workers, 1))


def _own_peak_kb() -> float | None:
    """This process's peak RSS in kB from ``/proc/self/status`` (``VmHWM``), where there is one.
    Linux's ``ru_maxrss`` keeps across ``exec`` the peak of the process that forked it (a test
    runner of a gigabyte, say), which is not this program's."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return float(line.split()[1])
    except OSError:
        return None
    return None


def _watch_memory() -> None:
    """Record the peak memory when this process (a driver) ends: its forked workers end without
    running exit handlers, so only the process that asked records."""
    import atexit

    pid = os.getpid()
    if pid in _MEMORY_WATCHED or not os.environ.get("PUNCT_TIMINGS"):
        return
    _MEMORY_WATCHED.add(pid)

    def record() -> None:
        if os.getpid() == pid:
            with contextlib.suppress(ParamsError):  # an unwritable file failed the run's own passes already
                record_memory()

    atexit.register(record)


def runs_of(items: list[T], size: int) -> list[tuple[T, ...]]:
    """``items`` cut into runs of ``size`` consecutive ones (the last may be shorter): the items of
    one task, where a task an item would spend its time on a task's fixed costs."""
    return [tuple(items[at : at + size]) for at in range(0, len(items), size)]


def cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def resolve_workers(workers: int | None, what: str = "workers") -> int:
    """0 or None: one worker per available core; more workers than cores are allowed (a remote
    cluster has its own) with a warning, since on this machine they only compete.  ``what``: the
    key the count comes from (``threads`` counts threads of one process the same way)."""
    if not workers:
        return cores()
    if workers < 0:
        raise ParamsError(f"{what} must be >= 0, not {workers}")
    if workers > cores():
        log.warning("%s: %d is above the %d core(s) of this machine: they compete for them", what, workers, cores())
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
                record_timing(label, now - began, done, engine=self.engine, workers=self.workers)
            elif label and now - shown > 2.0:
                log.info("%s: %d/%d shards", label, done, len(items))
                shown = now

    def map(self, fn: Callable[[T], R], items: Iterable[T], label: str | None = None) -> list[R]:
        return list(self.each(fn, items, label))

    def close(self) -> None:
        pass


class LocalExecutor(Executor):
    """Forked worker processes, started when a pass has more than one item: no more than the pass
    has items (a worker with nothing to do is not forked), grown when a later pass has more."""

    engine = "local"

    def __init__(self, workers: int):
        self.workers = workers
        self.pool: ProcessPoolExecutor | None = None
        self.started = 0  # processes in the pool

    def imap(self, fn, items):
        items = list(items)
        if self.workers <= 1 or len(items) <= 1:
            yield from super().imap(fn, items)
            return
        wanted = min(self.workers, len(items))
        if self.pool is not None and self.started < wanted:
            self.close()
        if self.pool is None:
            self.pool = ProcessPoolExecutor(
                wanted,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_die_with_parent,
                initargs=(os.getpid(),),
            )
            self.started = wanted
        yield from self.pool.map(fn, items)

    def close(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
            self.pool = None
            self.started = 0


class _Refused:
    """A task's UsageError carried back as a value: bad input fails the same way on every try, so
    it is not retried, and no worker logs it as a failed task."""

    def __init__(self, error: UsageError):
        self.error = error


def _modules_of(fn) -> set[str]:
    """The modules of ``fn`` and of the callables it holds (a wrapper's step, a step's reader): what
    a worker imports to run it."""
    held = [v for v in getattr(fn, "__dict__", {}).values() if callable(v)]
    names = {getattr(f, "__module__", None) for f in [fn, getattr(fn, "func", None), *held]}
    return {name for name in names if isinstance(name, str) and name not in ("__main__", "builtins")}


def _import_modules(names: list[str]) -> None:
    """On a worker: import ``names`` (the modules of the functions its tasks will run)."""
    import importlib

    for name in names:
        importlib.import_module(name)


class _Task:
    """Picklable: ``fn`` on a Dask worker, a UsageError returned (not raised)."""

    def __init__(self, fn):
        self.fn = fn

    def __call__(self, item):
        try:
            return self.fn(item)
        except UsageError as exc:
            return _Refused(exc)


@contextmanager
def _quiet_dask():
    """Dask's own logs at the level this run shows: with ``-q`` (warnings and above) nothing of the
    cluster's start-up, its shutdown or its workers, whose failures the driver reports itself.  The
    worker processes read the level from the environment when they start."""
    shown = logging.getLogger().getEffectiveLevel()
    level = logging.DEBUG if shown <= logging.DEBUG else logging.CRITICAL if shown > logging.INFO else logging.WARNING
    name = logging.getLevelName(level).lower()
    saved = {
        key: os.environ.get(key) for key in ("DASK_LOGGING__DISTRIBUTED", "DASK_DISTRIBUTED__LOGGING__DISTRIBUTED")
    }
    os.environ.update(dict.fromkeys(saved, name))
    try:
        import distributed  # noqa: F401 (its import configures its loggers: set them after)

        for logger in ("distributed", "distributed.client", "distributed.scheduler", "distributed.nanny"):
            logging.getLogger(logger).setLevel(level)
        yield level
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value


class DaskExecutor(Executor):
    """``dask.distributed``: a local cluster started at the first pass with no more workers than the
    pass has items (grown when a later pass has more), or a cluster at ``scheduler``.  A task's
    UsageError ends the run at once; a task whose worker dies is retried on another."""

    engine = "dask"

    def __init__(self, workers: int, scheduler: str | None = None):
        self.cluster = None
        self.client = None
        self.workers = workers
        self.started = 0
        self.imported: set[str] = set()  # modules of the passes' functions, imported on every worker
        self.address = scheduler or os.environ.get("PUNCT_DASK_SCHEDULER")
        if self.address:
            from distributed import Client

            with _quiet_dask():
                self.client = Client(self.address)
            self.workers = len(self.client.scheduler_info().get("workers", {})) or workers

    def _ensure(self, items: int, fn) -> None:
        """Workers for a pass of ``items`` over ``fn``, with ``fn``'s module imported on each of
        them.  Both are timed as one record: every worker pays them once, all at the same time, so
        they are not work that more workers share (a model of more workers counts them as serial);
        left to the pass's first task, a worker's imports were timed as shard work."""
        wanted = max(1, min(self.workers, items))
        began = time.perf_counter()
        added = 0
        if self.client is None or (not self.address and self.started < wanted):
            self._start(wanted)
            added, self.started = wanted - self.started, wanted
        modules = _modules_of(fn) - self.imported
        if added:  # new workers import what the earlier passes' workers had
            modules |= self.imported
        if modules:
            self.client.run(_import_modules, sorted(modules))
            self.imported |= modules
        if added or modules:
            record_timing(ENGINE_START, time.perf_counter() - began, added, engine=self.engine)

    def _start(self, wanted: int) -> None:
        with _quiet_dask() as level:
            if self.cluster is None:
                from distributed import Client, LocalCluster

                # No dashboard, and the scheduler's HTTP endpoints on a free local port: the default
                # 8787 is taken by any other cluster on the machine, and dask then warns on stderr.
                self.cluster = LocalCluster(
                    n_workers=wanted,
                    threads_per_worker=1,
                    processes=True,
                    dashboard_address=None,
                    scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
                    silence_logs=level,
                )
                self.client = Client(self.cluster)
            else:
                self.cluster.scale(wanted)
                self.client.wait_for_workers(wanted)  # so that the new ones import the modules too

    def imap(self, fn, items):
        items = list(items)
        if not items:
            return
        self._ensure(len(items), fn)
        futures = self.client.map(_Task(fn), items, pure=False, retries=2)
        try:
            for future in futures:
                result = future.result()
                if isinstance(result, _Refused):
                    raise result.error
                yield result
        finally:
            for future in futures:
                future.release()

    def close(self) -> None:
        if self.client is None:
            return
        with _quiet_dask():
            self.client.close()
            if self.cluster is not None:
                self.cluster.close()
        self.client = self.cluster = None


@contextmanager
def executor(engine: str = "local", workers: int | None = 0, scheduler: str | None = None) -> Iterator[Executor]:
    """An executor for ``engine``, closed (its workers stopped) when the block ends."""
    if engine not in (*ENGINES, "inline"):
        raise ParamsError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    _watch_memory()
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


#: in a worker process of :func:`map_ordered` only: (fn, items), inherited when the pool forked it
#: (fork passes the initializer's arguments without pickling them), so only index ranges travel to
#: the workers and only results travel back, for items too big to send (whole documents in memory);
#: the driver keeps no state, so two maps (nested, or in two threads) never see each other's items
_WORKER: tuple | None = None


def _start_range_worker(parent: int, fn, items) -> None:
    global _WORKER
    _die_with_parent(parent)
    _WORKER = (fn, items)


def _run_range(start: int, stop: int) -> list:
    fn, items = _WORKER
    return [fn(item) for item in items[start:stop]]


def thread_map(fn: Callable, items, threads: int) -> list:
    """``fn`` over ``items`` on ``threads`` threads of this process, results in order: for work
    that releases the GIL (numpy, rapidfuzz) over arrays too large to send to worker processes."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max(1, threads)) as pool:
        return list(pool.map(fn, items))


def map_ordered(
    fn: Callable[[T], R], items: Iterable[T], workers: int | None = 1, chunks_per_worker: int = 4
) -> list[R]:
    """``[fn(item) for item in items]`` on ``workers`` forked processes; the items are inherited, not sent."""
    items = list(items)
    workers = min(resolve_workers(workers), max(len(items), 1))
    if workers <= 1:
        return [fn(item) for item in items]
    n_chunks = min(len(items), workers * chunks_per_worker)
    bounds = [round(i * len(items) / n_chunks) for i in range(n_chunks + 1)]
    with ProcessPoolExecutor(
        workers,
        mp_context=multiprocessing.get_context("fork"),
        initializer=_start_range_worker,
        initargs=(os.getpid(), fn, items),
    ) as pool:
        results = pool.map(_run_range, bounds[:-1], bounds[1:])
        return [r for chunk in results for r in chunk]
