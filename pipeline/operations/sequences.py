"""``sequences``: a dataset's segments -> model-ready sequences, the tokenizer and the dataset's report."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.sequences")


def sequences(source, params, out, tokenizer, report_path, name: str, reports, engine) -> dict:
    """``params`` (:class:`pipeline.params.SequencesParams`) over ``source``; ``name``: the dataset's
    name in the report; ``reports``: the earlier steps' reports, merged into ``report_path``."""
    from pipeline.datasets.sequences import sequences_dataset

    report = sequences_dataset(source, params, out, tokenizer, report_path, name, list(reports), engine)
    splits = report["distribution"].get(name, {}).get("splits", {})
    log.info(
        "dataset %s: %s",
        name,
        ", ".join(f"{k} {v['documents']} docs/{v['words']} words" for k, v in splits.items()),
    )
    return report


def sequences_entry(params_path, name: str, source, out, tokenizer, report_path, reports=()) -> dict:
    """The params file's ``datasets.<name>.sequences`` over ``source``."""
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "datasets", name)
    engine = params.engine_for(entry.engine, entry.sequences.engine)
    return sequences(source, entry.sequences, out, tokenizer, report_path, name, reports, engine)
