"""``ingest``: a corpus entry's inputs -> a segment dataset and its counts.

The command line checks its flags as a corpus entry (the reader's params schema) and the DVC stage
reads one from the params file; both call :func:`ingest` with it.
"""

from __future__ import annotations

import logging
import os
from pathlib import Path

log = logging.getLogger("pipeline.ingest")


def ingest(entry, inputs, corpus: str, out, stats, engine) -> dict:
    """Read ``inputs`` with ``entry`` (a validated corpus entry: reader, lang, reader options, label
    set, protocol...) on ``engine`` (``EngineParams``), normalize and label them, and write the
    segment dataset ``out`` (a folder of parts) and (given ``stats``) its counts: both appear together
    or not at all.  The label set and the protocol are recorded in the manifest (the protocol with the
    input files' names, unless ``papers``); a corpus most of whose words are in another script than
    ``lang``'s is refused unless the entry allows it.  Returns the report."""
    from pipeline import ingest as I
    from pipeline.engine import writing
    from pipeline.engine.dataset import run_step
    from pipeline.engine.executor import executor
    from pipeline.labels import label_set as get_label_set

    reader, lang, options = entry.reader, entry.lang, entry.reader_options()
    # one executor for the scan that cuts the files (on its workers) and the pass over the shards
    with executor(engine.engine, engine.workers, engine.scheduler) as runner:
        shards, files, counts = I.plan(
            reader, inputs, lang, options, engine.shard_lines, entry.glob, entry.user_dict, entry.label_set,
            entry.protocol, runner,
        )  # fmt: skip
        labels = get_label_set(entry.label_set)
        suffixes = I.id_suffixes(files)
        step = I.IngestStep(
            reader, lang, corpus, options, entry.spoken, entry.user_dict, suffixes, entry.label_set, entry.protocol
        )
        with writing.Outputs(inputs=_inputs_read(inputs, files, entry)) as outputs:
            folder = outputs.dataset(out, kind="segments")
            stats_path = outputs.file(stats) if stats else None
            log.info("ingest %s: %d shard(s) of %d file(s) on %s", corpus, len(shards), len(files), runner.engine)
            results = run_step(runner, step, shards, folder, f"ingest {corpus}", labels)
            report = _finish(I, entry, inputs, corpus, folder, files, counts, results, labels)
            if stats_path is not None:
                writing.write_json_in_place(report, stats_path)
    _log_summary(report, corpus, out, stats)
    return report


def _finish(I, entry, inputs, corpus: str, folder, files, counts, results, labels) -> dict:
    """The dataset's manifest from its parts' results, and the report (its scripts checked)."""
    from pipeline.engine.dataset import counts_of, finish, manifest_entry
    from pipeline.schema import SCHEMA_NAME
    from pipeline.text import protocols

    counts.add(counts_of(results))
    finish(
        folder,
        "segments",
        results,
        schema=SCHEMA_NAME,
        **manifest_entry(labels),
        **protocols.record(entry.protocol, entry.lang, corpus, files, entry.reader, counts.stats),
    )
    report = I.report_of(entry.reader, entry.lang, corpus, counts)
    I.check_scripts(report, entry.lang, inputs, entry.allow_other_script)
    if report.get("ids_made_unique"):
        log.warning(
            "ingest %s: %d document id(s) suffixed ~2, ~3... to stay distinct (input files of one stem, "
            "or a repeated talk id): ids_made_unique in the stats",
            corpus,
            report["ids_made_unique"],
        )
    return report


def _inputs_read(inputs, files: list[Path], entry) -> list:
    """Everything the ingest reads, which no output may be: the inputs given (an output inside a
    folder given would be read by the next run), their files, the user dictionary and a label-set
    table."""
    from pipeline.engine import location
    from pipeline.labels import is_built_in, label_set_file

    given = [inputs] if isinstance(inputs, str | os.PathLike) else list(inputs)
    table_file = None if is_built_in(entry.label_set) else label_set_file(entry.label_set)
    return (
        [*(p if location.is_url(p) else Path(p) for p in given), *files]
        + ([Path(entry.user_dict)] if entry.user_dict else [])
        + ([table_file] if table_file else [])
    )


def _log_summary(report: dict, corpus: str, out, stats) -> None:
    dropped = sum(report["dropped"].values())
    where = f" (see {stats})" if stats else ""
    log.info(
        "ingest %s: %s segments, %s words -> %s%s",
        corpus,
        report.get("segments", 0),
        report.get("words", 0),
        out,
        f"; dropped {dropped}{where}" if dropped else "",
    )


def ingest_entry(params_path, name: str, out, stats) -> dict:
    """The registry's corpus ``name`` (``corpora.<name>`` of the params file)."""
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "corpus_entries", name)
    return ingest(entry, entry.input, name, out, stats, params.engine_for(entry.engine))
