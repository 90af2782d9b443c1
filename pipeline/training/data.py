"""The training data path: Parquet parts -> length-grouped, padded batches, in DataLoader workers.

A dataset folder (``data/datasets/<name>/``) holds ``sequences.parquet`` (a directory of
part files, or one file; train/dev/test rows of ``SEQUENCE_SCHEMA``, optionally
``case_labels``), ``oversampled.parquet`` (the segments, for augmentation and the
mixed-case lexicon) and ``tokenizer/``.  Nothing is loaded whole: an index of the train
rows (file, row group, row, language, length) is read once, then every epoch

1. the rows of the epoch are chosen (all of them, or drawn per language: ``mixing``);
2. they are cut into *windows*: up to ``window`` consecutive rows of one row group, the
   windows in a seeded random order;
3. each DataLoader worker takes every W-th window, reads its row group, and (with
   ``augmentation``) augments the segments and builds their sequences anew with the
   dataset's options (a new draw every epoch, seeded by (seed, epoch, row));
4. a window's sequences are shuffled and cut into *global* batches, the batch of all
   processes together: ``batch_size`` x processes sequences, or, with ``max_tokens``,
   sequences sorted by length and cut so that padded tokens stay within ``max_tokens``
   x processes (short sequences waste no compute); batches in random order;
5. each process keeps its share of every global batch (rows dealt by length), padded
   to a multiple of ``pad_to_multiple_of``, as pinned tensors.

Every process sees the same global batches in the same order, so they take the same
number of steps, and N processes give the same sums as one process with the global
batch.  Each batch carries the global counts of labelled tokens (and rows), so the
training loop normalizes a step's loss over all its micro-batches and processes.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import torch

from pipeline import errors
from pipeline.datasets.augment import augmented
from pipeline.datasets.sequences import IGNORE, build_sequences
from pipeline.engine import reading
from pipeline.engine.dataset import checked_parts
from pipeline.errors import ParamsError
from pipeline.labels import CASE_LABELS, LABELS, PAPERS, LabelSet
from pipeline.text.case import case_of

logger = logging.getLogger(__name__)

#: the sequence columns a batch is built from (``case_labels`` when present)
BATCH_COLUMNS = ("input_ids", "labels", "case_labels")
#: the segment columns augmentation reads
SEGMENT_COLUMNS = ("corpus", "lang", "doc_id", "seg_id", "words", "labels", "split", "case", "surface")


@dataclass(frozen=True)
class SequenceOptions:
    """How the dataset's sequences were built (``datasets.<name>.sequences``); augmented ones follow them."""

    max_len: int = 256
    mode: str = "chunk"
    stride: int = 0
    slot_filling: bool = False

    @classmethod
    def from_params(cls, section: dict | None) -> SequenceOptions:
        section = section or {}
        return cls(
            max_len=int(section.get("max_len", cls.max_len)),
            mode=section.get("mode", cls.mode),
            stride=int(section.get("stride", cls.stride)),
            slot_filling=bool(section.get("slot_filling", cls.slot_filling)),
        )

    def as_dict(self) -> dict:
        return asdict(self)


# ---------------------------------------------------------------------------------------------
# case labels on segments and sequences (until the dataset stages write them)


def segments_with_case(table: pa.Table) -> pa.Table:
    """A segment table of *cased* words -> lowercased words plus ``case`` (O/U/A/M per word) and
    ``surface`` (the exact form of M words, null elsewhere), as the dataset stages write them."""
    words, cases, surfaces = [], [], []
    for row in table["words"].to_pylist():
        labelled = [case_of(w) for w in row]
        words.append([w.lower() for w in row])
        cases.append([c for c, _ in labelled])
        surfaces.append([s for _, s in labelled])
    table = table.drop_columns([c for c in ("case", "surface") if c in table.column_names])
    field = table.schema.field("words")
    out = table.set_column(table.schema.get_field_index("words"), field, pa.array(words, field.type))
    out = out.append_column("case", pa.array(cases, pa.list_(pa.string())))
    return out.append_column("surface", pa.array(surfaces, pa.list_(pa.string())))


def sequences_with_case(table: pa.Table, tokenizer, **options) -> tuple[pa.Table, Counter]:
    """``build_sequences``, plus ``case_labels`` (int8, -100 where unlabelled) when ``table`` has a ``case``
    column and ``build_sequences`` did not add one.  A document whose rows have no case (null) gets -100."""
    sequences, counts = build_sequences(table, tokenizer, **options)
    if "case" not in table.column_names or "case_labels" in sequences.column_names:
        return sequences, counts
    # the same chunking with the case labels in the label column (ids 0..3 name O/COMMA/PERIOD/QUESTION
    # of the papers' set, whatever the dataset's)
    options = {**options, "label_set": PAPERS}
    as_label = dict(zip(CASE_LABELS, LABELS))
    cases = table["case"].to_pylist()
    relabelled = [
        [as_label[c] for c in row] if row is not None else ["O"] * len(w)
        for row, w in zip(cases, table["words"].to_pylist())
    ]
    unknown = {d for d, row in zip(table["doc_id"].to_pylist(), cases) if row is None}
    shadow, _ = build_sequences(
        table.set_column(table.schema.get_field_index("labels"), "labels", pa.array(relabelled, pa.list_(pa.string()))),
        tokenizer,
        **options,
    )
    case_labels = [
        [IGNORE] * len(labels) if doc in unknown else labels
        for doc, labels in zip(shadow["doc_id"].to_pylist(), shadow["labels"].to_pylist())
    ]
    return sequences.append_column("case_labels", pa.array(case_labels, pa.list_(pa.int8()))), counts


def write_dataset(
    folder,
    segments: pa.Table,
    tokenizer,
    options: SequenceOptions = SequenceOptions(),
    parts: int = 1,
    row_group_size: int = 256,
    tokenizer_name: str = "train",
    label_set: LabelSet = PAPERS,
):
    """A dataset folder as the dataset stages write it, its labels ids of ``label_set``:
    ``sequences.parquet/`` (its manifest records ``options`` and ``tokenizer_name``, the params value
    the tokenizer came from) and
    ``oversampled.parquet/`` (``parts`` part files each, split by document), ``tokenizer/``.  For tests
    and benchmarks: small row groups by default, so that tests exercise windows over several row
    groups and files."""
    import pyarrow.parquet as pq

    from pipeline.datasets.pretrained import save_tokenizer
    from pipeline.engine import writing

    folder = Path(folder)
    docs = sorted(set(segments["doc_id"].to_pylist()))
    shard_of = {d: i * parts // max(len(docs), 1) for i, d in enumerate(docs)}
    shard = pa.array([shard_of[d] for d in segments["doc_id"].to_pylist()], pa.int32())
    for name in ("sequences.parquet", "oversampled.parquet"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    for part in range(parts):
        piece = segments.filter(pc.equal(shard, part))
        sequences, _ = sequences_with_case(piece, tokenizer, **options.as_dict(), label_set=label_set)
        pq.write_table(
            sequences, folder / "sequences.parquet" / f"part-{part:05d}.parquet", row_group_size=row_group_size
        )
        pq.write_table(
            piece, folder / "oversampled.parquet" / f"part-{part:05d}.parquet", row_group_size=2 * row_group_size
        )
    save_tokenizer(tokenizer, folder / "tokenizer")
    record = {"tokenizer": tokenizer_name, **options.as_dict()}
    writing.write_manifest(folder / "sequences.parquet", {"kind": "sequences", "sequences": record})
    return folder


# ---------------------------------------------------------------------------------------------
# reading


def split_tables(files, split: str, columns=None, rows: int = 4096):
    """The rows of one split, as tables of up to ``rows`` rows, streamed (never a whole file)."""
    for file in files:
        handle = reading.open_parquet(file)
        names = handle.schema_arrow.names
        wanted = [c for c in (columns or names) if c in names]
        read = wanted if "split" in wanted else [*wanted, "split"]
        for batch in handle.iter_batches(columns=read, batch_size=rows):
            table = pa.Table.from_batches([batch])
            table = table.filter(pc.equal(table["split"], split))
            if table.num_rows:
                yield table.select(wanted)


def has_column(files, name: str) -> bool:
    return all(name in reading.open_parquet(f).schema_arrow.names for f in files)


@dataclass
class RowIndex:
    """The train rows of some Parquet files: where each lives, its language and (sequences) its length."""

    files: list[str]
    groups: list[tuple[int, int]]  # (file, row group) of each group id
    group: np.ndarray  # group id of each row
    row: np.ndarray  # row within its row group
    key: np.ndarray  # a stable id of the row in the files (for per-row seeds)
    lang: np.ndarray  # language code id of each row
    langs: list[str]
    length: np.ndarray | None = None
    total_rows: int = 0

    def __len__(self) -> int:
        return len(self.row)


def index_rows(files, split: str = "train", lengths: bool = False) -> RowIndex:
    """Index the ``split`` rows of ``files`` one row group at a time (lengths from ``labels``, one
    per token in every version of the sequences' layout)."""
    files = [str(f) for f in files]
    groups, group, row, key, lang, length = [], [], [], [], [], []
    langs: dict[str, int] = {}
    offset = 0
    for f, file in enumerate(files):
        handle = reading.open_parquet(file)
        columns = ["split", "lang"] + (["labels"] if lengths else [])
        missing = [c for c in columns if c not in handle.schema_arrow.names]
        if missing:
            raise errors.InputError(f"{file}: no column {', '.join(missing)}")
        for g in range(handle.num_row_groups):
            table = handle.read_row_group(g, columns=columns)
            keep = np.flatnonzero(pc.equal(table["split"], split).to_numpy(zero_copy_only=False).astype(bool))
            if len(keep):
                groups.append((f, g))
                group.append(np.full(len(keep), len(groups) - 1, dtype=np.int32))
                row.append(keep.astype(np.int32))
                key.append(keep.astype(np.int64) + offset)
                codes = [langs.setdefault(x, len(langs)) for x in table["lang"].take(pa.array(keep)).to_pylist()]
                lang.append(np.array(codes, dtype=np.int16))
                if lengths:
                    n = pc.list_value_length(table["labels"].take(pa.array(keep)))
                    length.append(n.to_numpy(zero_copy_only=False).astype(np.int32))
            offset += table.num_rows

    def cat(parts, dtype):
        return np.concatenate(parts) if parts else np.zeros(0, dtype=dtype)

    return RowIndex(
        files=files,
        groups=groups,
        group=cat(group, np.int32),
        row=cat(row, np.int32),
        key=cat(key, np.int64),
        lang=cat(lang, np.int16),
        langs=list(langs),
        length=cat(length, np.int32) if lengths else None,
        total_rows=offset,
    )


# ---------------------------------------------------------------------------------------------
# the epoch's plan


def mixing_counts(langs, mixing, epoch: int, seed: int) -> np.ndarray:
    """How often each row is drawn this epoch (Guerreiro 2021, Rao 2022): language l gets a share
    proportional to n_l^(1/T) (``temperature`` T) or to ``ratios[l]``; the epoch keeps the number of
    rows, and a language's rows are drawn with replacement when it needs more than it has."""
    langs = np.asarray(langs)
    if not mixing:
        return np.ones(len(langs), dtype=np.int64)
    if hasattr(mixing, "model_dump"):
        mixing = mixing.model_dump(exclude_none=True)
    names, counts = np.unique(langs, return_counts=True)
    if mixing.get("ratios"):
        weights = np.array([float(mixing["ratios"].get(str(n), 0.0)) for n in names])
    else:
        weights = counts.astype(float) ** (1.0 / float(mixing.get("temperature", 1.0)))
    if weights.sum() <= 0:
        raise ParamsError(f"language mixing gives every language zero weight: {mixing}")
    share = weights / weights.sum()
    rng = np.random.default_rng([seed, epoch, 7])
    drawn = []
    for name, p in zip(names, share):
        pool = np.flatnonzero(langs == name)
        take = round(p * len(langs))
        drawn.append(rng.choice(pool, size=take, replace=take > len(pool)))
    return np.bincount(np.concatenate(drawn).astype(np.int64), minlength=len(langs))


@dataclass
class Window:
    """Rows of one row group read and batched together: ``rows`` within the group (repeats allowed),
    their seeds (``keys``) and, from a sequences index, their lengths."""

    position: int
    group: int
    rows: np.ndarray
    keys: np.ndarray
    lengths: np.ndarray | None = None


def plan_windows(index: RowIndex, epoch: int, seed: int, window: int, mixing=None) -> list[Window]:
    """This epoch's windows in their (seeded) order; the same on every process and worker."""
    repeats = None
    if mixing:
        repeats = mixing_counts(np.asarray(index.langs, dtype=object)[index.lang], mixing, epoch, seed)
    windows: list[Window] = []
    bounds = np.flatnonzero(np.diff(index.group)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(index.group)]):
        if hi <= lo:
            continue
        rows, keys = index.row[lo:hi], index.key[lo:hi]
        lengths = index.length[lo:hi] if index.length is not None else None
        if repeats is not None:
            times = repeats[lo:hi]
            rows, keys = np.repeat(rows, times), np.repeat(keys, times)
            lengths = np.repeat(lengths, times) if lengths is not None else None
            # a row drawn twice gets a different seed the second time
            first = np.repeat(np.cumsum(times) - times, times)
            keys = keys + (np.arange(len(keys)) - first) * index.total_rows
        for start in range(0, len(rows), window):
            cut = slice(start, start + window)
            windows.append(
                Window(0, int(index.group[lo]), rows[cut], keys[cut], lengths[cut] if lengths is not None else None)
            )
    order = np.random.default_rng([seed, epoch, 11]).permutation(len(windows))
    windows = [windows[i] for i in order]
    for position, w in enumerate(windows):
        w.position = position
    return windows


def round_up(n: int, multiple: int) -> int:
    return -(-n // multiple) * multiple


def global_batches(
    lengths: np.ndarray,
    rng: np.random.Generator,
    batch_size: int,
    max_tokens: int,
    world: int,
    pad_multiple: int = 1,
) -> list[np.ndarray]:
    """Row positions of each global batch (all processes together), in training order.

    ``max_tokens`` 0: random batches of ``batch_size * world`` rows.  Otherwise rows sorted by
    length (random among equals) and cut so that rows x padded width stays within
    ``max_tokens * world``; the batches come in random order."""
    n = len(lengths)
    order = rng.permutation(n)
    if not max_tokens:
        rows = batch_size * world
        return [order[i : i + rows] for i in range(0, n, rows)]
    order = order[np.argsort(lengths[order], kind="stable")]
    budget = max_tokens * world
    batches, start = [], 0
    for i in range(n):
        width = round_up(int(lengths[order[i]]), pad_multiple)
        if i > start and (i - start + 1) * width > budget:
            batches.append(order[start:i])
            start = i
    if start < n:
        batches.append(order[start:n])
    return [batches[i] for i in rng.permutation(len(batches))]


def pad_rows(column: pa.ChunkedArray | pa.Array, fill: int, width: int) -> np.ndarray:
    """A list<int> column as a (rows, width) int64 matrix padded with ``fill``."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    lengths = pc.list_value_length(column).to_numpy(zero_copy_only=False)
    values = column.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    out = np.full((len(lengths), width), fill, dtype=np.int64)
    rows = np.repeat(np.arange(len(lengths)), lengths)
    cols = np.arange(len(values)) - np.repeat(np.cumsum(lengths) - lengths, lengths)
    out[rows, cols] = values
    return out


def collate(table: pa.Table, pad_id: int, pad_multiple: int = 1, max_width: int | None = None) -> dict:
    """Padded tensors of some sequence rows: input_ids, attention_mask, labels (and case_labels)."""
    lengths = pc.list_value_length(table["input_ids"]).to_numpy(zero_copy_only=False)
    longest = int(lengths.max()) if len(lengths) else 1
    width = round_up(longest, pad_multiple)
    if max_width is not None:
        width = min(width, max(longest, max_width))  # never past the positions the model has
    ids = pad_rows(table["input_ids"], pad_id, width)
    batch = {
        "input_ids": torch.from_numpy(ids),
        "attention_mask": torch.from_numpy((np.arange(width)[None, :] < lengths[:, None]).astype(np.int64)),
        "labels": torch.from_numpy(pad_rows(table["labels"], IGNORE, width)),
    }
    if "case_labels" in table.column_names:
        batch["case_labels"] = torch.from_numpy(pad_rows(table["case_labels"], IGNORE, width))
    return batch


def _labelled(table: pa.Table, column: str) -> tuple[int, int]:
    """(labelled positions, rows with at least one) of a label column."""
    values = table[column].combine_chunks()
    flags = pc.not_equal(values.flatten(), IGNORE).to_numpy(zero_copy_only=False)
    lengths = pc.list_value_length(values).to_numpy(zero_copy_only=False).astype(np.int64)
    running = np.r_[0, np.cumsum(flags, dtype=np.int64)]
    ends = np.cumsum(lengths)
    per_row = running[ends] - running[ends - lengths]
    return int(running[-1]), int((per_row > 0).sum())


# ---------------------------------------------------------------------------------------------
# the epoch as an iterable dataset


@dataclass
class BatchSpec:
    """Everything a worker needs to turn windows into this process's batches."""

    batch_size: int
    max_tokens: int
    pad_id: int
    pad_multiple: int
    max_len: int
    seed: int
    case: bool
    label_set: LabelSet
    segments: bool = False  # windows hold segments to augment and tokenize (else sequences)
    tokenizer: object = None
    options: SequenceOptions = field(default_factory=SequenceOptions)
    augmentation: dict | None = None
    vocabulary: list[str] | None = None
    confusables: dict[str, list[str]] | None = None


class EpochBatches(torch.utils.data.IterableDataset):
    """One epoch of this process's batches; worker w of W handles windows w, w+W, ... in order, and
    the DataLoader's round robin over the workers gives the same order on every run."""

    def __init__(self, index: RowIndex, windows: list[Window], spec: BatchSpec, epoch: int, rank: int, world: int):
        super().__init__()
        self.index, self.windows, self.spec = index, windows, spec
        self.epoch, self.rank, self.world = epoch, rank, world
        self._cached: tuple[int, pa.Table] | None = None

    def _group(self, group: int) -> pa.Table:
        if self._cached is None or self._cached[0] != group:
            f, g = self.index.groups[group]
            handle = reading.open_parquet(self.index.files[f])
            wanted = SEGMENT_COLUMNS if self.spec.segments else BATCH_COLUMNS
            columns = [c for c in wanted if c in handle.schema_arrow.names]
            self._cached = (group, handle.read_row_group(g, columns=columns))
        return self._cached[1]

    def window_sequences(self, window: Window) -> tuple[pa.Table, Counter]:
        """The window's sequences (augmented and tokenized first when the windows hold segments)."""
        table = self._group(window.group).take(pa.array(window.rows))
        stats: Counter = Counter()
        if not self.spec.segments:
            return table, stats
        if self.spec.augmentation:
            table = augmented(
                table,
                self.spec.augmentation,
                self.epoch,
                self.spec.seed,
                self.spec.vocabulary,
                self.spec.confusables,
                counts=stats,
                indices=window.keys,
                label_set=self.spec.label_set,
            )
        if not self.spec.case and "case" in table.column_names:
            table = table.drop_columns(["case"])
        options = {**self.spec.options.as_dict(), "label_set": self.spec.label_set}
        sequences, _ = sequences_with_case(table, self.spec.tokenizer, **options)
        return sequences, stats

    def batches_of(self, window: Window):
        sequences, stats = self.window_sequences(window)
        if not sequences.num_rows:
            return
        lengths = pc.list_value_length(sequences["input_ids"]).to_numpy(zero_copy_only=False)
        rng = np.random.default_rng([self.spec.seed, self.epoch, window.position, 13])
        for n, rows in enumerate(
            global_batches(lengths, rng, self.spec.batch_size, self.spec.max_tokens, self.world, self.spec.pad_multiple)
        ):
            yield self._share(sequences, rows, lengths, stats if n == 0 else None)

    def _share(self, sequences: pa.Table, rows: np.ndarray, lengths: np.ndarray, stats) -> dict:
        whole = sequences.take(pa.array(rows))
        n_labels, n_rows = _labelled(whole, "labels")
        n_case = _labelled(whole, "case_labels")[0] if self.spec.case else 0
        # dealt by length, so every process gets about the same number of tokens
        ranked = rows[np.argsort(-lengths[rows], kind="stable")]
        mine = ranked[self.rank :: self.world]
        empty = len(mine) == 0
        part = sequences.take(pa.array(ranked[:1] if empty else mine))
        columns = ["input_ids", "labels"] + (["case_labels"] if self.spec.case else [])
        batch = collate(part.select(columns), self.spec.pad_id, self.spec.pad_multiple, self.spec.max_len)
        if empty:  # fewer rows than processes: a row that counts nothing keeps the processes in step
            batch["labels"].fill_(IGNORE)
            if "case_labels" in batch:
                batch["case_labels"].fill_(IGNORE)
        batch.update(
            n_labels=n_labels,
            n_rows=n_rows,
            n_case=n_case,
            tokens=0 if empty else int(lengths[mine].sum()),
            stats=dict(stats or {}),
        )
        return batch

    def __iter__(self):
        info = torch.utils.data.get_worker_info()
        worker, workers = (info.id, info.num_workers) if info else (0, 1)
        for i, window in enumerate(self.windows):
            if i % workers == worker:
                yield from self.batches_of(window)


def count_batches(index: RowIndex, spec: BatchSpec, epoch: int, window: int, world: int, mixing=None) -> int:
    """Global batches of an epoch of a sequences index (the step count the LR schedule is built for)."""
    total = 0
    for w in plan_windows(index, epoch, spec.seed, window, mixing):
        if spec.max_tokens:
            rng = np.random.default_rng([spec.seed, epoch, w.position, 13])
            total += len(global_batches(w.lengths, rng, spec.batch_size, spec.max_tokens, world, spec.pad_multiple))
        else:
            total += -(-len(w.rows) // (spec.batch_size * world))
    return total


def loader(dataset: EpochBatches, workers: int, pin_memory: bool, seed: int) -> torch.utils.data.DataLoader:
    """A DataLoader of ready batches: ``workers`` processes, pinned memory for non-blocking copies, and a
    generator of its own (it must not draw from the global one, which checkpoints restore)."""
    return torch.utils.data.DataLoader(
        dataset,
        batch_size=None,
        num_workers=workers,
        pin_memory=pin_memory,
        prefetch_factor=4 if workers else None,
        generator=torch.Generator().manual_seed(seed),
    )


def vocabulary_of(files, split: str = "train") -> list[str]:
    """The sorted distinct words of a split of segment files (3R's random substitution draws from it)."""
    words: set[str] = set()
    for table in split_tables(files, split, ["words"]):
        words.update(pc.unique(pc.list_flatten(table["words"])).to_pylist())
    return sorted(words)


def mixed_case_lexicon(files, split: str = "train") -> dict[str, str]:
    """lowercased word -> its most frequent surface form, over the mixed-case (M) words of a split
    (ties: the alphabetically first), from segment files with ``case`` and ``surface`` columns."""
    if not has_column(files, "surface"):
        return {}
    seen: dict[str, Counter] = {}
    for table in split_tables(files, split, ["words", "surface"]):
        flat = pc.list_flatten(table["surface"])
        present = pc.is_valid(flat)
        if not pc.any(present).as_py():
            continue
        words = pc.list_flatten(table["words"]).filter(present).to_pylist()
        for word, surface in zip(words, flat.filter(present).to_pylist()):
            seen.setdefault(word, Counter())[surface] += 1
    return {w: min(c.items(), key=lambda kv: (-kv[1], kv[0]))[0] for w, c in sorted(seen.items())}


@dataclass
class TrainingData:
    """A dataset folder's inputs to training (see the module doc)."""

    sequences: list[Path]
    segments: list[Path] | None
    tokenizer: object
    #: the dataset's label set (its sequences' manifest; the segments must have the same)
    label_set: LabelSet
    options: SequenceOptions = field(default_factory=SequenceOptions)
    confusables: dict[str, list[str]] | None = None
    #: the dataset folder, and the tokenizer its sequences were built with (``sequences.tokenizer``:
    #: ``train`` or a pretrained name or folder; None where the dataset does not record it)
    folder: Path | None = None
    tokenizer_source: str | None = None

    @classmethod
    def from_folder(
        cls, folder, options: SequenceOptions, confusables=None, tokenizer=None, tokenizer_source: str | None = None
    ) -> TrainingData:
        folder = Path(folder)
        if not folder.is_dir():
            raise errors.InputError(f"{folder}: dataset folder does not exist")
        # a missing tokenizer folder would be taken for a hub name (unless a tokenizer is given)
        for entry in ("sequences.parquet",) if tokenizer is not None else ("sequences.parquet", "tokenizer"):
            if not (folder / entry).exists():
                raise errors.InputError(f"{folder}: not a dataset folder of the sequences stage (no {entry})")
        if tokenizer is None:
            from transformers import AutoTokenizer

            try:
                tokenizer = AutoTokenizer.from_pretrained(str(folder / "tokenizer"))
            except (OSError, ValueError) as exc:
                raise errors.InputError(f"{folder / 'tokenizer'}: no readable tokenizer ({exc})") from None
        from pipeline.engine.dataset import labels_of

        segments = folder / "oversampled.parquet"
        sequences = folder / "sequences.parquet"
        return cls(
            sequences=checked_parts(sequences),
            segments=checked_parts(segments) if segments.exists() else None,
            tokenizer=tokenizer,
            options=options,
            confusables=confusables,
            label_set=labels_of([sequences, *([segments] if segments.exists() else [])]),
            folder=folder,
            tokenizer_source=tokenizer_source,
        )

    def has_case_labels(self) -> bool:
        return has_column(self.sequences, "case_labels")

    def split(self, name: str, rows: int = 4096):
        return split_tables(self.sequences, name, ["corpus", "lang", *BATCH_COLUMNS], rows)
