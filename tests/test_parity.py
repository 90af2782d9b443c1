"""Every command that has a DVC stage writes the stage's bytes: the command line with options and the
stage with a params file, run on the same inputs, give byte-identical outputs.

The stages run first, as ``dvc repro`` runs them, each on the previous stage's outputs; each command
then runs on the very inputs its stage read.  (``train`` has its own parity test beside training's.)
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest
import yaml
from support.reliability import SAMPLES
from support.training import TINY_CONFIG

from pipeline import cli
from stages import align, audit, confusables, export, export_model, ingest, oversample, sequences, split

DATASET = "d"
SPLIT = {"ratios": {"train": 0.6, "dev": 0.2, "test": 0.2}, "seed": 7}
OVERSAMPLE = {"question_share": 0.05, "augment": {"kind": "alam", "alpha": 0.2, "copies": 2}}
SEQUENCES = {"vocab_size": 300, "max_len": 32, "stride": 4}
CORPORA = {
    "talks": {"reader": "text", "lang": "en", "input": str(SAMPLES / "en/talks.txt")},
    "talks_asr": {"reader": "transcript", "lang": "en", "input": str(SAMPLES / "en/talks_asr.txt")},
    "ayat": {"reader": "text", "lang": "ms", "input": str(SAMPLES / "ms/ayat.txt"), "doc_boundary": "line"},
}


def _digests(path: Path) -> dict[str, str]:
    """Every file under ``path`` (or ``path`` itself) by its path relative to ``path``: its sha256."""
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    return {
        str(p.relative_to(path)) if p != path else p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in files
    }


def _outputs(*paths: Path) -> dict[str, dict[str, str]]:
    return {path.name: _digests(path) for path in paths}


@pytest.fixture(scope="module")
def pipeline_run(tmp_path_factory):
    """The stages over the committed samples, in the layout of dvc.yaml: ``(params file, data folder)``."""
    root = tmp_path_factory.mktemp("stages")
    data = root / "data"
    words = root / "words.txt"
    words.write_text("makan\nminum\nmakam\nminta\nmakin\n", encoding="utf-8")
    params = root / "params.yaml"
    dataset = {"corpora": ["talks", "ayat"], "split": SPLIT, "oversample": OVERSAMPLE, "sequences": SEQUENCES}
    dataset["export"] = {"formats": ["tsv", "nemo", "hf"], "case_column": True}
    registry = {
        "corpora": CORPORA,
        "alignments": {
            "aligned": {"ref": "talks", "hyp": "talks_asr", "lang": "en", "pairs": str(SAMPLES / "en/talks_pairs.tsv")}
        },
        "confusables": {"ms_words": {"lang": "ms", "word_list": str(words), "k": 2}},
        "datasets": {DATASET: dataset},
        "train": {"tiny": {"dataset": DATASET, "lang": "en", "config": TINY_CONFIG}},
        "export_model": {"tiny": {"format": "onnx", "int8": True}},
    }
    params.write_text(yaml.safe_dump(registry, sort_keys=False), encoding="utf-8")
    p = ["--params", str(params)]
    segments, folder = data / "segments", data / "datasets" / DATASET
    for name in CORPORA:
        out = segments / f"{name}.parquet"
        assert ingest.main([name, *p, "--out", str(out), "--stats", str(data / "stats" / f"{name}.json")]) == 0
    ref, hyp = str(segments / "talks.parquet"), str(segments / "talks_asr.parquet")
    alignment = ["--out", str(segments / "aligned.parquet"), "--report", str(data / "alignment" / "aligned.json")]
    assert align.main(["aligned", *p, "--ref", ref, "--hyp", hyp, *alignment]) == 0
    conf = ["--vocab", str(words), "--out", str(root / "conf.parquet"), "--report", str(root / "conf.json")]
    assert confusables.main(["ms_words", *p, *conf]) == 0
    split_out = ["--out", str(folder / "split.parquet"), "--report", str(folder / "split_report.json")]
    assert split.main([DATASET, *p, "--segments-dir", str(segments), *split_out]) == 0
    over = ["--out", str(folder / "oversampled.parquet"), "--augmented", str(folder / "augmented.parquet")]
    over += ["--report", str(folder / "oversample_report.json")]
    assert oversample.main([DATASET, *p, "--in", str(folder / "split.parquet"), *over]) == 0
    seq = ["--out", str(folder / "sequences.parquet"), "--tokenizer", str(folder / "tokenizer")]
    seq += ["--report", str(folder / "report.json")]
    seq += ["--reports", str(folder / "split_report.json"), str(folder / "oversample_report.json")]
    assert sequences.main([DATASET, *p, "--in", str(folder / "oversampled.parquet"), *seq]) == 0
    assert export.main([DATASET, *p, "--in", str(folder / "oversampled.parquet"), "--out", str(folder / "export")]) == 0
    return params, data


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    """A tiny checkpoint (MiniLM's tokenizer, seeded weights): what export-model reads."""
    from pipeline.datasets.pretrained import load_tokenizer
    from pipeline.training.model import build_model, save_checkpoint

    folder = tmp_path_factory.mktemp("model") / "tiny"
    tokenizer = load_tokenizer("packaged:minilm")
    params = {"config": TINY_CONFIG, "head": "linear", "seed": 3}
    save_checkpoint(build_model(params, tokenizer), tokenizer, params, folder, sequence={"max_len": 64})
    return folder


def _ingest(params, data, out):
    got = [out / "talks.parquet", out / "talks.json"]
    argv = ["ingest", "--reader", "text", "--lang", "en", "--corpus", "talks", CORPORA["talks"]["input"]]
    assert cli.main([*argv, "--out", str(got[0]), "--stats", str(got[1])]) == 0
    return got, [data / "segments" / "talks.parquet", data / "stats" / "talks.json"]


def _align(params, data, out):
    got = [out / "aligned.parquet", out / "aligned.json"]
    segments = data / "segments"
    argv = ["align", "--ref", str(segments / "talks.parquet"), "--hyp", str(segments / "talks_asr.parquet")]
    argv += ["--lang", "en", "--pairs", str(SAMPLES / "en/talks_pairs.tsv"), "--corpus", "aligned"]
    assert cli.main([*argv, "--out", str(got[0]), "--report", str(got[1])]) == 0
    return got, [segments / "aligned.parquet", data / "alignment" / "aligned.json"]


def _confusables(params, data, out):
    got = [out / "conf.parquet", out / "conf.json"]
    words = params.parent / "words.txt"
    argv = ["confusables", "--lang", "ms", "--vocab", str(words), "--k", "2"]
    assert cli.main([*argv, "--out", str(got[0]), "--report", str(got[1])]) == 0
    return got, [params.parent / "conf.parquet", params.parent / "conf.json"]


def _split(params, data, out):
    got = [out / "split.parquet", out / "split_report.json"]
    segments = data / "segments"
    argv = ["split", str(segments / "talks.parquet"), str(segments / "ayat.parquet"), "--seed", "7"]
    argv += ["--ratios", "train=0.6", "dev=0.2", "test=0.2"]
    assert cli.main([*argv, "--out", str(got[0]), "--report", str(got[1])]) == 0
    folder = data / "datasets" / DATASET
    return got, [folder / "split.parquet", folder / "split_report.json"]


def _oversample(params, data, out):
    folder = data / "datasets" / DATASET
    got = [out / "oversampled.parquet", out / "augmented.parquet", out / "oversample_report.json"]
    argv = ["oversample", str(folder / "split.parquet"), "--question-share", "0.05", "--seed", "7"]
    argv += ["--augment", "kind=alam", "alpha=0.2", "copies=2"]
    assert cli.main([*argv, "--out", str(got[0]), "--augmented", str(got[1]), "--report", str(got[2])]) == 0
    return got, [folder / p.name for p in got]


def _sequences(params, data, out):
    folder = data / "datasets" / DATASET
    got = [out / DATASET / "sequences.parquet", out / DATASET / "tokenizer", out / DATASET / "report.json"]
    argv = ["sequences", str(folder / "oversampled.parquet"), "--vocab-size", "300", "--max-len", "32"]
    argv += ["--stride", "4", "--reports", str(folder / "split_report.json"), str(folder / "oversample_report.json")]
    argv += ["--out", str(got[0]), "--tokenizer-out", str(got[1]), "--report", str(got[2])]
    assert cli.main(argv) == 0  # the dataset's name: the folder holding --out, as in data/datasets/NAME
    return got, [folder / p.name for p in got]


def _export(params, data, out):
    folder = data / "datasets" / DATASET
    got = []
    for fmt in ("tsv", "nemo", "hf"):
        argv = ["export", "--format", fmt, "--case-column", str(folder / "oversampled.parquet")]
        assert cli.main([*argv, "--out", str(out / fmt)]) == 0
        got.append(out / fmt)
    return got, [folder / "export" / fmt for fmt in ("tsv", "nemo", "hf")]


def _audit(params, data, out):
    """The stage audits the registry; the command, the datasets given.  Same datasets, same bytes."""
    corpora_only = params.parent / "corpora.yaml"
    corpora_only.write_text(yaml.safe_dump({"corpora": CORPORA}), encoding="utf-8")
    stage_out = out / "stage" / "audit"
    assert audit.main(["--params", str(corpora_only), "--data-dir", str(data), "--out", str(stage_out)]) == 0
    inputs = [str(data / "segments" / f"{name}.parquet") for name in CORPORA]
    assert cli.main(["audit", *inputs, "--out", str(out / "command" / "audit")]) == 0
    return [out / "command" / "audit"], [stage_out]


def _export_model(params, data, out, model):
    assert (
        cli.main(["export-model", "--model", str(model), "--format", "onnx", "--int8", "--out", str(out / "cli")]) == 0
    )
    assert export_model.main(["tiny", "--params", str(params), "--model", str(model), "--out", str(out / "stage")]) == 0
    return [out / "cli"], [out / "stage"]


#: each command with a stage: how the command is run on the stage's inputs
COMMANDS = {
    "ingest": _ingest,
    "align": _align,
    "confusables": _confusables,
    "split": _split,
    "oversample": _oversample,
    "sequences": _sequences,
    "export": _export,
    "audit": _audit,
}


def _card_free(digests: dict[str, str]) -> dict[str, str]:
    """An hf export without its dataset card: the card says how each export was made (the command
    line's options, or the params file's entry), the one part meant to differ."""
    return {path: digest for path, digest in digests.items() if path != "README.md"}


@pytest.mark.parametrize("command", COMMANDS)
def test_the_command_writes_the_bytes_of_its_stage(command, pipeline_run, tmp_path):
    params, data = pipeline_run
    got, expected = COMMANDS[command](params, data, tmp_path)
    got, expected = _outputs(*got), _outputs(*expected)
    if command == "export":
        got["hf"], expected["hf"] = _card_free(got["hf"]), _card_free(expected["hf"])
    assert got == expected
    assert all(got.values())  # something was compared


@pytest.mark.slow  # torch, a model and ONNX Runtime's optimizer: about a minute
def test_export_model_writes_the_bytes_of_its_stage(pipeline_run, model, tmp_path):
    params, data = pipeline_run
    got, expected = _export_model(params, data, tmp_path, model)
    assert _outputs(*got)["cli"] == _outputs(*expected)["stage"]


def test_every_stage_has_a_parity_test(root):
    """A stage added without a command, or a command without its parity test, fails here."""
    stages = {
        p.stem.replace("_", "-")
        for p in (root / "stages").glob("*.py")
        if p.stem not in ("__init__", "common", "dvc_yaml")
    }
    tested = {*COMMANDS, "export-model", "train"}  # train: beside training's tests
    assert stages == tested
    assert tested <= set(cli.COMMANDS)


def test_export_refuses_a_url_on_the_command_line_as_the_stage_does(tmp_path, capsys):
    segments = tmp_path / "talks.parquet"
    argv = ["ingest", "--reader", "text", "--lang", "en", "--corpus", "talks", CORPORA["talks"]["input"]]
    assert cli.main([*argv, "--out", str(segments)]) == 0
    capsys.readouterr()
    assert cli.main(["export", "--format", "tsv", str(segments), "--out", "memory://bucket/x"]) == 2
    err = capsys.readouterr().err
    assert "error: memory://bucket/x: export reads and writes local paths only" in err and "internal" not in err


def test_a_pairs_file_implies_pair_by_file_in_params_and_on_the_command_line(tmp_path, capsys):
    from pipeline import params as P

    pairs = str(SAMPLES / "en/talks_pairs.tsv")
    entry = P.validate(P.AlignmentParams, {"ref": "a", "hyp": "b", "pairs": pairs}, "params.yaml")
    assert entry.pair_by == "file"
    with pytest.raises(P.ParamsError, match=r"pairs is read with pair_by file only \(pair_by is id\)"):
        P.validate(P.AlignmentParams, {"ref": "a", "hyp": "b", "pairs": pairs, "pair_by": "id"}, "params.yaml")
    argv = ["align", "--ref", "r.parquet", "--hyp", "h.parquet", "--lang", "en", "--pair-by", "id", "--pairs", pairs]
    assert cli.main([*argv, "--out", str(tmp_path / "o"), "--report", str(tmp_path / "r.json")]) == 2
    assert "error: --pairs: pairs is read with pair_by file only (pair_by is id)" in capsys.readouterr().err
