"""The five labelled TSV sets of ../shared/corpora: exact label table, and the text round trip."""

from collections import Counter

import pyarrow as pa
import pytest

from corpora import get_reader
from pipeline.audit.stats import audit
from pipeline.labels import PAPERS
from pipeline.text.labelling import label_lines, render
from pipeline.text.languages import get_language

# ../shared/corpora/README.md (Alam et al. 2020, Table 1)
TABLE_1 = {
    "iwslt_en/dev2012": ("en", 295800, 18910, 22451, 1517, 252922),
    "iwslt_en/test2011": ("en", 12626, 807, 830, 46, 10943),
    "iwslt_en/test2011asr": ("en", 12822, 809, 798, 35, 11180),
    "bangla/dev": ("bn", 179371, 13161, 7544, 534, 158132),
    "bangla/test_news": ("bn", 87721, 6263, 4102, 305, 77051),
}


@pytest.fixture(scope="module")
def ingested(shared):
    return {
        name: get_reader("tsv")([shared / f"{name}.tsv"], lang=lang, corpus=name)
        for name, (lang, *_) in TABLE_1.items()
    }


@pytest.mark.real_corpora
@pytest.mark.parametrize("name", list(TABLE_1))
def test_label_table_reproduced_exactly(ingested, name):
    """The papers' counts, less the empty words, which are dropped: each one's label (none is O) moves
    onto the word before it, or merges with that word's label (the higher stays), every one counted."""
    _, words, period, comma, question, other = TABLE_1[name]
    summary = audit([ingested[name].table], label_set=PAPERS)[name]
    stats = ingested[name].stats
    empty, merged = stats.get("empty_words", 0), stats.get("empty_word_labels_merged", 0)
    assert summary["words"] == words - empty
    assert stats.get("empty_word_labels_moved", 0) + merged == empty and not stats.get("empty_word_labels_dropped")
    labels = summary["labels"]
    assert labels["O"] == other - stats.get("empty_word_labels_moved", 0)
    assert labels["COMMA"] + labels["PERIOD"] + labels["QUESTION"] == comma + period + question - merged
    if not empty:
        assert labels == {"O": other, "COMMA": comma, "PERIOD": period, "QUESTION": question}


def _explain(words: list[str], labels: list[str], language) -> str | None:
    """Why a segment may not survive rendering and relabelling, or None if it should."""
    table = language.punctuation
    for w, l in zip(words, labels):
        if l == "PERIOD" and (w.lower() + ".") in language.abbreviations:
            return "abbreviation at a sentence end ('st' + '.' reads as 'st.')"
        if not w:
            return "empty word (zero-width characters only)"
        if all(c in table.trailing_chars or c in table.openers for c in w):
            return "word made of marks only (e.g. '--')"
        if w[-1] in table.trailing_chars:
            return "word ending in a mark (e.g. 'three-', 'us:')"
        if w[0] in table.openers:
            return "word starting with a quote or bracket"
        if any(c.isspace() for c in w):
            return "word containing a space (Bangla 'a - b')"
        if any(not c.isascii() and c in table.trailing_chars for c in w):
            return "word with a glued danda or dash inside (Bangla 'x।y')"
    return None


@pytest.mark.parametrize("name", list(TABLE_1))
def test_round_trip_through_text(ingested, name):
    """Rendering segments as punctuated text and labelling it again gives the same words and labels.

    The exceptions are segments with a word the text form cannot carry: empty words
    (the sets have a few zero-width ones), words made of marks ('--' occurs 166 times
    in dev2012) and words that end in a mark.  They are counted per reason, and every
    other segment must come back identical.
    """
    lang = TABLE_1[name][0]
    language = get_language(lang)
    table = ingested[name].table
    words, labels = table["words"].to_pylist(), table["labels"].to_pylist()
    lines = [render(w, l, PAPERS) for w, l in zip(words, labels)]
    relabelled = label_lines(pa.array(lines), language)
    back_words, back_labels = relabelled.words.to_pylist(), relabelled.labels.to_pylist()
    explained, unexplained = Counter(), []
    for i, (w, l) in enumerate(zip(words, labels)):
        if back_words[i] == w and back_labels[i] == l:
            continue
        reason = _explain(w, l, language)
        if reason is None:
            unexplained.append((i, w, l, back_words[i], back_labels[i]))
        else:
            explained[reason] += 1
    print(name, dict(explained))
    assert not unexplained, unexplained[:3]
    # the exceptions stay rare (measured: 1.2 % of dev2012, 1.8 % of Bangla dev, 2.5 % of test_news segments)
    assert sum(explained.values()) < 0.03 * len(words), explained
