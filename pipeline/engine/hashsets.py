"""Exact distinct counts and set overlaps over a whole corpus, in memory bounded by the shard.

Vocabulary sizes, documents and segments found in several splits, duplicates across splits
and OOV rates need the whole corpus's sets, which do not fit in memory at scale.  Items are
reduced to 64-bit hashes (:func:`string_hashes`: among n distinct items the chance of any
collision is about n^2 / 2^65, 3 in 10,000 for 100 million) and exchanged through disk:

1. *map*: each shard writes, per group (``("seg", corpus, split)``...), its distinct hashes
   with their counts, all groups in one array sorted by hash, each record naming its group
   (:func:`write_groups`);
2. *reduce*: the hash space is cut into ranges small enough for one worker; for each range
   every shard's slice is read (binary search in a memory-mapped file) and
   the membership of each distinct hash in the groups of a *family* is found
   (:func:`reduce_range`): how many hashes are in exactly which groups, and their counts.

A family is a set of groups compared with each other (the splits of one corpus).  Sums over
ranges give the exact answers, whatever the number of shards, ranges or workers.
"""

from __future__ import annotations

import json
import mmap
import os
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pipeline.engine import location, reading, writing

#: hashes per reduce range: about 60 bytes each while a range is reduced (15 MB), so the reduce
#: stays well under a shard's own footprint at any corpus size
RANGE_TARGET = 250_000


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, vectorized: a bijection of 64-bit words that mixes every bit."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


#: simple tabulation hashing (Zobrist; Patrascu and Thorup 2012) over a string's first
#: TABULATED_BYTES bytes: a pseudo-random 64-bit word per (position, byte value), XORed over the
#: string.  Computed with array operations over an Arrow string buffer, where xxh3 needed a Python
#: call per string (a quarter of the audit's time); longer strings, rare among words and doc ids,
#: get xxh3.  Distinct strings collide with probability 2^-64, as for xxh3.
TABULATED_BYTES = 64
_TABLE = _splitmix64(np.arange(1, TABULATED_BYTES * 256 + 1, dtype=np.uint64) * _MIX)


def string_array_hashes(strings: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string of an Arrow string array (nulls hash as the empty string)."""
    if isinstance(strings, pa.ChunkedArray):
        strings = strings.combine_chunks()
    n = len(strings)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    if strings.null_count:
        strings = pc.fill_null(strings, "")
    if not (pa.types.is_string(strings.type) or pa.types.is_large_string(strings.type)):
        strings = strings.cast(pa.string())
    _, offsets_buffer, data_buffer = strings.buffers()
    width = np.int64 if pa.types.is_large_string(strings.type) else np.int32
    offsets = np.frombuffer(offsets_buffer, width)[strings.offset : strings.offset + n + 1].astype(np.int64)
    data = np.frombuffer(data_buffer or b"", dtype=np.uint8)[offsets[0] : offsets[-1]]
    starts = offsets[:-1] - offsets[0]
    lengths = np.diff(offsets)
    out = np.zeros(n, dtype=np.uint64)
    nonempty = lengths > 0
    if len(data):
        # each byte's position in its string: a running sum of ones, set back at each string's start
        first = starts[nonempty]
        step = np.ones(len(data), np.int32)
        step[first[1:]] = 1 - lengths[nonempty][:-1]
        step[0] = 0
        index = np.cumsum(step, dtype=np.int32)
        np.minimum(index, TABULATED_BYTES - 1, out=index)
        index <<= 8
        index |= data
        out[nonempty] = np.bitwise_xor.reduceat(_TABLE[index], first)
    with np.errstate(over="ignore"):
        out = _splitmix64(out ^ (lengths.astype(np.uint64) * _MIX))  # the empty string hashes too
    for i in np.flatnonzero(lengths > TABULATED_BYTES).tolist():
        out[i] = xxhash.xxh3_64_intdigest(data[starts[i] : starts[i] + lengths[i]].tobytes())
    return out


def hash_values(values: list[str]) -> np.ndarray:
    """The hash of each string of a Python list (:func:`string_array_hashes`)."""
    return string_array_hashes(pa.array(values, pa.string()))


def string_hashes(strings: pa.Array) -> np.ndarray:
    """The hash of each string (nulls hash as the empty string), hashing each distinct value once
    (a dictionary array: its dictionary)."""
    if len(strings) == 0:
        return np.zeros(0, dtype=np.uint64)
    strings = strings.combine_chunks() if isinstance(strings, pa.ChunkedArray) else strings
    encoded = strings if pa.types.is_dictionary(strings.type) else pc.dictionary_encode(strings)
    # the empty string's hash appended, for null indices
    table = string_array_hashes(pa.concat_arrays([encoded.dictionary.cast(pa.string()), pa.array([""])]))
    indices = encoded.indices.fill_null(len(table) - 1).to_numpy(zero_copy_only=False)
    return table[indices]


def list_hashes(lists: pa.ListArray, items: np.ndarray | None = None) -> np.ndarray:
    """One hash per list (an exact word sequence): a position-weighted mix of its items' hashes
    (``items``: those hashes, if the caller has them)."""
    if isinstance(lists, pa.ChunkedArray):
        lists = lists.combine_chunks()
    n = len(lists)
    if n == 0:
        return np.zeros(0, dtype=np.uint64)
    offsets = pc.subtract(lists.offsets, lists.offsets[0]).to_numpy(zero_copy_only=False).astype(np.int64)
    if items is None:
        items = string_hashes(pc.list_flatten(lists))
    lengths = np.diff(offsets)
    position = np.arange(len(items), dtype=np.int64) - np.repeat(offsets[:-1], lengths)
    with np.errstate(over="ignore"):
        weight = (position.astype(np.uint64) + np.uint64(1)) * _MIX
        mixed = items * (weight | np.uint64(1)) + weight
        out = np.zeros(n, dtype=np.uint64)
        nonempty = lengths > 0
        if len(items):
            sums = np.add.reduceat(mixed, offsets[:-1][nonempty])
            out[nonempty] = sums
        out += lengths.astype(np.uint64) * _MIX  # the length in, so [] and [""] differ
    return out


def distinct(hashes: np.ndarray, counts: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sorted distinct hashes and how often each occurs (``counts`` weights, else 1 each)."""
    if not len(hashes):
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    starts = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]
    weights = np.ones(len(hashes), np.int64) if counts is None else counts[order].astype(np.int64)
    return ordered[starts], np.add.reduceat(weights, starts)


#: a shard's hashes of all its groups, sorted by hash: a reduce range is one slice of it.  A
#: record names its group by :func:`key_id`, so a reduce reads no index of the shard's groups
RECORD = np.dtype([("hash", np.uint64), ("count", np.int64), ("key", np.uint64)])
#: on a URL, every FENCE-th record's hash is kept beside a shard's records (8 bytes per 4,096
#: records), so a range reads at most 2 x 4,096 records beyond its own
FENCE = 4096


def key_id(key: tuple) -> int:
    """A group key as 64 bits (xxh3 of its JSON): among a corpus's few hundred keys, no collision."""
    return xxhash.xxh3_64_intdigest(json.dumps(list(key)).encode())


def write_groups(folder: str | Path, shard: int, groups: dict[tuple, tuple[np.ndarray, np.ndarray]]) -> int:
    """A shard's groups (key -> (hashes, counts), hashes distinct and sorted) as one headerless
    file in ``folder`` of (hash, count, key id) records sorted by hash, so that a reduce range
    reads one slice per shard whatever the number of groups (a slice per group cost a
    millisecond a shard and range: 90 s of the audit at 100 M words); returns how many hashes
    were written."""
    location.make_folder(folder)
    ordered = sorted(groups.items())
    records = np.zeros(sum(len(h) for _, (h, _) in ordered), RECORD)
    if len(records):
        records["hash"] = np.concatenate([h for _, (h, _) in ordered])
        records["count"] = np.concatenate([c for _, (_, c) in ordered])
        ids = np.array([key_id(key) for key, _ in ordered], np.uint64)
        records["key"] = np.repeat(ids, [len(h) for _, (h, _) in ordered])
        records = records[np.argsort(records["hash"], kind="stable")]
    path = location.join(folder, f"{shard:05d}.bin")
    if location.is_url(path):
        # no mapping on an object store: every FENCE-th hash, so a range reads one slice of records
        writing.write_bytes_in_place(records, path)
        writing.write_bytes_in_place(
            np.ascontiguousarray(records["hash"][::FENCE]), location.join(folder, f"{shard:05d}.fence")
        )
    else:
        try:
            records.tofile(path)  # headerless: np.load parses a header for every shard and range
        except OSError as exc:
            raise writing.write_failed(exc, path) from None
    return len(records)


def _url_slice(folder: str, shard: int, lo: int, hi: int) -> np.ndarray | None:
    """The shard's records with hashes in [lo, hi), read from a URL: the fence brackets them."""
    fence_path = location.join(folder, f"{shard:05d}.fence")
    if not location.exists(fence_path):
        return None
    fence = reading.read_array(fence_path, np.uint64)
    if not len(fence):
        return None
    # fence[i - 1] < lo <= fence[i]: no record before (i - 1) * FENCE is in the range, nor any from
    # j * FENCE on, where fence[j - 1] <= hi - 1 < fence[j]
    i = int(np.searchsorted(fence, np.uint64(lo), "left"))
    j = int(np.searchsorted(fence, np.uint64(hi - 1), "right")) if hi < 2**64 else len(fence)
    first = max(i - 1, 0) * FENCE
    stop = j * FENCE * RECORD.itemsize if j < len(fence) else None
    records = np.frombuffer(
        reading.read_range(location.join(folder, f"{shard:05d}.bin"), first * RECORD.itemsize, stop), RECORD
    )
    a = int(np.searchsorted(records["hash"], np.uint64(lo), "left"))
    b = int(np.searchsorted(records["hash"], np.uint64(hi - 1), "right")) if hi < 2**64 else len(records)
    return records[a:b] if b > a else None


def ranges(total_hashes: int) -> list[tuple[int, int]]:
    """Hash ranges [lo, hi) of at most :data:`RANGE_TARGET` hashes each, about (hashes are uniform)."""
    n = max(1, -(-total_hashes // RANGE_TARGET))
    return [(i * 2**64 // n, (i + 1) * 2**64 // n) for i in range(n)]


@dataclass
class Overlap:
    """Per family: distinct hashes by the set of groups they occur in (``masks``: bitmask over the
    family's members -> number of distinct hashes) and occurrences by (mask, member)."""

    masks: Counter
    occurrences: Counter

    def add(self, other: Overlap) -> Overlap:
        self.masks.update(other.masks)
        self.occurrences.update(other.occurrences)
        return self

    def distinct(self, member: int | None = None) -> int:
        """Distinct hashes in ``member`` (None: in any member)."""
        return sum(n for mask, n in self.masks.items() if member is None or mask >> member & 1)

    def shared(self) -> int:
        """Distinct hashes found in at least two members."""
        return sum(n for mask, n in self.masks.items() if bin(mask).count("1") > 1)


class ReduceRange:
    """Picklable reduce task: hash range -> {family: Overlap}, plus the hashes that satisfy ``collect``.

    ``families``: family name -> list of members, each a group key or a list of group keys (the
    member is their union: a hash is in it if it is in any of them, its occurrences summed); a
    group may be a member of several families, and a key absent in a shard is empty there.
    ``collect``: family name -> (required bit, forbidden-if-alone bit): hashes with the first bit and
    any other bit are returned (train segments also in dev or test)."""

    def __init__(self, folder, shards: list[int], families: dict[str, list[tuple]], collect=None):
        self.folder, self.shards, self.families = str(folder), shards, families
        self.collect = collect or {}

    def __call__(self, bounds: tuple[int, int]) -> tuple[dict[str, Overlap], dict[str, np.ndarray]]:
        lo, hi = bounds
        names = list(self.families)
        wanted = self._wanted(names)
        slices = self._slices(lo, hi)
        out = {name: Overlap(Counter(), Counter()) for name in names}
        collected: dict[str, np.ndarray] = {}
        if not slices or not len(wanted[0]):
            return out, collected
        part = np.concatenate(slices)
        slices.clear()
        runs = _family_runs(part, *wanted, len(names))
        del part
        if runs is None:
            return out, collected
        hashes, counts, family, member = runs
        new_run = np.r_[True, (hashes[1:] != hashes[:-1]) | (family[1:] != family[:-1])]
        starts = np.flatnonzero(new_run)
        masks = np.bitwise_or.reduceat(np.left_shift(np.int64(1), member), starts)
        run_family = family[starts]
        _tally(out, names, run_family, masks, starts, member, counts)
        for name, bit in self.collect.items():
            in_family = run_family == names.index(name)
            if in_family.any():
                chosen = in_family & (masks >> bit & 1).astype(bool) & (masks != (1 << bit))
                collected[name] = hashes[starts][chosen]
        return out, collected

    def _wanted(self, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The members' key ids, sorted, with the family and member of each (a key id appears once
        per member it is part of)."""
        wanted = sorted(
            (key_id(tuple(key)), f, m)
            for f, name in enumerate(names)
            for m, member in enumerate(self.families[name])
            for key in (member if isinstance(member, list) else [member])
        )
        return (
            np.array([k for k, _, _ in wanted], np.uint64),
            np.array([f for _, f, _ in wanted], np.int64),
            np.array([m for _, _, m in wanted], np.int64),
        )

    def _slices(self, lo: int, hi: int) -> list[np.ndarray]:
        """Each shard's records with a hash in [lo, hi) (a shard's file is sorted by hash)."""
        slices = []
        for shard in self.shards:
            if location.is_url(self.folder):
                if (found := _url_slice(self.folder, shard, lo, hi)) is not None:
                    slices.append(found)
                continue
            try:
                file = open(Path(self.folder) / f"{shard:05d}.bin", "rb")  # noqa: SIM115 (closed below)
            except FileNotFoundError:
                continue
            with file:
                if not os.fstat(file.fileno()).st_size:
                    continue
                with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
                    records = np.frombuffer(mapped, RECORD)
                    hashes = records["hash"]
                    a = int(np.searchsorted(hashes, np.uint64(lo), "left"))
                    b = int(np.searchsorted(hashes, np.uint64(hi - 1), "right")) if hi < 2**64 else len(records)
                    if b > a:
                        slices.append(np.array(records[a:b]))
                    del records, hashes  # no view left on the map when it closes
        return slices


def _family_runs(
    part: np.ndarray, wanted_ids: np.ndarray, wanted_family: np.ndarray, wanted_member: np.ndarray, n_families: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Each record once per member its group is part of (groups in no family are left out),
    ordered by family, then hash: a run is then one family's occurrences of one hash.  The hash
    order first (a stable sort merges the shards' sorted slices), then a stable sort on the family
    number (a radix sort for 16 bits).  Returns the hashes, counts, families and members (None: no
    record is in a family)."""
    keys = np.ascontiguousarray(part["key"])
    first = np.searchsorted(wanted_ids, keys, "left")
    n = np.searchsorted(wanted_ids, keys, "right") - first
    by_hash = np.argsort(part["hash"], kind="stable")
    n, first = n[by_hash], first[by_hash]
    record = np.repeat(by_hash, n)
    at = np.repeat(first - np.cumsum(n) + n, n) + np.arange(len(record))
    if not len(record):
        return None
    family = wanted_family[at]
    by_family = np.argsort(family.astype(np.int16 if n_families < 2**15 else np.int64), kind="stable")
    record, at = record[by_family], at[by_family]
    return part["hash"][record], part["count"][record], wanted_family[at], wanted_member[at]


def _tally(
    out: dict[str, Overlap],
    names: list[str],
    run_family: np.ndarray,
    masks: np.ndarray,
    starts: np.ndarray,
    member: np.ndarray,
    counts: np.ndarray,
) -> None:
    """The runs (one family's occurrences of one hash, starting at ``starts``, whose members make
    ``masks``) counted into ``out``: distinct hashes per (family, mask), occurrences per member."""
    # the distinct (family, mask) pairs, numbered in that order, with their runs (hashes)
    by_pair = np.lexsort((masks, run_family))
    pair_family, pair_mask = run_family[by_pair], masks[by_pair]
    new_pair = np.r_[True, (pair_family[1:] != pair_family[:-1]) | (pair_mask[1:] != pair_mask[:-1])]
    pair_starts = np.flatnonzero(new_pair)
    pair_runs = np.diff(np.r_[pair_starts, len(by_pair)])
    pair_of_run = np.empty(len(masks), np.int64)
    pair_of_run[by_pair] = np.cumsum(new_pair) - 1
    pair_family, pair_mask = pair_family[pair_starts].tolist(), pair_mask[pair_starts].tolist()
    for f, mask, runs in zip(pair_family, pair_mask, pair_runs.tolist()):
        out[names[f]].masks[mask] = runs
    # occurrences per (family, mask, member): a bincount over (the pair's number, member)
    cell = np.repeat(pair_of_run, np.diff(np.r_[starts, len(member)])) * 64 + member
    sums = np.bincount(cell, weights=counts.astype(np.float64), minlength=len(pair_family) * 64)
    for code in np.flatnonzero(sums).tolist():
        pair = code // 64
        out[names[pair_family[pair]]].occurrences[(pair_mask[pair], code % 64)] += int(sums[code])


def reduce(
    runner, folder, shards: list[int], families: dict[str, list[tuple]], total_hashes: int, collect=None, label=None
):
    """All ranges reduced on ``runner`` (progress under ``label``): {family: Overlap} and {family:
    collected hashes (sorted)}."""
    task = ReduceRange(folder, shards, families, collect)
    overlaps: dict[str, Overlap] = {family: Overlap(Counter(), Counter()) for family in families}
    collected: dict[str, list] = {}
    for part, hashes in runner.each(task, ranges(total_hashes), label):
        for family, overlap in part.items():
            overlaps[family].add(overlap)
        for family, values in hashes.items():
            collected.setdefault(family, []).append(values)
    return overlaps, {f: np.sort(np.concatenate(v)) for f, v in collected.items()}
