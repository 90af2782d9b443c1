"""Unpunctuated transcripts (ASR hypotheses), one segment per line; every label O.

A hypothesis is what it is: every word stays, in order, whatever its script (the text
reader's language filter does not apply).  Marks found anyway are stripped (they would
otherwise be taken for words) and counted under ``marks_stripped``, so a transcript that was
punctuated after all shows up in the stage's stats.  Each file is one document by default:
ASR segmentation rarely matches the reference's, so alignment works per document.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field

from pipeline.engine.step import StepResult
from pipeline.ingest import ReaderOptions

from . import punctuated_text
from .base import prepare_with


class Options(ReaderOptions):
    doc_boundary: Literal["blank_line", "file", "line"] = Field(
        "file", description="what separates documents: nothing (the file is one document), blank lines, every line"
    )

    @property
    def quoting(self) -> str:
        return "none"


shards = punctuated_text.shards


def read(shard, language, corpus: str, options: Options) -> StepResult:
    return punctuated_text.read(shard, language, corpus, options, transcript=True)


def prepare(paths, lang: str, corpus: str, **options):
    return prepare_with("transcript", paths, lang, corpus, **options)
