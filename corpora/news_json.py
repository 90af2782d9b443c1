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

from pipeline.io import InputError, read_text
from pipeline.labelling import label_lines
from pipeline.labels import LABEL_TO_ID, SENTENCE_END_IDS
from pipeline.languages import get_language
from pipeline.lexicon import LEXICON_DIR, read_tsv_rows
from pipeline.schema import segments_table
from pipeline.scripts import dominant_script

from .base import Prepared, as_paths

DEFAULT_FIELDS = {"title": "title", "text": "text", "source": "news", "date": "date", "id": "url"}
_RE2_TO_SCRIPT = {"Oriya": "Odia", "Han": "Han"}


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


def prepare(
    paths,
    lang: str,
    corpus: str,
    fields: dict | None = None,
    sources: str | None = None,
    allow_sources: list[str] | None = None,
    deny_sources: list[str] | None = None,
    language_field: str | None = None,
    languages: list[str] | None = None,
    min_sentences: int = 0,
    include_title: bool = False,
) -> Prepared:
    language = get_language(lang)
    fields = {**DEFAULT_FIELDS, **(fields or {})}
    keep_sources, drop_sources = load_sources(sources) if sources else (set(), set())
    keep_sources |= set(allow_sources or [])
    drop_sources |= set(deny_sources or [])
    patterns = boilerplate_patterns(lang)
    expected_scripts = {_RE2_TO_SCRIPT.get(s, s) for s in language.scripts}
    prepared = Prepared(table=None)
    prepared.sources = {}  # outlet -> [articles seen, articles kept]
    doc_ids, seg_ids, all_words, all_labels = [], [], [], []
    seen_text_field = False
    for path in as_paths(paths):
        articles = load_articles(path)
        prepared.stats["files"] += 1
        for number, article in enumerate(articles):
            prepared.stats["articles"] += 1
            if not isinstance(article, dict):
                raise InputError(f"{path}: article {number} is a {type(article).__name__}, not an object")
            outlet = str(article.get(fields["source"], ""))
            tally = prepared.sources.setdefault(outlet, [0, 0])
            tally[0] += 1
            if outlet in drop_sources or (keep_sources and outlet not in keep_sources):
                prepared.dropped["source_not_allowed"] += 1
                continue
            if language_field and languages and article.get(language_field) not in languages:
                prepared.dropped["language_field_not_allowed"] += 1
                continue
            if fields["text"] not in article:
                prepared.dropped["missing_text_field"] += 1
                continue
            seen_text_field = True
            text = article[fields["text"]]
            if not isinstance(text, str) or not text.strip():
                prepared.dropped["empty_text"] += 1
                continue
            if include_title and isinstance(article.get(fields["title"]), str):
                text = article[fields["title"]] + "\n" + text
            paragraphs, seen_paragraphs = [], set()
            for paragraph in text.split("\n"):
                paragraph = paragraph.strip()
                if not paragraph:
                    continue
                if any(p.search(paragraph) for p in patterns):
                    prepared.dropped["boilerplate_line"] += 1
                    continue
                if paragraph in seen_paragraphs:
                    prepared.dropped["repeated_paragraph"] += 1
                    continue
                seen_paragraphs.add(paragraph)
                paragraphs.append(paragraph)
            if not paragraphs:
                prepared.dropped["empty_text"] += 1
                continue
            lines = language.normalize(pa.array(paragraphs, pa.string()))
            if expected_scripts:
                script = dominant_script(" ".join(lines.to_pylist()).split()[:400])
                if script is not None and script not in expected_scripts:
                    prepared.dropped["article_in_other_script"] += 1
                    continue
            labelled = label_lines(lines, language)
            prepared.dropped.update(labelled.dropped)
            sentences, seen_sentences = [], set()
            for words, labels in zip(labelled.words.to_pylist(), labelled.labels.to_pylist()):
                start = 0
                for i, label in enumerate(labels):
                    if LABEL_TO_ID[label] in SENTENCE_END_IDS or i == len(labels) - 1:
                        sentence = (tuple(words[start : i + 1]), tuple(labels[start : i + 1]))
                        start = i + 1
                        if sentence in seen_sentences:
                            prepared.dropped["repeated_sentence"] += 1
                            continue
                        seen_sentences.add(sentence)
                        sentences.append(sentence)
            if len(sentences) <= min_sentences:
                prepared.dropped["too_few_sentences"] += 1
                continue
            tally[1] += 1
            prepared.stats["articles_kept"] += 1
            doc = str(article.get(fields["id"]) or f"{Path(path).stem}#{number}")
            for k, (words, labels) in enumerate(sentences):
                doc_ids.append(doc)
                seg_ids.append(k)
                all_words.append(list(words))
                all_labels.append(list(labels))
    if (
        prepared.stats["articles"]
        and not seen_text_field
        and not prepared.stats["articles_kept"]
        and prepared.dropped["missing_text_field"]
    ):
        raise InputError(f"no article has the text field {fields['text']!r}: check the field mapping (fields.text)")
    prepared.table = segments_table(corpus, lang, doc_ids, seg_ids, all_words, all_labels)
    prepared.stats["segments"] = prepared.table.num_rows
    prepared.stats["words"] = sum(len(w) for w in all_words)
    return prepared
