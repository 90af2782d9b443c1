"""Training takes a dataset as it was built: the sequence options and the tokenizer its manifest
records (a restated value that differs is refused, quoting the dataset's), a pretrained model only on
sequences of its own vocabulary; train keys are as strict as any params key; the command line and
the stage refuse the same URLs and, on the same inputs, write the same bytes."""

import json

import pytest
import yaml
from support.reliability import call
from support.training import TINY, TINY_CONFIG, sample_talks, tokenizer_of

from pipeline.training.data import SequenceOptions, write_dataset

#: a run short enough for a test: one epoch of the sample talks
SHORT = {**TINY, "epochs": 1}


@pytest.fixture(scope="module")
def samples(root):
    """The committed English sample talks, split train/dev/test by document."""
    return sample_talks(root)


@pytest.fixture(scope="module")
def talks(samples, tmp_path_factory):
    """A dataset folder whose sequences were built with max_len 64 and a tokenizer of its own."""
    folder = tmp_path_factory.mktemp("data") / "datasets" / "talks"
    write_dataset(folder, samples, tokenizer_of(samples, 300), SequenceOptions(max_len=64), tokenizer_name="train")
    return folder


def _yaml(path, data):
    path.write_text(yaml.safe_dump(data))
    return path


def _train(dataset, config, out, *extra):
    return call("pipeline", ["train", "--dataset", dataset, "--config", config, "--out", out, *extra])


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_the_manifest_records_how_the_sequences_were_built(talks):
    manifest = json.loads((talks / "sequences.parquet" / "_punct.json").read_text())
    assert manifest["sequences"] == {
        "tokenizer": "train",
        "max_len": 64,
        "mode": "chunk",
        "stride": 0,
        "slot_filling": False,
    }


def test_the_sequences_stage_records_its_options(tmp_path):
    """The sequences stage's own manifest (not a test helper's) holds the options training reads."""
    from support.reliability import SAMPLES

    from pipeline.datasets.sequences import sequences_dataset
    from pipeline.params import SequencesParams

    argv = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "talks", "--doc-boundary", "line",
            SAMPLES / "en/talks.txt", "--out", tmp_path / "seg.parquet"]  # fmt: skip
    assert call("pipeline", argv)[0] == 0
    params = SequencesParams(tokenizer="train", vocab_size=300, max_len=48, stride=4)
    sequences_dataset(tmp_path / "seg.parquet", params, tmp_path / "seq", tmp_path / "tok", tmp_path / "r.json", "t")
    manifest = json.loads((tmp_path / "seq" / "_punct.json").read_text())
    assert manifest["sequences"] == {
        "tokenizer": "train",
        "max_len": 48,
        "mode": "chunk",
        "stride": 4,
        "slot_filling": False,
    }


@pytest.mark.parametrize(
    "extra, words",
    [
        (["--max-len", "32"], ["--max-len: 32 differs from the dataset's max_len 64", "_punct.json"]),
        (["--mode", "segment"], ["--mode: 'segment' differs from the dataset's mode 'chunk'"]),
        (["--stride", "3"], ["--stride: 3 differs from the dataset's stride 0"]),
        (["--slot-filling"], ["--slot-filling: True differs from the dataset's slot_filling False"]),
    ],
)
def test_a_restated_option_that_differs_is_refused(talks, tmp_path, extra, words):
    rc, err = _train(talks, _yaml(tmp_path / "c.yaml", SHORT), tmp_path / "model", *extra)
    line = _one_error(err)
    assert rc == 2 and all(w in line for w in words), line
    assert not (tmp_path / "model").exists()


def test_a_config_max_len_that_differs_is_refused(talks, tmp_path):
    config = _yaml(tmp_path / "c.yaml", {**SHORT, "max_len": 128})
    rc, err = _train(talks, config, tmp_path / "model")
    assert rc == 2 and f"{config}: max_len: 128 differs from the dataset's max_len 64" in _one_error(err)


def test_the_positions_refusal_quotes_the_datasets_max_len(talks, tmp_path):
    """No --max-len: the dataset's 64 is what is checked against a 48-position model, not a default."""
    config = _yaml(tmp_path / "c.yaml", {**SHORT, "config": {**TINY_CONFIG, "max_position_embeddings": 48}})
    rc, err = _train(talks, config, tmp_path / "model")
    line = _one_error(err)
    assert rc == 2 and "max_len 64" in line and "at most 48 positions" in line and "256" not in line, line


@pytest.mark.parametrize(
    "change, words",
    [
        ({"batch_size": "32"}, ["batch_size: input should be a valid integer", "'32'"]),
        ({"freeze_encoder_first_epoch": "yes"}, ["freeze_encoder_first_epoch: input should be a valid boolean"]),
        ({"loader_workers": 1.5}, ["loader_workers: input should be a valid integer"]),
        ({"workers": 2}, ["workers: unknown key", "loader_workers"]),
    ],
)
def test_train_keys_are_strict(talks, tmp_path, change, words):
    config = _yaml(tmp_path / "c.yaml", {**SHORT, **change})
    rc, err = _train(talks, config, tmp_path / "model")
    line = _one_error(err)
    assert rc == 2 and line.startswith(f"error: {config}: ") and all(w in line for w in words), line


def test_a_config_key_given_twice_is_refused(talks, tmp_path):
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump(SHORT) + "epochs: 3\n")
    rc, err = _train(talks, config, tmp_path / "model")
    line = _one_error(err)
    assert rc == 2 and f"{config}:" in line and "key 'epochs' given twice" in line, line


def test_the_command_line_and_the_stage_refuse_the_same_urls(talks, tmp_path):
    config = _yaml(tmp_path / "c.yaml", SHORT)
    params = _yaml(
        tmp_path / "params.yaml",
        {"datasets": {"talks": {"sequences": {"max_len": 64}}}, "train": {"tiny": {**SHORT, "dataset": "talks"}}},
    )
    url = "memory://bucket/x.parquet"
    cli = [("--confusables", url), ("--metrics", url), ("--plots-dir", url), ("--checkpoint-dir", url)]
    for flag, value in cli:
        rc, err = _train(talks, config, tmp_path / "m", flag, value)
        assert rc == 2 and f"{url}: training reads and writes local paths only" in _one_error(err), (flag, err)
    rc, err = _train(talks, "memory://bucket/c.yaml", tmp_path / "m")
    assert rc == 2 and "memory://bucket/c.yaml: training reads and writes local paths only" in _one_error(err)
    for flag, value in [*cli, ("--dataset", "memory://bucket/talks"), ("--model-dir", url)]:
        argv = ["tiny", "--params", params, "--dataset", talks, flag, value]
        rc, err = call("stages.train", argv if flag != "--dataset" else ["tiny", "--params", params, flag, value])
        assert rc == 2 and "training reads and writes local paths only" in _one_error(err), (flag, err)
    assert not (tmp_path / "m").exists()


def test_the_stage_refuses_sequence_params_the_dataset_was_not_built_with(talks, tmp_path):
    params = _yaml(
        tmp_path / "params.yaml",
        {"datasets": {"talks": {"sequences": {"max_len": 128}}}, "train": {"tiny": {**SHORT, "dataset": "talks"}}},
    )
    rc, err = call("stages.train", ["tiny", "--params", params, "--dataset", talks, "--model-dir", tmp_path / "m"])
    line = _one_error(err)
    assert rc == 2 and "datasets.talks.sequences.max_len: 128 differs from the dataset's max_len 64" in line, line


@pytest.mark.slow
def test_a_pretrained_model_needs_the_datasets_tokenizer(talks, samples, tmp_path):
    """The packaged MiniLM (30,522 entries) on sequences of the dataset's own 300-entry tokenizer is
    refused, naming the key to set; on sequences built with MiniLM's tokenizer it trains."""
    from pipeline.datasets.pretrained import load_tokenizer

    minilm = {**SHORT, "config": None, "pretrained": "packaged:minilm", "max_steps": 1, "encoder_lr": 5.0e-5}
    config = _yaml(tmp_path / "minilm.yaml", minilm)
    rc, err = _train(talks, config, tmp_path / "refused")
    line = _one_error(err)
    assert rc == 2 and "datasets.talks.sequences.tokenizer: packaged:minilm" in line, line
    assert "tokenizer 'train'" in line and "30522" in line, line
    assert not (tmp_path / "refused").exists()

    paired = tmp_path / "datasets" / "talks_minilm"
    tokenizer = load_tokenizer("packaged:minilm")
    write_dataset(paired, samples, tokenizer, SequenceOptions(max_len=64), tokenizer_name="packaged:minilm")
    rc, err = _train(paired, config, tmp_path / "model")
    assert rc == 0, err
    meta = json.loads((tmp_path / "model" / "punctuation.json").read_text())
    assert meta["sequence"]["max_len"] == 64 and meta["params"]["pretrained"] == "packaged:minilm"


@pytest.mark.slow
def test_the_command_line_and_the_stage_write_the_same_bytes(talks, tmp_path):
    """``punct-corpora train`` and ``python -m stages.train`` on one dataset and the same train keys:
    the model folder, the metrics and the CSVs are byte for byte the same."""
    entry = {**SHORT, "dataset": "talks", "max_steps": 3}
    config = _yaml(tmp_path / "tiny.yaml", entry)
    params = _yaml(
        tmp_path / "params.yaml",
        {"datasets": {"talks": {"sequences": {"max_len": 64}}}, "train": {"tiny": entry}},
    )
    cli, stage = tmp_path / "cli", tmp_path / "stage"
    rc, err = _train(talks, config, cli / "model", "--name", "tiny", "--metrics", cli / "train_tiny.json",
                     "--plots-dir", cli)  # fmt: skip
    assert rc == 0, err
    rc, err = call("stages.train", ["tiny", "--params", params, "--dataset", talks, "--model-dir", stage / "model",
                                    "--metrics", stage / "train_tiny.json", "--plots-dir", stage])  # fmt: skip
    assert rc == 0, err

    def files(root):
        return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}

    one, two = files(cli), files(stage)
    assert set(one) == set(two) and "model/model.safetensors" in one and "train_tiny_steps.csv" in one, set(one)
    assert [name for name in one if one[name] != two[name]] == []
