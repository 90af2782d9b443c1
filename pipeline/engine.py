"""Sharded, streaming corpus stages on one engine or another, with identical outputs.

A stage is a *step*, a picklable function ``step(shard) -> pa.Table``, and a list
of shards (small descriptions of where a shard's input lies: a file and a line
range).  The engine runs the step on every shard, each worker writing its own
shard Parquet, so no process ever holds more than one shard, and the driver only
collects small per-shard counts.

* ``local``: one worker process per core (``workers``), a process pool.
* ``dask``: ``dask.distributed`` — a ``LocalCluster`` by default, or the scheduler at
  ``scheduler`` / ``$PUNCT_DASK_SCHEDULER``, so the same stage runs on a cluster.

Shard ``i`` is always written as ``part-{i:05d}.parquet`` by the same code from the
same input, so both engines give byte-identical files.  Everything is written in
a temporary directory beside the output, renamed into place only when every
shard succeeded: a failed stage leaves no partial output, and a rerun starts
clean.  A killed Dask worker's shards are recomputed on the others.
"""
from __future__ import annotations

import os
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

import pyarrow as pa

ENGINES = ("local", "dask")


@dataclass(frozen=True)
class LineShard:
    """Lines [start, stop) of a text file, found by byte offsets (no need to read the rest)."""

    path: str
    index: int
    start_byte: int
    stop_byte: int
    first_line: int


def line_shards(paths: list[str | os.PathLike], lines_per_shard: int) -> list[LineShard]:
    """Shards of ``lines_per_shard`` lines over the files, in file order; a streaming scan of the bytes."""
    if lines_per_shard < 1:
        raise ValueError("lines_per_shard must be at least 1")
    shards = []
    for path in paths:
        path = str(path)
        start, line, count = 0, 0, 0
        offset = 0
        with open(path, "rb") as handle:
            for raw in iter(lambda: handle.readline(), b""):
                offset += len(raw)
                count += 1
                if count == lines_per_shard:
                    shards.append(LineShard(path, len(shards), start, offset, line))
                    start, line, count = offset, line + lines_per_shard, 0
        if count:
            shards.append(LineShard(path, len(shards), start, offset, line))
    return shards


def read_shard_text(shard: LineShard) -> str:
    with open(shard.path, "rb") as handle:
        handle.seek(shard.start_byte)
        data = handle.read(shard.stop_byte - shard.start_byte)
    if shard.start_byte == 0 and data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        from .io import InputError

        raise InputError(f"{shard.path}: invalid UTF-8 at byte offset {shard.start_byte + exc.start}") from None


def _write_part(step: Callable, shard, folder: str) -> dict:
    from .io import write_parquet

    table = step(shard)
    write_parquet(table, Path(folder) / f"part-{shard.index:05d}.parquet")
    return {"shard": shard.index, "rows": table.num_rows,
            "words": int(pa.compute.sum(pa.compute.list_value_length(table["words"])).as_py() or 0) if table.num_rows else 0}


def _local(step, shards, folder, workers):
    from .executor import map_ordered

    return map_ordered(_PartJob(step, folder), shards, workers, chunks_per_worker=2)


class _PartJob:
    """Picklable closure: one shard through the step into its part file."""

    def __init__(self, step, folder):
        self.step, self.folder = step, folder

    def __call__(self, shard):
        return _write_part(self.step, shard, self.folder)


def _dask(step, shards, folder, workers, scheduler):
    from distributed import Client, LocalCluster

    address = scheduler or os.environ.get("PUNCT_DASK_SCHEDULER")
    cluster = None
    if address:
        client = Client(address)
    else:
        cluster = LocalCluster(n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None,
                               silence_logs=40)
        client = Client(cluster)
    try:
        job = _PartJob(step, folder)
        futures = client.map(job, shards, pure=False, retries=2)
        return client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sharded(step: Callable, shards: list, out_dir: str | os.PathLike, engine: str = "local", workers: int = 0,
                scheduler: str | None = None) -> list[dict]:
    """Run ``step`` on every shard into ``out_dir/part-NNNNN.parquet``; all or nothing."""
    from .executor import resolve_workers

    if engine not in ENGINES:
        raise ValueError(f"engine must be one of {', '.join(ENGINES)}, not {engine!r}")
    out_dir = Path(out_dir)
    out_dir.parent.mkdir(parents=True, exist_ok=True)
    workers = resolve_workers(workers)
    staging = Path(tempfile.mkdtemp(prefix=f".{out_dir.name}.", dir=out_dir.parent))
    try:
        if engine == "local":
            results = _local(step, shards, str(staging), workers)
        else:
            results = _dask(step, shards, str(staging), workers, scheduler)
        if out_dir.exists():
            shutil.rmtree(out_dir)
        os.replace(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return sorted(results, key=lambda r: r["shard"])


def ingest_text_sharded(files, lang, corpus: str, out: str | os.PathLike, engine: str = "local", workers: int = 0,
                        shard_lines: int = 100_000, quoting: str = "none", scheduler: str | None = None) -> dict:
    """Sentence-per-line text into ``out/part-NNNNN.parquet``; the counts of the run."""
    shards = line_shards(list(files), shard_lines)
    results = run_sharded(IngestTextStep(lang, corpus, quoting), shards, out, engine=engine, workers=workers,
                          scheduler=scheduler)
    return {"corpus": corpus, "lang": lang, "engine": engine, "shards": len(results),
            "segments": sum(r["rows"] for r in results), "words": sum(r["words"] for r in results)}


class IngestTextStep:
    """Punctuated sentence-per-line text, each line a document (FLORES-style).

    ``lang`` is one language code, or a mapping from file path to language for a
    multi-language corpus."""

    def __init__(self, lang, corpus: str, quoting: str = "none"):
        self.lang, self.corpus, self.quoting = lang, corpus, quoting

    def __call__(self, shard: LineShard) -> pa.Table:
        from corpora.punctuated_text import unquote_csv
        from .labelling import label_lines
        from .languages import get_language
        from .schema import segments_table

        lang = self.lang if isinstance(self.lang, str) else self.lang[shard.path]
        language = get_language(lang)
        text = read_shard_text(shard)
        if self.quoting == "csv":
            text = unquote_csv(text, shard.path)
        lines = language.normalize_text(text)
        labelled = label_lines(lines, language)
        lengths = pa.compute.list_value_length(labelled.words).to_numpy(zero_copy_only=False)
        keep = [i for i, n in enumerate(lengths) if n > 0]
        stem = Path(shard.path).name
        return segments_table(
            self.corpus, lang, [f"{stem}:{shard.first_line + i + 1}" for i in keep], [0] * len(keep),
            labelled.words.take(pa.array(keep, pa.int64())), labelled.labels.take(pa.array(keep, pa.int64())),
        )
