"""Every export loads with its consumer: Hugging Face ``datasets.load_dataset``, NeMo's reading of
``text.txt``/``labels.txt`` (re-stated below from its documented format), xashru's TSV read back;
on a user's own file written as a user would, on a dataset that was never split, and on a real
corpus split three ways."""

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest
import yaml
from support.datasets import write_dataset

from corpora import get_reader
from pipeline import cli
from pipeline import params as P
from pipeline.datasets.export import dataset_card
from pipeline.engine import reading
from pipeline.labels import LABELS, RENDERED_MARK
from pipeline.schema import with_column

datasets = pytest.importorskip("datasets")

# NeMo's punctuation-capitalization dataset (nemo/collections/nlp/data/token_classification/
# punctuation_capitalization_dataset.py, and the format its documentation gives): text.txt holds one
# example per line, its words separated by whitespace; labels.txt the same number of lines, per word
# one label of two characters, the punctuation label (from the punctuation vocabulary, ``O`` the
# pad label) then the capitalization label (``U`` or ``O``); the two files must have as many lines,
# and every line as many labels as words, or the dataset refuses them.
NEMO_PUNCT = {"O", ",", ".", "?"}
NEMO_CAPIT = {"O", "U"}


def nemo_read(folder) -> list[tuple[list[str], list[str], list[str]]]:
    text = (folder / "text.txt").read_text(encoding="utf-8").splitlines()
    labels = (folder / "labels.txt").read_text(encoding="utf-8").splitlines()
    assert len(text) == len(labels), "NeMo: text and labels files differ in number of lines"
    examples = []
    for i, (line, label_line) in enumerate(zip(text, labels)):
        words, tags = line.strip().split(), label_line.strip().split()
        assert words, f"line {i + 1}: an example without words"
        assert len(words) == len(tags), f"line {i + 1}: {len(words)} words, {len(tags)} labels"
        assert all(len(t) == 2 for t in tags), f"line {i + 1}: labels are two characters"
        punct, capit = [t[0] for t in tags], [t[1] for t in tags]
        assert set(punct) <= NEMO_PUNCT and set(capit) <= NEMO_CAPIT, f"line {i + 1}: {label_line}"
        examples.append((words, punct, capit))
    return examples


#: a user's own file: prices, percents, abbreviations, a question, an exclamation
USER_TEXT = (
    "It costs $15.50, 30% more than last year, Dr. Smith said in the U.K. on Monday.\n"
    "Is that fair? Nobody thinks so! The iPhone's price rose too.\n"
)


def ingest(tmp_path, text=USER_TEXT, name="mine") -> tuple:
    source = tmp_path / f"{name}.txt"
    source.write_text(text, encoding="utf-8")
    out = tmp_path / f"{name}.parquet"
    assert (
        cli.main(["ingest", "-q", "--reader", "text", "--lang", "en", "--corpus", name, str(source), "--out", str(out)])
        == 0
    )
    return out, reading.read_segments(out)


def export(fmt, dataset, out, *extra) -> dict:
    assert cli.main(["export", "-q", "--format", fmt, *extra, str(dataset), "--out", str(out)]) == 0
    return json.loads((out / "_punct.json").read_text(encoding="utf-8"))


def hf_load(folder, tmp_path):
    return datasets.load_dataset(str(folder), cache_dir=str(tmp_path / "hf-cache"))


def rows_of(table: pa.Table, split: str | None) -> pa.Table:
    if split is None:
        return table.filter(pc.is_null(table["split"]))
    return table.filter(pc.equal(table["split"], split))


def test_a_users_file_exports_load_with_the_projects_words_and_labels(tmp_path):
    dataset, table = ingest(tmp_path)
    words = [w for row in table["words"].to_pylist() for w in row]
    assert {"$15.50", "30%", "dr.", "u.k."} <= set(words)

    # Hugging Face: an unsplit dataset is the split "train", labels a ClassLabel, a card
    report = export("hf", dataset, tmp_path / "hf")
    assert report["splits"] == ["train"] and report["unsplit_rows_as"] == "train"
    loaded = hf_load(tmp_path / "hf", tmp_path)
    assert list(loaded) == ["train"]
    label_feature = loaded["train"].features["labels"].feature
    assert isinstance(label_feature, datasets.ClassLabel) and label_feature.names == list(LABELS)
    assert [[label_feature.int2str(i) for i in row] for row in loaded["train"]["labels"]] == table["labels"].to_pylist()
    assert loaded["train"]["words"] == table["words"].to_pylist()
    card = (tmp_path / "hf/README.md").read_text(encoding="utf-8")
    header = yaml.safe_load(card.split("---")[1])
    fingerprint = report["fingerprint"]
    assert header["configs"][0]["data_files"] == [{"split": "train", "path": f"data/train-{fingerprint}-*.parquet"}]
    assert [f["name"] for f in header["dataset_info"]["features"]][4:7] == ["words", "labels", "case"]
    counts = dict.fromkeys(LABELS, 0)
    for row in table["labels"].to_pylist():
        for label in row:
            counts[label] += 1
    assert f"| train | {table.num_rows} | {len(words)} | " + " | ".join(str(counts[k]) for k in LABELS) + " |" in card
    assert "punct-corpora export" in card and all(f"`{label}`" in card for label in LABELS)

    # NeMo: the project's words whole, its labels (no PERIOD after dr. or u.k.), counted
    report = export("nemo", dataset, tmp_path / "nemo")
    examples = nemo_read(tmp_path / "nemo/train")
    assert [e[0] for e in examples] == [[w.lower() for w in row] for row in table["words"].to_pylist()]
    assert [e[1] for e in examples] == [[RENDERED_MARK[x] or "O" for x in row] for row in table["labels"].to_pylist()]
    flat = {w: (p, c) for e in examples for w, p, c in zip(*e)}
    assert flat["$15.50"] == (",", "O") and flat["30%"] == ("O", "O")
    assert flat["dr."] == ("O", "U") and flat["u.k."] == ("O", "U")
    assert flat["iphone's"] == ("O", "O")  # written iPhone's: NeMo's capital is the first letter's
    assert report["kept_whole"] == {"train": 4} and set(report["kept_whole_examples"]) == {
        "$15.50",
        "30%",
        "dr.",
        "u.k.",
    }

    # xashru's TSV: read back by the TSV reader as the same words and labels
    export("tsv", dataset, tmp_path / "tsv")
    back = get_reader("tsv")([tmp_path / "tsv/train.tsv"], lang="en", corpus="back").table
    assert [w for row in back["words"].to_pylist() for w in row] == words
    assert [x for row in back["labels"].to_pylist() for x in row] == [
        x for row in table["labels"].to_pylist() for x in row
    ]


def test_the_split_of_unsplit_rows_is_named_and_checked(tmp_path, capsys):
    dataset, table = ingest(tmp_path)
    export("hf", dataset, tmp_path / "hf", "--split-name", "validation")
    assert list(hf_load(tmp_path / "hf", tmp_path)) == ["validation"]
    for bad, why in (("all", "reserved by Hugging Face datasets"), ("my split", "letters, digits and '_' only")):
        capsys.readouterr()
        assert (
            cli.main(["export", "--format", "hf", "--split-name", bad, str(dataset), "--out", str(tmp_path / "x")]) == 2
        )
        err = capsys.readouterr().err.strip()
        assert err.startswith("error: --split-name:") and why in err and "\n" not in err
        assert not (tmp_path / "x").exists()
    # rows without a split cannot join a split that other rows already have
    split = with_column(table.slice(0, 1), "split", pa.array(["train"]))
    write_dataset(split, tmp_path / "split")
    capsys.readouterr()
    args = ["export", "--format", "tsv", str(tmp_path / "split"), str(dataset), "--out", str(tmp_path / "y")]
    assert cli.main(args) == 2
    err = capsys.readouterr().err.strip()
    assert "rows without a split would join the split 'train'" in err and str(dataset) in err
    assert cli.main([*args, "--split-name", "extra"]) == 0
    assert sorted(p.name for p in (tmp_path / "y").glob("*.tsv")) == ["extra.tsv", "train.tsv"]


def test_a_real_corpus_split_three_ways_loads_in_every_format(shared, tmp_path):
    table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev").table.slice(0, 300)
    names = ["train", "dev", "test"]
    table = with_column(table, "split", pa.array([names[i % 3] for i in range(table.num_rows)]))
    write_dataset(table, tmp_path / "segments", parts=2)
    dataset = tmp_path / "segments"
    report = export("hf", dataset, tmp_path / "hf")
    loaded = hf_load(tmp_path / "hf", tmp_path)
    assert sorted(loaded) == sorted(names) == report["splits"]
    for name in names:
        part = rows_of(table, name)
        feature = loaded[name].features["labels"].feature
        assert loaded[name]["words"] == part["words"].to_pylist()
        assert [[feature.int2str(i) for i in row] for row in loaded[name]["labels"]] == part["labels"].to_pylist()
        assert report["labels"][name] == {
            label: sum(row.count(label) for row in part["labels"].to_pylist()) for label in LABELS
        }
    export("nemo", dataset, tmp_path / "nemo")
    for name in names:
        part = rows_of(table, name)
        examples = nemo_read(tmp_path / "nemo" / name)
        kept = [row for row in part["words"].to_pylist() if row]
        assert [e[0] for e in examples] == [[w.lower() for w in row] for row in kept]
    export("tsv", dataset, tmp_path / "tsv")
    for name in names:
        back = get_reader("tsv")([tmp_path / "tsv" / f"{name}.tsv"], lang="en", corpus="back").table
        part = rows_of(table, name)
        assert pc.list_flatten(back["labels"]).to_pylist() == pc.list_flatten(part["labels"]).to_pylist()


def test_the_card_names_the_sources_and_params_of_a_dataset(root):
    params = P.load(root / "params.yaml")
    card = dataset_card(params, "samples_multi", "python -m stages.export samples_multi")
    assert [s["corpus"] for s in card["sources"]] == params.datasets["samples_multi"].corpora
    assert all(s["input"] for s in card["sources"])
    assert card["params"]["samples_multi"]["export"]["formats"] == ["nemo", "tsv", "hf"]


def test_every_json_file_written_ends_with_a_newline(tmp_path):
    """The exports' manifests and a saved tokenizer (the tokenizers library writes tokenizer.json
    without a final newline) end with one, as every JSON file the pipeline writes."""
    from pipeline.datasets import pretrained
    from pipeline.datasets.sequences import train_tokenizer
    from pipeline.training import model

    dataset, table = ingest(tmp_path)
    for fmt in ("hf", "nemo", "tsv"):
        export(fmt, dataset, tmp_path / fmt)
    tokenizer = train_tokenizer((w for row in table["words"].to_pylist() for w in row), vocab_size=200)
    pretrained.save_tokenizer(tokenizer, tmp_path / "tok")
    model.save_tokenizer(tokenizer, tmp_path / "tok2")
    files = sorted(tmp_path.glob("*/**/*.json"))
    assert {"tokenizer.json", "_punct.json"} <= {p.name for p in files}
    assert [p for p in files if not p.read_bytes().endswith(b"\n")] == []


def test_the_samples_in_five_languages_export_and_load(root, tmp_path):
    """The sample corpora (English, Mandarin, Hindi, Malay, Bangla) as one dataset, never split:
    every format loads and gives back every word and label."""
    from pipeline.ingest import ingest_table
    from pipeline.schema import concat

    samples = root / "corpora/samples"
    sources = [("text", "en/talks.txt", "en"), ("text", "zh/talks.txt", "zh"), ("text", "hi/sentences.txt", "hi")]
    sources += [("news_json", "ms/berita.json", "ms"), ("text", "bn/news.txt", "bn")]
    table = concat([ingest_table(reader, [samples / path], lang, Path(path).stem)[0] for reader, path, lang in sources])
    write_dataset(table, tmp_path / "samples", parts=2)
    export("hf", tmp_path / "samples", tmp_path / "hf")
    loaded = hf_load(tmp_path / "hf", tmp_path)
    feature = loaded["train"].features["labels"].feature
    assert loaded["train"]["words"] == table["words"].to_pylist()
    assert [[feature.int2str(i) for i in row] for row in loaded["train"]["labels"]] == table["labels"].to_pylist()
    report = export("nemo", tmp_path / "samples", tmp_path / "nemo")
    examples = nemo_read(tmp_path / "nemo/train")
    assert [e[0] for e in examples] == [[w.lower() for w in row] for row in table["words"].to_pylist() if row]
    marks = [[RENDERED_MARK[x] or "O" for x in row] for row in table["labels"].to_pylist() if row]
    assert [e[1] for e in examples] == marks
    assert sum(report["words"].values()) == sum(len(e[0]) for e in examples)
    export("tsv", tmp_path / "samples", tmp_path / "tsv")
    lines = (tmp_path / "tsv/train.tsv").read_text(encoding="utf-8").splitlines()
    assert [line.split("\t") for line in lines] == [
        [w, x]
        for row_w, row_l in zip(table["words"].to_pylist(), table["labels"].to_pylist())
        for w, x in zip(row_w, row_l)
    ]


@pytest.mark.parametrize("fmt", ["tsv", "hf", "nemo"])
def test_a_split_value_that_would_leave_the_output_folder_is_refused(tmp_path, capsys, fmt):
    """A split column holding a path (``../../x``) never names a file: export writes nothing."""
    _, table = ingest(tmp_path)
    victim = tmp_path / "x.tsv"
    victim.write_text("a user's file\n")
    hostile = with_column(table, "split", pa.array(["../../x"] * len(table)))
    write_dataset(hostile, tmp_path / "hostile")
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    capsys.readouterr()
    out = tmp_path / "a" / "b"
    assert cli.main(["export", "--format", fmt, str(tmp_path / "hostile"), "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert "column split" in err and "'../../x'" in err and "\n" not in err
    assert victim.read_text() == "a user's file\n"
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
