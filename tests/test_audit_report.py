"""The audit a person reads: Table 1 and 2 of Alam 2020, splits, the HTML page in a real browser."""

import json
import subprocess

import numpy as np
import pyarrow as pa
import pytest
from support.browser import chromium, missing_colors, screenshot

from corpora import get_reader
from pipeline.audit.html import report_html, table1_markdown
from pipeline.audit.reports import write_outputs
from pipeline.audit.stats import audit
from pipeline.labels import LABELS, PAPERS
from pipeline.schema import segments_table

# Alam et al. 2020, Table 1 rows (as printed) and Table 2 (mean, std)
TABLE_1 = {
    "iwslt_en/dev2012": (
        "en",
        "| 295800 | 18910 (6.39%) | 22451 (7.59%) | 1517 (0.51%) | 252922 (85.5%) |",
        13.5,
        10.7,
    ),
    "iwslt_en/test2011": ("en", "| 12626 | 807 (6.39%) | 830 (6.57%) | 46 (0.36%) | 10943 (86.67%) |", 13.8, 9.6),
    "iwslt_en/test2011asr": ("en", "| 12822 | 809 (6.31%) | 798 (6.22%) | 35 (0.27%) | 11180 (87.19%) |", 14.2, 9.7),
    "bangla/dev": ("bn", "| 179371 | 13161 (7.34%) | 7544 (4.21%) | 534 (0.3%) | 158132 (88.16%) |", 12.1, 7.2),
    "bangla/test_news": ("bn", "| 87721 | 6263 (7.14%) | 4102 (4.68%) | 305 (0.35%) | 77051 (87.84%) |", 12.4, 7.2),
}


#: our rows where a set holds empty (zero-width) words, which the TSV reader drops (an export writes
#: words between spaces): the total and O less the empty words, and in dev2012 four commas fewer,
#: each written as an empty word after a PERIOD or QUESTION (the higher label stays)
WITHOUT_EMPTY_WORDS = {
    "iwslt_en/dev2012": ("| 295790 | 18910 (6.39%) | 22447 (7.59%) | 1517 (0.51%) | 252916 (85.51%) |", 10),
    "bangla/dev": ("| 179360 | 13161 (7.34%) | 7544 (4.21%) | 534 (0.3%) | 158121 (88.16%) |", 11),
    "bangla/test_news": ("| 87718 | 6263 (7.14%) | 4102 (4.68%) | 305 (0.35%) | 77048 (87.84%) |", 3),
}


@pytest.fixture(scope="module")
def paper_tables(shared):
    return [
        get_reader("tsv")([shared / f"{name}.tsv"], lang=lang, corpus=name).table
        for name, (lang, *_) in TABLE_1.items()
    ]


@pytest.mark.real_corpora
def test_table_1_reproduced_exactly(paper_tables):
    """The paper's rows, but where a set holds empty words: those are dropped, counted."""
    markdown = table1_markdown(audit(paper_tables, label_set=PAPERS))
    for name, (_, row, _, _) in TABLE_1.items():
        ours, empty = WITHOUT_EMPTY_WORDS.get(name, (row, 0))
        assert f"| {name} {ours}" in markdown
        assert int(row.split("|")[1]) - int(ours.split("|")[1]) == empty


@pytest.mark.real_corpora
def test_table_2_std_and_the_constant_in_the_means(paper_tables):
    result = audit(paper_tables, label_set=PAPERS)
    offsets = []
    for name, (_, _, paper_mean, paper_std) in TABLE_1.items():
        ours = result[name]["sentence_length"]
        assert round(ours["std"], 1) == paper_std
        offsets.append(ours["mean"] - paper_mean)
        # the paper's mean is ours minus one word, to its rounding
        assert round(ours["mean"] - 1, 1) == paper_mean
    assert np.allclose(offsets, 1.0, atol=0.05)


def _table(corpus, rows):
    """rows: (doc, split, words, labels)"""
    return segments_table(
        corpus,
        "en",
        [r[0] for r in rows],
        list(range(len(rows))),
        [r[2] for r in rows],
        [r[3] for r in rows],
        [r[1] for r in rows],
        vocabulary=LABELS,
    )


def test_splits_drift_oov_leakage():
    table = _table(
        "c",
        [
            ("a", "train", ["the", "cat", "sat"], ["O", "O", "PERIOD"]),
            ("b", "train", ["a", "dog", "ran"], ["O", "COMMA", "PERIOD"]),
            ("c", "dev", ["the", "bird", "sang"], ["O", "O", "QUESTION"]),
            ("a", "test", ["the", "cat", "sat"], ["O", "O", "PERIOD"]),  # leaked document and segment
        ],
    )
    result = audit([table], drift_threshold=1.0, label_set=PAPERS)["c"]
    assert set(result["splits"]) == {"train", "dev", "test"}
    assert result["splits"]["dev"]["oov_rate"] == pytest.approx(100 * 2 / 3, abs=0.01)
    assert result["splits"]["test"]["oov_rate"] == 0.0
    assert result["leakage"] == {
        "documents_in_several_splits": 1,
        "segments_in_several_splits": 1,
        "documents_found": {"train+test": [["c", "a"]]},
    }
    assert result["drift"]["dev"]["QUESTION"] == pytest.approx(100 / 3, abs=0.01)
    assert "dev QUESTION share differs from train" in result["warnings"]


def test_per_language_breakdown():
    en = _table("multi", [("a", "train", ["so", "what"], ["O", "QUESTION"])])
    ms = segments_table(
        "multi", "ms", ["b"], [0], [["ya", "betul", "itu"]], [["COMMA", "O", "PERIOD"]], ["train"], vocabulary=LABELS
    )
    result = audit([pa.concat_tables([en, ms])], label_set=PAPERS)["multi"]
    assert result["by_language"]["en"]["labels"]["QUESTION"] == 1
    assert result["by_language"]["ms"]["words"] == 3
    assert result["splits"]["train"]["by_language"]["ms"]["labels"]["COMMA"] == 1


def test_bad_input_is_reported_not_a_crash(tmp_path):
    empty = segments_table("empty", "en", [], [], [], [], vocabulary=LABELS)
    no_question = _table("nq", [("a", None, ["hello", "there"], ["COMMA", "PERIOD"])])
    result = audit([empty, no_question], expected_splits=(), label_set=PAPERS)
    assert result["(empty)"]["words"] == 0 and result["(empty)"]["label_shares"]["O"] == 0.0
    assert result["nq"]["missing_labels"] == "O,QUESTION"
    with_splits = _table("s", [("a", "train", ["x", "y"], ["O", "PERIOD"])])
    result = audit([with_splits], expected_splits=("train", "dev", "test"), label_set=PAPERS)["s"]
    assert result["splits"]["dev"]["documents"] == 0 and result["splits"]["dev"]["words"] == 0
    assert "split dev has no documents" in result["warnings"]
    html = report_html(audit([empty, no_question], label_set=PAPERS), {})
    assert "<svg" in html
    assert "<script" not in html and "<link" not in html and "src=" not in html  # nothing to fetch


def test_html_report_in_headless_chromium(tmp_path, root):
    """The page loads in a real browser with no console error, and every chart shows in a screenshot."""
    chromium()
    tables = [
        get_reader("text")([root / "corpora/samples/en/talks.txt"], lang="en", corpus="talks").table,
        get_reader("text")([root / "corpora/samples/bn/news.txt"], lang="bn", corpus="bangla").table,
    ]
    write_outputs(*audit(tables, with_histograms=True, label_set=PAPERS), tmp_path)
    page = tmp_path / "audit.html"
    html = page.read_text()
    assert html.count('class="chart"') == 4  # label shares and sentence lengths, two datasets
    image = screenshot(page, tmp_path / "shot.png", 1400, 1400, tmp_path / "profile")
    # each chart's bars are drawn in their own colour: every one is on screen
    assert not missing_colors(image), f"no pixel of {missing_colors(image)} in the screenshot"


@pytest.mark.slow
def test_metrics_diff_shows_changed_shares(root, tmp_path):
    """`dvc metrics diff` between two params settings (spoken numbers on/off for a Malay corpus)."""
    from test_dvc_pipeline import _copy_repo, _dvc

    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(root, repo)
    _dvc(["repro", "audit"], repo)
    env = {
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@t",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@t",
        "PATH": "/usr/bin:/bin",
        "HOME": str(tmp_path),
    }
    subprocess.run(["git", "add", "-A"], cwd=repo, check=True, env=env)
    subprocess.run(["git", "commit", "-qm", "base"], cwd=repo, check=True, env=env)
    params = (repo / "params.yaml").read_text()
    (repo / "params.yaml").write_text(
        params.replace(
            "    input: corpora/samples/ms/ayat.txt\n    spoken: true\n",
            "    input: corpora/samples/ms/ayat.txt\n    spoken: false\n",
        )
    )
    _dvc(["repro", "audit"], repo)
    diff = _dvc(["metrics", "diff", "--json"], repo)
    changed = json.loads(diff)["reports/audit.json"]
    print({k: v for k, v in changed.items() if k.startswith("ms_sentences")})
    assert "ms_sentences.label_shares.O" in changed and "ms_sentences.words" in changed
    assert changed["ms_sentences.words"]["new"] < changed["ms_sentences.words"]["old"]
