"""Sharded ingest + normalize + label + write of a >= 10 M-word multi-language corpus.

The corpus repeats the shared Indic, Malay and Mandarin sentence files.  Words/s
for the local engine with 1 and 2 workers and for Dask with 2 workers (same run),
and peak RSS (largest process, driver or worker) at 1x, 3x and 10x the size:
memory is bounded by the shard size, so it should stay flat.
"""

from __future__ import annotations

import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _common import ROOT, corpus_root, save_results

FILES = {
    "indic/flores/hin_Deva.devtest": "hi",
    "indic/flores/ben_Beng.devtest": "bn",
    "indic/flores/tam_Taml.devtest": "ta",
    "indic/flores/tel_Telu.devtest": "te",
    "indic/flores/mar_Deva.devtest": "mr",
    "indic/ntrex/newstest2019-ref.hin.txt": "hi",
    "indic/tico19/tico19-test.ben": "bn",
    "malay_news/flores_zsm_Latn.devtest": "ms",
    "iwslt_zh/flores_zho_Hans.devtest": "zh",
}


def build(folder: Path, repeat: int) -> dict:
    shared = corpus_root()
    langs = {}
    for rel, lang in FILES.items():
        text = (shared / rel).read_text(encoding="utf-8")
        if not text.endswith("\n"):
            text += "\n"
        path = folder / rel.replace("/", "_")
        with open(path, "w", encoding="utf-8") as out:
            for _ in range(repeat):
                out.write(text)
        langs[str(path)] = lang
    return langs


def run(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.ingest import ingest

    repeat, engine, workers = int(args[1]), args[2], int(args[3])
    words, seconds = 0, 0.0
    with tempfile.TemporaryDirectory() as tmp:
        langs = build(Path(tmp), repeat)
        by_lang: dict[str, list[str]] = {}
        for path, lang in sorted(langs.items()):
            by_lang.setdefault(lang, []).append(path)
        for lang, paths in sorted(by_lang.items()):  # a corpus per language, each on the engine
            start = time.perf_counter()
            entry = {"reader": "text", "lang": lang, "input": "-", "doc_boundary": "line", "quoting": "csv"}
            report = ingest(
                P.validate(P.corpus_model("text"), entry, None),
                paths,
                "bench",
                Path(tmp) / f"out-{lang}",
                None,
                # smaller than a file at 1x: every size has full shards
                P.EngineParams(engine=engine, workers=workers, shard_lines=5_000),
            )
            seconds += time.perf_counter() - start
            words += report["words"]
    peak = max(
        resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    )
    return {"words": words, "seconds": seconds, "peak_rss_mb": peak / 1024}


def main() -> None:
    if len(sys.argv) > 1:
        print(json.dumps(run(sys.argv)))
        return

    def measure(repeat, engine, workers):
        out = subprocess.run(
            [sys.executable, __file__, str(repeat), engine, str(workers)],
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    big = 60  # repeats: about 10 M words
    rows = {}
    for engine, workers in (("local", 1), ("local", 2), ("dask", 2)):
        rows[(engine, workers)] = r = measure(big, engine, workers)
        print(
            f"{engine:5s} x{workers}: {r['words']:,} words in {r['seconds']:.1f} s"
            f" = {r['words'] / r['seconds'] / 1e6:.2f} M words/s"
            f", peak RSS {r['peak_rss_mb']:.0f} MB"
        )
    base = rows[("local", 1)]
    for key, r in rows.items():
        print(f"  speed-up {key[0]} x{key[1]} vs local x1: {base['seconds'] / r['seconds']:.2f}")
    peaks = {}
    for factor in (1, 3, 10):
        peaks[factor] = measure(big * factor // 10, "local", 2)["peak_rss_mb"]
    print(
        "peak RSS at 1x/3x/10x (local, 2 workers): "
        + ", ".join(f"{f}x {p:.0f} MB" for f, p in peaks.items())
        + f"; spread {100 * (max(peaks.values()) / min(peaks.values()) - 1):.0f} % (target within 20 %)"
    )
    table = [
        [
            f"{engine} x{workers}",
            f"{r['words'] / 1e6:.1f} M",
            f"{r['seconds']:.1f}",
            f"{r['words'] / r['seconds'] / 1e6:.2f}",
            f"{base['seconds'] / r['seconds']:.2f}x",
            f"{r['peak_rss_mb']:.0f}",
        ]
        for (engine, workers), r in rows.items()
    ]
    table += [[f"local x2 at {f / 10:g} of the size", "", "", "", "", f"{p:.0f}"] for f, p in peaks.items() if f != 10]
    save_results(
        "engine",
        title="Engine",
        what="sharded ingest (normalize, label, write) of Indic, Malay and Mandarin sentence files repeated "
        f"x{big}, shards of 5,000 lines",
        baseline="the local engine with one worker, same run",
        columns=["engine", "words", "seconds", "M words/s", "speed-up", "peak RSS MB"],
        rows=table,
        metrics={f"{engine}_{workers}": r for (engine, workers), r in rows.items()}
        | {"peak_rss_mb_by_size": {f"{f / 10:g}": p for f, p in peaks.items()}},
    )


if __name__ == "__main__":
    main()
