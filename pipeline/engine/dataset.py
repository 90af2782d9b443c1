"""Datasets as folders of parts, cut into shards and written shard by shard.

A dataset is a folder of ``part-NNNNN.parquet`` files plus a manifest (``_punct.json``);
``pyarrow``, ``pandas``, ``datasets.load_dataset("parquet", data_files=".../*.parquet")`` and
Spark read it as it is.  A stage over a dataset is a step mapped over its shards: row ranges
that never cut a document (:func:`row_shards`).  Each shard's step runs in a worker, which
writes that shard's part itself, so no process holds more than one shard and the driver only
gathers counts; part ``i`` is written by the same code from the same rows whatever the engine,
so the bytes do not depend on it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline import errors
from pipeline.engine import location, reading, writing
from pipeline.engine.executor import Executor, record_timing, runs_of
from pipeline.engine.step import Counts, StepResult, total
from pipeline.errors import ParamsError
from pipeline.schema import SEGMENT_SCHEMA, as_dictionaries, dictionary_columns


@dataclass(frozen=True)
class RowShard:
    """Rows [start, stop) of one Parquet file (a file, or one part of a dataset folder); ``source``:
    which of the inputs of the stage it comes from; ``first_row``: the number of its first row in
    the stage's inputs read in order (all of their files), whatever the shards."""

    path: str
    index: int
    start: int
    stop: int
    source: int = 0
    first_row: int = 0


def row_shards(paths, rows_per_shard: int, runner: Executor | None = None, label: str = "shards") -> list[RowShard]:
    """Shards of about ``rows_per_shard`` rows over the datasets ``paths`` (in order), each cut where a
    document ends, from one scan of the parts on ``runner``'s workers (:func:`scan_datasets`)."""
    return scan_datasets(paths, rows_per_shard, runner, label).shards


@dataclass(frozen=True)
class DatasetScan:
    """What :func:`scan_datasets` found: the shards, the datasets' one label set (:func:`labels_of`),
    for each column asked whether every row holds one value (:func:`one_value`), and the word
    slots the footers count (the words, plus at most one per row: an empty list is one slot)."""

    shards: list[RowShard]
    labels: Any
    one_value: dict[str, bool]
    word_slots: int = 0


def scan_datasets(
    paths, rows_per_shard: int, runner: Executor | None = None, label: str = "shards", one_values=()
) -> DatasetScan:
    """Shards of about ``rows_per_shard`` rows over the datasets ``paths`` (in order), each cut where
    a document ends: each file is cut into the whole number of shards nearest its rows over
    ``rows_per_shard`` (at least one), of equal size, so a shard holds at most 1.5
    ``rows_per_shard`` rows and a document; a tail shorter than a quarter of a shard joins the
    shard before it.

    One pass over the part files on ``runner``'s workers (timed under ``label``), each file on its
    own: its footer (label set, columns, rows, words, the statistics of the ``one_values``
    columns) and a streaming scan of its ``doc_id`` column.  The driver reads no part: it checks
    what the workers found as :func:`labels_of` and :func:`checked_parts` check it, in a fold of
    a few numbers per part.  A document's rows must be contiguous (every stage writes them so); a
    document that runs over from one part file into the next is an error, since a step sees
    whole documents."""
    if rows_per_shard < 1:
        raise ParamsError("rows_per_shard must be at least 1")
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    refuse_twice(paths)
    listed = [_listed(path) for path in paths]
    files = [(source, str(file)) for source, (_, parts) in enumerate(listed) for file in parts]
    runner = runner or Executor()
    per_task = max(1, -(-len(files) // (4 * max(1, runner.workers))))  # a few tasks per worker
    tasks = runs_of([file for _, file in files], per_task)
    step = _FileCuts(rows_per_shard, tuple(one_values))
    began = time.perf_counter()
    found = [facts for task in runner.imap(step, tasks) for facts in task]
    # timed as a pass (work shared among the workers), not logged: a refusal below stays one line
    record_timing(label, time.perf_counter() - began, len(tasks), engine=runner.engine, workers=runner.workers)
    per_path, at = [], 0
    for _, parts in listed:
        per_path.append(found[at : at + len(parts)])
        at += len(parts)
    label_set = _labels_of(
        [
            (path, manifest, parts, [f.footer for f in facts])
            for path, (manifest, parts), facts in zip(paths, listed, per_path)
        ]
    )
    for path, (manifest, parts), facts in zip(paths, listed, per_path):
        _check_parts(path, manifest, parts, [f.footer for f in facts])
    shards: list[RowShard] = []
    previous: tuple[int, str, str] | None = None  # (source, file, last document) of the last file with rows
    seen: dict[str, set | None] = {column: set() for column in one_values}
    rows_before = slots = 0  # rows of the files before this one; word slots of all
    for (source, file), facts in zip(files, found):
        if isinstance(facts.cuts, errors.InputError):  # raised in file order, whatever the tasks
            raise facts.cuts
        for column, values in zip(one_values, facts.values):
            seen[column] = None if values is None or seen[column] is None else seen[column] | values
        cuts, first, last = facts.cuts
        if previous and previous[0] == source and first is not None and first == previous[2]:
            raise errors.InputError(
                f"{file}: document {first!r} continues from {previous[1]}: a document must lie in one part file"
            )
        shards += [
            RowShard(file, len(shards) + k, start, stop, source, rows_before + start)
            for k, (start, stop) in enumerate(cuts)
        ]
        rows_before += facts.footer.rows
        slots += facts.footer.slots or 0
        previous = (source, file, last) if last is not None else previous
    single = {column: values is not None and len(values) <= 1 for column, values in seen.items()}
    return DatasetScan(shards, label_set, single, slots)


def _listed(path) -> tuple[dict | None, list]:
    """The manifest of the dataset ``path`` (None: a lone file, or a folder without one) and its part files."""
    return (reading.read_manifest(path) if not location.is_file(path) else None), reading.parquet_files(path)


def refuse_twice(paths) -> None:
    """The same dataset given twice (``X`` and ``X/``, ``X`` and a link to it) would be read, counted
    and written twice: refused, naming both spellings."""
    seen: dict = {}
    for path in paths:
        key = location.identity(path)
        for other_key, other in seen.items():
            if key == other_key or location.same_file(path, other):
                raise errors.InputError(f"{path}: the same dataset as {other}, given twice: give it once")
        seen[key] = path


def manifest_entry(label_set) -> dict:
    """What a segment or sequence dataset's manifest records of its label set: nothing for
    ``papers`` (a dataset without a record is a papers one), else the set (its labels, merges and
    marks: the dataset describes itself, whatever happens to the table it came from)."""
    return {} if label_set.is_papers else {"label_set": label_set.record()}


def protocols_of(paths) -> dict:
    """The paper protocols the datasets ``paths`` were made under, by corpus: an ingest's record
    (``protocol``), or those a dataset made from several carries on (``protocols``)."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found: dict = {}
    for path in paths:
        manifest = reading.read_manifest(path) if not location.is_file(path) else None
        if not isinstance(manifest, dict):
            continue
        record = manifest.get("protocol")
        if isinstance(record, dict) and "corpus" in record:
            found[record["corpus"]] = record
        carried = manifest.get("protocols")
        if isinstance(carried, dict):
            found.update(carried)
    return found


def protocol_entry(paths) -> dict:
    """What a dataset made from the datasets ``paths`` records of their protocols: nothing where all
    are ``papers`` (the manifest keeps its bytes), else ``protocols`` by corpus."""
    found = protocols_of(paths)
    return {"protocols": dict(sorted(found.items()))} if found else {}


def dataset_labels(path):
    """The label set of the dataset ``path``: the one its files record in their metadata, which must be
    the one its manifest records (a part of another dataset is refused).  A file that records none
    (written before label sets travelled with files) has its folder manifest's; ``papers`` where
    neither says."""
    manifest, files = _listed(path)
    return _dataset_labels(path, manifest, files, (_footer_or_error(file) for file in files))


def _dataset_labels(path, manifest, files, footers):
    """:func:`dataset_labels` from the parts' footers (:class:`_Footer`, or the InputError reading one)."""
    from pipeline.labels import METADATA_KEY, PAPERS, from_file_metadata, from_record

    claimed, where = None, None
    if isinstance(manifest, dict) and "label_set" in manifest:
        where = location.join(path, location.MANIFEST)
        claimed = from_record(manifest["label_set"], f"{where}: label_set")
    elif isinstance(manifest, dict):
        claimed, where = PAPERS, location.join(path, location.MANIFEST)
    parsed: dict = {}  # the parts of a dataset record one set: parsed once
    for file, footer in zip(files, footers):
        if isinstance(footer, errors.InputError) or footer.labels is None:
            continue  # a damaged part: the read that needs it names it, in file order
        own = parsed.get(footer.labels)
        if own is None:
            own = parsed[footer.labels] = from_file_metadata({METADATA_KEY: footer.labels}, file)
        if claimed is not None and not own.same_labels(claimed):
            raise errors.InputError(
                f"{file}: label set {own.name}, but {where}: label set {claimed.name}: a part of another "
                "dataset; rewrite the dataset"
            )
        claimed, where = own, file
    # papers' labels under any name are papers, as a manifest without a record says
    return PAPERS if claimed is None or claimed.is_papers else claimed


def file_labels(file, reader=None):
    """The label set of one Parquet file: its metadata's, else its folder manifest's, else ``papers``
    (per shard read: one footer and at most one manifest, never the other parts); ``reader``: the
    file, opened already."""
    from pipeline.labels import PAPERS, from_file_metadata, from_record

    own = from_file_metadata((reader or reading.open_parquet(file)).schema_arrow.metadata, file)
    if own is not None:
        return PAPERS if own.is_papers else own
    manifest_path = location.join(location.parent_of(file), location.MANIFEST)
    manifest = reading.read_json(manifest_path) if location.is_file(manifest_path) else None
    if isinstance(manifest, dict) and "label_set" in manifest:
        return from_record(manifest["label_set"], f"{manifest_path}: label_set")
    return PAPERS


def check_labels(table, label_set, path) -> None:
    """Refuse, in one line, rows of ``path`` whose labels (strings) are not of its label set."""
    if "labels" not in table.column_names or not table.num_rows:
        return
    column = table["labels"]
    if not pa.types.is_list(column.type) or not (
        pa.types.is_string(column.type.value_type) or pa.types.is_dictionary(column.type.value_type)
    ):
        return  # label ids (sequences), checked by their consumers
    values = set()
    for chunk in column.chunks if isinstance(column, pa.ChunkedArray) else [column]:
        flat = chunk.values
        if pa.types.is_dictionary(flat.type):
            flat = flat.dictionary
        values.update(v for v in pc.unique(flat).to_pylist() if v is not None)
    unknown = sorted(values - set(label_set.labels))
    if unknown:
        raise errors.InputError(
            f"{path}: rows hold labels {', '.join(unknown[:5])} outside its label set {label_set.name} "
            f"({', '.join(label_set.labels)}): the file and its label set disagree; rewrite it"
        )


def labels_of(paths):
    """The one label set of the datasets ``paths``; datasets of different sets are refused, naming both."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    found = []
    for path in paths:
        manifest, files = _listed(path)
        found.append((path, manifest, files, (_footer_or_error(file) for file in files)))
    return _labels_of(found)


def _labels_of(datasets) -> Any:
    """:func:`labels_of` over (path, manifest, part files, their footers) of each dataset."""
    first, found = None, None
    for path, manifest, files, footers in datasets:
        labels = _dataset_labels(path, manifest, files, footers)
        if found is None:
            first, found = path, labels
        elif not labels.same_labels(found):
            raise errors.InputError(
                f"{path}: label set {labels.name}, but {first}: label set {found.name}: datasets of "
                "different label sets cannot be mixed (ingest them with one label set)"
            )
    if found is None:
        from pipeline.labels import PAPERS

        return PAPERS
    return found


#: the leaf of the word lists in a Parquet footer: its value count bounds the manifest's words
_WORDS_LEAF = "words.list.element"


def iter_batches(path, columns: list[str] | None = None, batch_size: int = 65_536):
    """Record batches of the dataset ``path``, streamed, its parts checked first (:func:`checked_parts`)."""
    for file in checked_parts(path):
        label_set = file_labels(file) if columns is None or "labels" in columns else None
        for batch in reading.batches_of(reading.open_parquet(file), file, columns=columns, batch_size=batch_size):
            if label_set is not None:
                check_labels(pa.Table.from_batches([batch]), label_set, file)
            yield batch


def checked_parts(path) -> list:
    """The part files of the dataset ``path``, checked against its manifest before a stage uses
    them, from the parts' footers only (no data read): the part list (a missing or an extra part),
    the rows, the words (a footer counts an empty list as one slot, so the words lie between the
    manifest's words and that plus the rows), and one column set in every part (a foreign part).
    A lone Parquet file, or a folder without a manifest (another tool's), has nothing to check."""
    manifest, files = _listed(path)
    return _check_parts(path, manifest, files, (_footer(file) for file in files))


@dataclass(frozen=True)
class _Footer:
    """What a part's footer says: its columns (leaf paths), rows, word slots (values of the word
    lists' leaf: None without one) and the label set its metadata records (raw; None: none)."""

    columns: tuple[str, ...]
    rows: int
    slots: int | None
    labels: bytes | None


def _footer(file, reader=None) -> _Footer:
    from pipeline.labels import METADATA_KEY

    reader = reader or reading.open_parquet(file)
    metadata = reader.metadata
    columns = tuple(metadata.schema.column(i).path for i in range(metadata.num_columns))
    slots = None
    if _WORDS_LEAF in columns:
        index = columns.index(_WORDS_LEAF)
        slots = sum(metadata.row_group(g).column(index).num_values for g in range(metadata.num_row_groups))
    return _Footer(columns, metadata.num_rows, slots, (reader.schema_arrow.metadata or {}).get(METADATA_KEY))


def _footer_or_error(file) -> _Footer | errors.InputError:
    try:
        return _footer(file)
    except errors.InputError as exc:
        return exc


def _check_parts(path, manifest, files: list, footers) -> list:
    """:func:`checked_parts` from the parts' footers (:class:`_Footer`, or the InputError reading one,
    raised in file order)."""
    if not isinstance(manifest, dict) or not isinstance(manifest.get("parts"), int):
        return files
    names = [location.name_of(file) for file in files]
    expected = [part_name(i) for i in range(manifest["parts"])]
    for name in sorted(set(names) - set(expected)):
        raise errors.InputError(
            f"{location.join(path, name)}: a part the manifest ({location.MANIFEST}) does not list "
            f"(it lists {len(expected)}): not this dataset's; remove it or rewrite the dataset"
        )
    for name in sorted(set(expected) - set(names)):
        raise errors.InputError(
            f"{location.join(path, name)}: missing: the manifest ({location.MANIFEST}) lists "
            f"{len(expected)} parts; rewrite the dataset"
        )
    rows, slots, columns, first = 0, 0, None, None
    for file, footer in zip(files, footers):
        if isinstance(footer, errors.InputError):
            raise footer
        names_here = footer.columns
        if columns is None:
            columns, first = names_here, file
        elif set(names_here) != set(columns):
            raise errors.InputError(
                f"{file}: columns differ from {location.name_of(first)}'s "
                f"({', '.join(sorted(set(names_here) ^ set(columns)))}): a part of another dataset"
            )
        rows += footer.rows
        slots += footer.slots or 0
    if isinstance(manifest.get("rows"), int) and rows != manifest["rows"]:
        raise errors.InputError(
            f"{path}: its parts hold {rows} rows, its manifest ({location.MANIFEST}) says {manifest['rows']}: "
            "a part was changed or replaced; rewrite the dataset"
        )
    words = manifest.get("words")
    if isinstance(words, int) and columns and _WORDS_LEAF in columns and not words <= slots <= words + rows:
        raise errors.InputError(
            f"{path}: its parts hold {slots - rows}..{slots} words, its manifest ({location.MANIFEST}) says "
            f"{words}: a part was changed or replaced; rewrite the dataset"
        )
    return files


@dataclass(frozen=True)
class _PartFacts:
    """A part as a worker found it: its footer (or the InputError reading it), its cuts, first and
    last document (:func:`file_cuts`, or the InputError), and per column asked the values its
    row-group statistics show (None: not one value per row group, or no statistics)."""

    footer: Any
    cuts: Any
    values: tuple


class _FileCuts:
    """Picklable: part files -> the :class:`_PartFacts` of each (the rule of :func:`row_shards` for
    the cuts; the statistics of the ``one_values`` columns)."""

    def __init__(self, rows_per_shard: int, one_values: tuple[str, ...] = ()):
        self.rows_per_shard, self.one_values = rows_per_shard, one_values

    def __call__(self, files: tuple[str, ...]) -> list[_PartFacts]:
        out: list = []
        for file in files:
            try:
                reader = reading.open_parquet(file)
                footer = _footer(file, reader)
            except errors.InputError as exc:
                out.append(_PartFacts(exc, exc, ()))
                continue
            try:
                cuts = file_cuts(file, self.rows_per_shard, reader)
            except errors.InputError as exc:
                cuts = exc
            out.append(_PartFacts(footer, cuts, tuple(_row_group_values(reader, c) for c in self.one_values)))
        return out


def file_cuts(file: str, rows_per_shard: int, reader=None) -> tuple[list[tuple[int, int]], str | None, str | None]:
    """The row ranges of one Parquet file's shards, and its first and last document id (None: no rows)."""
    reader = reader or reading.open_parquet(file)
    if "doc_id" not in reader.schema_arrow.names:
        raise errors.InputError(f"{file}: not a segment table (no doc_id column)")
    # the file cut into equal shards of about rows_per_shard: a part of 6,600 rows (5,000 and the
    # copies oversampling inserted) is one shard, not 5,000 rows and 1,600
    rows = reader.metadata.num_rows
    target = max(1, -(-rows // max(1, int(rows / rows_per_shard + 0.5))))
    cuts: list[tuple[int, int]] = []
    start, row, first, last = 0, 0, None, None
    for batch in reading.batches_of(reader, file, columns=["doc_id"], batch_size=65_536):
        docs = batch.column(0)
        if not len(docs):
            continue
        head = docs[0].as_py()
        first = head if first is None else first
        # rows where a new document starts (only there may a shard end), compared by Arrow:
        # strings as Python objects were most of a driver's scan (1.7 s per 100 M words)
        starts = np.flatnonzero(value_changes(docs)[1:]) + 1 + row
        if last is None or head != last:
            starts = np.r_[row, starts]
        # each shard ends at the first document start at least ``target`` rows after its own
        while (at := int(np.searchsorted(starts, start + target))) < len(starts):
            cuts.append((start, int(starts[at])))
            start = int(starts[at])
        last = docs[len(docs) - 1].as_py()
        row += len(docs)
    if row > start:
        if row - start < target // 4 and cuts:  # a short tail (after long documents) joins the last shard
            cuts[-1] = (cuts[-1][0], row)
        else:
            cuts.append((start, row))
    return cuts, first, last


def one_value(paths, column: str) -> bool:
    """Whether every row of the datasets ``paths`` holds the same non-null value of ``column``, as
    the files' row-group statistics show (no data read); False when a file keeps none."""
    if isinstance(paths, str | os.PathLike):
        paths = [paths]
    seen: set = set()
    for path in paths:
        for file in reading.parquet_files(path):
            values = _row_group_values(reading.open_parquet(file), column)
            if values is None:
                return False
            seen |= values
    return len(seen) <= 1


def _row_group_values(reader, column: str) -> frozenset | None:
    """The values of ``column`` in a file whose every row group holds one (its statistics' min and
    max agree, no nulls); None when one does not, or keeps no statistics."""
    metadata = reader.metadata
    leaves = [metadata.schema.column(i).path for i in range(metadata.num_columns)]
    if column not in leaves:
        return None
    index, seen = leaves.index(column), set()
    for g in range(metadata.num_row_groups):
        stats = metadata.row_group(g).column(index).statistics
        if stats is None or not stats.has_min_max or stats.null_count != 0 or stats.min != stats.max:
            return None
        seen.add(stats.min)
    return frozenset(seen)


def value_changes(column) -> np.ndarray:
    """Whether each value differs from the one before it (the first: True), compared in Arrow
    (a numpy array of Python strings cost a string object per row); dictionaries by their values."""
    n = len(column)
    change = np.ones(n, dtype=bool)
    if n > 1:
        if pa.types.is_dictionary(column.type):
            column = column.cast(column.type.value_type)
        if column.null_count:  # nulls equal each other, as Python's None == None
            values = column.to_numpy(zero_copy_only=False)
            change[1:] = values[1:] != values[:-1]
        else:
            change[1:] = pc.not_equal(column.slice(1), column.slice(0, n - 1)).to_numpy(zero_copy_only=False)
    return change


def document_index(table: pa.Table) -> np.ndarray:
    """Document number (0, 1, ...) of each row: a document's rows are contiguous, so a new one
    starts wherever corpus or doc_id changes."""
    if table.num_rows == 0:
        return np.zeros(0, np.int64)
    change = value_changes(table["doc_id"]) | value_changes(table["corpus"])
    return np.cumsum(change) - 1


def read_rows(shard: RowShard, columns: list[str] | None = None, dictionary: bool = False) -> pa.Table:
    """The shard's rows, reading only the row groups that hold them; ``dictionary``: list<string>
    columns as dictionaries (5x faster to read; values are the same strings)."""
    reader = reading.open_parquet(shard.path)
    if dictionary:
        lists = [f"{name}.list.element" for name in dictionary_columns(reader.schema_arrow)]
        reader = reading.open_parquet(shard.path, read_dictionary=lists, metadata=reader.metadata)  # footer read once
    groups, first_row, row = [], None, 0
    for g in range(reader.metadata.num_row_groups):
        n = reader.metadata.row_group(g).num_rows
        if row + n > shard.start and row < shard.stop:
            groups.append(g)
            first_row = row if first_row is None else first_row
        row += n
    schema = reader.schema_arrow
    reading.require_columns(reader, columns, shard.path)
    if not groups:
        empty = schema.empty_table()
        return empty.select(columns) if columns else empty
    try:
        if not dictionary:
            table = reader.read_row_groups(groups, columns=columns)
        else:  # a row group at a time: each has its own dictionaries, which a multi-group read cannot nest
            try:
                table = pa.concat_tables([reader.read_row_group(g, columns=columns) for g in groups])
            except pa.ArrowNotImplementedError:  # a writer fell back to plain pages: read strings, encode here
                table = as_dictionaries(reading.open_parquet(shard.path).read_row_groups(groups, columns=columns))
    except (OSError, pa.ArrowException) as exc:
        if isinstance(exc, pa.ArrowNotImplementedError):
            raise
        raise reading.unreadable(exc, shard.path) from None
    if "labels" in table.column_names:
        check_labels(table, file_labels(shard.path, reader), shard.path)
    table = table.slice(shard.start - first_row, shard.stop - shard.start)
    return table.combine_chunks() if dictionary else table


def read_shard(shard: RowShard, dictionary: bool = False) -> pa.Table:
    """The shard's rows in the segment schema (``dictionary``: list columns kept as dictionaries)."""
    table = read_rows(shard, dictionary=dictionary)
    if not dictionary:
        return reading.conform_segments(table, shard.path)
    if "case" not in table.column_names:
        reading.conform_segments(table.slice(0, 0), shard.path)  # the version check's message
    if "split" not in table.column_names:
        table = table.append_column("split", pa.nulls(table.num_rows, pa.string()))
    return table.select(SEGMENT_SCHEMA.names)


def part_name(index: int) -> str:
    return f"part-{index:05d}.parquet"


@dataclass
class ShardResult:
    index: int
    rows: int
    words: int | None  # None: the table has no words (sequences)
    counts: Counts
    payload: Any = None


class WriteParts:
    """Picklable wrapper: one shard through ``step`` into ``folder/part-NNNNN.parquet`` (when the
    step returns a table), the counts back to the driver."""

    def __init__(self, step, folder: str | os.PathLike | None, metadata: dict | None = None):
        self.step, self.folder = step, None if folder is None else str(folder)
        self.metadata = metadata

    def __call__(self, shard) -> ShardResult:
        result = self.step(shard)
        if not isinstance(result, StepResult):
            result = StepResult(result)
        table, rows, words = result.table, 0, 0
        if table is not None:
            if self.folder is None:
                raise ValueError("a step returned a table but the stage writes no dataset")
            writing.write_parquet(table, location.join(self.folder, part_name(shard.index)), self.metadata)
            rows = table.num_rows
            if "words" not in table.column_names:
                words = None
            elif rows:
                words = int(pc.sum(pc.list_value_length(table["words"])).as_py() or 0)
        return ShardResult(shard.index, rows, words, result.counts, result.payload)


def run_step(
    runner: Executor,
    step,
    shards: list,
    folder: str | os.PathLike | None = None,
    label: str | None = None,
    labels=None,
) -> list[ShardResult]:
    """``step`` over every shard on ``runner``; parts written into ``folder`` (a staging folder), each
    carrying the label set ``labels`` in its metadata (a dataset of labels must give it)."""
    from pipeline.labels import file_metadata

    metadata = file_metadata(labels) if labels is not None else None
    return runner.map(WriteParts(step, folder, metadata), shards, label=label)


def each_step(runner: Executor, step, shards: list, label: str | None = None) -> Iterator[ShardResult]:
    """:func:`run_step` without a dataset, its results one at a time (for payloads that grow with
    the shard: fold them as they come)."""
    return runner.each(WriteParts(step, None), shards, label=label)


def finish(folder: str | os.PathLike, kind: str, results: list[ShardResult], **extra) -> dict:
    """Write the dataset's manifest from its parts' results; returns it."""
    manifest = {"kind": kind, "parts": len(results), "rows": sum(r.rows for r in results)}
    if not any(r.words is None for r in results):
        manifest["words"] = sum(r.words for r in results)
    manifest.update(extra)
    writing.write_manifest(folder, manifest)
    return manifest


def counts_of(results: list[ShardResult]) -> Counts:
    return total(r.counts for r in results)
