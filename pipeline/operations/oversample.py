"""``oversample``: a split dataset -> train questions oversampled (Rao 2022), augmentation copies of
train for the audit, and the report."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.oversample")


def oversample_entry(params_path, name: str, source, out, augmented, report_path, confusables=None) -> dict:
    """The params file's ``datasets.<name>.oversample`` over the split dataset ``source``."""
    from pipeline.datasets.oversample import oversample_dataset
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "datasets", name)
    report = oversample_dataset(
        source,
        entry.oversample,
        entry.split.seed,
        out,
        augmented,
        report_path,
        confusables,
        params.engine_for(entry.engine),
    )
    if "oversampling" in report:
        log.info(
            "oversample %s: QUESTION %.4f -> %.4f",
            name,
            report["oversampling"]["before"],
            report["oversampling"]["after"],
        )
    return report
