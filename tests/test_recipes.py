"""Each paper's recipe end to end on its stand-in corpora: ingest, dataset stage, protocol checks."""

import json

import pytest
import yaml
from conftest import ROOT

from pipeline.engine.reading import read_segments
from stages import ingest as ingest_stage
from stages import oversample as oversample_stage
from stages import sequences as sequences_stage
from stages import split as split_stage

pytestmark = pytest.mark.real_corpora  # exact sizes of the real corpora (327 articles, 295,800 words)
PARAMS = ROOT / "real/params.yaml"
RECIPES = yaml.safe_load(PARAMS.read_text())["datasets"]


@pytest.fixture(scope="module")
def built(shared, tmp_path_factory):
    data = tmp_path_factory.mktemp("data")
    needed = set()
    for recipe in RECIPES.values():
        split = recipe.get("split", {})
        needed |= set(recipe.get("corpora", [])) | set(split.get("fixed", {})) | set(split.get("test_corpora", []))
    import os

    cwd = os.getcwd()
    os.chdir(ROOT)  # the registry's paths are relative to the project root
    p = ["--params", str(PARAMS)]
    try:
        for corpus in sorted(needed):
            out = ["--out", str(data / f"segments/{corpus}.parquet"), "--stats", str(data / f"stats/{corpus}.json")]
            assert ingest_stage.main([corpus, *p, *out]) == 0
        for name in RECIPES:
            d = data / "datasets" / name
            assert (
                split_stage.main(
                    [
                        name,
                        *p,
                        "--segments-dir",
                        str(data / "segments"),
                        "--out",
                        str(d / "split.parquet"),
                        "--report",
                        str(d / "split_report.json"),
                    ]
                )
                == 0
            )
            assert (
                oversample_stage.main(
                    [
                        name,
                        *p,
                        "--in",
                        str(d / "split.parquet"),
                        "--out",
                        str(d / "oversampled.parquet"),
                        "--augmented",
                        str(d / "augmented.parquet"),
                        "--report",
                        str(d / "oversample_report.json"),
                    ]
                )
                == 0
            )
            assert (
                sequences_stage.main(
                    [
                        name,
                        *p,
                        "--in",
                        str(d / "oversampled.parquet"),
                        "--out",
                        str(d / "sequences.parquet"),
                        "--tokenizer",
                        str(d / "tokenizer"),
                        "--report",
                        str(d / "report.json"),
                        "--reports",
                        str(d / "split_report.json"),
                        str(d / "oversample_report.json"),
                    ]
                )
                == 0
            )
    finally:
        os.chdir(cwd)
    return data


def _report(built, name):
    report = json.loads((built / "datasets" / name / "report.json").read_text())
    splits = next(iter(report["distribution"].values()))["splits"]
    print(name, {k: (v["documents"], v["words"], v["label_shares"]) for k, v in splits.items()})
    return report, splits


def test_bangla_alam2020(built):
    _, splits = _report(built, "bangla_alam2020")
    docs = {k: v["documents"] for k, v in splits.items()}
    total = sum(docs.values())
    assert total == 327
    for name, share in (("train", 4000 / 4700), ("dev", 500 / 4700), ("test", 200 / 4700)):
        assert abs(docs[name] / total - share) < 0.06, docs


def test_malay_rao2022(built):
    report, splits = _report(built, "malay_rao2022")
    table = read_segments(built / "datasets/malay_rao2022/oversampled.parquet")
    ends = {}
    for doc, labels in zip(table["doc_id"].to_pylist(), table["labels"].to_pylist()):
        ends[doc] = ends.get(doc, 0) + sum(1 for l in labels if l in ("PERIOD", "QUESTION"))
    assert min(ends.values()) > 2  # only articles with more than two sentences
    docs = {k: v["documents"] for k, v in splits.items()}
    assert abs(docs["train"] / sum(docs.values()) - 0.8) < 0.05
    assert report["oversampling"]["after"] == pytest.approx(0.005, abs=0.0005)
    assert splits["train"]["label_shares"]["QUESTION"] == pytest.approx(0.5, abs=0.05)


def test_hindi_gupta2021(built):
    _, splits = _report(built, "hindi_gupta2021")
    table = read_segments(built / "datasets/hindi_gupta2021/oversampled.parquet")
    assert all(any(l != "O" for l in labels) for labels in table["labels"].to_pylist())  # every line has a mark
    for name in ("dev", "test"):
        for label, share in splits[name]["label_shares"].items():
            assert abs(share - splits["train"]["label_shares"][label]) <= 1.0, (name, label)


def test_indic_all_languages(built):
    _, splits = _report(built, "indic_gupta2021")
    table = read_segments(built / "datasets/indic_gupta2021/oversampled.parquet")
    assert set(table["lang"].to_pylist()) == {"as", "bn", "gu", "hi", "kn", "ml", "mr", "or", "pa", "ta", "te"}
    assert all(any(l != "O" for l in labels) for labels in table["labels"].to_pylist())
    for name in ("dev", "test"):
        for label, share in splits[name]["label_shares"].items():
            assert abs(share - splits["train"]["label_shares"][label]) <= 1.0, (name, label)
        assert set(splits[name]["by_language"]) == set(splits["train"]["by_language"])  # every language in every split


def test_english_iwslt(built):
    _, splits = _report(built, "english_iwslt")
    assert splits["train"]["words"] == 295800 - 10  # dev2012's ten empty words are dropped at ingest
    assert splits["test"]["words"] == 12626 + 12822
