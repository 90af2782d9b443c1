"""Shared helpers for benchmarks: locating the real corpora, timing, peak memory, the machine."""

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


#: the CPU flags (as /proc/cpuinfo spells them) that decide which kernels the numbers come from:
#: vector width (avx, avx2, avx512f), int8 dot products (avx512_vnni, avx_vnni: one instruction
#: for what AVX2 does in three, without its 16-bit saturation) and matrix units (amx_*)
FLAGS = (
    "avx",
    "avx2",
    "fma",
    "f16c",
    "avx512f",
    "avx512bw",
    "avx512_vnni",
    "avx512_bf16",
    "avx_vnni",
    "amx_tile",
    "amx_int8",
    "amx_bf16",
)


def _load() -> float | None:
    import os

    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


#: the 1-minute load average when the benchmark started (this module is imported first)
LOAD_AT_START = _load()


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """Those of :data:`FLAGS` the CPU has (from ``/proc/cpuinfo``, or the text ``cpuinfo``)."""
    from pipeline.entrypoint import cpu_flags as listed

    have = listed(cpuinfo)
    return [flag for flag in FLAGS if flag in have]


def machine() -> dict:
    """What the numbers were measured on: they mean little without it.  ``busy`` is true when the
    load average at the start or at the end was above the cores: other work then shared the CPU,
    so absolute figures are low and only ratios to the same run's baseline hold."""
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
    cores = os.cpu_count()
    loads = [load for load in (LOAD_AT_START, _load()) if load is not None]
    return {
        "cpu": cpu,
        "instruction_sets": cpu_flags(),
        "cores": cores,
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "load_average_start": LOAD_AT_START,
        "load_average_end": _load(),
        "busy": bool(cores and loads and max(loads) > cores),
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
