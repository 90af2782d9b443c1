"""Exact top-3 phoneme confusables: all CMUdict words, and g2p + top-3 for web2 (235,886 words).

Baseline: rapidfuzz.process.cdist brute force over the same phoneme strings (all
cores), timed on a slice of query rows in the same run and scaled to every row
(its cost is linear in the rows).  Each measurement runs in its own process so
its peak memory is its own.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time

from _common import ROOT, corpus_root, peak_rss_mb, save_results


def cmudict_run() -> dict:
    from rapidfuzz import process
    from rapidfuzz.distance import Levenshtein

    from pipeline.phonetics.confusables import encode, top_k
    from pipeline.phonetics.g2p import get_g2p

    g2p = get_g2p("en")
    words = sorted(g2p.cmu)
    sequences, _ = g2p.phonemize(words)
    start = time.perf_counter()
    neighbours = top_k(sequences, 3)
    ours = time.perf_counter() - start
    strings, _ = encode(sequences)
    rows = strings[:: max(1, len(strings) // 8000)]
    start = time.perf_counter()
    process.cdist(rows, strings, scorer=Levenshtein.distance, dtype="uint8", workers=-1)
    brute = (time.perf_counter() - start) * len(strings) / len(rows)
    return {
        "words": len(words),
        "seconds": ours,
        "brute_force_seconds": brute,
        "peak_rss_mb": peak_rss_mb(),
        "stats": dict(neighbours.stats),
    }


def web2_run() -> dict:
    from pipeline.phonetics.confusables import build_confusables
    from pipeline.phonetics.g2p import get_g2p

    words = (corpus_root() / "lexicons" / "web2.txt").read_text().split()
    start = time.perf_counter()
    g2p = get_g2p("en")
    _table, report = build_confusables(words, g2p, k=3)
    return {
        "words": report["words"],
        "vocabulary": report["vocabulary"],
        "seconds": time.perf_counter() - start,
        "peak_rss_mb": peak_rss_mb(),
        "skipped": report["skipped"],
    }


def main() -> None:
    corpus_root()
    if len(sys.argv) > 1:
        print(json.dumps({"cmudict": cmudict_run, "web2": web2_run}[sys.argv[1]]()))
        return
    results = {}
    for name in ("cmudict", "web2"):
        out = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, cwd=ROOT, check=True)
        results[name] = json.loads(out.stdout.strip().splitlines()[-1])
    c, w = results["cmudict"], results["web2"]
    print(
        f"CMUdict {c['words']:,} words, top-3: {c['seconds']:.1f} s (target <= 20 s),"
        f" peak RSS {c['peak_rss_mb']:.0f} MB"
    )
    print(
        f"  rapidfuzz cdist brute force (same run, scaled from a slice): {c['brute_force_seconds']:.1f} s;"
        f" ratio {c['brute_force_seconds'] / c['seconds']:.1f}x (target >= 5x)"
    )
    print(f"  search stages: {c['stats']}")
    print(
        f"web2 {w['vocabulary']:,} words ({w['words']:,} converted), g2p + top-3: {w['seconds']:.1f} s"
        f" (target <= 90 s), peak RSS {w['peak_rss_mb']:.0f} MB (target <= 4096 MB); skipped {w['skipped']}"
    )
    save_results(
        "confusables",
        title="Confusables",
        what="exact top-3 neighbours by phoneme edit distance: every CMUdict word, and g2p + top-3 for web2",
        baseline="rapidfuzz cdist brute force over the same phoneme strings, same run (timed on a slice, scaled)",
        columns=["vocabulary", "words", "seconds", "brute force seconds", "brute force / ours", "peak RSS MB"],
        rows=[
            [
                "CMUdict",
                f"{c['words']:,}",
                f"{c['seconds']:.1f}",
                f"{c['brute_force_seconds']:.1f}",
                f"{c['brute_force_seconds'] / c['seconds']:.1f}x",
                f"{c['peak_rss_mb']:.0f}",
            ],
            ["web2 (g2p + top-3)", f"{w['vocabulary']:,}", f"{w['seconds']:.1f}", "", "", f"{w['peak_rss_mb']:.0f}"],
        ],
        metrics=results,
    )


if __name__ == "__main__":
    main()
