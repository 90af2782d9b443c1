"""The Indic recipe (ingest -> split -> oversample -> sequences -> audit) at 1 M, 10 M (and 100 M) words.

The corpus is built at run time in a temporary folder from the shared FLORES, NTREX and TICO-19
sentences of Hindi, Bangla, Marathi and Tamil (one corpus per language).  Each copy of a
language's sentences is shuffled, and the words inside each sentence are permuted (the last
word, with the sentence-final mark, stays last), by an RNG seeded per language and copy: the
text is not one text repeated.  As in the Indic recipe of real/params.yaml, every line is a document
(``doc_boundary: line``: ids ``<file>#<line>``, unique); ``--doc-sentences N`` writes a blank line
every N sentences instead (``doc_boundary: blank_line``).

Each stage runs as the DVC pipeline runs it (``python -m stages.X``, a process of its own, on a
params file written here) and is measured for wall seconds and peak RSS of its largest single
process (the stage's driver or one of its forked workers: ``wait4``'s ``ru_maxrss`` covers the
process and its waited-for descendants).  Words/s is the corpus's words (as ingested) over the
stage's seconds.  The same run's baseline is the Parquet I/O floor: split's output read
(``floor read``) and read and written again (``floor copy``) by the same engine and workers, with
nothing else done ("x floor": a stage's seconds over the copy's).  Targets: peak RSS at the
largest size within 1.25x of the smallest and under 2 GB per worker; each stage's seconds at the
largest size within its multiple of the same run's copy floor (``FLOOR_TARGETS``).

    python benchmarks/bench_scale.py                       # 1 M and 10 M words, 2 workers
    python benchmarks/bench_scale.py --words 1e6,1e7,1e8 --json scale.json
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml
from _common import ROOT, corpus_root, save_results

LANGS = {
    "hi": ["indic/flores/hin_Deva.devtest", "indic/ntrex/newstest2019-ref.hin.txt", "indic/tico19/tico19-test.hin"],
    "bn": ["indic/flores/ben_Beng.devtest", "indic/ntrex/newstest2019-ref.ben.txt", "indic/tico19/tico19-test.ben"],
    "mr": ["indic/flores/mar_Deva.devtest", "indic/ntrex/newstest2019-ref.mar.txt", "indic/tico19/tico19-test.mar"],
    "ta": ["indic/flores/tam_Taml.devtest", "indic/ntrex/newstest2019-ref.tam.txt", "indic/tico19/tico19-test.tam"],
}
STAGES = ("ingest", "split", "oversample", "sequences", "audit")
DATASET = "indic_scale"

# Gupta 2021 Table 1: train sentences (millions) per language; words per sentence from the
# shared FLORES devtest of the language (whitespace tokens per line)
GUPTA_TRAIN_M = {
    "as": (1.08, "asm_Beng"),
    "bn": (9.0, "ben_Beng"),
    "gu": (14.9, "guj_Gujr"),
    "hi": (3.8, "hin_Deva"),
    "kn": (14.9, "kan_Knda"),
    "ml": (14.9, "mal_Mlym"),
    "mr": (14.9, "mar_Deva"),
    "or": (5.9, "ory_Orya"),
    "pa": (9.9, "pan_Guru"),
    "ta": (9.9, "tam_Taml"),
    "te": (14.9, "tel_Telu"),
}
RSS_RATIO_TARGET = 1.25
RSS_LIMIT_MB = 2048
# a stage's seconds at most this many times the same run's Parquet copy floor
FLOOR_TARGETS = {"ingest": 3.0, "split": 1.5, "oversample": 2.0, "sequences": 3.0, "audit": 1.5}
# the baseline (old code, FLORES Hindi repeated): peak RSS in MB
BASELINE_RSS = {
    1_000_000: {"ingest": 300, "split": 338, "oversample": 379, "sequences": 651, "audit": 266},
    10_000_000: {"ingest": 365, "split": 2105, "oversample": 2221, "sequences": 2561, "audit": 1180},
}


# ----------------------------------------------------------------------------------- the corpus


def sentences(path: Path) -> list[list[str]]:
    """The file's sentences as word lists; FLORES's CSV-quoted lines unquoted (the corpus is then
    written unquoted: a permuted line could start with a quote)."""
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.startswith('"'):
            line = ",".join(next(csv.reader([line])))
        words = line.split()
        if words:
            out.append(words)
    return out


def write_language(path: Path, pool: list[list[str]], words: int, seed: int, doc_sentences: int) -> int:
    """``words`` words of varied copies of ``pool`` into ``path`` (a blank line every ``doc_sentences``
    sentences if more than 1); the words written."""
    written, copy = 0, 0
    with open(path, "w", encoding="utf-8") as out:
        while written < words:
            rng = random.Random(seed * 1_000_003 + copy)
            order = list(range(len(pool)))
            rng.shuffle(order)
            lines = []
            for k, i in enumerate(order):
                sentence = pool[i]
                if len(sentence) > 2:  # the final word (and its mark) stays last
                    head = sentence[:-1]
                    rng.shuffle(head)
                    sentence = [*head, sentence[-1]]
                lines.append(" ".join(sentence))
                written += len(sentence)
                if doc_sentences > 1 and k % doc_sentences == doc_sentences - 1:
                    lines.append("")
                if written >= words:
                    break
            out.write("\n".join(lines) + ("\n\n" if doc_sentences > 1 else "\n"))
            copy += 1
    return written


def build_corpus(folder: Path, words: int, doc_sentences: int) -> dict[str, Path]:
    shared = corpus_root()
    files = {}
    for seed, (lang, rels) in enumerate(LANGS.items()):
        pool = [s for rel in rels for s in sentences(shared / rel)]
        files[lang] = folder / f"scale_{lang}.txt"
        write_language(files[lang], pool, words // len(LANGS), seed, doc_sentences)
    return files


def write_params(path: Path, files: dict[str, Path], args) -> None:
    corpora = {
        f"scale_{lang}": {
            "reader": "text",
            "lang": lang,
            "input": str(file),
            "doc_boundary": "line" if args.doc_sentences == 1 else "blank_line",
        }
        for lang, file in files.items()
    }
    params = {
        "corpora": corpora,
        "datasets": {
            DATASET: {
                "corpora": list(corpora),
                "split": {
                    "ratios": {"train": 0.8, "dev": 0.1, "test": 0.1},
                    "seed": 2021,
                    "stratify": True,
                    "min_marks": 1,
                },
                "oversample": {"question_share": 0.02},
                "sequences": {"tokenizer": "train", "vocab_size": args.vocab_size, "max_len": 256},
            }
        },
        "engine": {
            "engine": "local",
            "workers": args.workers,
            "shard_lines": args.shard_lines,
            "shard_rows": args.shard_rows,
        },
    }
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8")


# ----------------------------------------------------------------------------------- the stages


def measure(cmd: list[str], cwd: Path, log: Path) -> tuple[float, float]:
    """Wall seconds and peak RSS (MB) of the largest single process of ``cmd`` (it and its children);
    the passes it times go to ``timings.jsonl`` beside ``log`` (the executor's records)."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env["PUNCT_TIMINGS"] = str(log.with_name(TIMINGS_FILE))
    env.pop("PUNCT_WORKERS", None)  # the params file's engine section decides
    env.pop("PUNCT_ENGINE", None)
    start = time.perf_counter()
    with open(log, "ab") as sink:
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=sink, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(proc.pid, 0)
    seconds = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode:
        tail = log.read_text(encoding="utf-8", errors="replace")[-3000:]
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{tail}")
    return seconds, usage.ru_maxrss / 1024


class _CopyShard:
    """The floor's step: a shard read as the stages read it (every column, lists as dictionaries),
    and returned to be written (``write``) or dropped."""

    def __init__(self, write: bool):
        self.write = write

    def __call__(self, shard):
        from pipeline.engine.dataset import read_rows
        from pipeline.engine.step import StepResult

        table = read_rows(shard, dictionary=True)
        return StepResult(table if self.write else None)


def io_floor(dataset: str, out: str, workers: int, shard_rows: int, write: bool) -> None:
    """Read (and write, into ``out``) every shard of ``dataset`` on the local engine: the I/O that a
    stage reading and rewriting the dataset cannot avoid, the same-run baseline of its speed."""
    from pipeline.engine.dataset import row_shards, run_step
    from pipeline.engine.executor import executor

    Path(out).mkdir(parents=True, exist_ok=True)
    with executor("local", workers) as runner:
        run_step(runner, _CopyShard(write), row_shards(dataset, shard_rows, runner), out if write else None)


def run_size(words: int, args, tmp_root: Path) -> dict:
    folder = Path(tempfile.mkdtemp(prefix=f"scale-{words}-", dir=tmp_root))
    try:
        start = time.perf_counter()
        files = build_corpus(folder, words, args.doc_sentences)
        built = time.perf_counter() - start
        params = folder / "params.yaml"
        write_params(params, files, args)
        size = sum(f.stat().st_size for f in files.values())
        print(f"[{words:,} words] corpus built in {built:.0f} s ({size / 1e6:.0f} MB of text)", flush=True)
        py, ds = sys.executable, f"data/datasets/{DATASET}"
        log = folder / "stages.log"
        common = ["--params", str(params)]
        steps: dict[str, list[list[str]]] = {
            "ingest": [
                [py, "-m", "stages.ingest", f"scale_{lang}", *common, "--out", f"data/segments/scale_{lang}.parquet",
                 "--stats", f"data/stats/scale_{lang}.json"]
                for lang in files
            ],
            "split": [[py, "-m", "stages.split", DATASET, *common, "--segments-dir", "data/segments",
                       "--out", f"{ds}/split.parquet", "--report", f"{ds}/split_report.json"]],
            "oversample": [[py, "-m", "stages.oversample", DATASET, *common, "--in", f"{ds}/split.parquet",
                            "--out", f"{ds}/oversampled.parquet", "--augmented", f"{ds}/augmented.parquet",
                            "--report", f"{ds}/oversample_report.json"]],
            "sequences": [[py, "-m", "stages.sequences", DATASET, *common, "--in", f"{ds}/oversampled.parquet",
                           "--out", f"{ds}/sequences.parquet", "--tokenizer", f"{ds}/tokenizer",
                           "--report", f"{ds}/report.json", "--reports", f"{ds}/split_report.json",
                           f"{ds}/oversample_report.json"]],
            "audit": [[py, "-m", "stages.audit", *common, "--data-dir", "data", "--out", "reports"]],
        }  # fmt: skip
        stages: dict[str, dict] = {}
        corpus_words = 0
        for stage in STAGES:
            seconds, peak = 0.0, 0.0
            timings = folder / TIMINGS_FILE
            timed = timings.stat().st_size if timings.exists() else 0
            for cmd in steps[stage]:  # ingest: one process per corpus, as in dvc.yaml
                s, p = measure(cmd, folder, log)
                seconds, peak = seconds + s, max(peak, p)
            with open(timings, "rb") as f:
                f.seek(timed)
                stage_passes = passes(f.read().decode("utf-8"))
            if stage == "ingest":
                corpus_words = sum(
                    json.loads((folder / f"data/stats/scale_{lang}.json").read_text())["words"] for lang in files
                )
            rate = corpus_words / seconds
            stages[stage] = {
                "seconds": seconds,
                "words_per_s": rate,
                "words_per_s_per_worker": rate / args.workers,
                "peak_rss_mb": peak,
                "passes": stage_passes,
            }
            print(
                f"[{words:,} words] {stage:10s} {seconds:8.1f} s {rate / 1e6:7.2f} M words/s"
                f" {rate / args.workers / 1e6:7.2f} per worker, peak RSS {peak:6.0f} MB",
                flush=True,
            )
        # the I/O floor over split's output (what oversample reads and rewrites): read, and read + write
        floor = {}
        for kind in ("read", "copy"):
            cmd = [py, str(Path(__file__).resolve()), "--io-floor", f"{ds}/split.parquet", f"floor-{kind}",
                   "--workers", str(args.workers), "--shard-rows", str(args.shard_rows)]  # fmt: skip
            seconds, peak = measure([*cmd, *(["--write"] if kind == "copy" else [])], folder, log)
            shutil.rmtree(folder / f"floor-{kind}", ignore_errors=True)
            floor[kind] = {"seconds": seconds, "words_per_s_per_worker": corpus_words / seconds / args.workers}
            print(
                f"[{words:,} words] floor {kind:5s}  {seconds:8.1f} s"
                f" {corpus_words / seconds / args.workers / 1e6:7.2f} M words/s per worker (Parquet I/O only)",
                flush=True,
            )
        disk = sum(f.stat().st_size for f in (folder / "data").rglob("*") if f.is_file())
        return {"target_words": words, "words": corpus_words, "workers": args.workers, "data_mb": disk / 1e6,
                "stages": stages, "io_floor": floor}  # fmt: skip
    finally:
        if not args.keep:  # the next size needs the disk
            shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------------- the report

# the executor's timed passes (pipeline.engine.executor.record_timing), one JSON line each, written
# by every process of a stage to the file $PUNCT_TIMINGS names
TIMINGS_FILE = "timings.jsonl"
TRAINER_PASS = ": tokenizer training"  # the label suffix of the BPE trainer's time, which runs in the driver
PACKING_PASS = re.compile(rf"^sequences {DATASET}$")  # the pass that tokenizes and packs


def passes(timings_text: str) -> dict[str, float]:
    """Seconds of each pass a stage timed, in the order they ended (wall seconds of the pass over
    all its shards); ingest's passes, one per corpus and process, summed."""
    out: dict[str, float] = {}
    for line in timings_text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        label = "ingest: every corpus" if record["label"].startswith("ingest ") else record["label"]
        out[label] = out.get(label, 0.0) + float(record["seconds"])
    return out


def print_passes(result: dict) -> None:
    """Each stage's passes as its log timed them (the rest of a stage: start-up, drivers' folds, reports)."""
    print(f"  passes at {result['words']:,} words (seconds, words/s per worker over the corpus words):")
    for stage, r in result["stages"].items():
        for label, seconds in r.get("passes", {}).items():
            rate = f"{result['words'] / seconds / result['workers']:14,.0f}" if seconds else f"{'-':>14s}"
            print(f"    {stage:10s} {label:45s} {seconds:7.1f} s {rate}")


def print_table(result: dict) -> None:
    """The sizes' table; "x floor": the stage's seconds over the same run's read + write of the
    split dataset (its Parquet I/O alone, on as many workers)."""
    print(f"\n{result['words']:,} words (asked {result['target_words']:,}), {result['workers']} worker(s):")
    print(f"  {'stage':10s} {'seconds':>9s} {'words/s':>12s} {'per worker':>12s} {'peak RSS MB':>12s} {'x floor':>8s}")
    copy = result["io_floor"]["copy"]["seconds"]
    for stage, r in result["stages"].items():
        print(
            f"  {stage:10s} {r['seconds']:9.1f} {r['words_per_s']:12,.0f} {r['words_per_s_per_worker']:12,.0f}"
            f" {r['peak_rss_mb']:12.0f} {r['seconds'] / copy:8.2f}"
        )
    for kind, r in result["io_floor"].items():
        print(f"  floor {kind:4s} {r['seconds']:9.1f} {'':12s} {r['words_per_s_per_worker']:12,.0f}")


def checks(results: list[dict]) -> list[str]:
    """PASS/FAIL lines: memory against the smallest size, speed against the copy floor at the largest."""
    lines = []
    base, top = results[0], results[-1]
    for result in results[1:]:
        for stage in STAGES:
            ratio = result["stages"][stage]["peak_rss_mb"] / base["stages"][stage]["peak_rss_mb"]
            verdict = "PASS" if ratio <= RSS_RATIO_TARGET else "FAIL"
            lines.append(
                f"{verdict} {stage:10s} peak RSS {result['target_words']:,} / {base['target_words']:,} words:"
                f" {ratio:.2f}x (target <= {RSS_RATIO_TARGET}x)"
            )
    for result in results:
        for stage in STAGES:
            peak = result["stages"][stage]["peak_rss_mb"]
            verdict = "PASS" if peak < RSS_LIMIT_MB else "FAIL"
            lines.append(
                f"{verdict} {stage:10s} peak RSS at {result['target_words']:,} words: {peak:.0f} MB"
                f" (target < {RSS_LIMIT_MB} MB per worker)"
            )
    copy = top["io_floor"]["copy"]["seconds"]
    for stage, target in FLOOR_TARGETS.items():
        ratio = top["stages"][stage]["seconds"] / copy
        verdict = "PASS" if ratio <= target else "FAIL"
        lines.append(
            f"{verdict} {stage:10s} {ratio:.2f}x the copy floor at {top['target_words']:,} words"
            f" (target <= {target:g}x)"
        )
    # the sequences stage's tokenizing and packing alone, beside the whole stage
    packing = [s for label, s in top["stages"]["sequences"].get("passes", {}).items() if PACKING_PASS.match(label)]
    if packing:
        lines.append(
            f"info sequences  tokenize + pack pass alone: {packing[0] / copy:.2f}x the copy floor at"
            f" {top['target_words']:,} words (the stage also counts words, trains the tokenizer and audits)"
        )
    for result in results:
        old = BASELINE_RSS.get(result["target_words"])
        if old:
            lines.append(
                f"info vs the issue's baseline at {result['target_words']:,} words (old code, MB): "
                + ", ".join(f"{s} {result['stages'][s]['peak_rss_mb']:.0f}/{old[s]}" for s in STAGES)
            )
    return lines


def gupta_words() -> dict[str, float]:
    """Gupta 2021 Table 1 train sentences per language times the language's FLORES words per sentence."""
    shared = corpus_root()
    out = {}
    for lang, (millions, flores) in GUPTA_TRAIN_M.items():
        lines = (shared / "indic" / "flores" / f"{flores}.devtest").read_text(encoding="utf-8").splitlines()
        per_sentence = sum(len(line.split()) for line in lines) / len(lines)
        out[lang] = millions * 1e6 * per_sentence
    return out


def serial_seconds(stage: dict) -> float:
    """A stage's seconds outside its passes over shards: start-up, the driver's scans, folds and
    reports, and the tokenizer's training (in the driver, on its cores): work that more workers do
    not share."""
    parallel = sum(s for label, s in stage.get("passes", {}).items() if not label.endswith(TRAINER_PASS))
    return max(0.0, stage["seconds"] - parallel)


def extrapolate(results: list[dict]) -> tuple[list[str], dict]:
    """Each stage at Gupta 2021 Table 1's words on 1, 8 and 64 workers (Amdahl's law): its passes
    over shards, linear in words from the largest size, divided among the workers; its serial
    part (:func:`serial_seconds`: start-up, which does not grow, and driver work, which does) on
    the line through the two largest sizes, not divided."""
    sizes = gupta_words()
    total = sum(sizes.values())
    top, below = results[-1], (results[-2] if len(results) > 1 else None)
    lines = [
        f"Gupta 2021 Table 1: {sum(m for m, _ in GUPTA_TRAIN_M.values()):.2f} M train sentences over 11 languages"
        f" x FLORES words per sentence = {total / 1e9:.2f} billion words",
        f"assumption: a stage's passes over shards linear in words from {top['target_words']:,} words and"
        f" divided among the workers (measured on {top['workers']}); the rest of it (start-up, the"
        " driver's work, the tokenizer's training on the driver's cores) "
        + (f"on the line through {below['target_words']:,} and {top['target_words']:,} words" if below else "linear")
        + ", not divided",
        f"  {'stage':10s} " + " ".join(f"{f'{w} worker(s)':>14s}" for w in (1, 8, 64)) + f" {'serial part':>14s}",
    ]
    table: dict = {"total_words": total, "per_language_words": sizes, "stages": {}}
    for stage, r in top["stages"].items():
        top_serial = serial_seconds(r)
        if below:
            slope = (top_serial - serial_seconds(below["stages"][stage])) / (top["words"] - below["words"])
            serial = max(top_serial, top_serial + slope * (total - top["words"]))
        else:
            serial = top_serial * total / top["words"]
        worker_seconds = (r["seconds"] - top_serial) * top["workers"] * total / top["words"]
        seconds = {w: serial + worker_seconds / w for w in (1, 8, 64)}
        table["stages"][stage] = {**seconds, "serial": serial}
        lines.append(
            f"  {stage:10s} " + " ".join(f"{hours(s):>14s}" for s in seconds.values()) + f" {hours(serial):>14s}"
        )
    total_s = {w: sum(t[w] for t in table["stages"].values()) for w in (1, 8, 64)}
    serial_total = sum(t["serial"] for t in table["stages"].values())
    lines.append(
        f"  {'all':10s} " + " ".join(f"{hours(s):>14s}" for s in total_s.values()) + f" {hours(serial_total):>14s}"
    )
    return lines, table


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def run_sizes(args) -> list[dict]:
    sizes = sorted(int(float(w)) for w in args.words.split(","))
    if args.tmp:
        os.makedirs(args.tmp, exist_ok=True)
    free = shutil.disk_usage(args.tmp or tempfile.gettempdir()).free
    need = 60 * max(sizes)  # corpus text and the stages' Parquet: about 60 bytes a word
    if need > free:
        sys.exit(f"need about {need / 1e9:.0f} GB in {args.tmp or tempfile.gettempdir()}, {free / 1e9:.0f} GB free")
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.tmp))
    try:
        return [run_size(words, args, tmp) for words in sizes]
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--io-floor":  # the floor's own process (see io_floor)
        floor = argparse.ArgumentParser()
        floor.add_argument("--io-floor", nargs=2, metavar=("DATASET", "OUT"))
        floor.add_argument("--workers", type=int)
        floor.add_argument("--shard-rows", type=int)
        floor.add_argument("--write", action="store_true")
        a = floor.parse_args()
        io_floor(*a.io_floor, a.workers, a.shard_rows, a.write)
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--words", default="1e6,1e7", help="corpus sizes, comma-separated (1e8: about 10 min here)")
    parser.add_argument("--workers", type=int, default=2)
    # shards smaller than a corpus at 1 M words (about 11,000 lines each): every size has full
    # shards, so peak RSS compares like with like
    parser.add_argument("--shard-lines", type=int, default=5_000, help="engine.shard_lines (ingest)")
    parser.add_argument("--shard-rows", type=int, default=5_000, help="engine.shard_rows (the other stages)")
    parser.add_argument("--doc-sentences", type=int, default=1, help="sentences per document (1: every line)")
    parser.add_argument("--vocab-size", type=int, default=4000)
    parser.add_argument("--tmp", default=None, help="folder for the corpora and outputs (default: the system's)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folders")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--report", metavar="JSON", help="print the tables, checks and extrapolation of a saved run")
    args = parser.parse_args()
    if args.report:
        results = json.loads(Path(args.report).read_text(encoding="utf-8"))["sizes"]
    else:
        results = run_sizes(args)
    for result in results:
        print_table(result)
        print_passes(result)
    print()
    verdicts = checks(results)
    for line in verdicts:
        print(line)
    print()
    lines, extrapolation = extrapolate(results)
    for line in lines:
        print(line)
    if args.json and not args.report:
        config = {k: getattr(args, k) for k in ("workers", "shard_lines", "shard_rows", "vocab_size", "doc_sentences")}
        out = {"config": config, "sizes": results, "checks": verdicts, "extrapolation": extrapolation}
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    if not args.report and results[-1]["target_words"] >= 1_000_000:  # smaller runs are smoke tests
        save_scale(results, args)


def save_scale(results: list[dict], args) -> None:
    """benchmarks/results/scale.json: seconds and peak RSS per stage and size, and each stage's
    seconds over the same run's Parquet copy floor at the largest size."""
    top = results[-1]
    rows = []
    for stage in top["stages"]:
        cells = [f"{r['stages'][stage]['seconds']:.1f} / {r['stages'][stage]['peak_rss_mb']:.0f}" for r in results]
        per_worker = top["stages"][stage]["words_per_s_per_worker"] / 1e6
        floor = top["stages"][stage]["seconds"] / top["io_floor"]["copy"]["seconds"]
        rows.append([stage, *cells, f"{per_worker:.2f} M", f"{floor:.1f}"])
    for kind in top["io_floor"]:
        cells = [f"{r['io_floor'][kind]['seconds']:.1f}" for r in results]
        per_worker = top["io_floor"][kind]["words_per_s_per_worker"] / 1e6
        floor = top["io_floor"][kind]["seconds"] / top["io_floor"]["copy"]["seconds"]
        rows.append([f"floor: {kind}", *cells, f"{per_worker:.2f} M", f"{floor:.1f}"])
    sizes = [f"{r['target_words'] / 1e6:g} M words: s / MB" for r in results]
    save_results(
        "scale",
        title="Scale",
        what="the Indic recipe as DVC runs it (ingest, split with strata and min_marks, question oversampling, "
        "sequences with a trained tokenizer, audit; each stage its own process) over Hindi, Bangla, Marathi and "
        f"Tamil text; local engine, {args.workers} workers, shards of {args.shard_lines:,} lines / "
        f"{args.shard_rows:,} rows; peak RSS of the largest process",
        baseline="the Parquet I/O floor: split's output read (floor: read), and read and written again "
        "(floor: copy), by the same engine and workers in the same run",
        columns=["stage", *sizes, "words/s per worker, largest size", "x copy floor, largest size"],
        rows=rows,
        metrics={"sizes": results},
    )


if __name__ == "__main__":
    main()
