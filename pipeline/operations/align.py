"""``align``: a reference's punctuation and case moved onto ASR hypotheses (Guerreiro et al. 2021).

Two ways in, one check of the options (the alignments entry's schema) and one alignment (the
sharded :func:`pipeline.align.datasets.align_datasets`): :func:`align_sides` takes each side as a
segment dataset or as files read by a reader, ingested first into a scratch folder beside the
output (the command line); :func:`align_entry` aligns two ingested datasets (the DVC stage).
Documents pair by id, by order or by a pairs file (``pair_by file``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import ParamsError

log = logging.getLogger("punct-corpora.align")

#: reader names that mean "this side is a segment dataset already"
SEGMENTS = ("segments", "parquet")


@dataclass
class Side:
    """One side of an alignment: ``path``, read by ``reader`` with ``options`` (reader options,
    as a corpus entry of the params file holds them); reader None or ``segments``: a segment
    dataset.  ``flag`` names the side in messages (``--ref``)."""

    path: str
    reader: str | None = None
    options: dict = field(default_factory=dict)
    flag: str = "--ref"


def is_segment_dataset(path) -> bool:
    path = Path(path)
    return path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet")))


def side_dataset(side: Side, lang: str, scratch: Path, engine=None) -> str:
    """The segment dataset of ``side``: its own path, or the files ingested into ``scratch``
    (their corpus named after the file, so document ids are the reader's usual ones)."""
    from pipeline import params as P
    from pipeline.operations.ingest import ingest

    if side.reader is None or side.reader in SEGMENTS:
        if side.reader is None and not is_segment_dataset(side.path):
            raise ParamsError(
                f"{side.flag}-reader: {side.path} is not a segment dataset (.parquet file or folder of parts): "
                f"name the reader of the file ({side.flag}-reader text, transcript, tsv, ...)"
            )
        if side.options:
            raise ParamsError(
                f"{side.flag}-option: a segment dataset is read as it is: no reader options "
                f"(given: {', '.join(sorted(side.options))})"
            )
        return str(side.path)
    if problem := P.reader_problem(side.reader):
        raise ParamsError(f"{side.flag}-reader: {problem}")
    try:
        checked = P.corpus_entry(side.reader, lang, side.options, str(side.path))
    except ParamsError as exc:
        key, _, problem = str(exc).partition(": ")
        if problem.startswith("unknown key"):
            problem = f"not an option of reader {side.reader!r}"
        raise ParamsError(f"{side.flag}-option {key}: {problem}") from None
    out = Path(scratch) / f"{side.flag.strip('-')}.parquet"
    ingest(checked, [side.path], Path(side.path).stem, out, None, engine or P.EngineParams(workers=1))
    return str(out)


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
    hypothesis's :class:`Side`: a segment dataset, or files and their reader)
    into the segment dataset ``out`` and the report ``report_path``.  ``corpus`` (default: the
    hypothesis file's name, or the hypothesis dataset's own corpus) names the output's rows.
    ``engine``: how the alignment runs (default: the engine section's defaults)."""
    from pipeline import params as P
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
