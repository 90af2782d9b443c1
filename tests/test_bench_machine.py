"""Benchmark results carry the machine they ran on: the CPU's instruction sets, cores and load, and
the benchmarks page marks a busy run and a result saved without that record."""

import json


def test_results_record_the_instruction_sets_and_the_load(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import _common

    cpuinfo = "processor\t: 0\nflags\t\t: fpu sse2 avx fma avx2 avx512f avx512bw avx512_vnni amx_int8\n"
    assert _common.cpu_flags(cpuinfo) == ["avx", "avx2", "fma", "avx512f", "avx512bw", "avx512_vnni", "amx_int8"]
    assert _common.cpu_flags("processor\t: 0\n") == []
    machine = _common.machine()
    assert machine["cores"] >= 1 and isinstance(machine["instruction_sets"], list)
    assert machine["load_average_start"] >= 0 and machine["load_average_end"] >= 0
    shares = [machine["other_cpu_share"], machine["steal_share"]]
    busy = machine["load_average_start"] > machine["cores"] or any(s is not None and s > 0.1 for s in shares)
    assert machine["busy"] is busy
    json.dumps(machine)  # saved as it is


def test_the_cpu_time_of_other_work_is_the_machines_less_the_benchmarks(root, monkeypatch):
    """A benchmark's own processes (and the stages it waited for) load the machine at its end: what
    marks a run busy is the CPU time others took while it ran, and the host's other guests."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import os

    import _common

    tick = os.sysconf("SC_CLK_TCK")
    start = _common.machine_cpu(f"cpu  {100 * tick} 0 {50 * tick} 9000 5 0 0 {2 * tick} 0 0\ncpu0 1 2 3\n")
    end = _common.machine_cpu(f"cpu  {160 * tick} 0 {70 * tick} 9100 5 0 {10 * tick} {6 * tick} 0 0\n")
    assert start == {"busy": 150.0, "steal": 2.0} and end == {"busy": 240.0, "steal": 6.0}
    # 40 s on 2 cores: 90 busy seconds, 70 of them the benchmark's own; 4 s of steal
    assert _common.other_work((0.0, start, 5.0), (40.0, end, 75.0), 2) == {"other": 0.25, "steal": 0.05}
    assert _common.other_work((0.0, start, 5.0), (40.0, end, 100.0), 2)["other"] == 0.0  # never below 0
    assert _common.other_work((0.0, None, 5.0), (40.0, end, 75.0), 2) == {"other": None, "steal": None}
    assert _common.machine_cpu("intr 1 2 3\n") is None


def test_the_page_marks_busy_runs_and_unrecorded_machines(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import report

    quiet = {"cpu": "AMD EPYC", "instruction_sets": ["avx", "avx2", "fma"], "cores": 2}
    line = report._machine({**quiet, "load_average_start": 0.4, "load_average_end": 1.9, "busy": False})
    assert "instruction sets: avx avx2 fma" in line and "load average 0.4 at start, 1.9 at end" in line
    assert "busy" not in line and "not recorded" not in line
    line = report._machine({**quiet, "load_average_start": 8.5, "load_average_end": 3.0, "busy": True})
    assert "**busy machine**" in line
    shared = {**quiet, "load_average_start": 0.2, "load_average_end": 2.5, "other_cpu_share": 0.31}
    line = report._machine({**shared, "steal_share": 0.04, "busy": True})
    assert "other processes took 31% of the CPU time while it ran, other guests of the host 4%" in line
    assert "**busy machine**" in line
    line = report._machine({**shared, "other_cpu_share": 0.02, "steal_share": 0.001, "busy": False})
    assert "took 2% of the CPU time" in line and "guests" not in line and "busy" not in line
    old = report._machine({"cpu": "AMD EPYC", "cores": 2, "load_average_1min": 8.4})
    assert old.startswith("machine not recorded") and "load average 8.4 when it finished" in old
    assert "**busy machine**" in old
    assert "busy" not in report._machine({"cpu": "AMD EPYC", "cores": 2, "load_average_1min": 1.5})
