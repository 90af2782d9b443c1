"""The sharded ingest as the command line runs it: the options checked as a corpus entry (the
reader's params schema), then the one ingest operation."""

from __future__ import annotations

from pipeline import params as P
from pipeline.operations.ingest import ingest


def corpus_entry(reader: str, lang: str, options: dict | None = None, **keys):
    """The corpus entry for ``reader`` in ``lang`` with its ``options`` and other entry ``keys``
    (``spoken``, ``glob``, ``label_set``...), checked as the params file's are."""
    return P.corpus_entry(reader, lang, {**(options or {}), **keys})


def ingest_files(
    reader: str,
    inputs,
    lang: str,
    corpus: str,
    out,
    stats=None,
    options: dict | None = None,
    engine: str = "local",
    workers: int = 0,
    lines_per_shard: int = 100_000,
    **keys,
) -> dict:
    """``inputs`` ingested into the segment dataset ``out`` (and the counts ``stats``); the report."""
    engine_params = P.EngineParams(engine=engine, workers=workers, shard_lines=lines_per_shard)
    return ingest(corpus_entry(reader, lang, options, **keys), inputs, corpus, out, stats, engine_params)
