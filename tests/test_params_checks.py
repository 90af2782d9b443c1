"""Params that cannot miscount (issue 32 item 4, issue 34 item 7): keys given twice, counts beyond
the corpus, stride against the chunk, upper bounds on sizes, names a shell and a file system take,
environment overrides, and a description for every key."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
import typing

import pyarrow as pa
import pytest
import yaml
from pydantic import BaseModel

from pipeline import params as P
from pipeline.errors import ParamsError
from pipeline.labels import LABELS

SAMPLE = "corpora/samples/en/talks.txt"


def write(tmp_path, text: str):
    path = tmp_path / "params.yaml"
    path.write_text(text, encoding="utf-8")
    return path


def refused(tmp_path, text: str) -> str:
    with pytest.raises(ParamsError) as info:
        P.load(write(tmp_path, text), entries=[])
    message = str(info.value)
    assert "\n" not in message
    return message


# ------------------------------------------------------------------------------ duplicate keys


def test_a_corpus_entry_given_twice_is_refused_with_both_lines(tmp_path):
    text = (
        "corpora:\n"
        "  talks:\n"
        f"    reader: text\n    lang: en\n    input: {SAMPLE}\n"
        "  talks:\n"
        f"    reader: text\n    lang: zh\n    input: {SAMPLE}\n"
    )
    message = refused(tmp_path, text)
    assert message == f"{tmp_path / 'params.yaml'}:6: key 'talks' given twice (lines 2 and 6)"


def test_a_nested_key_given_twice_is_refused_too(tmp_path):
    text = "datasets:\n  ds:\n    corpora: []\n    split: {seed: 3, seed: 4}\n"
    message = refused(tmp_path, text)
    assert "'seed' given twice (lines 4 and 4)" in message


def test_merge_keys_and_distinct_keys_still_load(tmp_path):
    text = (
        "common: &c {reader: text, lang: en}\n"
        "corpora:\n"
        f"  a: {{<<: *c, input: {SAMPLE}}}\n"
        f"  b: {{<<: *c, lang: ms, input: {SAMPLE}}}\n"
    )
    data = P.load_yaml(text, "p.yaml")
    assert data["corpora"]["b"] == {"reader": "text", "lang": "ms", "input": SAMPLE}


# ------------------------------------------------------------------------------ split defaults


def test_empty_split_means_the_documented_defaults():
    split = P.DatasetParams.model_validate({"corpora": ["x"], "split": {}}).split
    assert split.ratios == {"train": 0.8, "dev": 0.1, "test": 0.1} and split.seed == 1
    assert P.SplitParams.model_fields["seed"].default == 1


def test_strict_needs_counts():
    with pytest.raises(P.ParamsError, match="strict checks split counts"):
        P.validate(P.SplitParams, {"strict": True}, "params.yaml")


def test_counts_filled_reports_every_short_split():
    got = P.SplitParams.model_validate({"counts": {"train": 11, "dev": 3, "test": 3}}).counts
    from pipeline.datasets.split import counts_filled

    assert counts_filled(got, 12) == {
        "train": {"asked": 11, "got": 11},
        "dev": {"asked": 3, "got": 1},
        "test": {"asked": 3, "got": 0},
    }
    assert all(v["asked"] == v["got"] for v in counts_filled(got, 17).values())


def _docs_table(n_docs: int) -> pa.Table:
    import numpy as np

    from pipeline.schema import segments_table

    words = [["a", "b", "c"]] * n_docs
    labels = [["O", "O", "PERIOD"]] * n_docs
    return segments_table(
        "c", "en", [f"d{i}" for i in range(n_docs)], np.zeros(n_docs, np.int64), words, labels, vocabulary=LABELS
    )


@pytest.mark.parametrize("strict", [False, True])
def test_counts_beyond_the_corpus_are_reported_or_refused(tmp_path, caplog, strict):
    import pyarrow.parquet as pq

    from pipeline.datasets.split import SplitInput, split_dataset
    from pipeline.errors import InputError

    source = tmp_path / "c.parquet"
    pq.write_table(_docs_table(5), source)
    params = P.SplitParams.model_validate({"counts": {"train": 3, "dev": 2, "test": 2}, "seed": 1, "strict": strict})
    out, report = tmp_path / "split.parquet", tmp_path / "report.json"
    inputs = [SplitInput("c", str(source))]
    if strict:
        with pytest.raises(InputError, match=r"ask for 7 documents and the corpora have 5.*test 0 of 2.*strict"):
            split_dataset(inputs, params, out, report)
        assert not out.exists() and not report.exists()
        return
    with caplog.at_level("WARNING"):
        split_dataset(inputs, params, out, report)
    assert "dev 2 of 2" not in caplog.text and "test 0 of 2" in caplog.text
    written = json.loads(report.read_text())
    assert written["counts"] == {
        "train": {"asked": 3, "got": 3},
        "dev": {"asked": 2, "got": 2},
        "test": {"asked": 2, "got": 0},
    }


# ------------------------------------------------------------------------------ stride and bounds


def test_stride_as_long_as_a_chunk_is_refused_naming_the_key():
    with pytest.raises(P.ParamsError, match=r"stride: 62 words must be fewer than the 62"):
        P.validate(P.SequencesParams, {"max_len": 64, "stride": 62}, "params.yaml")
    assert P.SequencesParams.model_validate({"max_len": 64, "stride": 61}).stride == 61


def test_stride_longer_than_a_chunk_of_long_words_is_refused_not_one_word_steps():
    from pipeline.datasets.sequences import build_sequences, train_tokenizer
    from pipeline.labels import PAPERS

    words = ["abcdefghij" + str(i) for i in range(40)]
    tokenizer = train_tokenizer(iter(["zz", "yy"] * 50), vocab_size=100)
    table = _docs_table(1).set_column(
        _docs_table(1).schema.get_field_index("words"), "words", pa.array([words], pa.list_(pa.string()))
    )
    table = table.set_column(table.schema.get_field_index("labels"), "labels", pa.array([["O"] * 40]))
    table = table.set_column(table.schema.get_field_index("case"), "case", pa.array([["O"] * 40]))
    with pytest.raises(ParamsError, match="stride: 5 words is not fewer than the"):
        build_sequences(table, tokenizer, max_len=24, stride=5, label_set=PAPERS)


@pytest.mark.parametrize(
    "path,value",
    [
        ("sequences.vocab_size", 10**9),
        ("sequences.max_len", 10**7),
        ("engine.workers", 100_000),
        ("engine.shard_rows", 10**12),
    ],
)
def test_sizes_have_upper_bounds(tmp_path, path, value):
    section, key = path.split(".")
    text = f"datasets:\n  ds:\n    {section}: {{{key}: {value}}}\n"
    message = refused(tmp_path, text)
    assert f"datasets.ds.{section}.{key}: input should be less than or equal to" in message


def test_engine_workers_bound(tmp_path):
    assert "engine.workers: input should be less than or equal to 1024" in refused(
        tmp_path, "engine: {workers: 5000}\n"
    )


# ------------------------------------------------------------------------------ names


@pytest.mark.parametrize("name", ["my talks", "talks[1]", "a;rm -rf x", ".hidden", "-x", "t$(id)", "é-x"])
def test_unsafe_corpus_names_are_refused_naming_the_key(tmp_path, name):
    text = yaml.safe_dump({"corpora": {name: {"reader": "text", "lang": "en", "input": SAMPLE}}})
    message = refused(tmp_path, text)
    assert f"corpora.{name}: {name!r} is not a usable name" in message


def test_unsafe_dataset_names_are_refused(tmp_path):
    message = refused(tmp_path, "datasets:\n  'my ds': {corpora: []}\n")
    assert "datasets.my ds: 'my ds' is not a usable name" in message


@pytest.mark.parametrize("name", ["en_talks", "IWSLT-2012.dev", "3r", "a.b-c_d"])
def test_safe_names_pass(name):
    assert P.name_problem(name) is None


def test_generated_commands_quote_what_they_interpolate():
    from stages.dvc_yaml import command

    line = command("stages.ingest", "talks", "--out", "data/my segments/talks.parquet")
    assert shlex.split(line) == [
        "python",
        "-m",
        "stages.ingest",
        "talks",
        "--out",
        "data/my segments/talks.parquet",
    ]
    assert command(None, "--x", "a;b") == "--x 'a;b'"


# ------------------------------------------------------------------------------ environment


@pytest.mark.parametrize(
    "environ,message",
    [
        ({"PUNCT_WORKERS": "abc"}, "PUNCT_WORKERS: expected a whole number >= 0, got 'abc'"),
        ({"PUNCT_WORKERS": "-2"}, "PUNCT_WORKERS: expected a whole number >= 0, got '-2'"),
        ({"PUNCT_WORKERS": "99999"}, "PUNCT_WORKERS: expected at most 1024, got '99999'"),
        ({"PUNCT_ENGINE": "spark"}, "PUNCT_ENGINE: expected one of local, dask, got 'spark'"),
    ],
)
def test_environment_overrides_are_checked_naming_the_variable(monkeypatch, environ, message):
    for key, value in environ.items():
        monkeypatch.setenv(key, value)
    with pytest.raises(ParamsError) as info:
        P.Params().engine_for()
    assert str(info.value) == message


def test_environment_overrides_apply(monkeypatch):
    monkeypatch.setenv("PUNCT_WORKERS", " 3 ")
    monkeypatch.setenv("PUNCT_ENGINE", "dask")
    engine = P.Params().engine_for()
    assert (engine.workers, engine.engine) == (3, "dask")
    monkeypatch.setenv("PUNCT_WORKERS", "")
    monkeypatch.delenv("PUNCT_ENGINE")
    assert P.Params().engine_for().workers == 0


def test_a_bad_environment_value_is_one_line_from_a_stage(tmp_path):
    from support.reliability import ROOT

    command = [sys.executable, "-m", "stages.audit", "--params", "params.yaml"]
    command += ["--data-dir", str(tmp_path / "nodata"), "--out", str(tmp_path / "reports")]
    done = subprocess.run(command, cwd=ROOT, env={**os.environ, "PUNCT_WORKERS": "abc"}, capture_output=True, text=True)
    assert done.returncode == 2, done.stderr
    assert done.stderr.strip().splitlines() == ["error: PUNCT_WORKERS: expected a whole number >= 0, got 'abc'"]
    assert not (tmp_path / "reports").exists()


# ------------------------------------------------------------------------------ descriptions


def _models(model, seen):
    if model in seen:
        return
    seen.add(model)
    for info in model.model_fields.values():
        for arg in [info.annotation, *typing.get_args(info.annotation)]:
            for inner in [arg, *typing.get_args(arg)]:
                if isinstance(inner, type) and issubclass(inner, BaseModel):
                    _models(inner, seen)


def test_every_params_key_has_a_description():
    from pipeline.ingest import reader_module, readers
    from pipeline.params import TrainParams

    seen: set = set()
    roots = [
        P.EngineParams,
        P.CorpusBase,
        P.AlignmentParams,
        P.ConfusablesParams,
        P.DatasetParams,
        TrainParams,
        *(reader_module(name).Options for name in readers()),
    ]
    for root in roots:
        _models(root, seen)
    missing = [
        f"{model.__name__}.{name}"
        for model in sorted(seen, key=lambda m: m.__name__)
        for name, info in model.model_fields.items()
        if not info.exclude and not (info.description or "").strip()
    ]
    assert not missing, f"params keys without a description: {', '.join(missing)}"


def test_the_largest_vocab_size_allowed_is_one_the_tokenizer_trainer_handles():
    from pipeline.datasets.sequences import train_tokenizer

    tokenizer = train_tokenizer(iter(["the", "cat", "sat", "on", "the", "mat"] * 5), vocab_size=P.MAX_VOCAB_SIZE)
    assert 10 < len(tokenizer) < 100  # a small corpus gives a small vocabulary, no abort
    assert P.SequencesParams.model_validate({"vocab_size": P.MAX_VOCAB_SIZE}).vocab_size == P.MAX_VOCAB_SIZE


# ------------------------------------------------------------------------------ model exports


def test_a_model_export_names_a_train_entry_and_known_keys(tmp_path):
    train = "datasets:\n  ds: {corpora: []}\ntrain:\n  tiny: {dataset: ds}\n"
    where = tmp_path / "params.yaml"
    assert refused(tmp_path, train + "export_model:\n  tiyn: {int8: true}\n") == (
        f"{where}: export_model.tiyn: 'tiyn' is not a train entry; did you mean 'tiny'?"
    )
    assert "export_model.tiny.format" in refused(tmp_path, train + "export_model:\n  tiny: {format: tflite}\n")
    assert "export_model.tiny.int8" in refused(tmp_path, train + "export_model:\n  tiny: {int8: 1}\n")
    loaded = P.load(write(tmp_path, train + "export_model:\n  tiny: {int8: true}\n"), entries=[])
    assert loaded.export_model["tiny"].format == "onnx" and loaded.export_model["tiny"].int8 is True


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "corpora: {a: {reader: text, lang: en, input: a.txt}, b: {reader: text, lang: en, input: b.txt}}\n"
            "alignments: {x: {ref: a, hyp: b, workers: 2}}\n",
            "alignments.x.workers: unknown key",
        ),
        ("confusables: {c: {lang: en, word_list: w.txt, workers: 2}}\n", "confusables.c.workers: unknown key"),
        (
            "datasets: {d: {}}\ntrain: {t: {dataset: d, config: {model_type: bert}, workers: 2}}\n",
            "train.t.workers: unknown key; did you mean 'loader_workers'?",
        ),
        (
            "datasets: {d: {}}\ntrain: {t: {dataset: d, config: {model_type: bert}, "
            "augmentation: {kind: alam, copies: 3}}}\n",
            "augmentation.copies: training draws augmentation anew each epoch",
        ),
    ],
)
def test_a_key_nothing_reads_is_refused(tmp_path, text, message):
    """``workers`` counts the engine's processes only: an alignment's processes are its engine's, the
    confusables search has threads, training's DataLoader loader_workers."""
    with pytest.raises(ParamsError) as info:
        P.load(write(tmp_path, text))
    assert message in str(info.value) and "\n" not in str(info.value)


def test_confusables_threads_is_a_key_and_an_option(tmp_path):
    params = P.load(write(tmp_path, "confusables: {c: {lang: en, word_list: w.txt, threads: 2}}\n"))
    assert params.confusables["c"].threads == 2
    from pipeline.cli import build_parser

    args = build_parser().parse_args(["confusables", "--lang", "en", "--vocab", "w", "--out", "o", "--threads", "3"])
    assert args.threads == 3
