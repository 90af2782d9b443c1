"""Languages: one small module each, found by its ISO 639-1 code.

A language module defines ``LANGUAGE = Language(...)``; adding a language means
adding its data under ``lexicons/<code>/`` and one module here, nothing else (or, from
another package, an entry point: :mod:`pipeline.text.registry`).
"""

from __future__ import annotations

import dataclasses
import functools
import importlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow  # not "as pa": the Punjabi module pipeline.text.languages.pa would shadow it
import pyarrow.compute as pc

from pipeline.errors import ParamsError
from pipeline.labels import DEFAULT_LABEL_SET, LabelSet, label_set
from pipeline.text.lexicon import PunctuationTable, abbreviation_table, punctuation_table
from pipeline.text.normalize import (
    clean_lines,
    cleaned_or_rewritten,
    join_lines,
    split_exactly,
    split_lines,
)


class UnknownLanguageError(ParamsError):
    pass


def _normalize_as_block(lines: pyarrow.Array, normalize: Callable[[str], str]) -> pyarrow.Array:
    """Lines joined and split back in Arrow (no Python string per line); a normalizer that changed
    the number of lines after all, or null lines, fall back to one call per line."""
    if not lines.null_count:
        out = split_exactly(normalize(join_lines(lines)))
        if len(out) == len(lines):
            return out
    return pyarrow.array([normalize(line) if line else line for line in lines.to_pylist()], pyarrow.string())


@dataclass(frozen=True)
class Language:
    code: str
    name: str
    lowercase: bool = False
    keep_joiners: bool = False
    #: extra per-language normalization, given a block of cleaned lines joined by newlines (one call
    #: instead of one per line); it must not reach across a newline
    normalize_block: Callable[[str], str] | None = None
    #: an RE2 pattern that every line ``normalize_block`` changes matches (None: any line may change):
    #: the lines that match neither it nor what :func:`clean_lines` rewrites are not looked at again
    block_rewrites: str | None = None
    #: splits a normalized line into word tokens (marks still attached); whitespace by default
    tokenize: Callable[[str], list[str]] | None = None
    #: Unicode scripts the language is written in (RE2 names: Latin, Devanagari, Bengali, Han...)
    scripts: tuple[str, ...] = ()
    #: remove words with letters of none of ``scripts`` (counted; the line is kept)
    drop_other_scripts: bool = False
    notes: str = field(default="", compare=False)
    #: the label set its marks are labelled in (a built-in's name or a table's path)
    label_set: str = DEFAULT_LABEL_SET
    #: the paper protocol it is labelled under (``papers``: the project's rules; see
    #: :mod:`pipeline.text.protocols`)
    protocol: str = "papers"

    @property
    def relabelled(self) -> bool:
        """Does a protocol replace the project's normalization and labelling?"""
        from pipeline.text import protocols

        found = protocols.load(self.protocol)
        return found is not None and found.rules(self.code).relabels

    @property
    def punctuation(self) -> PunctuationTable:
        return punctuation_table(self.code, self.label_set)

    @property
    def labels(self) -> LabelSet:
        return label_set(self.label_set)

    @property
    def abbreviations(self) -> frozenset[str]:
        """Words that keep their final period (lowercase where the language lowercases)."""
        return abbreviation_table(self.code)[0]

    @property
    def abbreviations_before_name(self) -> frozenset[str]:
        """The abbreviations written before a name (titles: ``dr.``): never a sentence end before a capital."""
        return abbreviation_table(self.code)[1]

    def normalize(self, lines: pyarrow.Array, counts: Counter | None = None) -> pyarrow.Array:
        """Normalize lines (an Arrow string array) for this language; the count is kept.  What was
        replaced (control characters) is counted in ``counts``."""
        return self.normalize_finding(lines, counts)[0]

    def normalize_finding(
        self, lines: pyarrow.Array, counts: Counter | None = None, pattern: str | None = None
    ) -> tuple[pyarrow.Array, np.ndarray | None]:
        """:meth:`normalize`, and which lines may match the RE2 ``pattern`` once normalized (a mask;
        None: any may, or no pattern given): the scan that finds the lines to normalize finds them
        too, where a second scan of every line would cost as much again."""
        # a protocol's rewrites take the text as the paper did: the language's own fixes would
        # change what they see (Mandarin's stray spaces are slots' ends to Rao et al. 2022)
        block = None if self.normalize_block is None or self.relabelled else self.normalize_block
        if not len(lines) or (block is not None and self.block_rewrites is None):
            lines = clean_lines(lines, self.keep_joiners, counts)
            return (_normalize_as_block(lines, block) if block is not None and len(lines) else lines), None
        # one scan finds the lines that anything would rewrite (most lines hold nothing to rewrite);
        # each step works line by line, so the others are left as they are.  A line that ``pattern``
        # alone finds is looked at for nothing: no step rewrites it
        scan = cleaned_or_rewritten(self.keep_joiners, self.block_rewrites)
        found = pc.match_substring_regex(lines, scan if pattern is None else f"{scan}|{pattern}").fill_null(False)
        mask = found.to_numpy(zero_copy_only=False) if pattern is not None else None
        if not pc.any(found).as_py():
            return lines, mask
        subset = clean_lines(lines.filter(found), self.keep_joiners, counts)
        if block is not None:  # of these, the lines it rewrites (most need NFC only: Bangla's য়)
            rewritten = pc.match_substring_regex(subset, self.block_rewrites).fill_null(False)
            if pc.any(rewritten).as_py():
                normalized = _normalize_as_block(subset.filter(rewritten), block)
                subset = pc.replace_with_mask(subset, rewritten, normalized)
        return pc.replace_with_mask(lines, found, subset), mask

    def normalize_text(self, text: str, counts: Counter | None = None) -> pyarrow.Array:
        """Split a block of text into lines (LF, CRLF or CR endings) and normalize them."""
        return self.normalize(split_lines(text), counts)

    def normalize_words(self, words: list[str]) -> list[str]:
        """Normalize already tokenized words (one per entry), keeping their count."""
        out = self.normalize(pyarrow.array(words, pyarrow.string())).to_pylist()
        # a word stays one word: spaces a normalizer put inside it go (indic-nlp writes "—" as " - ")
        return ["".join(w.split()) for w in out]


@functools.cache
def get_language(
    code: str, user_dict: str | None = None, labels: str = DEFAULT_LABEL_SET, protocol: str = "papers"
) -> Language:
    """The language of ``code``; ``user_dict``: a jieba user dictionary (Mandarin only); ``labels``:
    the label set its marks are labelled in; ``protocol``: a paper's protocol it is labelled under."""
    language = _module(code).LANGUAGE
    if user_dict is not None:
        configure = getattr(_module(code), "with_user_dict", None)
        if configure is None:
            raise ParamsError(f"user_dict: only Mandarin (zh) segments with a user dictionary, not {code!r}")
        language = configure(user_dict)
    if labels != language.label_set:
        language = dataclasses.replace(language, label_set=labels)
        language.punctuation  # noqa: B018 (a label set that lacks a label of the mark table fails here)
    if protocol != language.protocol:
        from pipeline.text import protocols

        protocols.check(protocol, code, labels, user_dict=user_dict)
        language = dataclasses.replace(language, protocol=protocol)
    return language


def _module(code: str):
    from pipeline.text import registry

    entry = registry.lookup(code)
    if entry is None:
        raise UnknownLanguageError(f"unknown language code {code!r}; available: {', '.join(available_languages())}")
    return importlib.import_module(entry.language)


def available_languages() -> list[str]:
    from pipeline.text import registry

    return registry.codes()
