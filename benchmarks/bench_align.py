"""Alignment throughput: hypothesis words/s including reading and writing Parquet.

IWSLT test2011 (reference) and test2011asr (hypothesis) are repeated as separate
documents until the hypothesis holds at least 1 M words.  Timed: read both
segment Parquets, align every document (guerreiro policy, English number
grammar), write the output Parquet and report.  Baseline: a pure-Python
dynamic-programming word aligner (Levenshtein table + backtrace) on one document,
scaled to the same number of words.
"""

from __future__ import annotations

import os
import tempfile
import time

import pyarrow as pa
from _common import corpus_root, peak_rss_mb, save_results

from corpora import get_reader
from pipeline.align.tables import align_tables
from pipeline.engine import reading, writing
from pipeline.engine.executor import resolve_workers
from pipeline.text.verbalize import get_verbalizer

TARGET = 1_000_000
WORKERS = int(os.environ.get("BENCH_WORKERS", "0"))  # 0: one process per core


def repeat_as_documents(table: pa.Table, times: int) -> pa.Table:
    parts = []
    for k in range(times):
        parts.append(
            table.set_column(
                table.schema.get_field_index("doc_id"), "doc_id", pa.array([f"talk{k:04d}"] * table.num_rows)
            )
        )
    return pa.concat_tables(parts).combine_chunks()


def python_dp_align(ref: list[str], hyp: list[str]) -> list[tuple[int, int]]:
    """Textbook edit-distance alignment: full table, then backtrace to (ref, hyp) pairs."""
    n, m = len(ref), len(hyp)
    prev = list(range(m + 1))
    back = []
    for i in range(1, n + 1):
        cur = [i] + [0] * m
        row = bytearray(m + 1)
        for j in range(1, m + 1):
            sub = prev[j - 1] + (ref[i - 1] != hyp[j - 1])
            dele, ins = prev[j] + 1, cur[j - 1] + 1
            best = min(sub, dele, ins)
            cur[j] = best
            row[j] = 0 if best == sub else (1 if best == dele else 2)
        back.append(row)
        prev = cur
    pairs, i, j = [], n, m
    while i > 0 and j > 0:
        move = back[i - 1][j]
        if move == 0:
            pairs.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif move == 1:
            i -= 1
        else:
            j -= 1
    return pairs[::-1]


def main() -> None:
    shared = corpus_root()
    ref1 = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="ref").table
    hyp1 = get_reader("tsv")([shared / "iwslt_en/test2011asr.tsv"], lang="en", corpus="asr").table
    hyp_words_once = sum(len(w) for w in hyp1["words"].to_pylist())
    times = -(-TARGET // hyp_words_once)
    verbalizer = get_verbalizer("en")
    with tempfile.TemporaryDirectory() as tmp:
        writing.write_parquet(repeat_as_documents(ref1, times), os.path.join(tmp, "ref.parquet"))
        writing.write_parquet(repeat_as_documents(hyp1, times), os.path.join(tmp, "hyp.parquet"))
        n_words = hyp_words_once * times
        start = time.perf_counter()
        ref = reading.read_segments(os.path.join(tmp, "ref.parquet"))
        hyp = reading.read_segments(os.path.join(tmp, "hyp.parquet"))
        out, report = align_tables(ref, hyp, verbalizer=verbalizer, workers=WORKERS)
        writing.write_parquet(out, os.path.join(tmp, "out.parquet"))
        writing.write_json(report, os.path.join(tmp, "report.json"))
        fast = time.perf_counter() - start

    # baseline on the first 2,000 words of one document, scaled (the DP is quadratic per document:
    # a whole 12.8k-word talk takes minutes; scaling a slice flatters the baseline)
    ref_words = [w for seg in ref1["words"].to_pylist() for w in seg][:2000]
    hyp_words = [w for seg in hyp1["words"].to_pylist() for w in seg][:2000]
    start = time.perf_counter()
    python_dp_align(ref_words, hyp_words)
    base = (time.perf_counter() - start) * n_words / len(hyp_words)

    print(f"input: test2011/test2011asr x{times} documents = {n_words:,} hypothesis words")
    print(
        f"pipeline : {fast:7.2f} s  {n_words / fast / 1e6:6.3f} M words/s  (read + align + write, "
        f"{resolve_workers(WORKERS)} worker processes; WER {report['wer']['wer']})"
    )
    print(
        f"baseline : {base:7.2f} s  {n_words / base / 1e6:6.3f} M words/s"
        "  (pure-Python DP on 2,000-word slices, scaled)"
    )
    print(f"ratio    : {base / fast:.1f}x   peak RSS {peak_rss_mb():.0f} MB   (target >= 1 M words/s)")
    save_results(
        "align",
        title="Alignment",
        what=f"IWSLT test2011 punctuation onto test2011asr, x{times} documents ({n_words / 1e6:.2f} M hypothesis "
        f"words): read, align, write, {resolve_workers(WORKERS)} worker processes",
        baseline="a pure-Python dynamic-programming aligner on 2,000-word slices, scaled, same run",
        columns=["what", "seconds", "M words/s", "pipeline / baseline"],
        rows=[
            ["pipeline", f"{fast:.2f}", f"{n_words / fast / 1e6:.3f}", f"{base / fast:.0f}x"],
            ["baseline", f"{base:.2f}", f"{n_words / base / 1e6:.4f}", "1x"],
        ],
        metrics={
            "words": n_words,
            "seconds": fast,
            "baseline_s": base,
            "wer": report["wer"]["wer"],
            "workers": resolve_workers(WORKERS),
            "peak_rss_mb": peak_rss_mb(),
        },
    )


if __name__ == "__main__":
    main()
