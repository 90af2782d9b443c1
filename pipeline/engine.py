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
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

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
    """A step returns its shard's table, or (table, report): the report comes back to the driver."""
    from .io import write_parquet

    result = step(shard)
    table, report = result if isinstance(result, tuple) else (result, None)
    write_parquet(table, Path(folder) / f"part-{shard.index:05d}.parquet")
    words = 0
    if table.num_rows and "words" in table.column_names:
        words = int(pa.compute.sum(pa.compute.list_value_length(table["words"])).as_py() or 0)
    out = {"shard": shard.index, "rows": table.num_rows, "words": words}
    if report is not None:
        out["report"] = report
    return out


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
        cluster = LocalCluster(
            n_workers=workers, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=40
        )
        client = Client(cluster)
    try:
        job = _PartJob(step, folder)
        futures = client.map(job, shards, pure=False, retries=2)
        return client.gather(futures)
    finally:
        client.close()
        if cluster is not None:
            cluster.close()


def run_sharded(
    step: Callable,
    shards: list,
    out_dir: str | os.PathLike,
    engine: str = "local",
    workers: int = 0,
    scheduler: str | None = None,
    accept: Callable[[list[dict]], None] | None = None,
) -> list[dict]:
    """Run ``step`` on every shard into ``out_dir/part-NNNNN.parquet``; all or nothing.

    ``accept(results)``, if given, sees every shard's result before the output is
    put in place; raising there (a check over the whole corpus) leaves no output."""
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
        results = sorted(results, key=lambda r: r["shard"])
        if accept is not None:
            accept(results)
        if out_dir.is_dir():
            shutil.rmtree(out_dir)
        elif out_dir.exists():  # an unsharded output of an earlier run
            out_dir.unlink()
        os.replace(staging, out_dir)
    finally:
        if staging.exists():
            shutil.rmtree(staging, ignore_errors=True)
    return results


def ingest_text_sharded(
    files,
    lang,
    corpus: str,
    out: str | os.PathLike,
    engine: str = "local",
    workers: int = 0,
    shard_lines: int = 100_000,
    quoting: str = "none",
    scheduler: str | None = None,
) -> dict:
    """Sentence-per-line text into ``out/part-NNNNN.parquet``; the counts of the run."""
    shards = line_shards(list(files), shard_lines)
    results = run_sharded(
        IngestTextStep(lang, corpus, quoting), shards, out, engine=engine, workers=workers, scheduler=scheduler
    )
    return {
        "corpus": corpus,
        "lang": lang,
        "engine": engine,
        "shards": len(results),
        "segments": sum(r["rows"] for r in results),
        "words": sum(r["words"] for r in results),
    }


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
            self.corpus,
            lang,
            [f"{stem}:{shard.first_line + i + 1}" for i in keep],
            [0] * len(keep),
            labelled.words.take(pa.array(keep, pa.int64())),
            labelled.labels.take(pa.array(keep, pa.int64())),
        )


# ---------------------------------------------------------------------------
# Stages over segment Parquet: shards are row ranges that never split a document


@dataclass(frozen=True)
class RowShard:
    """Rows [start, stop) of one Parquet file (a file, or one part of a sharded directory)."""

    path: str
    index: int
    start: int
    stop: int


def row_shards(path: str | os.PathLike, rows_per_shard: int) -> list[RowShard]:
    """Shards of about ``rows_per_shard`` segments, each cut where a document ends.

    A streaming scan of the ``doc_id`` column only.  A document's rows must be
    contiguous (every reader writes them so); a document that runs over from one
    part file into the next is an error, since a step sees whole documents."""
    from .io import InputError, open_parquet, parquet_files

    if rows_per_shard < 1:
        raise ValueError("rows_per_shard must be at least 1")
    shards: list[RowShard] = []
    previous_last: tuple[str, str] | None = None
    for file in map(str, parquet_files(path)):
        reader = open_parquet(file)
        if "doc_id" not in reader.schema_arrow.names:
            raise InputError(f"{file}: not a segment table (no doc_id column)")
        start, row, last = 0, 0, None
        for batch in reader.iter_batches(columns=["doc_id"], batch_size=65_536):
            docs = batch.column(0).to_pylist()
            if row == 0 and docs and previous_last and previous_last[1] == docs[0]:
                raise InputError(
                    f"{file}: document {docs[0]!r} continues from {previous_last[0]}: "
                    "a document must lie in one part file"
                )
            for offset, doc in enumerate(docs):
                here = row + offset
                if here - start >= rows_per_shard and doc != last:
                    shards.append(RowShard(file, len(shards), start, here))
                    start = here
                last = doc
            row += len(docs)
        if row > start:
            shards.append(RowShard(file, len(shards), start, row))
        previous_last = (file, last) if last is not None else previous_last
    return shards


def read_row_shard(shard: RowShard) -> pa.Table:
    """The shard's rows, reading only the row groups that hold them."""
    from .io import open_parquet

    reader = open_parquet(shard.path)
    groups, first_row, row = [], None, 0
    for g in range(reader.metadata.num_row_groups):
        n = reader.metadata.row_group(g).num_rows
        if row + n > shard.start and row < shard.stop:
            groups.append(g)
            first_row = row if first_row is None else first_row
        row += n
    if not groups:
        return reader.schema_arrow.empty_table()
    return reader.read_row_groups(groups).slice(shard.start - first_row, shard.stop - shard.start)


def _segments_of(shard: RowShard) -> pa.Table:
    from .io import conform_segments

    return conform_segments(read_row_shard(shard), shard.path)


class AlignStep:
    """Hypothesis shard -> its segments labelled from the reference documents of the same ids.

    Each shard reads from the reference only the documents it needs (a filtered,
    streaming scan), so memory is bounded by the shard, not the corpus."""

    def __init__(self, ref_path: str, policy: str, lang: str | None, corpus: str):
        self.ref_path, self.policy, self.lang, self.corpus = str(ref_path), policy, lang, corpus

    def __call__(self, shard: RowShard):
        import pyarrow.parquet as pq

        from .align import align_tables
        from .io import conform_segments
        from .verbalize import verbalizer_or_none

        hyp = _segments_of(shard)  # a shard holds at least one row
        doc_ids = pa.compute.unique(hyp["doc_id"]).to_pylist()
        ref = conform_segments(pq.read_table(self.ref_path, filters=[("doc_id", "in", doc_ids)]), self.ref_path)
        lang = self.lang or hyp["lang"][0].as_py()
        return align_tables(
            ref,
            hyp,
            policy=self.policy,
            verbalizer=verbalizer_or_none(lang),
            max_wer=float("inf"),
            force=True,
            corpus=self.corpus,
            pair_by="id",
            workers=1,
        )


def count_labels(path: str | os.PathLike) -> dict[str, int]:
    """Label counts of a segment dataset, streamed batch by batch."""
    from collections import Counter

    import pyarrow.parquet as pq

    from .align import label_counts
    from .io import parquet_files
    from .labels import LABELS

    counts: Counter = Counter()
    for file in parquet_files(path):
        for batch in pq.ParquetFile(file).iter_batches(columns=["labels"], batch_size=65_536):
            counts.update(label_counts(batch))
    return {label: int(counts[label]) for label in LABELS}


def align_sharded(
    ref_path,
    hyp_path,
    out,
    policy: str = "guerreiro",
    lang: str | None = None,
    corpus: str = "aligned",
    max_wer: float = 0.5,
    force: bool = False,
    engine: str = "local",
    workers: int = 0,
    shard_rows: int = 20_000,
    scheduler: str | None = None,
) -> dict:
    """Reference punctuation onto a (sharded) hypothesis corpus, into ``out/part-NNNNN.parquet``.

    The alignment report of the whole corpus; the WER check covers the whole corpus
    and, failing, leaves no output.  Documents pair by id."""
    from .align import merge_reports

    shards = row_shards(hyp_path, shard_rows)
    merged: dict = {}

    def accept(results):
        merged.update(merge_reports([r["report"] for r in results], count_labels(ref_path), max_wer, force))

    run_sharded(
        AlignStep(ref_path, policy, lang, corpus),
        shards,
        out,
        engine=engine,
        workers=workers,
        scheduler=scheduler,
        accept=accept,
    )
    return {**merged, "engine": engine, "shards": len(shards)}


_TOKENIZERS: dict = {}


class SequencesStep:
    """Segment shard -> model-ready sequences, with the tokenizer saved in ``tokenizer_dir``."""

    def __init__(
        self, tokenizer_dir: str, max_len: int = 256, mode: str = "chunk", stride: int = 0, slot_filling: bool = False
    ):
        self.tokenizer_dir = str(tokenizer_dir)
        self.options = dict(max_len=max_len, mode=mode, stride=stride, slot_filling=slot_filling)

    def __call__(self, shard: RowShard):
        from .sequences import build_sequences

        if self.tokenizer_dir not in _TOKENIZERS:  # once per worker process
            from transformers import AutoTokenizer

            _TOKENIZERS[self.tokenizer_dir] = AutoTokenizer.from_pretrained(self.tokenizer_dir)
        table, counts = build_sequences(_segments_of(shard), _TOKENIZERS[self.tokenizer_dir], **self.options)
        return table, dict(counts)


def sequences_sharded(
    segments_path,
    tokenizer_dir,
    out,
    engine: str = "local",
    workers: int = 0,
    shard_rows: int = 20_000,
    scheduler: str | None = None,
    **options,
) -> dict:
    """Sequences of a (sharded) segment dataset into ``out/part-NNNNN.parquet``; the summed counts."""
    from collections import Counter

    shards = row_shards(segments_path, shard_rows)
    results = run_sharded(
        SequencesStep(tokenizer_dir, **options), shards, out, engine=engine, workers=workers, scheduler=scheduler
    )
    counts: Counter = Counter()
    for r in results:
        counts.update(r["report"])
    return {"engine": engine, "shards": len(shards), **{k: int(v) for k, v in sorted(counts.items())}}
