"""``oversample``: a split dataset -> train questions oversampled (Rao 2022), augmentation copies of
train for the audit, and the report."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.oversample")


def oversample(source, params, seed: int, out, augmented, report_path, confusables, engine, name: str) -> dict:
    """``params`` (:class:`pipeline.params.OversampleParams`) over the split dataset ``source``; ``seed``:
    the split's, which the augmentation draws from; ``confusables``: 3R's confusables Parquet."""
    from pipeline.datasets.oversample import oversample_dataset

    report = oversample_dataset(source, params, seed, out, augmented, report_path, confusables, engine)
    if "oversampling" in report:
        log.info(
            "%s: QUESTION %.4f -> %.4f",
            name,
            report["oversampling"]["before"],
            report["oversampling"]["after"],
        )
    return report


def oversample_entry(params_path, name: str, source, out, augmented, report_path, confusables=None) -> dict:
    """The params file's ``datasets.<name>.oversample`` over the split dataset ``source``."""
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "datasets", name)
    engine = params.engine_for(entry.engine)
    seed = entry.split.seed
    return oversample(
        source, entry.oversample, seed, out, augmented, report_path, confusables, engine, f"oversample {name}"
    )
