"""The scale benchmark at a tiny size: every stage of the Indic recipe runs and is measured."""

import json
import os
import re
import subprocess
import sys

import pytest

STAGES = ("ingest", "split", "oversample", "sequences", "audit")


@pytest.mark.slow
def test_scale_benchmark_runs_every_stage(shared, root, tmp_path):
    out = tmp_path / "scale.json"
    proc = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench_scale.py"), "--words", "20000", "--json", str(out)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=root,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for stage in STAGES:  # the table row: stage, seconds, words/s, per worker, peak RSS, x floor
        row = re.search(rf"^\s+{stage}\s+([\d.]+)\s+([\d,]+)\s+([\d,]+)\s+(\d+)\s+([\d.]+)$", proc.stdout, re.M)
        assert row, f"no table row for {stage}:\n{proc.stdout}"
        assert float(row[1]) > 0 and int(row[2].replace(",", "")) > 0 and int(row[4]) > 0 and float(row[5]) > 0
    (size,) = json.loads(out.read_text())["sizes"]
    assert size["words"] > 10_000
    for stage in STAGES:
        assert size["stages"][stage]["words_per_s"] > 0 and size["stages"][stage]["peak_rss_mb"] > 50
        # the driver's and the largest worker's peaks (0: no worker was started), as the drivers
        # recorded them: the larger of the two is the stage's peak of its largest process
        r = size["stages"][stage]
        assert 50 < r["driver_rss_mb"] <= r["peak_rss_mb"] + 1 and 0 <= r["worker_rss_mb"] <= r["peak_rss_mb"] + 1, r
        assert max(r["driver_rss_mb"], r["worker_rss_mb"]) >= 0.9 * r["peak_rss_mb"], r
    passes = size["stages"]["sequences"]["passes"]  # the stage's passes, timed from its log
    assert {"sequences: tokenizer words", "sequences indic_scale", "sequences indic_scale: tokenizer training"} <= set(
        passes
    ), passes
    assert sum(passes.values()) <= size["stages"]["sequences"]["seconds"]
    assert "tokenize + pack pass alone" in proc.stdout
    own_floors = ("oversample read", "oversample copy", "sequences input", "sequences read", "sequences copy")
    for kind in ("read", "copy", *own_floors):  # the same run's floors
        assert size["io_floor"][kind]["seconds"] > 0 and size["io_floor"][kind]["pass_seconds"] > 0
        assert re.search(rf"^\s+floor {kind}\s+[\d.]+\s+[\d,]+$", proc.stdout, re.M), proc.stdout
    for stage in ("oversample", "sequences"):  # the stages' own floors, from their inputs' and outputs' I/O
        own_floor = rf"^info {stage}\s+its floor: .* come to ([\d.]+)x the copy floor; .* the stage is ([\d.]+)x its"
        own = re.search(own_floor + " floor", proc.stdout, re.M)
        assert own and float(own[1]) > 0 and float(own[2]) > 1, proc.stdout
    assert "Gupta 2021 Table 1" in proc.stdout
    # only targets relative to the same run: the floor, the size below, the projection's minutes
    verdicts = [line for line in proc.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert len(verdicts) == 5 + 1 and all("copy floor" in v or "projection" in v for v in verdicts), verdicts
    assert re.search(r"^(PASS|FAIL) projection .* on 64 workers: [\d.]+ min", proc.stdout, re.M)
    assert "instruction sets: " in proc.stdout
    saved = json.loads(out.read_text())
    assert (
        isinstance(saved["machine"]["instruction_sets"], list) and saved["extrapolation"]["projection"]["minutes"] > 0
    )


def test_extrapolation_divides_passes_among_workers_and_not_the_serial_part(shared, root, monkeypatch):
    """Amdahl's law over a stage's log: its passes over shards are divided among the workers, the
    rest is not: the tokenizer's training stays at its seconds once it reads the capped number of
    occurrences, the other serial work grows on the line through the two largest sizes."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import bench_scale

    def size(words, seconds, passes):
        return {"target_words": words, "words": words, "workers": 2,
                "stages": {"sequences": {"seconds": seconds, "passes": passes}}}  # fmt: skip

    small = size(10**7, 3.0, {"sequences: tokenizer words": 1.0, "sequences x: tokenizer training": 0.5})
    large = size(10**8, 20.0, {"sequences: tokenizer words": 14.0, "sequences x: tokenizer training": 4.0})
    cap = bench_scale.trainer_cap()
    small["stages"]["sequences"]["trainer_occurrences"] = cap // 2
    large["stages"]["sequences"]["trainer_occurrences"] = cap  # the trainer read as many as it may
    assert bench_scale.serial_seconds(small["stages"]["sequences"]) == 2.0  # training is serial
    assert bench_scale.serial_seconds(large["stages"]["sequences"]) == 6.0
    lines, table = bench_scale.extrapolate([small, large])
    total = table["total_words"]
    serial = 2.0 + (2.0 - 1.5) / 9e7 * (total - 1e8) + 4.0  # the rest on its line, the training as measured
    got = table["stages"]["sequences"]
    assert got["serial"] == pytest.approx(serial)
    for workers in (1, 8, 64):  # 14 s of passes on 2 workers: 28 worker-seconds per 1e8 words
        assert got[workers] == pytest.approx(serial + 28.0 * total / 1e8 / workers)
    assert got[64] < got[8] < got[1] and got[64] > serial
    assert any(line.lstrip().startswith("sequences") for line in lines)
    assert table["projection"]["minutes"] == pytest.approx(got[64] / 60)
    # below the cap, the training's seconds grow with the occurrences it reads, up to the cap
    _, below = bench_scale.extrapolate([size(10**6, 1.0, {}), small])
    rest = 1.5 + (1.5 - 1.0) / 9e6 * (total - 1e7)
    assert below["stages"]["sequences"]["serial"] == pytest.approx(rest + 0.5 * 2)


def test_model_predicts_two_workers_from_one(root, monkeypatch):
    """The Dask check's prediction: a stage's serial part plus its passes halved (the training not)."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import bench_scale

    one = {
        "stages": {
            "sequences": {"seconds": 10.0, "passes": {"sequences x": 6.0, "sequences x: tokenizer training": 1.0}}
        }
    }
    assert bench_scale.predict_workers(one, 2) == {"sequences": 4.0 + 3.0}
    # workers that slow each other down on one machine: their passes slower by the factor
    assert bench_scale.predict_workers(one, 2, sharing=1.5) == {"sequences": 4.0 + 4.5}
    floor = {"io_floor": {"copy": {"pass_seconds": 4.0}}}
    assert bench_scale.sharing_factor(floor, {"io_floor": {"copy": {"pass_seconds": 2.5}}}) == 1.25


def test_a_cluster_start_inside_a_pass_is_serial(root, monkeypatch):
    """The executor times a cluster's start inside the pass that needed its workers, and apart: the
    model counts it once, as serial, not as work divided among the workers."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import bench_scale

    from pipeline.engine.executor import ENGINE_START

    assert bench_scale.ENGINE_START == ENGINE_START
    stage = {"seconds": 10.0, "passes": {"split: strata": 5.0, ENGINE_START: 2.0, "split": 3.0}}
    assert bench_scale.serial_seconds(stage) == pytest.approx(2.0 + 2.0)
    assert bench_scale.predict_workers({"stages": {"split": stage}}, 2) == {"split": pytest.approx(4.0 + 3.0)}


def test_the_dask_check_keeps_each_stages_fastest_run(root, monkeypatch):
    """Runs of the check combined stage by stage (the one least disturbed by other work), each
    stage's seconds with its own passes, and the copy floor's fastest pass."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import bench_scale

    def run(seconds: list[float], floor: float) -> dict:
        stages = {s: {"seconds": t, "passes": {s: t / 2}} for s, t in zip(bench_scale.STAGES, seconds)}
        return {"words": 10, "stages": stages, "io_floor": {"copy": {"seconds": floor + 1, "pass_seconds": floor}}}

    first, second = run([5, 4, 3, 2, 1], 2.0), run([1, 2, 3, 4, 5], 3.0)
    combined = bench_scale.fastest([first, second])
    assert [combined["stages"][s]["seconds"] for s in bench_scale.STAGES] == [1, 2, 3, 2, 1]
    assert combined["stages"]["ingest"]["passes"] == {"ingest": 0.5}
    assert combined["io_floor"]["copy"]["pass_seconds"] == 2.0
