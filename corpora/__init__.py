"""One reader per source format or corpus, each with ``prepare(paths, lang, corpus, **options)``.

``prepare`` returns a :class:`Prepared`: the canonical segment table
(:data:`pipeline.schema.SEGMENT_SCHEMA`) and counts of what was read and dropped.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable

from .base import Prepared

#: reader name (as used on the command line and in params.yaml) -> module
READERS: dict[str, str] = {
    "tsv": "labelled_tsv",
    "text": "punctuated_text",
    "transcript": "transcript",
    "ted_xml": "ted_xml",
    "news_json": "news_json",
}


def get_reader(name: str) -> Callable[..., Prepared]:
    try:
        module = READERS[name]
    except KeyError:
        raise ValueError(f"unknown reader {name!r}; available: {', '.join(sorted(READERS))}") from None
    return importlib.import_module(f"{__name__}.{module}").prepare
