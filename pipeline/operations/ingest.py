"""``ingest``: a corpus entry's inputs -> a segment dataset and its counts."""

from __future__ import annotations


def ingest(entry, inputs, corpus: str, out, stats, engine) -> dict:
    """Read ``inputs`` with ``entry`` (a corpus entry, checked by its reader's schema), normalize and
    label them, write the segment dataset ``out`` and (given ``stats``) the counts."""
    from pipeline.ingest import ingest_corpus

    return ingest_corpus(entry, inputs, corpus, out, stats, engine)


def ingest_entry(params_path, name: str, out, stats) -> dict:
    """The registry's corpus ``name`` (``corpora.<name>`` of the params file)."""
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "corpus_entries", name)
    return ingest(entry, entry.input, name, out, stats, params.engine_for(entry.engine))
