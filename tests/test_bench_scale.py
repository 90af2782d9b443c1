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
