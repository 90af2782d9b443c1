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
    passes = size["stages"]["sequences"]["passes"]  # the stage's passes, timed from its log
    assert {"sequences: tokenizer words", "sequences indic_scale", "sequences indic_scale: tokenizer training"} <= set(
        passes
    ), passes
    assert sum(passes.values()) <= size["stages"]["sequences"]["seconds"]
    assert "tokenize + pack pass alone" in proc.stdout
    for kind in ("read", "copy"):  # the same run's Parquet I/O floor
        assert size["io_floor"][kind]["seconds"] > 0
        assert re.search(rf"^\s+floor {kind}\s+[\d.]+\s+[\d,]+$", proc.stdout, re.M), proc.stdout
    assert "Gupta 2021 Table 1" in proc.stdout


def test_extrapolation_divides_passes_among_workers_and_not_the_serial_part(shared, root, monkeypatch):
    """Amdahl's law over a stage's log: its passes over shards are divided among the workers, the
    rest (start-up, driver work, the tokenizer's training) is not, and grows on the line through
    the two largest sizes."""
    monkeypatch.syspath_prepend(str(root / "benchmarks"))
    import bench_scale

    def size(words, seconds, passes):
        return {"target_words": words, "words": words, "workers": 2,
                "stages": {"sequences": {"seconds": seconds, "passes": passes}}}  # fmt: skip

    small = size(10**7, 3.0, {"sequences: tokenizer words": 1.0, "sequences x: tokenizer training": 0.5})
    large = size(10**8, 20.0, {"sequences: tokenizer words": 14.0, "sequences x: tokenizer training": 4.0})
    assert bench_scale.serial_seconds(small["stages"]["sequences"]) == 2.0  # training is serial
    assert bench_scale.serial_seconds(large["stages"]["sequences"]) == 6.0
    lines, table = bench_scale.extrapolate([small, large])
    total = table["total_words"]
    serial = 6.0 + (6.0 - 2.0) / 9e7 * (total - 1e8)
    got = table["stages"]["sequences"]
    assert got["serial"] == pytest.approx(serial)
    for workers in (1, 8, 64):  # 14 s of passes on 2 workers: 28 worker-seconds per 1e8 words
        assert got[workers] == pytest.approx(serial + 28.0 * total / 1e8 / workers)
    assert got[64] < got[8] < got[1] and got[64] > serial
    assert any(line.lstrip().startswith("sequences") for line in lines)
