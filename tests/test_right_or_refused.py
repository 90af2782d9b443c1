"""Results that are the user's, or refused: empty TSV words, exports that load their own rows, empty
splits, the label set carried by every Parquet file, command-line values checked as params are."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from support.reliability import call, error_line

#: a user's labelled TSV: a zero-width "word" with a COMMA after "one", an empty word with a QUESTION
#: after "two" (its label merges: QUESTION > PERIOD), an empty word opening the file
TSV = "\tCOMMA\nzero\tO\none\tO\n\u200b\tCOMMA\nmore\tPERIOD\ntwo\tPERIOD\n\tQUESTION\nthree\tO\nend\tPERIOD\n"


def test_an_empty_tsv_word_is_dropped_and_counted_and_the_nemo_lines_agree(tmp_path):
    source = tmp_path / "mine.tsv"
    source.write_text(TSV, encoding="utf-8")
    out, stats = tmp_path / "mine.parquet", tmp_path / "stats.json"
    rc, err = call(
        "pipeline",
        ["ingest", "-q", "--reader", "tsv", "--lang", "en", "--corpus", "mine", source, "--out", out, "--stats", stats],
    )
    assert rc == 0, err
    counts = json.loads(stats.read_text(encoding="utf-8"))
    flat = json.dumps(counts)
    for key, n in (
        ("empty_words", 3),
        ("empty_word_labels_dropped", 1),
        ("empty_word_labels_moved", 1),
        ("empty_word_labels_merged", 1),
    ):
        assert f'"{key}": {n}' in flat, (key, counts)

    from pipeline.engine.reading import read_segments

    table = read_segments(out)
    assert table["words"].to_pylist() == [["zero", "one", "more"], ["two"], ["three", "end"]]
    assert table["labels"].to_pylist() == [["O", "COMMA", "PERIOD"], ["QUESTION"], ["O", "PERIOD"]]

    rc, err = call("pipeline", ["export", "-q", "--format", "nemo", out, "--out", tmp_path / "nemo"])
    assert rc == 0, err
    text = (tmp_path / "nemo/train/text.txt").read_text(encoding="utf-8").splitlines()
    labels = (tmp_path / "nemo/train/labels.txt").read_text(encoding="utf-8").splitlines()
    assert len(text) == len(labels) == 3
    for words, tags in zip(text, labels):
        assert words.split(" ") == words.split() and len(words.split(" ")) == len(tags.split(" "))
    assert labels[0] == "OO ,O .O"


# ------------------------------------------------------------------ hf exports load their own rows

LOAD = """
import json, sys
import datasets
out = {}
for folder in sys.argv[1:]:
    loaded = datasets.load_dataset(folder)
    out[folder] = {split: list(loaded[split]["words"]) for split in loaded}
print(json.dumps(out))
"""


def _hf_rows(tmp_path, *folders) -> dict:
    """What ``datasets.load_dataset`` gives for each folder, in a fresh process over one shared cache."""
    env = {"HF_DATASETS_CACHE": str(tmp_path / "hf-cache"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    done = subprocess.run(
        [sys.executable, "-c", LOAD, *map(str, folders)],
        env={**os.environ, **env},
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def _ingest_text(tmp_path, name: str, text: str):
    source = tmp_path / f"{name}.txt"
    source.write_text(text, encoding="utf-8")
    out = tmp_path / f"{name}.parquet"
    rc, err = call(
        "pipeline", ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", name, source, "--out", out]
    )
    assert rc == 0, err
    return out


def test_hf_exports_load_their_own_rows_over_one_cache(tmp_path):
    pytest.importorskip("datasets")
    first = _ingest_text(tmp_path, "first", "The first file.\nIt has two sentences.\n")
    second = _ingest_text(tmp_path, "second", "Another text entirely?\nYes, with other words.\n")
    for dataset, folder in ((first, tmp_path / "x1/hf"), (second, tmp_path / "x2/hf")):
        rc, err = call("pipeline", ["export", "-q", "--format", "hf", dataset, "--out", folder])
        assert rc == 0, err
    rows = _hf_rows(tmp_path, tmp_path / "x1/hf", tmp_path / "x2/hf")
    assert rows[str(tmp_path / "x1/hf")] == {"train": [["the", "first", "file"], ["it", "has", "two", "sentences"]]}
    assert rows[str(tmp_path / "x2/hf")] == {
        "train": [["another", "text", "entirely"], ["yes", "with", "other", "words"]]
    }

    # the second dataset exported over the first folder: loaded as itself, the first's cache unused
    rc, err = call("pipeline", ["export", "-q", "--format", "hf", second, "--out", tmp_path / "x1/hf"])
    assert rc == 0, err
    again = _hf_rows(tmp_path, tmp_path / "x1/hf")
    assert again[str(tmp_path / "x1/hf")] == rows[str(tmp_path / "x2/hf")]
    # the fingerprint is of the rows: the same rows exported again give the same card and files
    names = sorted(p.name for p in (tmp_path / "x1/hf/data").iterdir())
    assert names == sorted(p.name for p in (tmp_path / "x2/hf/data").iterdir())
    header = (tmp_path / "x1/hf/README.md").read_text(encoding="utf-8").split("---")[1]
    assert header == (tmp_path / "x2/hf/README.md").read_text(encoding="utf-8").split("---")[1]
    assert f"path: data/train-{names[0].split('-')[1]}-*.parquet" in header


# ------------------------------------------------------------ command-line values checked as params are


@pytest.mark.parametrize("name", ["", "two\nlines", "a|b", "../../x", "-x", "my corpus"])
def test_a_corpus_name_the_params_refuse_is_refused_on_the_command_line(tmp_path, name):
    source = tmp_path / "mine.txt"
    source.write_text("Hello there.\n", encoding="utf-8")
    out = tmp_path / "out.parquet"
    line = error_line(
        *call("pipeline", ["ingest", "--reader", "text", "--lang", "en", f"--corpus={name}", source, "--out", out])
    )
    assert line.startswith("error: --corpus: ") and "is not a usable name" in line
    assert not out.exists()
    # the same name in a params file is refused by the same words
    from pipeline import params as P

    params = tmp_path / "params.yaml"
    params.write_text(
        json.dumps({"corpora": {name: {"reader": "text", "lang": "en", "input": str(source)}}}), encoding="utf-8"
    )
    with pytest.raises(P.ParamsError, match="is not a usable name"):
        P.load(params)


def test_align_and_train_names_are_checked_too(tmp_path):
    ref = _ingest_text(tmp_path, "ref", "Hello there.\n")
    args = ["align", "--ref", ref, "--hyp", ref, "--lang", "en", "--pair-by", "order", "--corpus", "a|b"]
    line = error_line(*call("pipeline", [*args, "--out", tmp_path / "o.parquet", "--report", tmp_path / "r.json"]))
    assert line.startswith("error: --corpus: ") and not (tmp_path / "o.parquet").exists()
    args = ["train", "--dataset", tmp_path, "--config", tmp_path / "c.yaml", "--out", tmp_path / "m", "--name", "../x"]
    assert error_line(*call("pipeline", args)).startswith("error: --name: ")


@pytest.mark.parametrize(
    "option, values, key",
    [
        ("--ratios", ["train=0.9", "train=0.1", "dev=0.1"], "train"),
        ("--counts", ["dev=1", "test=1", "dev=2"], "dev"),
    ],
)
def test_a_split_key_given_twice_is_refused(tmp_path, option, values, key):
    dataset = _ingest_text(tmp_path, "mine", "Hello there.\n\nAnother one.\n")
    out = tmp_path / "split.parquet"
    args = ["split", dataset, option, *values, "--out", out, "--report", tmp_path / "r.json"]
    line = error_line(*call("pipeline", args))
    assert line.startswith(f"error: {option} ") and f"'{key}' is given twice" in line
    assert not out.exists()


def test_a_reader_option_given_twice_or_over_its_flag_is_refused(tmp_path):
    source = tmp_path / "mine.txt"
    source.write_text("Hello there.\n", encoding="utf-8")
    base = ["ingest", "--reader", "text", "--lang", "en", "--corpus", "mine", source, "--out", tmp_path / "o"]
    for extra in (
        ["--option", "quoting=csv", "--option", "quoting=none"],
        ["--quoting", "csv", "--option", "quoting=none"],
        ["--option", "lang=hi"],
    ):
        assert "is given twice" in error_line(*call("pipeline", [*base, *extra]))


@pytest.mark.parametrize(
    "args, flag",
    [
        (["--min-marks", "-1"], "--min-marks"),
        (["--ratios", "train=-0.5", "dev=1"], "--ratios.train"),
        (["--ratios", "train=lots"], "--ratios.train"),
        (["--ratios", "validation=0.5"], "--ratios"),
        (["--min-sentences", "-2"], "--min-sentences"),
        (["--workers", "100000"], "--workers"),
    ],
)
def test_split_options_are_checked_by_the_split_schema(tmp_path, args, flag):
    dataset = _ingest_text(tmp_path, "mine", "Hello there.\n")
    line = error_line(
        *call("pipeline", ["split", dataset, *args, "--out", tmp_path / "s", "--report", tmp_path / "r.json"])
    )
    assert line.startswith(f"error: {flag}"), line


# ------------------------------------------------------------------------------------- empty splits


def test_an_empty_split_is_named_by_split_and_listed_by_the_audit(tmp_path):
    dataset = _ingest_text(tmp_path, "mine", "One document only.\nIt has two lines?\n")
    out, report = tmp_path / "split.parquet", tmp_path / "report.json"
    rc, err = call(
        "pipeline", ["split", dataset, "--ratios", "train=0.6", "dev=0.2", "test=0.2", "--out", out, "--report", report]
    )
    assert rc == 0, err
    warnings = [line for line in err.splitlines() if "no documents" in line]
    assert len(warnings) == 1 and "split dev, test" in warnings[0], err
    assert "train 1 docs, 7 words, dev 0 docs, 0 words, test 0 docs, 0 words" in err
    written = json.loads(report.read_text(encoding="utf-8"))
    assert written["splits"] == {
        "train": {"documents": 1, "segments": 2, "words": 7},
        "dev": {"documents": 0, "segments": 0, "words": 0},
        "test": {"documents": 0, "segments": 0, "words": 0},
    }
    assert written["empty_splits"] == ["dev", "test"]
    # a split of ratio 0 is empty by request: not warned about
    rc, err = call(
        "pipeline",
        [
            "split",
            dataset,
            "--ratios",
            "train=1",
            "dev=0",
            "test=0",
            "--out",
            tmp_path / "s2",
            "--report",
            tmp_path / "r2.json",
        ],
    )
    assert rc == 0 and "no documents" not in err, err
    assert "empty_splits" not in json.loads((tmp_path / "r2.json").read_text(encoding="utf-8"))

    rc, err = call("pipeline", ["audit", "-q", out, "--out", tmp_path / "audit", "--markdown"])
    assert rc == 0, err
    audited = json.loads((tmp_path / "audit/audit.json").read_text(encoding="utf-8"))["mine"]["splits"]
    assert {name: s["words"] for name, s in audited.items()} == {"train": 7, "dev": 0, "test": 0}
    table1 = (tmp_path / "audit/table1.md").read_text(encoding="utf-8")
    assert "| mine / dev | 0 |" in table1 and "| mine / test | 0 |" in table1


def test_training_without_a_split_to_score_is_refused_before_any_step(tmp_path):
    pytest.importorskip("torch")
    import yaml
    from support.training import TINY, dataset, tokenizer_of, with_split

    from pipeline.engine.reading import read_segments

    table = read_segments(_ingest_text(tmp_path, "mine", "One line here.\nAnother line, yes?\n"))
    table = with_split(table, ["train"] * table.num_rows)
    dataset(tmp_path / "ds", table, tokenizer_of(table, vocab_size=60), max_len=16)
    (tmp_path / "train.yaml").write_text(yaml.safe_dump(TINY), encoding="utf-8")
    args = [
        "train",
        "--dataset",
        tmp_path / "ds",
        "--config",
        tmp_path / "train.yaml",
        "--out",
        tmp_path / "model",
        "--max-len",
        "16",
    ]
    line = error_line(*call("pipeline", args))
    assert "the test and dev splits have no sequences" in line
    assert not (tmp_path / "model").exists()


# ------------------------------------------------------------------- the label set travels with files

EXTENDED_TEXT = "One thing: it works; mostly.\nDoes it? Yes, it does!\n\nA second document: short.\n"


def test_a_part_copied_out_of_an_extended_dataset_is_read_as_extended(tmp_path):
    import shutil

    source = tmp_path / "mine.txt"
    source.write_text(EXTENDED_TEXT, encoding="utf-8")
    dataset = tmp_path / "mine.parquet"
    args = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "mine", "--label-set", "extended"]
    rc, err = call("pipeline", [*args, source, "--out", dataset])
    assert rc == 0, err
    part = tmp_path / "copied.parquet"
    shutil.copyfile(dataset / "part-00000.parquet", part)

    rc, err = call("pipeline", ["audit", "-q", part, "--out", tmp_path / "audit"])
    assert rc == 0, err
    audited = json.loads((tmp_path / "audit/audit.json").read_text(encoding="utf-8"))["mine"]
    assert audited["labels"]["COLON"] == 2 and audited["labels"]["SEMICOLON"] == 1
    assert abs(sum(audited["label_shares"].values()) - 100) < 0.01

    out = tmp_path / "split.parquet"
    rc, err = call("pipeline", ["split", "-q", part, "--out", out, "--report", tmp_path / "r.json"])
    assert rc == 0, err
    manifest = json.loads((out / "_punct.json").read_text(encoding="utf-8"))
    assert manifest["label_set"]["name"] == "extended"
    rc, err = call("pipeline", ["export", "-q", "--format", "nemo", part, "--out", tmp_path / "nemo"])
    assert rc == 0, err
    assert ":" in (tmp_path / "nemo/train/labels.txt").read_text(encoding="utf-8")

    # the same ingest twice gives the same bytes: the label set's metadata is deterministic
    rc, err = call("pipeline", [*args, source, "--out", tmp_path / "again.parquet"])
    assert rc == 0, err
    assert (tmp_path / "again.parquet/part-00000.parquet").read_bytes() == part.read_bytes()


def test_a_file_whose_rows_are_not_of_its_label_set_is_refused(tmp_path):
    import pyarrow.parquet as pq

    from pipeline.labels import PAPERS, file_metadata

    source = tmp_path / "mine.txt"
    source.write_text(EXTENDED_TEXT, encoding="utf-8")
    extended, papers = tmp_path / "extended.parquet", tmp_path / "papers.parquet"
    base = ["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", "mine", source]
    assert call("pipeline", [*base, "--label-set", "extended", "--out", extended])[0] == 0
    assert call("pipeline", [*base, "--out", papers])[0] == 0

    # an extended part put in a papers dataset's folder: a part of another dataset
    (papers / "part-00000.parquet").write_bytes((extended / "part-00000.parquet").read_bytes())
    line = error_line(*call("pipeline", ["audit", papers, "--out", tmp_path / "a1"]))
    assert "label set extended" in line and "label set papers" in line and "part-00000.parquet" in line

    # a file whose metadata says papers while its rows hold COLON and SEMICOLON
    table = pq.read_table(extended / "part-00000.parquet")
    table = table.replace_schema_metadata({**table.schema.metadata, **file_metadata(PAPERS)})
    pq.write_table(table, tmp_path / "lying.parquet")
    for command in (
        ["audit", tmp_path / "lying.parquet", "--out", tmp_path / "a2"],
        ["split", tmp_path / "lying.parquet", "--out", tmp_path / "s", "--report", tmp_path / "r.json"],
        ["export", "--format", "tsv", tmp_path / "lying.parquet", "--out", tmp_path / "tsv"],
    ):
        line = error_line(*call("pipeline", command))
        assert "outside its label set papers" in line and "COLON" in line, line


def test_the_stages_name_an_empty_split_and_export_fingerprinted_hf_folders(tmp_path):
    """The split and export stages (what dvc repro runs) over a user's one-document corpus."""
    seg = tmp_path / "data/segments"
    seg.mkdir(parents=True)
    source = tmp_path / "mine.txt"
    source.write_text("One document only.\nIt has two lines?\n", encoding="utf-8")
    params = {
        "corpora": {"mine": {"reader": "text", "lang": "en", "input": str(source)}},
        "datasets": {"ds": {"corpora": ["mine"], "split": {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}}}},
    }
    (tmp_path / "params.yaml").write_text(json.dumps(params), encoding="utf-8")
    p = ["--params", tmp_path / "params.yaml", "-q"]
    rc, err = call("stages.ingest", ["mine", *p, "--out", seg / "mine.parquet", "--stats", tmp_path / "stats.json"])
    assert rc == 0, err
    ds = tmp_path / "data/datasets/ds"
    split = ["ds", *p, "--segments-dir", seg, "--out", ds / "split.parquet", "--report", ds / "split_report.json"]
    rc, err = call("stages.split", split)
    assert rc == 0 and "no documents in split dev, test" in err, err
    report = json.loads((ds / "split_report.json").read_text(encoding="utf-8"))
    assert report["empty_splits"] == ["dev", "test"] and report["splits"]["train"]["documents"] == 1

    params["datasets"]["ds"]["export"] = {"formats": ["hf"]}
    (tmp_path / "params.yaml").write_text(json.dumps(params), encoding="utf-8")
    rc, err = call("stages.export", ["ds", *p, "--in", ds / "split.parquet", "--out", ds / "export"])
    assert rc == 0, err
    manifest = json.loads((ds / "export/hf/_punct.json").read_text(encoding="utf-8"))
    fingerprint = manifest["fingerprint"]
    assert [f.name for f in (ds / "export/hf/data").iterdir()] == [f"train-{fingerprint}-00000.parquet"]
    assert f"path: data/train-{fingerprint}-*.parquet" in (ds / "export/hf/README.md").read_text(encoding="utf-8")


def test_an_empty_dev_split_is_named_and_test_is_still_scored(tmp_path, caplog):
    pytest.importorskip("torch")
    from support.training import dataset, tokenizer_of, with_split

    from pipeline.engine.reading import read_segments
    from pipeline.training.checks import scored_splits

    table = read_segments(_ingest_text(tmp_path, "mine", "One line here.\nAnother line, yes?\n"))
    table = with_split(table, ["train", "test"])
    data = dataset(tmp_path / "ds", table, tokenizer_of(table, vocab_size=60), max_len=16)
    with caplog.at_level("WARNING"):
        assert scored_splits(data, tmp_path / "ds", "train m") == ["test"]
    warned = [r.getMessage() for r in caplog.records if r.levelname == "WARNING"]
    assert warned == [f"train m: split dev of {tmp_path / 'ds'} has no sequences: not scored"]
