"""``split``: segment datasets -> one dataset with document-level train/dev/test splits, filters and
duplicates removed, and its report."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.split")


def split(inputs: dict[str, str], params, out, report_path, engine, *, fixed=None, name: str = "split") -> dict:
    """Split ``inputs`` (``{corpus: segment dataset}``) by ``params``
    (:class:`pipeline.params.SplitParams`: neither ratios nor counts means its default ratios);
    ``fixed`` (``{corpus: split}``, datasets of their own) keep one split whole."""
    from pipeline.datasets.split import SplitInput, split_dataset

    sources = [SplitInput(corpus, str(path)) for corpus, path in inputs.items()]
    sources += [SplitInput(corpus, str(path), split) for corpus, (path, split) in (fixed or {}).items()]
    report = split_dataset(sources, params, out, report_path, engine)
    per_split = ", ".join(f"{k} {v['documents']} docs, {v['words']} words" for k, v in report["splits"].items())
    log.info("%s: %s", name, per_split)
    return report


def split_entry(params_path, name: str, segments_dir, out, report_path) -> dict:
    """The params file's ``datasets.<name>``: its corpora (their datasets in ``segments_dir``) split by
    its ``split`` section."""
    from pipeline.engine import location
    from pipeline.operations.entries import load_entry

    params, entry = load_entry(params_path, "datasets", name)

    def path(corpus: str) -> str:
        return str(location.join(segments_dir, f"{corpus}.parquet"))

    fixed = {**dict.fromkeys(entry.split.test_corpora, "test"), **entry.split.fixed}
    return split(
        {corpus: path(corpus) for corpus in entry.corpora},
        entry.split,
        out,
        report_path,
        params.engine_for(entry.engine),
        fixed={corpus: (path(corpus), split) for corpus, split in fixed.items()},
        name=f"split {name}",
    )
