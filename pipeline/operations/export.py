"""``export``: segment datasets in other tools' formats (see :mod:`pipeline.datasets.export`)."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.export")


def export(
    inputs, fmt: str, out, case_column: bool = False, split_name: str | None = None, card: dict | None = None
) -> dict:
    """``inputs`` (segment datasets) in format ``fmt`` into the folder ``out``: the export's report
    (``splits``: the splits written, ...), its warnings logged.  ``split_name``: the split of rows
    that have none (default: train); ``card``: what the dataset card (hf) says of the export."""
    from pipeline.datasets.export import DEFAULT_SPLIT, export_datasets, export_warnings, split_name_problem
    from pipeline.engine import location
    from pipeline.errors import ParamsError

    location.require_local(out, "export")  # the formats' writers know local folders only
    split_name = DEFAULT_SPLIT if split_name is None else split_name
    if problem := split_name_problem(split_name):
        raise ParamsError(f"--split-name: {problem}")
    report = export_datasets(inputs, fmt, out, case_column=case_column, split_name=split_name, card=card)
    for warning in export_warnings(report):
        log.warning("warning: export %s: %s", fmt, warning)
    log.info("export %s: %s -> %s", fmt, ", ".join(report["splits"]), out)
    return report


def export_entry(params_path, name: str, source, out, command: str | None = None) -> dict[str, dict]:
    """The params file's ``datasets.<name>.export``: one folder per format under ``out``, each with
    the dataset card of the dataset's sources and params (``command``: how the export was run); the
    report of each format."""
    from pipeline.datasets.export import dataset_card
    from pipeline.engine import location, writing
    from pipeline.operations.entries import load_entry

    location.require_local(out, "export")
    params, entry = load_entry(params_path, "datasets", name)
    options = entry.export
    card = dataset_card(params, name, command or f"python -m stages.export {name}")
    reports = {}
    with writing.Outputs(inputs=[source]) as outputs:
        folder = outputs.dataset(out, kind="exports")
        for fmt in options.formats:
            reports[fmt] = export([source], fmt, folder / fmt, case_column=options.case_column, card=card)
        writing.write_manifest(folder, {"kind": "exports", "formats": list(options.formats)})
    return reports
