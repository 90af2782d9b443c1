"""Unpunctuated transcripts (ASR hypotheses), one segment per line; every label O.

Marks found anyway are stripped (they would otherwise be taken for words) and
counted under ``marks_stripped``, so a transcript that was punctuated after all
shows up in the stage's stats.  Each file is one document by default: ASR
segmentation rarely matches the reference's, so alignment works per document.
"""

from __future__ import annotations

from .base import Prepared
from .punctuated_text import prepare as prepare_text


def prepare(paths, lang: str, corpus: str, doc_boundary: str = "file") -> Prepared:
    return prepare_text(paths, lang, corpus, doc_boundary=doc_boundary, strip_labels=True)
