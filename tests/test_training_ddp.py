"""Several processes (DDP over gloo, on CPU) train like one process with the combined batch: the same loss
curve, gradient norms and final weights, to float tolerance.  And the GPU benchmark's CPU mode runs."""

import os
import subprocess
import sys

import numpy as np
import pytest
import torch
from support.training import as_documents, dataset, tokenizer_of, with_split

SCRIPT = """
import json, sys
import torch
from support.training import NO_DROPOUT
from pipeline.training.model import build_model
from pipeline.training.loop import train
from pipeline.training.data import SequenceOptions, TrainingData

folder, out, batch = sys.argv[1], sys.argv[2], int(sys.argv[3])
data = TrainingData.from_folder(folder, SequenceOptions(max_len=64))
params = {**NO_DROPOUT, "epochs": 2, "batch_size": batch, "grad_accumulation": 2, "loader_workers": 1}
model = build_model(params, data.tokenizer)
history = train(model, data, params)
if history["processes"] == 1 or torch.distributed.get_rank() == 0:
    torch.save({"losses": [s["loss"] for s in history["steps"]], "norms": [s["grad_norm"] for s in history["steps"]],
                "processes": history["processes"], "state": model.state_dict()}, out)
"""


@pytest.mark.slow
def test_two_processes_train_like_one_with_the_combined_batch(iwslt_dev, root, tmp_path):
    table = with_split(as_documents(iwslt_dev.slice(0, 360), 30), ["train"] * 300 + ["dev"] * 60)
    dataset(tmp_path / "data", table, tokenizer_of(table), parts=2)
    (tmp_path / "run.py").write_text(SCRIPT)
    env = {**os.environ, "PYTHONPATH": f"{root}{os.pathsep}{root / 'tests'}", "OMP_NUM_THREADS": "1"}
    runs = {
        "one": [sys.executable, str(tmp_path / "run.py"), str(tmp_path / "data"), str(tmp_path / "one.pt"), "8"],
        "two": [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            "--nproc_per_node",
            "2",
            str(tmp_path / "run.py"),
            str(tmp_path / "data"),
            str(tmp_path / "two.pt"),
            "4",  # per process: 2 x 4 = the one process's 8
        ],
    }
    for name, command in runs.items():
        proc = subprocess.run(command, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, f"{name}: {proc.stderr[-3000:]}"
    one, two = torch.load(tmp_path / "one.pt"), torch.load(tmp_path / "two.pt")
    assert one["processes"] == 1 and two["processes"] == 2
    assert len(one["losses"]) == len(two["losses"]) > 10
    # tolerance: the same sums in another order (float32), and Adam's normalization of ~0 gradients
    assert np.allclose(one["losses"], two["losses"], rtol=1e-4, atol=1e-5)
    # the gradients themselves (Adam would hide a wrong scale in the weights)
    assert np.allclose(one["norms"], two["norms"], rtol=1e-3)
    for key, value in one["state"].items():
        assert torch.allclose(value, two["state"][key], rtol=1e-4, atol=1e-4), key


@pytest.mark.slow
def test_gpu_benchmark_runs_in_cpu_mode(root, tmp_path):
    """The GPU benchmark's CPU mode (tiny model, no targets): what CI runs of it."""
    import json

    proc = subprocess.run(
        [sys.executable, str(root / "benchmarks" / "bench_train_gpu.py"), "--cpu", "--json", str(tmp_path / "b.json")],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(root)},
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    results = json.loads((tmp_path / "b.json").read_text())
    for mode in ("plain", "project", "budget"):
        assert results[f"tiny/fp32/{mode}"]["tokens_per_s"] > 0
    assert results["tiny/fp32/project"]["vs_plain"] > 0 and results["tiny/punctuate"]["words_per_s"] > 0
    assert results["targets"] == "not checked (CPU)"
