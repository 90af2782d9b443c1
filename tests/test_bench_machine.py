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
    busy = max(machine["load_average_start"], machine["load_average_end"]) > machine["cores"]
    assert machine["busy"] is busy
    json.dumps(machine)  # saved as it is


def test_the_page_marks_busy_runs_and_unrecorded_machines(root, monkeypatch):
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import report

    quiet = {"cpu": "AMD EPYC", "instruction_sets": ["avx", "avx2", "fma"], "cores": 2}
    line = report._machine({**quiet, "load_average_start": 0.4, "load_average_end": 1.9, "busy": False})
    assert "instruction sets: avx avx2 fma" in line and "load average 0.4 at start, 1.9 at end" in line
    assert "busy" not in line and "not recorded" not in line
    line = report._machine({**quiet, "load_average_start": 8.5, "load_average_end": 3.0, "busy": True})
    assert "**busy machine**" in line
    old = report._machine({"cpu": "AMD EPYC", "cores": 2, "load_average_1min": 8.4})
    assert old.startswith("machine not recorded") and "load average 8.4 when it finished" in old
    assert "**busy machine**" in old
    assert "busy" not in report._machine({"cpu": "AMD EPYC", "cores": 2, "load_average_1min": 1.5})
