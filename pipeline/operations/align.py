"""``align``: a reference's punctuation and case moved onto ASR hypotheses (Guerreiro et al. 2021).

Two ways in, one check of the options (the alignments entry's schema) and one alignment (the
sharded :func:`pipeline.align.datasets.align_datasets`): :func:`align_sides` takes each side as a
segment dataset or as files read by a reader, ingested first into a scratch folder beside the
output (the command line); :func:`align_entry` aligns two ingested datasets (the DVC stage).
Documents pair by id, by order or by a pairs file (``pair_by file``).
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
        "%s: WER %.3f; %d documents; %d of %d marks transferred (%d moved, dropped %s) -> %s",
        what,
        report["wer"]["wer"],
        report["documents"],
        marks["transferred"],
        marks["reference"],
        marks["moved"],
        marks["dropped"],
        out,
    )


def align_sides(entry, sides, out, report_path, corpus: str | None = None, engine=None) -> dict:
    """``entry`` (:class:`pipeline.params.AlignmentParams`) over ``sides`` (the reference's and the
    hypothesis's :class:`pipeline.align.inputs.Side`: a segment dataset, or files and their reader)
    into the segment dataset ``out`` and the report ``report_path``.  ``corpus`` (default: the
    hypothesis file's name, or the hypothesis dataset's own corpus) names the output's rows.
    ``engine``: how the alignment runs (default: the engine section's defaults)."""
    from pipeline import params as P
    from pipeline.align.inputs import SEGMENTS, side_dataset
    from pipeline.engine import writing

    ref_side, hyp_side = sides
    # the outputs are checked against the user's inputs here: the alignment reads ingested copies.
    # Sides read by a reader are ingested into a scratch folder beside the output (on its disk),
    # under a name of its own (a stale staging folder of the output itself is cleaned), removed
    # at the end; the alignment itself is the stage's
    writing.check_not_input([out, report_path], [ref_side.path, hyp_side.path])
    if corpus is None and hyp_side.reader not in (None, *SEGMENTS):
        corpus = Path(hyp_side.path).stem
    with writing.Outputs(inputs=[ref_side.path, hyp_side.path]) as outputs:
        scratch = outputs.scratch(f"{str(out).rstrip('/')}-inputs")
        ref, hyp = (side_dataset(side, entry.lang, Path(scratch)) for side in sides)
        report = _align(entry, ref, hyp, out, report_path, corpus, engine or P.EngineParams())
    _log_report(report, "align", out)
    return report


def _align(entry, ref, hyp, out, report_path, corpus, engine) -> dict:
    """The alignment of the segment datasets ``ref`` and ``hyp`` with an entry's options (the command
    line's or the params file's: the same fields)."""
    from pipeline.align.datasets import align_datasets

    return align_datasets(
        ref,
        hyp,
        out,
        report_path,
        policy=entry.policy,
        lang=entry.lang,
        corpus=corpus,
        pair_by=entry.pair_by,
        max_wer=entry.max_wer,
        force=entry.force,
        engine=engine,
        pairs_file=entry.pairs,
    )


def align_entry(params_path, name: str, ref, hyp, out, report_path) -> dict:
    """The params file's ``alignments.<name>`` over the ingested datasets ``ref`` and ``hyp``, sharded
    (with ``pair_by file``, paired by the entry's ``pairs`` file)."""
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "alignments", name)
    report = _align(entry, ref, hyp, out, report_path, name, params.engine_for(entry.engine))
    _log_report(report, f"align {name}", out)
    return report
