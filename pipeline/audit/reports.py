"""Writing the audit's outputs: ``audit.json`` (DVC metrics), ``label_shares.csv``,
``case_shares.csv`` and ``sentence_lengths.csv`` (DVC plots), ``audit.html``, ``table1.md`` and
``paper_tables.json`` (the published tables of the paper protocols the datasets were made under,
counted the papers' way beside the published numbers: :func:`pipeline.text.protocols.paper_tables`).

Alignment and dataset reports are given by path (the caller knows them from its params), and
summarized beside their dataset.  All files are promoted together.
"""

from __future__ import annotations

import csv
import io as _io
from pathlib import Path

from pipeline.audit.html import capped_histogram, report_html, table1_markdown
from pipeline.audit.stats import alignment_summary
from pipeline.engine import location, reading, writing

OUTPUTS = (
    "audit.json",
    "label_shares.csv",
    "case_shares.csv",
    "sentence_lengths.csv",
    "audit.html",
    "table1.md",
    "paper_tables.json",
)


def _csv(rows, header) -> str:
    out = _io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header)
    writer.writerows(rows)
    return out.getvalue()


def with_reports(
    result: dict, alignments: dict[str, Path] | None = None, datasets: dict[str, Path] | None = None
) -> dict:
    """The audit with each alignment's summary beside its dataset, and each model-ready dataset's
    distribution, oversampling and augmentation as ``dataset:<name>``."""
    for name, path in sorted((alignments or {}).items()):
        if name in result:
            result[name]["alignment"] = alignment_summary(reading.read_json(path))
    for name, path in sorted((datasets or {}).items()):
        report = reading.read_json(path)
        entry = dict(report.get("distribution", {}).get(name, {}))
        for key in ("oversampling", "augmentation"):
            if key in report:
                entry[key] = report[key]
        if entry:
            result[f"dataset:{name}"] = entry
    return result


def write_outputs(
    result: dict, histograms: dict, out: Path, inputs=(), readers: dict | None = None, protocols: dict | None = None
) -> None:
    """Write every output file of the audit into ``out`` (see the module doc); ``readers`` (dataset
    name -> reader) places the notes that concern one source format (:func:`report_html`);
    ``protocols``: dataset name -> the protocol record of its manifest."""
    from pipeline.text.protocols import paper_tables

    tables = paper_tables(result, protocols or {})
    capped = {name: capped_histogram(h) for name, h in sorted(histograms.items())}
    texts = {
        "audit.json": None,
        "label_shares.csv": _csv(
            [(name, label, share) for name, s in result.items() for label, share in s["label_shares"].items()],
            ["dataset", "label", "share"],
        ),
        "case_shares.csv": _csv(
            [(name, label, share) for name, s in result.items() for label, share in s.get("case_shares", {}).items()],
            ["dataset", "case", "share"],
        ),
        "sentence_lengths.csv": _csv(
            [(name, length, n) for name, rows in capped.items() for length, n in rows],
            ["dataset", "sentence_length", "sentences"],
        ),
        "audit.html": report_html(result, capped, readers=readers, paper_tables=tables),
        "table1.md": table1_markdown(result),
        "paper_tables.json": tables,
    }
    with writing.Outputs(inputs=inputs) as outputs:
        for name, text in texts.items():
            path = outputs.file(location.join(out, name))
            if not isinstance(text, str):
                writing.write_json_in_place(result if text is None else text, path)
            else:
                writing.write_text_in_place(text, path)
