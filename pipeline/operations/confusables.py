"""``confusables``: for every vocabulary word, the k words closest by phoneme edit distance."""

from __future__ import annotations

import logging

log = logging.getLogger("punct-corpora.confusables")


def phonemizer(entry, keep_stress_key: str = "keep_stress"):
    """The g2p of ``entry.lang``, keeping stress digits or tones when ``entry.keep_stress`` asks;
    refused (naming ``keep_stress_key``: the option or params key) for a language that has neither."""
    from pipeline.errors import ParamsError
    from pipeline.phonetics.g2p import get_g2p

    g2p = get_g2p(entry.lang)
    if entry.keep_stress:
        if not hasattr(g2p, "keep_stress") and not hasattr(g2p, "keep_tones"):
            raise ParamsError(
                f"{keep_stress_key}: means nothing for language {entry.lang!r} (its phonemes have no stress or tones)"
            )
        g2p = type(g2p)(True)
    return g2p


def confusables(
    entry, vocab, out, report_path=None, *, segments: bool, name: str | None = None, keep_stress_key="keep_stress"
) -> dict:
    """``entry`` (:class:`pipeline.params.ConfusablesParams`) over ``vocab``: a segment dataset
    (``segments``: its words seen ``entry.min_count`` times) or a word list, one word a line.
    Writes the confusables Parquet ``out`` and, given ``report_path``, the report."""
    from pipeline.engine import reading, writing
    from pipeline.phonetics.confusables import build_confusables, vocabulary_from_segments

    g2p = phonemizer(entry, keep_stress_key)
    if segments:
        words = vocabulary_from_segments(vocab, entry.min_count)
    else:
        words = [w.strip() for w in reading.read_text(vocab).splitlines() if w.strip()]
    what = f"confusables {name}" if name else "confusables"
    table, report = build_confusables(
        words,
        g2p,
        k=entry.k,
        threads=entry.threads,
        progress=lambda stage, done, total: log.info("%s: radius %s: %d/%d words settled", what, stage, done, total),
    )
    with writing.Outputs(inputs=[vocab]) as outputs:
        writing.write_parquet(table, outputs.file(out))
        if report_path:
            writing.write_json_in_place(report, outputs.file(report_path))
    log.info("%s: %d words, %d rows, skipped %s -> %s", what, report["words"], report["rows"], report["skipped"], out)
    return report


def confusables_entry(params_path, name: str, vocab, out, report_path) -> dict:
    """The params file's ``confusables.<name>``; ``vocab`` is its corpus's segment dataset or its word list."""
    from pipeline.operations.entries import load_entry

    _, entry = load_entry(params_path, "confusables", name)
    return confusables(
        entry,
        vocab,
        out,
        report_path,
        segments=entry.corpus is not None,
        name=name,
        keep_stress_key=f"{params_path}: confusables.{name}.keep_stress",
    )
