"""The audit page a person reads: every chart titled, with axes that carry values and units, one
scale for the label shares of every dataset, labelled histogram bins, warnings as a list per
dataset, the Alam 2020 note only beside its format's datasets, a message instead of an empty
chart; checked by parsing the HTML and by screenshots in headless Chromium at two widths."""

import xml.etree.ElementTree as ET
from html.parser import HTMLParser

import pyarrow as pa
import pytest
from support.browser import missing_colors, screenshot

from corpora import get_reader
from pipeline.audit.html import ALAM_NOTE, HIST_BINS, nice_axis
from pipeline.audit.reports import write_outputs
from pipeline.audit.stats import audit
from pipeline.labels import PAPERS
from pipeline.schema import with_column

SVG = "{http://www.w3.org/2000/svg}"


class Page(HTMLParser):
    """The page's sections (by id): their SVG charts (parsed as XML), texts of ``.empty`` blocks,
    warning items and notes."""

    def __init__(self, text: str):
        super().__init__(convert_charrefs=True)
        self.text = text
        self.sections: dict[str, dict] = {}
        self.current = None
        self.stack: list[tuple[str, str]] = []
        self.notes: list[str] = []
        self.feed(text)
        for name, section in self.sections.items():
            start = text.index(f'<section id="{name}">')
            end = text.index("</section>", start)
            body = text[start:end]
            section["svgs"] = []
            pos = 0
            while (i := body.find("<svg", pos)) >= 0:
                j = body.index("</svg>", i) + len("</svg>")
                section["svgs"].append(ET.fromstring(body[i:j]))
                pos = j

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self.current = self.sections.setdefault(attrs["id"], {"empty": [], "warnings": [], "notes": []})
        self.stack.append((tag, attrs.get("class", "")))

    def handle_endtag(self, tag):
        while self.stack:
            open_tag, _ = self.stack.pop()
            if open_tag == tag:
                break
        if tag == "section":
            self.current = None

    def handle_data(self, data):
        if self.current is None or not data.strip():
            return
        classes = [c for _, c in self.stack]
        tags = [t for t, _ in self.stack]
        if any("empty" in c for c in classes):
            self.current["empty"].append(data.strip())
        elif any("warnings" in c for c in classes) and tags[-1] == "li":
            self.current["warnings"].append(data.strip())
        elif any(c == "note" for c in classes):
            self.current["notes"].append(data.strip())


def texts(svg, cls: str) -> list[str]:
    return [e.text for e in svg.iter(f"{SVG}text") if cls in e.get("class", "").split()]


def tsv_rows(words_labels: str) -> str:
    return "".join(f"{w}\t{l}\n" for w, l in (pair.split("/") for pair in words_labels.split()))


@pytest.fixture(scope="module")
def page(root, tmp_path_factory):
    """The audit of the sample talks, Bangla news, the unpunctuated transcript (all O), the
    labelled TSV, and a split dataset whose dev split drifts."""
    folder = tmp_path_factory.mktemp("audit")
    samples = root / "corpora/samples"
    talks = get_reader("text")([samples / "en/talks.txt"], lang="en", corpus="en_talks").table
    tables = [
        talks,
        get_reader("text")([samples / "bn/news.txt"], lang="bn", corpus="bn_news").table,
        get_reader("transcript")([samples / "en/talks_asr.txt"], lang="en", corpus="en_talks_asr").table,
        get_reader("tsv")([samples / "en/labelled.tsv"], lang="en", corpus="en_labelled").table,
    ]
    split = with_column(talks, "corpus", pa.array(["en_split"] * talks.num_rows))
    names = ["train" if i % 3 else "dev" for i in range(split.num_rows)]
    tables.append(with_column(split, "split", pa.array(names)))
    result, histograms = audit(tables, with_histograms=True, label_set=PAPERS)
    readers = {"en_talks": "text", "bn_news": "text", "en_talks_asr": "transcript", "en_labelled": "tsv"}
    write_outputs(result, histograms, folder, readers=readers)
    text = (folder / "audit.html").read_text(encoding="utf-8")
    return folder, result, Page(text)


def test_every_chart_has_a_title_axes_with_values_and_units(page):
    _folder, result, parsed = page
    for name in ("en_talks", "bn_news", "en_labelled", "en_split"):
        shares, lengths = parsed.sections[name]["svgs"]
        assert texts(shares, "chart-title") == ["Punctuation labels (% of words)"]
        assert texts(shares, "x-label") == ["label"] and texts(shares, "y-label") == ["share of words (%)"]
        assert texts(shares, "x-tick") == ["COMMA", "PERIOD", "QUESTION"]
        assert all(t.endswith("%") for t in texts(shares, "y-tick")) and texts(shares, "y-tick")[0] == "0%"
        values = texts(shares, "value")
        assert values == [f"{result[name]['label_shares'][m]:.2f}%" for m in ("COMMA", "PERIOD", "QUESTION")]
        assert texts(lengths, "chart-title") == ["Sentence lengths"]
        assert texts(lengths, "x-label") == ["words per sentence"] and texts(lengths, "y-label") == ["sentences"]
        assert texts(lengths, "x-tick") == ["1–5", "6–10", "11–15", "16–20", "21–25", "26–30", "31–35", "36–39", "40+"]
        assert len(texts(lengths, "x-tick")) == len(HIST_BINS) and texts(lengths, "y-tick")[0] == "0"
        assert all(t.isdigit() for t in texts(lengths, "y-tick"))  # sentences are counted whole


def test_label_shares_share_one_scale_across_datasets(page):
    _folder, result, parsed = page
    top = max(s["label_shares"][m] for s in result.values() for m in ("COMMA", "PERIOD", "QUESTION"))
    axis_max, step = nice_axis(top)
    assert top <= axis_max < top + step + 1e-9
    ticks = {tuple(texts(parsed.sections[n]["svgs"][0], "y-tick")) for n in ("en_talks", "bn_news", "en_labelled")}
    assert len(ticks) == 1 and next(iter(ticks))[-1] == f"{axis_max:g}%"
    # so a bar's height is its share of the common maximum: English PERIOD beside Bangla PERIOD
    heights = {}
    for name in ("en_talks", "bn_news"):
        rects = list(parsed.sections[name]["svgs"][0].iter(f"{SVG}rect"))
        heights[name] = float(rects[1].get("height"))
    ratio = result["en_talks"]["label_shares"]["PERIOD"] / result["bn_news"]["label_shares"]["PERIOD"]
    assert heights["en_talks"] / heights["bn_news"] == pytest.approx(ratio, rel=0.01)


def test_an_all_o_dataset_says_so_and_lists_its_warnings(page):
    _folder, result, parsed = page
    asr = parsed.sections["en_talks_asr"]
    assert result["en_talks_asr"]["missing_labels"] == "COMMA,PERIOD,QUESTION"
    assert asr["svgs"] == []  # no empty frame
    assert "no punctuation labels in this dataset" in asr["empty"]
    assert any("no sentences" in t for t in asr["empty"])
    assert asr["warnings"] == ["missing labels: no COMMA, PERIOD, QUESTION label in this dataset"]


def test_warnings_are_a_list_per_dataset(page):
    _folder, result, parsed = page
    drift = result["en_split"]["warnings"]
    items = parsed.sections["en_split"]["warnings"]
    assert len(items) >= 2 and items[: len(drift.split("; "))] == drift.split("; ")
    assert all("; " not in item for item in items)
    assert parsed.sections["en_talks"]["warnings"] == []


def test_the_alam_note_only_beside_its_datasets(page):
    _folder, _result, parsed = page
    assert parsed.sections["en_labelled"]["notes"] == [f"Note: {ALAM_NOTE}"]
    for name in ("en_talks", "bn_news", "en_talks_asr", "en_split"):
        assert parsed.sections[name]["notes"] == []
    assert parsed.text.count("Alam et al. (2020) Table 2") == 1


@pytest.mark.parametrize("width", [1280, 390])
def test_the_page_renders_in_headless_chromium(page, width, tmp_path):
    """At a desktop and a phone width: no console error, the bars of every colour on screen, and
    no horizontal overflow of the charts (they scale to the page)."""
    folder, _result, _parsed = page
    image = screenshot(folder / "audit.html", tmp_path / f"audit-{width}.png", width, 2400, tmp_path / "profile")
    assert image.shape[1] == width
    assert not missing_colors(image), f"no pixel of {missing_colors(image)} at width {width}"
