"""Training refuses, before its first step and in one line, inputs that do not fit the model: sequences
longer than its positions, labels its heads cannot predict, a missing or foreign tokenizer; the
``train`` command trains on a dataset folder without DVC; checkpoints follow the umask."""

import json
import os
import stat

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
import yaml
from support.training import TINY, sample_talks, tokenizer_of

from pipeline import cli
from pipeline.training.data import SequenceOptions, write_dataset


@pytest.fixture(scope="module")
def samples(root):
    """The committed English sample talks, split train/dev/test by document."""
    return sample_talks(root)


@pytest.fixture(scope="module")
def dataset_64(samples, tmp_path_factory):
    folder = tmp_path_factory.mktemp("ds") / "talks"
    write_dataset(folder, samples, tokenizer_of(samples, 300), SequenceOptions(max_len=64))
    return folder


def _config(tmp_path, **changes):
    config = {**TINY, "epochs": 1, **changes}
    path = tmp_path / "tiny.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


def _train(dataset, config, out, *extra):
    return cli.main(["train", "--dataset", str(dataset), "--config", str(config), "--out", str(out), *extra])


def _one_line_refusal(capsys, *words):
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_train_command_trains_and_scores_on_a_dataset_folder(dataset_64, tmp_path, capsys):
    out = tmp_path / "model"
    assert _train(dataset_64, _config(tmp_path), out, "--max-len", "64") == 0
    meta = json.loads((out / "punctuation.json").read_text())
    assert meta["sequence"]["max_len"] == 64 and meta["params"]["epochs"] == 1
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["steps"] > 0 and metrics["test"]["overall"]["overall"]["support"] > 0
    steps = (out / "train_model_steps.csv").read_text().splitlines()
    assert steps[0].startswith("step,epoch,loss") and len(steps) == metrics["steps"] + 1
    assert (out / "train_model_confusion.csv").is_file()
    # the model it wrote punctuates text
    text = tmp_path / "in.txt"
    text.write_text("good morning everyone today i want to talk about water\n")
    capsys.readouterr()
    assert cli.main(["punctuate", "--model", str(out), "--device", "cpu", str(text)]) == 0
    words = capsys.readouterr().out.lower().split()
    expected = ["good", "morning", "everyone", "today", "i", "want", "to", "talk", "about", "water"]
    assert [w.strip(",.?") for w in words] == expected


def test_max_len_above_the_models_positions_is_refused_before_any_step(samples, tmp_path, capsys):
    folder = tmp_path / "long"
    write_dataset(folder, samples, tokenizer_of(samples, 300), SequenceOptions(max_len=256))
    out = tmp_path / "model"
    # TINY's encoder has 128 positions; the dataset's default max_len is 256
    assert _train(folder, _config(tmp_path), out) == 2
    _one_line_refusal(capsys, "max_len 256", "128", "max_position_embeddings")
    assert not out.exists()  # no step, no checkpoint


def test_labels_the_head_cannot_predict_are_refused(dataset_64, tmp_path, capsys):
    folder = tmp_path / "labels"
    import shutil

    shutil.copytree(dataset_64, folder)
    part = sorted((folder / "sequences.parquet").glob("part-*.parquet"))[0]
    table = pq.read_table(part)
    labels = table["labels"].combine_chunks()
    flat = labels.flatten()
    # every real label moved 4 ids up (O becomes id 4): beyond the 4-label head; -100 stays unlabelled
    moved = pc.if_else(pc.greater_equal(flat, 0), pc.add(flat, 4), -100).cast(labels.type.value_type)
    bumped = pa.ListArray.from_arrays(labels.offsets, moved)
    pq.write_table(table.set_column(table.schema.get_field_index("labels"), "labels", bumped), part)
    assert _train(folder, _config(tmp_path), tmp_path / "model", "--max-len", "64") == 2
    _one_line_refusal(capsys, "labels go up to id", "predicts 4 labels")


def test_a_missing_tokenizer_is_refused(dataset_64, tmp_path, capsys):
    import shutil

    folder = tmp_path / "notok"
    shutil.copytree(dataset_64, folder)
    shutil.rmtree(folder / "tokenizer")
    assert _train(folder, _config(tmp_path), tmp_path / "model", "--max-len", "64") == 2
    _one_line_refusal(capsys, str(folder), "not a dataset folder of the sequences stage (no tokenizer)")


def test_a_tokenizer_larger_than_the_models_vocabulary_is_refused(dataset_64, tmp_path, capsys):
    config = _config(tmp_path, config={**TINY["config"], "vocab_size": 100})
    assert _train(dataset_64, config, tmp_path / "model", "--max-len", "64") == 2
    _one_line_refusal(capsys, "tokenizer has", "embeddings 100")


def test_a_bad_config_file_names_its_key(dataset_64, tmp_path, capsys):
    config = _config(tmp_path, epoch=3)  # a typo of epochs
    assert _train(dataset_64, config, tmp_path / "model", "--max-len", "64") == 2
    _one_line_refusal(capsys, str(config), "epoch")


def test_checkpoints_follow_the_umask_and_keep_other_entries(dataset_64, tmp_path):
    from pipeline.datasets.pretrained import load_tokenizer
    from pipeline.training.model import build_model, load_checkpoint, save_checkpoint

    tokenizer = load_tokenizer(str(dataset_64 / "tokenizer"))
    model = build_model(TINY, tokenizer)
    out = tmp_path / "model"
    (out / "checkpoints").mkdir(parents=True)
    (out / "checkpoints" / "keep.txt").write_text("a resumable checkpoint\n")
    old = os.umask(0o027)
    try:
        save_checkpoint(model, tokenizer, TINY, out, {"max_len": 64})
        save_checkpoint(model, tokenizer, TINY, out, {"max_len": 64})  # replaces its own files
    finally:
        os.umask(old)
    entries = [p for p in out.rglob("*") if "checkpoints" not in p.parts]
    markers = {p.name for p in out.iterdir() if p.name.endswith(".punct")}
    # each file the tool wrote carries its marker, so a later save replaces it and nothing else
    assert markers == {".model.safetensors.punct", ".mixed_case.json.punct", ".punctuation.json.punct"}
    assert {p.name for p in out.iterdir()} - markers == {
        "checkpoints",
        "model.safetensors",
        "encoder",
        "tokenizer",
        "mixed_case.json",
        "punctuation.json",
    }  # no staging, scratch or lock left
    for path in entries:
        mode = stat.S_IMODE(path.stat().st_mode)
        assert mode == (0o750 if path.is_dir() else 0o640), (path, oct(mode))
    assert (out / "checkpoints" / "keep.txt").read_text() == "a resumable checkpoint\n"
    _, _, meta = load_checkpoint(out)
    assert meta["sequence"] == {"max_len": 64}
