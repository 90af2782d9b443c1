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
process and its waited-for descendants), and apart the peak RSS of the stage's driver and of its
largest worker, as the driver records them when it ends.  Words/s is the corpus's words (as
ingested) over the stage's seconds.  The same run's baseline is the Parquet I/O floor: split's output read
(``floor read``) and read and written again (``floor copy``) by the same engine and workers, with
nothing else done ("x floor": a stage's seconds over the copy's).  The sequences stage also gets a
floor of its own: the columns it reads of its input (``floor sequences input``), and its output
written (``floor sequences copy`` less ``floor sequences read``: its rows hold four token lists,
which the copy floor's segments do not), with the tokenizer's training.  So does the oversample
stage: its input read twice (``floor read``: its counts pass and its written pass), and its output
written (``floor oversample copy`` less ``floor oversample read``: the copies add rows).

Targets, all relative to the same run: each stage's seconds at the largest size within its
multiple of the copy floor (``FLOOR_TARGETS``); each stage's peak RSS at the largest size within
1.25x of the size below it (10 M to 100 M words); and the projection to Gupta 2021's corpus
(2.12 billion words) on 64 workers within 8 minutes for the whole recipe.

The projection's model (:func:`extrapolate`): a stage's passes over shards (the executor's timed
passes) are work divided among the workers, linear in words; the tokenizer's training runs on the
driver and reads at most ``sequences.train_occurrences`` word occurrences, so its seconds are
scaled by the occurrences it would read, which stop growing at that cap; the scans that plan the
shards (an ingest's line shards, a dataset's footers and document ids) are passes of the
workers too; the rest of a stage (start-up, the driver's checks, folds and reports) is serial
and grows on the line through the two largest sizes.  ``--dask-check WORDS`` checks the model:
the recipe at WORDS on a Dask ``LocalCluster`` of 1 and then 2 workers (``--dask-runs`` times in
turn, each stage's fastest run kept), and the 2-worker seconds
the model predicts from the 1-worker run (its serial part, plus its passes halved) beside the
measured ones; and the same with the passes slowed by how much the copy floor slows down with 2
workers on this machine (its workers share the memory bandwidth: two memory-bound processes run
each slower than one alone).  The projection's per-worker speed is the 2-worker runs' here.

    python benchmarks/bench_scale.py                       # 1 M and 10 M words, 2 workers
    python benchmarks/bench_scale.py --words 1e7,1e8 --dask-check 1e7 --json scale.json
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
from _common import ROOT, corpus_root, machine, save_results

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
# a stage's seconds at most this many times the same run's Parquet copy floor
FLOOR_TARGETS = {"ingest": 3.0, "split": 1.5, "oversample": 2.0, "sequences": 3.0, "audit": 1.5}
# the whole recipe over Gupta 2021's corpus on this many workers, at most this many minutes
PROJECTION_WORKERS = 64
PROJECTION_TARGET_MIN = 8.0


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
            "engine": args.engine,
            "workers": args.workers,
            "shard_lines": args.shard_lines,
            "shard_rows": args.shard_rows,
        },
    }
    path.write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True), encoding="utf-8")


# ----------------------------------------------------------------------------------- the stages


def measure(cmd: list[str], cwd: Path, log: Path) -> tuple[float, float, float]:
    """Wall seconds, peak RSS (MB) of the largest single process of ``cmd`` (it and its children)
    and CPU seconds of all of them (user + system); the passes it times go to ``timings.jsonl``
    beside ``log`` (the executor's records)."""
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
    return seconds, usage.ru_maxrss / 1024, usage.ru_utime + usage.ru_stime


class _CopyShard:
    """The floor's step: a shard read as the stages read it (every column or ``columns``, lists as
    dictionaries), and returned to be written (``write``) or dropped."""

    def __init__(self, write: bool, columns=None):
        self.write, self.columns = write, None if columns is None else list(columns)

    def __call__(self, shard):
        from pipeline.engine.dataset import read_rows
        from pipeline.engine.step import StepResult

        table = read_rows(shard, self.columns, dictionary=True)
        return StepResult(table if self.write else None)


#: the label of the floor's timed pass over the shards (then "read" or "copy")
FLOOR_PASS = "floor: "


def io_floor(dataset: str, out: str, workers: int, shard_rows: int, write: bool, kind: str) -> None:
    """Read (and write, into ``out``) every shard of ``dataset`` on the local engine: the I/O that a
    stage reading and rewriting the dataset cannot avoid, the same-run baseline of its speed;
    its pass timed as :data:`FLOOR_PASS` + ``kind``."""
    from pipeline.engine.dataset import row_shards, run_step
    from pipeline.engine.executor import executor

    Path(out).mkdir(parents=True, exist_ok=True)
    with executor("local", workers) as runner:
        shards = row_shards(dataset, shard_rows, runner)
        columns = None
        if FLOORS[kind][2]:  # the sequences stage's columns (imported here: pyarrow after prepare_process)
            from pipeline.datasets.sequences import PACKING_COLUMNS as columns
        step = _CopyShard(write, columns)
        run_step(runner, step, shards, out if write else None, label=FLOOR_PASS + kind)


#: the floors measured: kind -> (the dataset of the stage folder, written too, only the columns
#: that the sequences stage reads).  ``read`` and ``copy`` of split's output (what oversample reads
#: and rewrites) are every stage's baseline.  The oversample stage's own floor: its input read
#: twice (``read``: its counts pass and its written pass each read every column), and its output
#: written (the copies make it more rows than its input): ``oversample copy`` less ``oversample
#: read``.  The sequences stage's own floor: its input read (the columns it reads of the
#: oversampled rows), and its output written (four token lists a row, which the segments do not
#: have): ``sequences copy`` less ``sequences read``
OVERSAMPLE_READ, OVERSAMPLE_COPY = "oversample read", "oversample copy"
SEQUENCES_INPUT, SEQUENCES_READ, SEQUENCES_COPY = "sequences input", "sequences read", "sequences copy"
FLOORS = {
    "read": ("split", False, False),
    "copy": ("split", True, False),
    OVERSAMPLE_READ: ("oversampled", False, False),
    OVERSAMPLE_COPY: ("oversampled", True, False),
    SEQUENCES_INPUT: ("oversampled", False, True),
    SEQUENCES_READ: ("sequences", False, False),
    SEQUENCES_COPY: ("sequences", True, False),
}


def appended(path: Path, offset: int) -> str:
    """What the processes measured since ``offset`` (the file's size then) wrote to ``path``."""
    with open(path, "rb") as f:
        f.seek(offset)
        return f.read().decode("utf-8")


def run_size(words: int, args, tmp_root: Path, floors=tuple(FLOORS)) -> dict:
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
        timings = folder / TIMINGS_FILE  # the stages' and the floor's timed passes (see measure)
        for stage in STAGES:
            seconds, peak, cpu = 0.0, 0.0, 0.0
            timed = timings.stat().st_size if timings.exists() else 0
            for cmd in steps[stage]:  # ingest: one process per corpus, as in dvc.yaml
                s, p, c = measure(cmd, folder, log)
                seconds, peak, cpu = seconds + s, max(peak, p), cpu + c
            timings_text = appended(timings, timed)
            stage_passes = passes(timings_text)
            if stage == "ingest":
                corpus_words = sum(
                    json.loads((folder / f"data/stats/scale_{lang}.json").read_text())["words"] for lang in files
                )
            rate = corpus_words / seconds
            driver_rss, worker_rss = process_rss(timings_text)
            stages[stage] = {
                "seconds": seconds,
                "cpu_seconds": cpu,
                "words_per_s": rate,
                "words_per_s_per_worker": rate / args.workers,
                "peak_rss_mb": peak,
                "driver_rss_mb": driver_rss,
                "worker_rss_mb": worker_rss,
                "passes": stage_passes,
                "trainer_occurrences": trainer_occurrences(timings_text),
            }
            print(
                f"[{words:,} words] {stage:10s} {seconds:8.1f} s {rate / 1e6:7.2f} M words/s"
                f" {rate / args.workers / 1e6:7.2f} per worker, peak RSS {peak:6.0f} MB"
                f" (driver {driver_rss:.0f}, largest worker {worker_rss:.0f})",
                flush=True,
            )
        # the I/O floors (FLOORS)
        floor = {}
        for kind in floors:
            dataset, write, _ = FLOORS[kind]
            out = "floor-" + kind.replace(" ", "-")
            cmd = [py, str(Path(__file__).resolve()), "--io-floor", f"{ds}/{dataset}.parquet", out,
                   "--workers", str(args.workers), "--shard-rows", str(args.shard_rows), "--kind", kind]  # fmt: skip
            timed = timings.stat().st_size
            seconds, peak, _ = measure([*cmd, *(["--write"] if write else [])], folder, log)
            shutil.rmtree(folder / out, ignore_errors=True)
            floor_pass = passes(appended(timings, timed)).get(FLOOR_PASS + kind, 0.0)
            floor[kind] = {
                "seconds": seconds,
                "pass_seconds": floor_pass,  # the pass over the shards alone, without the process's start
                "words_per_s_per_worker": corpus_words / seconds / args.workers,
            }
            print(
                f"[{words:,} words] floor {kind:14s}  {seconds:8.1f} s"
                f" {corpus_words / seconds / args.workers / 1e6:7.2f} M words/s per worker (Parquet I/O only)",
                flush=True,
            )
        disk = sum(f.stat().st_size for f in (folder / "data").rglob("*") if f.is_file())
        return {"target_words": words, "words": corpus_words, "workers": args.workers, "engine": args.engine,
                "data_mb": disk / 1e6, "stages": stages, "io_floor": floor}  # fmt: skip
    finally:
        if not args.keep:  # the next size needs the disk
            shutil.rmtree(folder, ignore_errors=True)


# ----------------------------------------------------------------------------------- the report

# the executor's timed passes (pipeline.engine.executor.record_timing), one JSON line each, written
# by every process of a stage to the file $PUNCT_TIMINGS names
TIMINGS_FILE = "timings.jsonl"
MEMORY_LABEL = "peak memory"  # pipeline.engine.executor.MEMORY_LABEL: a process's peak RSS, not a pass
TRAINER_PASS = ": tokenizer training"  # the label suffix of the BPE trainer's time, which runs in the driver
ENGINE_START = "engine: workers started"  # pipeline.engine.executor.ENGINE_START: inside a pass, not its work
PACKING_PASS = re.compile(rf"^sequences {DATASET}$")  # the pass that tokenizes and packs


def passes(timings_text: str) -> dict[str, float]:
    """Seconds of each pass a stage timed, in the order they ended (wall seconds of the pass over
    all its shards); ingest's passes, one per corpus and process, summed."""
    out: dict[str, float] = {}
    for line in timings_text.splitlines():
        if not line.strip():
            continue
        record = json.loads(line)
        if record["label"] == MEMORY_LABEL:  # a process's peak memory, not a pass
            continue
        label = "ingest: every corpus" if record["label"].startswith("ingest ") else record["label"]
        out[label] = out.get(label, 0.0) + float(record["seconds"])
    return out


def process_rss(timings_text: str) -> tuple[float, float]:
    """The peak RSS (MB) of the stage's drivers and of its largest worker, as each driver recorded
    them when it ended (:func:`pipeline.engine.executor.record_memory`); 0 where none recorded."""
    records = [json.loads(line) for line in timings_text.splitlines() if line.strip()]
    memory = [r for r in records if r["label"] == MEMORY_LABEL]
    driver = max((r["driver_rss_mb"] for r in memory), default=0.0)
    return driver, max((r["worker_rss_mb"] for r in memory), default=0.0)


def trainer_occurrences(timings_text: str) -> int:
    """The word occurrences the tokenizer's trainer read (its timed pass's items), 0 if it did not run."""
    records = [json.loads(line) for line in timings_text.splitlines() if line.strip()]
    return sum(int(r["items"]) for r in records if r["label"].endswith(TRAINER_PASS))


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
    """PASS/FAIL lines of the targets relative to the same run: memory at the largest size against
    the size below it, speed against the copy floor at the largest size."""
    lines = []
    top = results[-1]
    if len(results) > 1:
        below = results[-2]
        for stage in STAGES:
            ratio = top["stages"][stage]["peak_rss_mb"] / below["stages"][stage]["peak_rss_mb"]
            verdict = "PASS" if ratio <= RSS_RATIO_TARGET else "FAIL"
            lines.append(
                f"{verdict} {stage:10s} peak RSS {top['target_words']:,} / {below['target_words']:,} words:"
                f" {ratio:.2f}x (target <= {RSS_RATIO_TARGET}x)"
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
            f" {top['target_words']:,} words (the stage also counts words and trains the tokenizer)"
        )
    lines.extend(oversample_floor(top))
    lines.extend(sequences_floor(top))
    return lines


def written_seconds(floors: dict, copy: str, read: str) -> float:
    """A stage's output written: the pass of its ``copy`` floor (the output read and written again)
    less the pass of its ``read`` floor (the same output read)."""
    return max(floors[copy]["pass_seconds"] - floors[read]["pass_seconds"], 0.0)


#: the oversample stage's passes that move the copies from their sentences' shards to their documents'
EXCHANGE_PASSES = ("oversample: copies", "oversample: gather")


def oversample_floor(top: dict) -> list[str]:
    """The oversample stage against its own floor: its input read by its counts pass and again by
    its written pass, and its output written (more rows than its input: the copies); and what the
    target leaves for the rest of the stage's work."""
    floors = top["io_floor"]
    if not all(kind in floors for kind in ("read", OVERSAMPLE_READ, OVERSAMPLE_COPY)):
        return []
    copy = floors["copy"]["seconds"]
    read = floors["read"]["pass_seconds"]
    written = written_seconds(floors, OVERSAMPLE_COPY, OVERSAMPLE_READ)
    least = 2 * read + written
    left = FLOOR_TARGETS["oversample"] * copy - least
    passes = top["stages"]["oversample"].get("passes", {})
    exchange = sum(passes.get(label, 0.0) for label in EXCHANGE_PASSES)
    return [
        f"info oversample its floor: its input read twice (its counts pass and its written pass, {read:.1f} s"
        f" each) and its output written (the oversampled rows copied less their read: {written:.1f} s) come to"
        f" {least / copy:.2f}x the copy floor; the {FLOOR_TARGETS['oversample']:g}x target leaves {left:.1f} s"
        f" to count the questions, send their copies to their documents' shards ({exchange:.1f} s in this run)"
        f" and insert them; the stage is {top['stages']['oversample']['seconds'] / least:.2f}x its floor"
    ]


def sequences_floor(top: dict) -> list[str]:
    """The sequences stage against its own floor: its input read, its output written and the
    tokenizer's training (on the driver, bounded by ``train_occurrences``); and what the target
    leaves for the rest of the stage's work."""
    floors = top["io_floor"]
    if not all(kind in floors for kind in (SEQUENCES_INPUT, SEQUENCES_READ, SEQUENCES_COPY)):
        return []
    copy = floors["copy"]["seconds"]
    read = floors[SEQUENCES_INPUT]["pass_seconds"]
    written = written_seconds(floors, SEQUENCES_COPY, SEQUENCES_READ)
    passes = top["stages"]["sequences"].get("passes", {})
    training = sum(s for label, s in passes.items() if label.endswith(TRAINER_PASS))
    least = read + written + training
    left = FLOOR_TARGETS["sequences"] * copy - least
    rate = top["words"] / left / top["workers"] / 1e6 if left > 0 else float("inf")
    return [
        f"info sequences  its floor: its input read ({read:.1f} s), its output written (the sequences"
        f" copied less their read: {written:.1f} s) and the tokenizer's training ({training:.1f} s) come to"
        f" {least / copy:.2f}x the copy floor; the {FLOOR_TARGETS['sequences']:g}x target leaves {left:.1f} s"
        f" to count, tokenize, pack and audit {top['words']:,} words ({rate:.1f} M words/s per worker);"
        f" the stage is {top['stages']['sequences']['seconds'] / least:.2f}x its floor"
    ]


def gupta_words() -> dict[str, float]:
    """Gupta 2021 Table 1 train sentences per language times the language's FLORES words per sentence."""
    shared = corpus_root()
    out = {}
    for lang, (millions, flores) in GUPTA_TRAIN_M.items():
        lines = (shared / "indic" / "flores" / f"{flores}.devtest").read_text(encoding="utf-8").splitlines()
        per_sentence = sum(len(line.split()) for line in lines) / len(lines)
        out[lang] = millions * 1e6 * per_sentence
    return out


def trainer_seconds(stage: dict) -> float:
    return sum(s for label, s in stage.get("passes", {}).items() if label.endswith(TRAINER_PASS))


def serial_seconds(stage: dict) -> float:
    """A stage's seconds outside its passes over shards: start-up, the driver's checks, folds and
    reports, and the tokenizer's training (in the driver, on its cores): work that more workers do
    not share."""
    timed = stage.get("passes", {})
    # a cluster's start is timed inside the pass that needed its workers, and apart as well
    parallel = sum(s for label, s in timed.items() if not label.endswith(TRAINER_PASS) and label != ENGINE_START)
    return max(0.0, stage["seconds"] - parallel + timed.get(ENGINE_START, 0.0))


def trainer_cap() -> int:
    """The occurrences the tokenizer's trainer reads at most (the sequences params' default)."""
    from pipeline.params import SequencesParams

    return SequencesParams().train_occurrences


MODEL = (
    "model: a stage's passes over shards are work divided among the workers, linear in words from {top}"
    " (measured on {workers} worker(s)); the tokenizer's training runs on the driver, its seconds"
    " proportional to the occurrences it reads, at most {cap:,} (the train_occurrences default) whatever"
    " the corpus; the rest of a stage (start-up, the driver's checks, folds and reports) is serial and"
    " grows on the line through {line}"
)


def extrapolate(results: list[dict]) -> tuple[list[str], dict]:
    """Each stage at Gupta 2021 Table 1's words on 1, 8 and 64 workers (Amdahl's law, see
    :data:`MODEL`), and the whole recipe's minutes on :data:`PROJECTION_WORKERS` workers against
    :data:`PROJECTION_TARGET_MIN`."""
    sizes = gupta_words()
    total = sum(sizes.values())
    top, below = results[-1], (results[-2] if len(results) > 1 else None)
    cap = trainer_cap()
    line = f"{below['target_words']:,} and {top['target_words']:,} words" if below else "the origin (one size)"
    model = MODEL.format(top=f"{top['target_words']:,} words", workers=top["workers"], cap=cap, line=line)
    widths = (1, 8, PROJECTION_WORKERS)
    lines = [
        f"Gupta 2021 Table 1: {sum(m for m, _ in GUPTA_TRAIN_M.values()):.2f} M train sentences over 11 languages"
        f" x FLORES words per sentence = {total / 1e9:.2f} billion words",
        model,
        f"  {'stage':10s} " + " ".join(f"{f'{w} worker(s)':>14s}" for w in widths) + f" {'serial part':>14s}",
    ]
    table: dict = {"total_words": total, "per_language_words": sizes, "model": model, "stages": {}}
    for stage, r in top["stages"].items():
        top_rest = serial_seconds(r) - trainer_seconds(r)
        if below:
            slope = (top_rest - serial_seconds(below["stages"][stage]) + trainer_seconds(below["stages"][stage])) / (
                top["words"] - below["words"]
            )
            rest = max(top_rest, top_rest + slope * (total - top["words"]))
        else:
            rest = top_rest * total / top["words"]
        trainer = 0.0
        if r.get("trainer_occurrences"):  # the occurrences read grow with the train words up to the cap
            read = min(cap, r["trainer_occurrences"] * total / top["words"])
            trainer = trainer_seconds(r) * read / r["trainer_occurrences"]
        serial = rest + trainer
        worker_seconds = (r["seconds"] - serial_seconds(r)) * top["workers"] * total / top["words"]
        seconds = {w: serial + worker_seconds / w for w in widths}
        table["stages"][stage] = {**seconds, "serial": serial}
        lines.append(
            f"  {stage:10s} " + " ".join(f"{hours(s):>14s}" for s in seconds.values()) + f" {hours(serial):>14s}"
        )
    total_s = {w: sum(t[w] for t in table["stages"].values()) for w in widths}
    serial_total = sum(t["serial"] for t in table["stages"].values())
    lines.append(
        f"  {'all':10s} " + " ".join(f"{hours(s):>14s}" for s in total_s.values()) + f" {hours(serial_total):>14s}"
    )
    minutes = total_s[PROJECTION_WORKERS] / 60
    verdict = "PASS" if minutes <= PROJECTION_TARGET_MIN else "FAIL"
    table["projection"] = {"workers": PROJECTION_WORKERS, "minutes": minutes, "serial_minutes": serial_total / 60}
    lines.append(
        f"{verdict} projection  {total / 1e9:.2f} billion words on {PROJECTION_WORKERS} workers: {minutes:.1f} min,"
        f" {serial_total / 60:.1f} min of it serial (target <= {PROJECTION_TARGET_MIN:g} min)"
    )
    return lines, table


def predict_workers(one: dict, workers: int, sharing: float = 1.0) -> dict[str, float]:
    """Each stage's seconds on ``workers`` workers as the model predicts them from a 1-worker run of
    the same corpus: its serial part, plus its passes over shards divided among the workers, each
    worker slower by ``sharing`` (workers on one machine share its memory bandwidth: see
    :func:`sharing_factor`).  A cluster's start is serial (:func:`serial_seconds`)."""
    return {
        stage: serial_seconds(r) + (r["seconds"] - serial_seconds(r)) / workers * sharing
        for stage, r in one["stages"].items()
    }


def sharing_factor(one: dict, two: dict) -> float:
    """How much slower each of 2 workers on this machine is than 1 alone, from the Parquet copy
    floor's pass (I/O and nothing else, the same shards) in the two runs: 2 x its seconds with 2
    workers over its seconds with 1 (1.0: no slowdown)."""
    return 2 * two["io_floor"]["copy"]["pass_seconds"] / one["io_floor"]["copy"]["pass_seconds"]


def fastest(runs: list[dict]) -> dict:
    """Runs of the same recipe combined: each stage's fastest run (its seconds, passes and CPU
    together), and the copy floor's fastest pass (the least disturbed by other work)."""
    out = dict(runs[0])
    out["stages"] = {stage: min((r["stages"][stage] for r in runs), key=lambda x: x["seconds"]) for stage in STAGES}
    out["io_floor"] = min((r["io_floor"] for r in runs), key=lambda f: f["copy"]["pass_seconds"])
    return out


def dask_check(words: int, args, tmp_root: Path) -> tuple[list[str], dict]:
    """The recipe at ``words`` on a Dask LocalCluster of 1, then 2 workers (``args.dask_runs``
    times each, the fastest kept: :func:`fastest`); the model's prediction of the 2-worker seconds
    from the 1-worker run beside the measured ones, plain and with the workers' slowdown on this
    machine as the copy floor measures it (:func:`sharing_factor`)."""
    tries: dict[int, list[dict]] = {1: [], 2: []}
    for attempt in range(args.dask_runs):  # 1 and 2 workers in turn: a slow spell of the machine hits both
        for workers in (1, 2):
            run_args = argparse.Namespace(**{**vars(args), "engine": "dask", "workers": workers})
            print(
                f"[dask check] {words:,} words on a LocalCluster of {workers} worker(s), run {attempt + 1}", flush=True
            )
            tries[workers].append(run_size(words, run_args, tmp_root, floors=("copy",)))
    runs = {workers: fastest(results) for workers, results in tries.items()}
    sharing = sharing_factor(runs[1], runs[2])
    predicted = predict_workers(runs[1], 2)
    shared = predict_workers(runs[1], 2, sharing)
    lines = [
        f"dask check at {words:,} words, each stage's fastest of {args.dask_runs} run(s) with 1 and with 2"
        " workers: the 2-worker seconds predicted from the 1-worker run"
        " (its serial part + its passes / 2) against the measured; 'shared': the passes also slower by"
        f" {sharing:.2f}, the copy floor's slowdown with 2 workers on this machine (2 x its pass with 2"
        " workers over its pass with 1: the workers share the machine's memory bandwidth)",
        f"  {'stage':10s} {'1 worker':>10s} {'predicted 2':>12s} {'shared':>9s} {'measured 2':>11s}"
        f" {'error':>8s} {'shared':>9s}",
    ]
    table: dict = {"words": runs[1]["words"], "runs": args.dask_runs, "sharing": sharing, "stages": {}}
    for stage in STAGES:
        one, got = runs[1]["stages"][stage]["seconds"], runs[2]["stages"][stage]["seconds"]
        want, slowed = predicted[stage], shared[stage]
        table["stages"][stage] = {
            "one_worker": one,
            "one_worker_cpu": runs[1]["stages"][stage]["cpu_seconds"],
            "predicted": want,
            "predicted_shared": slowed,
            "measured": got,
        }
        lines.append(
            f"  {stage:10s} {one:10.1f} {want:12.1f} {slowed:9.1f} {got:11.1f}"
            f" {100 * (want - got) / got:+7.1f}% {100 * (slowed - got) / got:+8.1f}%"
        )
    keys = ("one_worker", "predicted", "predicted_shared", "measured")
    one, want, slowed, got = (sum(r[key] for r in table["stages"].values()) for key in keys)
    table.update(
        one_worker=one,
        predicted=want,
        predicted_shared=slowed,
        measured=got,
        error=(want - got) / got,
        error_shared=(slowed - got) / got,
    )
    lines.append(
        f"  {'all':10s} {one:10.1f} {want:12.1f} {slowed:9.1f} {got:11.1f}"
        f" {100 * (want - got) / got:+7.1f}% {100 * (slowed - got) / got:+8.1f}%"
    )
    started = {w: sum(r["passes"].get(ENGINE_START, 0.0) for r in runs[w]["stages"].values()) for w in (1, 2)}
    cpu = {w: sum(r["cpu_seconds"] for r in runs[w]["stages"].values()) for w in (1, 2)}
    floor = {w: runs[w]["io_floor"]["copy"]["pass_seconds"] for w in (1, 2)}
    table.update(
        cluster_start={str(w): s for w, s in started.items()},
        cpu_seconds={str(w): c for w, c in cpu.items()},
        floor_pass={str(w): f for w, f in floor.items()},
    )
    lines.append(
        f"  cluster start-up and the workers' imports, all stages: {started[1]:.1f} s with 1 worker,"
        f" {started[2]:.1f} s with 2 (serial in the model, as measured with 1); copy floor's pass:"
        f" {floor[1]:.1f} s with 1 worker, {floor[2]:.1f} s with 2; CPU seconds of every process:"
        f" {cpu[1]:.1f} with 1, {cpu[2]:.1f} with 2"
    )
    return lines, table


def hours(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 3600 else f"{seconds / 60:.1f} min"


def run_sizes(args) -> tuple[list[dict], tuple[list[str], dict] | None]:
    """The sizes' runs, and the Dask check's lines and table (None without ``--dask-check``)."""
    sizes = sorted(int(float(w)) for w in args.words.split(","))
    if args.tmp:
        os.makedirs(args.tmp, exist_ok=True)
    free = shutil.disk_usage(args.tmp or tempfile.gettempdir()).free
    need = 60 * max(sizes)  # corpus text and the stages' Parquet: about 60 bytes a word
    if need > free:
        sys.exit(f"need about {need / 1e9:.0f} GB in {args.tmp or tempfile.gettempdir()}, {free / 1e9:.0f} GB free")
    tmp = Path(tempfile.mkdtemp(prefix="bench-scale-", dir=args.tmp))
    try:
        results = [run_size(words, args, tmp) for words in sizes]
        return results, dask_check(int(float(args.dask_check)), args, tmp) if args.dask_check else None
    finally:
        if args.keep:
            print(f"kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--io-floor":  # the floor's own process (see io_floor)
        from pipeline.entrypoint import prepare_process

        prepare_process()  # the allocators a stage's entry point sets, before pyarrow is imported
        floor = argparse.ArgumentParser()
        floor.add_argument("--io-floor", nargs=2, metavar=("DATASET", "OUT"))
        floor.add_argument("--workers", type=int)
        floor.add_argument("--shard-rows", type=int)
        floor.add_argument("--write", action="store_true")
        floor.add_argument("--kind", required=True, choices=FLOORS)
        a = floor.parse_args()
        io_floor(*a.io_floor, a.workers, a.shard_rows, a.write, a.kind)
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
    parser.add_argument(
        "--dask-check", metavar="WORDS", help="also run the recipe at WORDS on a Dask LocalCluster of 1 and 2 workers"
    )
    parser.add_argument(
        "--dask-runs", type=int, default=2, help="runs of the Dask check with each number of workers (the fastest kept)"
    )
    args = parser.parse_args()
    args.engine = "local"
    the_machine = machine()
    print(f"{the_machine['cpu']}, {the_machine['cores']} cores, instruction sets: "
          + (", ".join(the_machine["instruction_sets"]) or "not recorded"), flush=True)  # fmt: skip
    if args.report:
        saved = json.loads(Path(args.report).read_text(encoding="utf-8"))
        results, dask = saved["sizes"], saved.get("dask_check")
        dask = (dask["lines"], dask) if dask else None
    else:
        results, dask = run_sizes(args)
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
    if dask:
        print()
        for line in dask[0]:
            print(line)
        dask[1]["lines"] = dask[0]
    notes = [*verdicts, lines[1], lines[-1], *(dask[0] if dask else [])]
    if args.json and not args.report:
        config = {k: getattr(args, k) for k in ("workers", "shard_lines", "shard_rows", "vocab_size", "doc_sentences")}
        out = {"config": config, "machine": the_machine, "sizes": results, "checks": verdicts,
               "extrapolation": extrapolation, "dask_check": dask[1] if dask else None}  # fmt: skip
        Path(args.json).write_text(json.dumps(out, indent=2) + "\n", encoding="utf-8")
    if not args.report and results[-1]["target_words"] >= 1_000_000:  # smaller runs are smoke tests
        save_scale(results, args, notes, extrapolation, dask[1] if dask else None)


def save_scale(results: list[dict], args, notes: list[str], extrapolation: dict, dask: dict | None) -> None:
    """benchmarks/results/scale.json: seconds and peak RSS per stage and size, each stage's seconds
    over the same run's Parquet copy floor at the largest size, and as notes the targets (all
    relative to the run), the projection with its model and the Dask check."""
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
        "(floor: copy), by the same engine and workers in the same run; the oversample stage's own floors: its "
        "output read (floor: oversample read) and read and written again (floor: oversample copy); the sequences "
        "stage's own floors: the columns it reads of its input (floor: sequences input), and its output read "
        "(floor: sequences read) and read and written again (floor: sequences copy)",
        columns=["stage", *sizes, "words/s per worker, largest size", "x copy floor, largest size"],
        rows=rows,
        metrics={"sizes": results, "projection": extrapolation, "dask_check": dask},
        notes=notes,
    )


if __name__ == "__main__":
    main()
