"""``export``: segment datasets in other tools' formats (see :mod:`pipeline.datasets.export`)."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.export")


def export(inputs, fmt: str, out, case_column: bool = False) -> list[str]:
    """``inputs`` (segment datasets) in format ``fmt`` into the folder ``out``; the splits written."""
    from pipeline.datasets.export import export_datasets

    written = export_datasets(inputs, fmt, out, case_column=case_column)
    log.info("export %s: %s -> %s", fmt, ", ".join(written), out)
    return written


def export_entry(params_path, name: str, source, out) -> dict[str, list[str]]:
    """The params file's ``datasets.<name>.export``: one folder per format under ``out``."""
    from pipeline.engine import location, writing
    from pipeline.operations.entries import load_entry

    location.require_local(out, "export")
    _, entry = load_entry(params_path, "datasets", name)
    options = entry.export
    written = {}
    with writing.Outputs(inputs=[source]) as outputs:
        folder = outputs.dataset(out)
        for fmt in options.formats:
            written[fmt] = export([source], fmt, folder / fmt, case_column=options.case_column)
        writing.write_manifest(folder, {"kind": "exports", "formats": list(options.formats)})
    return written
