"""``audit``: label distributions, lengths, drift and leakage of segment datasets."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.audit")

#: share points of drift between splits or datasets above which the audit warns
DRIFT_THRESHOLD = 1.0


def audit(
    inputs, out, engine, *, drift_threshold: float = DRIFT_THRESHOLD, names=(), reports=None, readers=None
) -> dict:
    """Audit the segment datasets ``inputs`` into the folder ``out`` (audit.json, the CSVs, the page,
    table1.md, paper_tables.json), sharded by ``engine`` (:class:`pipeline.params.EngineParams`).  ``names``: datasets
    reported even when they have no rows; ``reports``: ``(alignments, datasets)``, the alignment
    and dataset report files summarized beside the datasets; ``readers``: dataset name -> reader,
    which places the page's notes that concern one source format."""
    from pipeline.audit.reports import with_reports, write_outputs
    from pipeline.audit.stats import audit_datasets, empty_summary
    from pipeline.engine import location, reading, writing
    from pipeline.engine.dataset import labels_of
    from pipeline.engine.executor import executor

    # the paper protocols the datasets were made under (their ingest's manifest says), for the
    # papers' tables; a dataset made from them (split, oversampled) counts other rows: not compared
    protocols = {}
    for path in inputs:
        record = (reading.read_manifest(path) or {}).get("protocol")
        if isinstance(record, dict) and "corpus" in record:
            protocols[record["corpus"]] = record

    with writing.Outputs(inputs=inputs) as outputs, executor(engine.engine, engine.workers, engine.scheduler) as runner:
        result, histograms = audit_datasets(
            runner,
            inputs,
            outputs.scratch(location.join(out, "audit.json")),
            engine.shard_rows,
            drift_threshold=drift_threshold,
        )
    missing = [name for name in names if name not in result]
    if missing:  # a corpus with no rows is reported, not left out (the footers read only then)
        label_set = labels_of(inputs)
        for name in missing:
            result[name] = empty_summary(label_set)
    if reports is not None:
        result = with_reports(result, *reports)
    # the readers the manifests name (datasets made under a protocol), where the caller gave none
    readers = {**{name: r["reader"] for name, r in protocols.items() if "reader" in r}, **(readers or {})}
    write_outputs(result, histograms, out, inputs=inputs, readers=readers, protocols=protocols)
    log.info("audit: %d dataset(s) -> %s", len(result), location.join(out, "audit.json"))
    return result


def audit_registry(params_path, data_dir, out, drift_threshold: float = DRIFT_THRESHOLD) -> dict:
    """Every segment dataset the params file names (corpora and alignments), found under ``data_dir``,
    with the alignment reports and the model-ready datasets' reports."""
    from pipeline import params as P
    from pipeline.engine import location

    params = P.load(params_path, [])
    names = params.segment_names()
    paths = [location.join(data_dir, "segments", f"{name}.parquet") for name in names]
    alignments = {name: location.join(data_dir, "alignment", f"{name}.json") for name in params.alignments}
    datasets = {name: location.join(data_dir, "datasets", name, "report.json") for name in params.datasets}
    return audit(
        paths,
        out,
        params.engine_for(),
        drift_threshold=drift_threshold,
        names=names,
        reports=(alignments, datasets),
        readers={name: entry.get("reader") for name, entry in params.corpora.items()},
    )
