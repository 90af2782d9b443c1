"""Shared helpers for benchmarks: locating the real corpora, timing, peak memory."""

from __future__ import annotations

import resource
import sys
import time
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

# The tests' lookup, so a benchmark and a test read the same files: the real corpora
# (``../shared/corpora`` or ``PUNCT_SHARED_CORPORA``) where present, else the committed fixtures
sys.path.insert(0, str(ROOT / "tests"))
from support import corpora  # noqa: E402


def corpus_root() -> Path:
    """The corpus root a benchmark reads; on the fixtures (a clone without ``../shared``) it says so,
    since numbers measured on a few hundred lines say little about the real corpora."""
    if not corpora.has_real_corpora():
        print(f"note: {corpora.missing_reason()}; measuring on the committed fixtures", file=sys.stderr)
    return corpora.corpus_root()


@contextmanager
def timed(label: str, results: dict):
    start = time.perf_counter()
    yield
    results[label] = time.perf_counter() - start


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


# ------------------------------------------------------------------------------- saved results

RESULTS = ROOT / "benchmarks" / "results"


def machine() -> dict:
    """What the numbers were measured on: they mean little without it."""
    import os
    import platform

    cpu = platform.processor() or platform.machine()
    memory_gb = None
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                memory_gb = round(int(line.split()[1]) / 1024**2, 1)
                break
    except OSError:
        pass
    return {
        "cpu": cpu,
        "cores": os.cpu_count(),
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        # other work on the machine slows a run; the baseline of the same run shares the slowdown
        "load_average_1min": round(os.getloadavg()[0], 1) if hasattr(os, "getloadavg") else None,
    }


def commit() -> str:
    """The commit measured, marked ``+changes`` when tracked files differ from it."""
    import subprocess

    def git(*args):
        return subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False).stdout.strip()

    head = git("rev-parse", "--short=10", "HEAD") or "unknown"
    return f"{head}+changes" if git("status", "--porcelain", "--untracked-files=no") else head


def save_results(
    name: str,
    *,
    title: str,
    what: str,
    baseline: str,
    columns: list[str],
    rows: list[list],
    metrics: dict,
    notes: list[str] | None = None,
) -> Path:
    """``benchmarks/results/NAME.json``: one run's table with its machine, commit, date and the baseline
    measured in the same run.  ``python benchmarks/report.py`` turns the files into docs/benchmarks.md;
    a later run replaces the file (git keeps the earlier ones).  ``notes``: lines shown under the
    table (a target and whether this run met it)."""
    import datetime
    import json

    result = {
        "benchmark": name,
        "title": title,
        "script": f"benchmarks/{Path(sys.argv[0]).name}",
        "what": what,
        "baseline": baseline,
        "machine": machine(),
        "commit": commit(),
        "date": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "columns": columns,
        "rows": [[str(cell) for cell in row] for row in rows],
        "metrics": metrics,
    }
    if notes:
        result["notes"] = list(notes)
    RESULTS.mkdir(parents=True, exist_ok=True)
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    print(f"results: {path.relative_to(ROOT)}")
    return path
