"""Label sets as data: the built-in tables, a user's table (and its one-line refusals), and a corpus
ingested with ``extended`` keeping ``!``, ``:``, ``;`` and dashes apart through split, sequences,
training, evaluation and every export, on TED XML and FLORES Hindi; datasets of two sets refused."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
import pytest
from support.ingesting import ingest_files
from support.training import TINY

from pipeline.datasets.export import export_datasets
from pipeline.datasets.oversample import oversample_dataset
from pipeline.datasets.sequences import sequences_dataset
from pipeline.datasets.split import SplitInput, split_dataset
from pipeline.engine.dataset import dataset_labels, labels_of
from pipeline.errors import InputError, ParamsError
from pipeline.labels import (
    LABELS,
    PAPERS,
    RENDERED_MARK,
    SENTENCE_END_IDS,
    LabelSetError,
    built_in_label_sets,
    label_set,
    parse_label_set,
)
from pipeline.params import OversampleParams, SequencesParams, SplitParams
from pipeline.text.labelling import label_lines, render
from pipeline.text.languages import get_language

KEPT_APART = ("EXCLAMATION", "COLON", "SEMICOLON", "DASH")
FLORES_HINDI = "indic/flores/hin_Deva.devtest"


def test_papers_is_the_four_labels_of_the_papers():
    papers = label_set("papers")
    assert papers is PAPERS and papers.labels == LABELS == ("O", "COMMA", "PERIOD", "QUESTION")
    assert papers.merges == LABELS and papers.rendered() == RENDERED_MARK
    assert papers.sentence_end_ids == SENTENCE_END_IDS == {2, 3}
    assert papers.is_papers and not papers.script_marks and not papers.relabel


def test_built_in_sets():
    assert {"papers", "extended", "extended_danda"} <= set(built_in_label_sets())
    extended = label_set("extended")
    assert {"O", "COMMA", "PERIOD", "QUESTION", *KEPT_APART} <= set(extended.labels)
    assert extended.labels[0] == "O" and extended.labels[-1] == "QUESTION"
    assert [extended.merges[extended.id(l)] for l in KEPT_APART] == ["PERIOD", "COMMA", "PERIOD", "COMMA"]
    assert extended.mark("PERIOD") == "." and extended.mark("PERIOD", "Devanagari") == "।"
    assert extended.mark("EXCLAMATION") == "!" and extended.mark("DASH") == "—"
    danda = label_set("extended_danda")
    assert danda.merges[danda.id("DANDA")] == "PERIOD" and danda.mark("DANDA") == "।"
    assert danda.mark("PERIOD", "Devanagari") == "."  # the danda is its own label there


def test_extended_keeps_marks_apart_and_merges_back_to_the_papers():
    line = pa.array(["Wait! here: one; two -- three — four, five?! six. seven …"], pa.string())
    papers = label_lines(line, get_language("en"))
    extended = label_lines(line, get_language("en", None, "extended"))
    assert papers.words.to_pylist() == extended.words.to_pylist()
    got = extended.labels.to_pylist()[0]
    assert got == [
        "EXCLAMATION", "COLON", "SEMICOLON", "DASH", "DASH", "COMMA", "QUESTION", "PERIOD", "PERIOD"
    ]  # fmt: skip
    merged = [label_set("extended").merges[label_set("extended").id(l)] for l in got]
    assert merged == papers.labels.to_pylist()[0]
    words = extended.words.to_pylist()[0]
    assert render(words, got, label_set("extended")) == "wait! here: one; two— three— four, five? six. seven."


def _ted_with_marks(shared, folder):
    """The TED XML (the fixture's talks are written without ``! : ;`` and dashes): some sentence ends
    and commas made those marks, the file otherwise as it is."""
    text = (shared / "iwslt_en_raw" / "IWSLT12.TALK.dev2010.en-fr.en.xml").read_text(encoding="utf-8")
    n = iter(range(10**9))
    ends = ("!", ":", ";", " --", " —", ".")
    text = re.sub(r"(?<=\w)[.,] (?=\w)", lambda m: ends[next(n) % len(ends)] + " ", text)
    path = folder / "ted.xml"
    path.write_text(text, encoding="utf-8")
    return path


def _counts(path) -> dict[str, int]:
    flat = pc.list_flatten(pq.read_table(path, columns=["labels"])["labels"])
    return {row["values"]: row["counts"] for row in pc.value_counts(flat).to_pylist()}


@pytest.fixture(scope="module")
def ingested(shared, tmp_path_factory):
    """TED XML and FLORES Hindi ingested with ``extended`` and with ``papers``."""
    folder = tmp_path_factory.mktemp("label_sets")
    ted = _ted_with_marks(shared, folder)
    for name in ("extended", "papers"):
        ingest_files("ted_xml", ted, "en", "ted", folder / name / "ted", label_set=name)
        ingest_files("text", shared / FLORES_HINDI, "hi", "hi", folder / name / "hi", label_set=name)
    return folder


def test_ingest_records_the_set_and_keeps_marks_apart(ingested, shared):
    # the committed Hindi cut has no "!" (the whole FLORES file has): each mark its source holds
    hindi = (shared / FLORES_HINDI).read_text(encoding="utf-8")
    marks = {"EXCLAMATION": "!", "COLON": ":", "SEMICOLON": ";", "DASH": "—"}
    expected = {"ted": KEPT_APART, "hi": tuple(label for label in KEPT_APART if marks[label] in hindi)}
    assert len(expected["hi"]) >= 3
    for corpus in ("ted", "hi"):
        manifest = json.loads((ingested / "extended" / corpus / "_punct.json").read_text())
        assert manifest["label_set"]["name"] == "extended"
        assert dataset_labels(ingested / "extended" / corpus).labels == label_set("extended").labels
        counts = _counts(ingested / "extended" / corpus)
        assert all(counts.get(label, 0) > 0 for label in expected[corpus]), (corpus, counts)
        # papers: no record (a dataset without one reads as papers), and none of the marks apart
        papers = json.loads((ingested / "papers" / corpus / "_punct.json").read_text())
        assert "label_set" not in papers and dataset_labels(ingested / "papers" / corpus) is PAPERS
        assert set(_counts(ingested / "papers" / corpus)) <= set(LABELS)


def test_extended_merged_is_exactly_the_papers_labelling(ingested):
    extended = label_set("extended")
    for corpus in ("ted", "hi"):
        ext = pq.read_table(ingested / "extended" / corpus)
        papers = pq.read_table(ingested / "papers" / corpus)
        assert ext["words"].equals(papers["words"])
        codes = pc.index_in(pc.list_flatten(ext["labels"]), value_set=extended.values).to_numpy()
        merged = np.array(LABELS)[extended.merge_ids[codes]]
        assert merged.tolist() == pc.list_flatten(papers["labels"]).to_pylist()


def test_danda_kept_apart_with_extended_danda(shared, tmp_path):
    ingest_files("text", shared / FLORES_HINDI, "hi", "hi", tmp_path / "hi", label_set="extended_danda")
    counts = _counts(tmp_path / "hi")
    # FLORES Hindi ends sentences with the danda and with the full stop: two labels here
    assert counts["DANDA"] > 30 and counts["PERIOD"] > 30


@pytest.fixture(scope="module")
def dataset(ingested):
    """The extended corpora split, oversampled (no copies) and cut into sequences: a dataset folder."""
    src, out = ingested / "extended", ingested / "dataset"
    split_dataset(
        [SplitInput("ted", str(src / "ted")), SplitInput("hi", str(src / "hi"))],
        SplitParams(ratios={"train": 0.6, "dev": 0.2, "test": 0.2}, seed=5),
        out / "split.parquet",
        out / "split_report.json",
    )
    oversample_dataset(
        out / "split.parquet",
        OversampleParams(),
        5,
        out / "oversampled.parquet",
        out / "augmented.parquet",
        out / "oversample_report.json",
    )
    report = sequences_dataset(
        out / "oversampled.parquet",
        SequencesParams(tokenizer="train", vocab_size=1500, max_len=64),
        out / "sequences.parquet",
        out / "tokenizer",
        out / "report.json",
        "both",
    )
    return out, report


def test_split_sequences_and_audit_follow_the_set(dataset):
    out, report = dataset
    for stage in ("split.parquet", "oversampled.parquet", "sequences.parquet"):
        assert dataset_labels(out / stage).labels == label_set("extended").labels, stage
    counts = _counts(out / "oversampled.parquet")
    assert all(counts[label] for label in KEPT_APART)
    extended = label_set("extended")
    ids = pc.list_flatten(pq.read_table(out / "sequences.parquet", columns=["labels"])["labels"]).to_numpy()
    assert all((ids == extended.id(label)).any() for label in KEPT_APART)
    audit = report["distribution"]["both"]
    assert list(audit["labels"]) == list(extended.labels) and audit["label_set"] == "extended"
    assert sum(audit["merged_labels"].values()) == audit["words"]
    assert audit["merged_labels"]["COMMA"] == sum(audit["labels"][l] for l in ("COMMA", "DASH", "COLON"))


def test_every_export_carries_the_set(dataset):
    out, _ = dataset
    extended = label_set("extended")
    reports = {
        fmt: export_datasets([out / "oversampled.parquet"], fmt, out / f"export-{fmt}") for fmt in ("tsv", "nemo", "hf")
    }
    for report in reports.values():
        assert all(sum(r[label] for r in report["labels"].values()) for label in KEPT_APART)
    tsv = (out / "export-tsv" / "train.tsv").read_text(encoding="utf-8")
    assert {line.split("\t")[1] for line in tsv.splitlines()} >= set(KEPT_APART)
    nemo = (out / "export-nemo" / "train" / "labels.txt").read_text(encoding="utf-8").split()
    marks = {token[0] for token in nemo}
    assert {"!", ":", ";", "—", ",", ".", "।"} <= marks  # Hindi's PERIOD written as the danda
    card = (out / "export-hf" / "README.md").read_text(encoding="utf-8")
    names = [f"'{i}': {name}" for i, name in enumerate(extended.labels)]
    assert all(name in card for name in names)
    ids = pc.list_flatten(pq.read_table(out / "export-hf" / "data").column("labels")).to_numpy()
    assert ids.max() == len(extended.labels) - 1


@pytest.mark.slow
def test_hf_export_loads_with_the_class_names(dataset):
    datasets = pytest.importorskip("datasets")
    out, _ = dataset
    folder = out / "export-hf-load"
    export_datasets([out / "oversampled.parquet"], "hf", folder)
    loaded = datasets.load_dataset(str(folder))
    assert loaded["train"].features["labels"].feature.names == list(label_set("extended").labels)


def test_training_heads_metadata_and_scores_follow_the_set(dataset, tmp_path):
    from pipeline.operations.train import train
    from pipeline.params import validate_train_params
    from pipeline.training import Punctuator
    from pipeline.training.model import load_checkpoint

    out, _ = dataset
    extended = label_set("extended")
    params = validate_train_params({**TINY, "dataset": "both", "epochs": 1})
    # the sequence options are the dataset's own (its manifest); restated here, they must agree
    stated = [("max_len", "max_len", 64)]
    result = train(params, "ext", out, stated, tmp_path / "model", tmp_path / "metrics.json")
    model, _, meta = load_checkpoint(tmp_path / "model")
    assert model.classifier.out_features == len(extended.labels) and model.label_set.same_labels(extended)
    assert meta["labels"] == list(extended.labels) and meta["label_set"]["name"] == "extended"
    test = result["test"]
    assert list(test["overall"]["per_class"]) == list(extended.labels)
    assert all(test["overall"]["per_class"][label]["support"] for label in ("EXCLAMATION", "DASH"))
    merged = test["merged"]["4_class"]["per_class"]
    assert list(merged) == list(LABELS)
    support = {label: test["overall"]["per_class"][label]["support"] for label in extended.labels}
    assert merged["COMMA"]["support"] == support["COMMA"] + support["DASH"] + support["COLON"]
    # the punctuator reads the names and marks from the model's metadata: Hindi's PERIOD is the danda
    punctuator = Punctuator.load(tmp_path / "model", lang="hi")
    assert punctuator.label_names == list(extended.labels) and punctuator.script == "Devanagari"
    words = ["यह", "एक", "वाक्य", "है"]
    prediction = punctuator.predict(words)
    # exported to ONNX, the model keeps its set: the same names, and the same labels predicted
    from pipeline.training.onnx import export_model

    export_model(tmp_path / "model", tmp_path / "onnx")
    exported = Punctuator.load(tmp_path / "onnx", lang="hi")
    assert exported.label_names == list(extended.labels) and exported.script == "Devanagari"
    assert exported.predict(words).labels == prediction.labels
    prediction.labels[-1] = "PERIOD"
    assert prediction.text.endswith("है।")
    # a checkpoint whose labels do not match its label set is refused, naming the file
    meta_path = tmp_path / "model" / "punctuation.json"
    saved = json.loads(meta_path.read_text())
    meta_path.write_text(json.dumps({**saved, "labels": list(LABELS)}))
    with pytest.raises(InputError, match=r"punctuation\.json: checkpoint labels"):
        load_checkpoint(tmp_path / "model")


def test_datasets_of_two_sets_are_refused_naming_both(ingested, tmp_path):
    ext, papers = ingested / "extended" / "hi", ingested / "papers" / "ted"
    pattern = rf"{re.escape(str(papers))}: label set papers, but {re.escape(str(ext))}: label set extended"
    with pytest.raises(InputError, match=pattern):
        labels_of([ext, papers])
    with pytest.raises(InputError, match=pattern):
        split_dataset(
            [SplitInput("hi", str(ext)), SplitInput("ted", str(papers))], SplitParams(), tmp_path / "s", tmp_path / "r"
        )
    with pytest.raises(InputError, match=pattern):
        export_datasets([ext, papers], "tsv", tmp_path / "e")
    for command in (
        ["split", str(ext), str(papers), "--out", str(tmp_path / "s2"), "--report", str(tmp_path / "r2.json")],
        ["audit", str(ext), str(papers), "--out", str(tmp_path / "a")],
    ):
        proc = subprocess.run([sys.executable, "-m", "pipeline", *command], capture_output=True, text=True)
        assert proc.returncode == 2, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1 and "label set papers" in proc.stderr
    assert not (tmp_path / "s2").exists()


def _table(tmp_path, body: str, name: str = "mine.tsv"):
    path = tmp_path / name
    path.write_text(body, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    "body, line, message",
    [
        ("label\tO\tO\t\nlabel\tBANG\tEXCLAIM\t!\n", 2, "merges to 'EXCLAIM', not one of O, COMMA, PERIOD, QUESTION"),
        ("label\tO\tO\t\nlabel\tCOMMA\tCOMMA\t,\nlabel\tCOMMA\tCOMMA\t,\n", 3, "duplicate label 'COMMA'"),
        ("# no O\nlabel\tCOMMA\tCOMMA\t,\n", None, "no label O"),
        ("label\tO\tO\t\nthis is not a row\n", 2, "a row starts with label or mark"),
        ("label\tO\tO\t\nlabel\tCOMMA\n", 2, "expected label<TAB>NAME<TAB>MERGE<TAB>MARK"),
        ("label\tO\tO\t\nlabel\tCOMMA\tCOMMA\t,\nmark\t!\tBANG\n", 3, "relabelled 'BANG', not a label of the set"),
        ("label\tO\tO\t\nlabel\tPERIOD\tPERIOD\t.\nlabel\tCOMMA\tCOMMA\t,\n", None, "ordered by their merge"),
        ("label\tO\tO\t\nlabel\tCOMMA\tCOMMA\t,,\n", 2, "every other label one character"),
    ],
)
def test_a_bad_table_is_refused_in_one_line_naming_file_and_line(tmp_path, body, line, message):
    path = _table(tmp_path, body)
    with pytest.raises(LabelSetError) as raised:
        parse_label_set(path, str(path))
    text = str(raised.value)
    assert text.startswith(f"{path}:{line}: " if line else f"{path}: ") and message in text and "\n" not in text


def test_a_user_table_through_the_command_line_and_params(tmp_path, shared):
    table = _table(
        tmp_path,
        "label\tO\tO\t\nlabel\tCOMMA\tCOMMA\t,\nlabel\tPERIOD\tPERIOD\t.\nlabel\tBANG\tPERIOD\t!\n"
        "label\tQUESTION\tQUESTION\t?\nmark\t!\tBANG\n",
    )
    text = tmp_path / "in.txt"
    text.write_text("Stop! Who goes there? Friend, I say.\n", encoding="utf-8")
    base = [sys.executable, "-m", "pipeline", "ingest", "--reader", "text", "--lang", "en", "--corpus", "c", str(text)]
    proc = subprocess.run(
        [*base, "--label-set", str(table), "--out", str(tmp_path / "c")], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert pq.read_table(tmp_path / "c")["labels"].to_pylist() == [
        ["BANG", "O", "O", "QUESTION", "COMMA", "O", "PERIOD"]
    ]
    assert json.loads((tmp_path / "c" / "_punct.json").read_text())["label_set"]["name"] == str(table)
    for spec, expected in (("nonesuch", "unknown label set 'nonesuch'"), (str(tmp_path / "gone.tsv"), "no such")):
        proc = subprocess.run(
            [*base, "--label-set", spec, "--out", str(tmp_path / "d")], capture_output=True, text=True
        )
        assert proc.returncode == 2 and expected in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    bad = _table(tmp_path, "label\tO\tO\t\nlabel\tX\tNOPE\t!\n", "bad.tsv")
    proc = subprocess.run(
        [*base, "--label-set", str(bad), "--out", str(tmp_path / "d")], capture_output=True, text=True
    )
    assert proc.returncode == 2 and proc.stderr.strip().endswith(
        f"{bad}:2: label X merges to 'NOPE', not one of O, COMMA, PERIOD, QUESTION"
    )
    assert not (tmp_path / "d").exists()


def test_params_key_and_dvc_dependency(tmp_path):
    from pipeline import params as P
    from stages.dvc_yaml import Layout, stages

    table = _table(
        tmp_path, "label\tO\tO\t\nlabel\tCOMMA\tCOMMA\t,\nlabel\tPERIOD\tPERIOD\t.\nlabel\tQUESTION\tQUESTION\t?\n"
    )
    entries = {
        "mine": {"reader": "text", "lang": "en", "input": "x.txt", "label_set": str(table)},
        "ext": {"reader": "text", "lang": "en", "input": "x.txt", "label_set": "extended"},
        "plain": {"reader": "text", "lang": "en", "input": "x.txt"},
    }
    path = tmp_path / "params.yaml"
    path.write_text(json.dumps({"corpora": entries}), encoding="utf-8")
    params = P.load(path)
    assert params.corpus_entries["plain"].label_set == "papers"
    layout = Layout("params.yaml", "data", "reports", "lexicons", "models", None)
    deps = {name: stage["deps"] for name, stage in stages(params, layout).items()}
    assert str(table) in deps["ingest-mine"] and "lexicons/label_sets/extended.tsv" in deps["ingest-ext"]
    assert "lexicons/label_sets/papers.tsv" in deps["ingest-plain"]
    entries["ext"]["label_set"] = "extendd"
    path.write_text(json.dumps({"corpora": entries}), encoding="utf-8")
    with pytest.raises(ParamsError, match=r"params.yaml: corpora.ext.label_set: unknown label set 'extendd'"):
        P.load(path)
    # a set that lacks a label the language's mark table uses is refused before any work
    lacking = "label\tO\tO\t\nlabel\tPERIOD\tPERIOD\t.\nlabel\tQUESTION\tQUESTION\t?\n"
    entries["ext"]["label_set"] = str(_table(tmp_path, lacking, "lacking.tsv"))
    path.write_text(json.dumps({"corpora": entries}), encoding="utf-8")
    with pytest.raises(InputError, match=r"punctuation.tsv:\d+: mark ',' is a COMMA, a label the label set .* lacks"):
        P.load(path)


def test_alignment_transfers_the_reference_set(ingested, tmp_path):
    """The reference's labels (extended) go onto the hypothesis's words, whatever the hypothesis's set."""
    from pipeline.align.datasets import align_datasets

    ref, hyp = ingested / "extended" / "ted", ingested / "papers" / "ted"
    report = align_datasets(ref, hyp, tmp_path / "aligned", tmp_path / "aligned.json", lang="en")
    assert dataset_labels(tmp_path / "aligned").same_labels(label_set("extended"))
    assert pq.read_table(tmp_path / "aligned")["labels"].equals(pq.read_table(ref)["labels"])
    assert list(report["labels_after"]) == list(label_set("extended").labels)
    assert report["labels_after"] == report["labels_before"]


def test_audit_counts_the_set_and_the_four_classes(ingested, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "pipeline", "audit", str(ingested / "extended" / "hi"), "--out", str(tmp_path)],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stderr
    (summary,) = json.loads((tmp_path / "audit.json").read_text()).values()
    assert list(summary["labels"]) == list(label_set("extended").labels) and summary["label_set"] == "extended"
    papers = _counts(ingested / "papers" / "hi")
    assert summary["merged_labels"] == {label: papers.get(label, 0) for label in LABELS}
    assert "EXCLAMATION" in (tmp_path / "label_shares.csv").read_text()
    assert f"| {summary['merged_labels']['PERIOD']} (" in (tmp_path / "table1.md").read_text()
