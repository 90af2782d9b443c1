"""``align``: a reference's punctuation and case moved onto ASR hypotheses (Guerreiro et al. 2021).

Two ways in, one check of the options (the alignments entry's schema): :func:`align_files` reads
a reference file and a hypothesis file with their readers and aligns in memory (the command
line); :func:`align_entry` aligns two ingested datasets shard by shard (the DVC stage).
"""

from __future__ import annotations

import logging
from pathlib import Path

log = logging.getLogger("punct-corpora.align")


def _log_report(report: dict, what: str, out) -> None:
    for warning in report["warnings"]:
        log.warning("warning: %s", warning)
    marks = report["marks"]
    log.info(
        "%s: WER %.3f; %d of %d marks transferred (%d moved, dropped %s) -> %s",
        what,
        report["wer"]["wer"],
        marks["transferred"],
        marks["reference"],
        marks["moved"],
        marks["dropped"],
        out,
    )


class _Part:
    """What :func:`pipeline.engine.dataset.finish` counts of a part written in one piece."""

    def __init__(self, table):
        import pyarrow.compute as pc

        self.rows = table.num_rows
        self.words = int(pc.sum(pc.list_value_length(table["words"])).as_py() or 0) if table.num_rows else 0


def align_files(entry, ref_reader: str, hyp_reader: str, out, report_path, corpus: str | None = None) -> dict:
    """``entry`` (:class:`pipeline.params.AlignmentParams`: ``ref`` and ``hyp`` are files read with
    ``ref_reader`` and ``hyp_reader``) aligned in memory into the dataset ``out`` and the report."""
    from pipeline import params as P
    from pipeline.align.alignment import align_tables
    from pipeline.engine import location, writing
    from pipeline.engine.dataset import finish
    from pipeline.ingest import ingest_table
    from pipeline.text.verbalize import verbalizer_or_none

    for reader, flag in ((ref_reader, "--ref-reader"), (hyp_reader, "--hyp-reader")):
        if problem := P.reader_problem(reader):
            raise P.ParamsError(f"{flag}: {problem}")
    ref, _ = ingest_table(ref_reader, [entry.ref], entry.lang, Path(entry.ref).stem)
    hyp, _ = ingest_table(hyp_reader, [entry.hyp], entry.lang, Path(entry.hyp).stem)
    table, report = align_tables(
        ref,
        hyp,
        policy=entry.policy,
        verbalizer=verbalizer_or_none(entry.lang),
        max_wer=entry.max_wer,
        force=entry.force,
        corpus=corpus,
        pair_by=entry.pair_by,
        workers=entry.workers,
    )
    with writing.Outputs(inputs=[entry.ref, entry.hyp]) as outputs:
        folder = outputs.dataset(out)
        writing.write_parquet(table, location.join(folder, "part-00000.parquet"))
        finish(folder, "segments", [_Part(table)], schema="punct-segments/2")
        writing.write_json_in_place(report, outputs.file(report_path))
    _log_report(report, "align", out)
    return report


def align_entry(params_path, name: str, ref, hyp, out, report_path) -> dict:
    """The params file's ``alignments.<name>`` over the ingested datasets ``ref`` and ``hyp``, sharded."""
    from pipeline.align.alignment import align_datasets
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "alignments", name)
    report = align_datasets(
        ref,
        hyp,
        out,
        report_path,
        policy=entry.policy,
        lang=entry.lang,
        corpus=name,
        pair_by=entry.pair_by,
        max_wer=entry.max_wer,
        force=entry.force,
        engine=params.engine_for(entry.engine),
    )
    _log_report(report, f"align {name}", out)
    return report
