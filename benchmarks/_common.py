"""Shared helpers for benchmarks: locating the real corpora, timing, peak memory, the machine."""

from __future__ import annotations

import os
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
    return round(os.getloadavg()[0], 2) if hasattr(os, "getloadavg") else None


#: the 1-minute load average when the benchmark started (this module is imported first)
LOAD_AT_START = _load()

#: a run is busy when other processes, or on a virtual machine the hypervisor's other guests (steal
#: time), took more than this share of the machine's CPU time while it ran
BUSY_SHARE = 0.1


def machine_cpu(stat: str | None = None) -> dict[str, float] | None:
    """The machine's CPU seconds since it started, from the first line of ``/proc/stat`` (or the
    text ``stat``): ``busy`` (user, nice, system, irq, softirq) and ``steal`` (the time a virtual
    machine's CPUs waited while the hypervisor ran other guests); None where it is not listed."""
    if stat is None:
        try:
            stat = Path("/proc/stat").read_text()
        except OSError:
            return None
    fields = stat.split("\n", 1)[0].split()
    if len(fields) < 9 or fields[0] != "cpu":
        return None
    tick = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    user, nice, system, _idle, _iowait, irq, softirq, steal = (int(v) / tick for v in fields[1:9])
    return {"busy": user + nice + system + irq + softirq, "steal": steal}


def own_cpu() -> float:
    """CPU seconds of this process and of the children it waited for (a benchmark's stages)."""
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


#: (monotonic seconds, the machine's CPU seconds, this process's) when the benchmark started
CPU_AT_START = (time.monotonic(), machine_cpu(), own_cpu())


def other_work(start: tuple, end: tuple, cores: int) -> dict[str, float | None]:
    """Between two :data:`CPU_AT_START`-like readings, the share of the machine's CPU time (wall
    seconds x cores) that other processes used (``other``: the machine's busy seconds less this
    process's and its children's) and that went to other guests (``steal``); None where the
    machine lists no CPU times."""
    (t0, m0, own0), (t1, m1, own1) = start, end
    capacity = (t1 - t0) * cores
    if m0 is None or m1 is None or capacity <= 0:
        return {"other": None, "steal": None}
    other = max(0.0, (m1["busy"] - m0["busy"]) - (own1 - own0))
    return {"other": round(other / capacity, 3), "steal": round(max(0.0, m1["steal"] - m0["steal"]) / capacity, 3)}


def cpu_flags(cpuinfo: str | None = None) -> list[str]:
    """Those of :data:`FLAGS` the CPU has (from ``/proc/cpuinfo``, or the text ``cpuinfo``)."""
    from pipeline.entrypoint import cpu_flags as listed

    have = listed(cpuinfo)
    return [flag for flag in FLAGS if flag in have]


def machine() -> dict:
    """What the numbers were measured on: they mean little without it.  ``busy`` is true when the
    load average at the start was above the cores, or other processes or guests took more than
    :data:`BUSY_SHARE` of the CPU time while the benchmark ran (``other_cpu_share``,
    ``steal_share``): other work then shared the CPU, so absolute figures are low and only ratios
    to the same run's baseline hold.  The load at the end is the benchmark's own, mostly."""
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
    cores = os.cpu_count() or 1
    shares = other_work(CPU_AT_START, (time.monotonic(), machine_cpu(), own_cpu()), cores)
    busy = (LOAD_AT_START or 0) > cores or any(share is not None and share > BUSY_SHARE for share in shares.values())
    return {
        "cpu": cpu,
        "instruction_sets": cpu_flags(),
        "cores": cores,
        "memory_gb": memory_gb,
        "python": platform.python_version(),
        "system": f"{platform.system()} {platform.release()}",
        "load_average_start": LOAD_AT_START,
        "load_average_end": _load(),
        "other_cpu_share": shares["other"],
        "steal_share": shares["steal"],
        "busy": busy,
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
