"""Resumable runs: a run killed after some steps and resumed from its last checkpoint ends with the same
weights, loss curve and best model as a run that was never stopped (CPU, dropout on, augmentation on)."""

import json

import pytest
import torch
from safetensors.torch import load_file
from support.training import TINY, as_documents, dataset, tokenizer_of, with_split

from pipeline.training.loop import checkpoints, train
from pipeline.training.model import build_model


class Killed(Exception):
    pass


@pytest.fixture(scope="module")
def data(iwslt_dev, tmp_path_factory):
    table = with_split(as_documents(iwslt_dev.slice(0, 360), 30), ["train"] * 300 + ["dev"] * 60)
    tokenizer = tokenizer_of(table)
    return dataset(tmp_path_factory.mktemp("data"), table, tokenizer, parts=2)


@pytest.mark.parametrize(
    "extra",
    [
        {"head": "layer_attention", "grad_accumulation": 2},  # layer dropout draws from the RNG too
        pytest.param(
            {"augmentation": {"kind": "alam"}, "mixing": {"temperature": 2.0}, "loader_workers": 1},
            marks=pytest.mark.slow,  # a second straight, killed and resumed run: with the slow tests
        ),
    ],
    ids=["accumulation", "augmented"],
)
def test_killed_and_resumed_run_ends_like_a_straight_run(data, tmp_path, extra):
    params = {**TINY, "epochs": 3, "checkpoint_every": 4, "keep_checkpoints": 2, **extra}

    straight = build_model(params, data.tokenizer)
    history = train(straight, data, params, model_dir=tmp_path / "straight")
    steps = len(history["steps"])
    # past the middle and past a checkpoint: the steps after it are done again
    kill_at = next(k for k in range(steps // 2 + 1, steps) if k % 4 != 0)
    assert steps > 12

    def kill(step, state):
        if step == kill_at:
            raise Killed

    first = build_model(params, data.tokenizer)
    with pytest.raises(Killed):
        train(first, data, params, model_dir=tmp_path / "resumed", on_step=kill)
    saved = checkpoints(tmp_path / "resumed" / "checkpoints")
    assert [p.name for p in saved] == [f"step-{s:08d}" for s in range(4, kill_at, 4)][-2:]  # keep_checkpoints
    state = json.loads((saved[-1] / "loop_state.json").read_text())
    assert state["step"] == kill_at - kill_at % 4 and state["batches_done"] > 0

    # a fresh process would build the model anew: its weights come from the checkpoint
    again = build_model({**params, "seed": 99}, data.tokenizer)
    resumed = train(again, data, params, model_dir=tmp_path / "resumed", resume=True)
    assert resumed["steps"] == history["steps"]
    assert resumed["epochs"] == history["epochs"]
    for key, value in straight.state_dict().items():
        assert torch.equal(value, again.state_dict()[key]), key
    best_a = load_file(tmp_path / "straight" / "model.safetensors")
    best_b = load_file(tmp_path / "resumed" / "model.safetensors")
    assert best_a.keys() == best_b.keys() and all(torch.equal(best_a[k], best_b[k]) for k in best_a)
    assert not (tmp_path / "resumed" / "checkpoints").exists()  # removed once the run is complete
