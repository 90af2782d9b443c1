"""News articles in JSON (a list of objects), with a configurable field mapping.

Each kept article is one document; its text is split into paragraphs (line
breaks), labelled, and cut into sentences at PERIOD/QUESTION, one segment each.
What is dropped is counted with its reason:

* articles from outlets not allowed (``sources``: a TSV of ``outlet<TAB>keep|drop``,
  or ``allow_sources`` / ``deny_sources`` lists), or whose ``language_field`` is
  not among ``languages``, or whose text is mostly in another script than the
  language's (English articles in a Bangla crawl);
* articles missing the text field, or with empty text;
* boilerplate lines (regular expressions in ``lexicons/<lang>/boilerplate.txt``);
* paragraphs and sentences repeated inside one article (scraped pages repeat them);
* articles with ``min_sentences`` or fewer sentences (Rao 2022 keeps "more than two").
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pyarrow as pa
from pydantic import BaseModel, ConfigDict, Field

from pipeline.engine.reading import read_text
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import InputError
from pipeline.ingest import FileShard, ReaderOptions
from pipeline.schema import segments_table
from pipeline.text.labelling import label_lines
from pipeline.text.lexicon import LEXICON_DIR, read_tsv_rows
from pipeline.text.scripts import dominant_script

from .base import prepare_with

_RE2_TO_SCRIPT = {"Oriya": "Odia", "Han": "Han"}


class Fields(BaseModel):
    """Which JSON field of an article holds what."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)
    title: str = Field("title", description="the field of the article's title")
    text: str = Field("text", description="the field of the article's body")
    source: str = Field("news", description="the field of the outlet (what sources and allow/deny_sources match)")
    date: str = Field("date", description="the field of the date")
    id: str = Field("url", description="the field whose value is the document id (else <file stem>#<number>)")


class Options(ReaderOptions):
    fields: Fields = Field(Fields(), description="which JSON field of an article holds what")
    sources: str | None = Field(
        None, description="a TSV of outlet<TAB>keep|drop: articles of a drop outlet are left out"
    )
    allow_sources: list[str] = Field([], description="keep only articles of these outlets (empty: all)")
    deny_sources: list[str] = Field([], description="leave out articles of these outlets")
    language_field: str | None = Field(None, description="keep only articles whose language_field is among languages")
    languages: list[str] = Field([], description="the languages kept (with language_field)")
    min_sentences: int = Field(
        0, ge=0, description="keep only articles with more than this many sentences (Rao 2022: more than two)"
    )
    include_title: bool = Field(False, description="the title is the article's first segment")


def load_sources(path: str | Path) -> tuple[set[str], set[str]]:
    """Outlets to keep and to drop, from ``outlet<TAB>keep|drop[<TAB>note]``."""
    keep, drop = set(), set()
    for lineno, (outlet, decision, *_) in read_tsv_rows(Path(path), 2):
        if decision not in ("keep", "drop"):
            raise InputError(f"{path}:{lineno}: decision must be keep or drop, not {decision!r}")
        (keep if decision == "keep" else drop).add(outlet)
    return keep, drop


def boilerplate_patterns(lang: str) -> list[re.Pattern]:
    path = LEXICON_DIR / lang / "boilerplate.txt"
    if not path.exists():
        return []
    return [
        re.compile(line)
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.strip() and not line.startswith("#")
    ]


def load_articles(path) -> list:
    text = read_text(path)
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}:{exc.lineno}: invalid JSON (column {exc.colno}): {exc.msg}") from None
    if isinstance(data, dict):
        data = data.get("articles", data.get("data"))
    if not isinstance(data, list):
        raise InputError(f"{path}: expected a JSON list of articles")
    return data


def _text_of(article: dict, field: str, counts: Counts):
    """The article's text: a string, or a list of paragraphs (joined by line breaks); None if neither."""
    text = article[field]
    if isinstance(text, list) and all(isinstance(p, str) for p in text):
        counts.stats["texts_given_as_paragraph_lists"] += 1
        return "\n".join(text)
    return text if isinstance(text, str) else None


def read(shard: FileShard, language, corpus: str, options: Options) -> StepResult:
    counts = Counts()
    keep_sources, drop_sources = load_sources(options.sources) if options.sources else (set(), set())
    sources = (keep_sources | set(options.allow_sources), drop_sources | set(options.deny_sources))
    patterns = boilerplate_patterns(language.code)
    expected_scripts = {_RE2_TO_SCRIPT.get(s, s) for s in language.scripts}
    doc_ids, seg_ids, columns = [], [], {"words": [], "labels": [], "case": [], "surface": []}
    path = shard.path
    articles = load_articles(path)
    counts.stats["files"] += 1
    seen_text_field = False
    for number, article in enumerate(articles):
        counts.stats["articles"] += 1
        if not isinstance(article, dict):
            raise InputError(f"{path}: article {number} is a {type(article).__name__}, not an object")
        outlet = str(article.get(options.fields.source, ""))
        text, has_text_field = _article_text(article, outlet, options, sources, counts)
        seen_text_field = seen_text_field or has_text_field
        if text is None:
            continue
        paragraphs = _paragraphs(text, patterns, counts)
        if not paragraphs:
            counts.dropped["empty_text"] += 1
            continue
        lines = language.normalize(pa.array(paragraphs, pa.string()), counts.stats)
        if expected_scripts:
            script = dominant_script(" ".join(lines.to_pylist()).split()[:400])
            if script is not None and script not in expected_scripts:
                counts.dropped["article_in_other_script"] += 1
                continue
        sentences = _sentences(label_lines(lines, language), language, counts)
        if len(sentences) <= options.min_sentences:
            counts.dropped["too_few_sentences"] += 1
            continue
        counts.tally("sources", outlet, "kept")
        counts.stats["articles_kept"] += 1
        doc = str(article.get(options.fields.id) or f"{Path(path).stem}#{number}")
        for k, sentence in enumerate(sentences):
            doc_ids.append(doc)
            seg_ids.append(k)
            for name, value in zip(("words", "labels", "case", "surface"), sentence):
                columns[name].append(list(value))
    if counts.stats["articles"] and not seen_text_field and counts.dropped["missing_text_field"]:
        raise InputError(
            f"{path}: no article has the text field {options.fields.text!r}: check the field mapping (fields.text)"
        )
    table = segments_table(
        corpus,
        language.code,
        doc_ids,
        seg_ids,
        columns["words"],
        columns["labels"],
        case=columns["case"],
        surface=columns["surface"],
        vocabulary=language.labels.labels,
    )
    return StepResult(table, counts)


def _article_text(
    article: dict, outlet: str, options: Options, sources: tuple[set[str], set[str]], counts: Counts
) -> tuple[str | None, bool]:
    """The text of an article the filters keep (with its title first where asked), or None, its drop
    counted; and whether the article got as far as having the text field."""
    fields = options.fields
    keep_sources, drop_sources = sources
    counts.tally("sources", outlet, "seen")
    counts.tally("sources", outlet, "kept", 0)
    if outlet in drop_sources or (keep_sources and outlet not in keep_sources):
        counts.dropped["source_not_allowed"] += 1
        return None, False
    if options.language_field and options.languages and article.get(options.language_field) not in options.languages:
        counts.dropped["language_field_not_allowed"] += 1
        return None, False
    if fields.text not in article:
        counts.dropped["missing_text_field"] += 1
        return None, False
    text = _text_of(article, fields.text, counts)
    if text is None:
        counts.dropped["text_not_a_string"] += 1
        return None, True
    if not text.strip():
        counts.dropped["empty_text"] += 1
        return None, True
    if options.include_title and isinstance(article.get(fields.title), str):
        text = article[fields.title] + "\n" + text
    return text, True


def _paragraphs(text: str, patterns: list[re.Pattern], counts: Counts) -> list[str]:
    """The article's non-empty lines, less boilerplate and repeats (each drop counted)."""
    paragraphs, seen_paragraphs = [], set()
    for paragraph in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        paragraph = paragraph.strip()
        if not paragraph:
            continue
        if any(p.search(paragraph) for p in patterns):
            counts.dropped["boilerplate_line"] += 1
            continue
        if paragraph in seen_paragraphs:
            counts.dropped["repeated_paragraph"] += 1
            continue
        seen_paragraphs.add(paragraph)
        paragraphs.append(paragraph)
    return paragraphs


def _sentences(labelled, language, counts: Counts) -> list[tuple]:
    """The labelled lines cut into sentences at PERIOD/QUESTION (words, labels, case, surface each),
    an article's repeated sentences dropped and counted."""
    counts.dropped.update(labelled.dropped)
    counts.stats.update(labelled.stats)
    to_id, ends = language.labels.to_id, language.labels.sentence_end_ids
    sentences, seen_sentences = [], set()
    for words, labels, case, surface in zip(
        labelled.words.to_pylist(),
        labelled.labels.to_pylist(),
        labelled.case.to_pylist(),
        labelled.surface.to_pylist(),
    ):
        start = 0
        for i, label in enumerate(labels):
            if to_id[label] in ends or i == len(labels) - 1:
                key = (tuple(words[start : i + 1]), tuple(labels[start : i + 1]))
                sentence = (*key, case[start : i + 1], surface[start : i + 1])
                start = i + 1
                if key in seen_sentences:
                    counts.dropped["repeated_sentence"] += 1
                    continue
                seen_sentences.add(key)
                sentences.append(sentence)
    return sentences


def prepare(paths, lang: str, corpus: str, **options):
    return prepare_with("news_json", paths, lang, corpus, **options)
