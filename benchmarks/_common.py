"""Shared helpers for benchmarks: locating the real corpora, timing, peak memory."""

from __future__ import annotations

import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpora"


def require_shared() -> Path:
    if not SHARED.is_dir():
        sys.exit(f"benchmark needs the real corpora at {SHARED}")
    return SHARED


@contextmanager
def timed(label: str, results: dict):
    start = time.perf_counter()
    yield
    results[label] = time.perf_counter() - start


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
