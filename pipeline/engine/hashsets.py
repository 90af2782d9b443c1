"""Exact distinct counts and set overlaps over a whole corpus, in memory bounded by the shard.

Vocabulary sizes, documents and segments found in several splits, duplicates across splits
and OOV rates need the whole corpus's sets, which do not fit in memory at scale.  Items are
reduced to 64-bit hashes (:func:`string_hashes`: among n distinct items the chance of any
collision is about n^2 / 2^65, 3 in 10,000 for 100 million) and exchanged through disk:

1. *map*: each shard writes, per group (``("seg", corpus, split)``...), its distinct hashes
   with their counts, all groups in one array by hash prefix, each record naming its group
   (:func:`write_groups`);
2. *reduce*: the hash space is cut into ranges small enough for one worker; for each range
   every shard's slice is read (located by the file's header of hash prefixes) and
   the membership of each distinct hash in the groups of a *family* is found
   (:func:`reduce_range`): how many hashes are in exactly which groups, and their counts.

A family is a set of groups compared with each other (the splits of one corpus).  Sums over
ranges give the exact answers, whatever the number of shards, ranges or workers.
"""

from __future__ import annotations

import itertools
import json
import os
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import xxhash

from pipeline.engine import location, writing
from pipeline.engine.executor import runs_of
from pipeline.schema import flat_dictionary

#: hashes per reduce range: about 60 bytes each while a range is reduced (15 MB), so the reduce
#: stays well under a shard's own footprint at any corpus size
RANGE_TARGET = 250_000
#: consecutive ranges a reduce task takes together, reading each shard's records for all of them
#: at once, then reducing them one by one: a file opened and read per shard and range was a third
#: of a range's time, as each shard holds a few kilobytes of a range.  The same number at every
#: corpus size, so that a task's memory (its ranges' records read, one range's arrays) does not grow
#: (eight ranges took a sixth less time, but a split's worker 25 MB more at 100 M words)
RANGES_PER_TASK = 4


_MIX = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """splitmix64's finalizer, vectorized: a bijection of 64-bit words that mixes every bit."""
    with np.errstate(over="ignore"):
        x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return x ^ (x >> np.uint64(31))


def mixed64(values: np.ndarray, seed: int) -> np.ndarray:
    """64-bit hashes of unsigned integers under ``seed``: each value, offset by the seed, through
    splitmix64's step and finalizer (a bijection for a given seed)."""
    with np.errstate(over="ignore"):
        start = np.uint64(seed & (2**64 - 1))
        return _splitmix64(start + (values.astype(np.uint64) + np.uint64(1)) * _MIX)


#: the multiplier that makes a chunk's hash depend on where it lies in its string
_PLACE = np.uint64(0xD6E8FEB86659FD93)
_ALL_BITS = np.uint64(2**64 - 1)


def string_array_hashes(strings: pa.Array) -> np.ndarray:
    """A 64-bit hash of each string of an Arrow string array (nulls hash as the empty string).

    A string of L bytes is read as ceil(L / 8) little-endian 64-bit chunks, the last one
    zero-padded; chunk k is mixed with the bytes left from it on (L - 8k) by splitmix64's
    finalizer, the mixes are summed, and the sum is mixed with L.  Computed with array operations
    over the Arrow buffers, a few per chunk, at any length (per-byte tabulation made one table
    lookup per byte; xxh3 needed a Python call per string).  Distinct strings collide with
    probability about 2^-64."""
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
    first_byte = int(offsets[0])
    offsets -= first_byte
    lengths = np.diff(offsets)
    size = int(offsets[-1])
    # the bytes with eight zeros after them, read as a 64-bit word at any byte: no read leaves the buffer
    padded = np.zeros(size + 8, np.uint8)
    if size:
        padded[:size] = np.frombuffer(data_buffer, np.uint8, count=size, offset=first_byte)
    word_at = np.ndarray((size + 1,), dtype="<u8", buffer=padded, strides=(1,))
    chunks = (lengths + 7) >> 3
    ends = np.cumsum(chunks)
    firsts = ends - chunks
    at = np.arange(int(ends[-1]), dtype=np.int64) << 3
    # per chunk, from one repeat: its string's start and length, each less its chunks before it
    per_string = np.repeat(np.stack([offsets[:-1] - (firsts << 3), lengths + (firsts << 3)], 1), chunks, axis=0)
    values = word_at[per_string[:, 0] + at]
    left = per_string[:, 1] - at  # the string's bytes from the chunk's start on
    values &= _ALL_BITS >> (np.maximum(8 - left, 0).astype(np.uint64) << np.uint64(3))
    out = np.zeros(n, dtype=np.uint64)
    with np.errstate(over="ignore"):
        values ^= left.astype(np.uint64) * _PLACE
        sums = np.cumsum(_splitmix64(values), dtype=np.uint64)  # wraps: a sum modulo 2^64
        nonempty = chunks > 0
        out[nonempty] = sums[ends[nonempty] - 1]
        later = nonempty & (firsts > 0)
        out[later] -= sums[firsts[later] - 1]
        return _splitmix64(out ^ (lengths.astype(np.uint64) * _MIX))  # the empty string hashes too


class WordCodes(NamedTuple):
    """The items of a list column of words as codes into its distinct values, with the values'
    hashes (:func:`string_array_hashes`): what the steps that share a shard's read (the sequences'
    packing and its audit) each needed, computed once."""

    codes: np.ndarray
    values: pa.Array
    hashes: np.ndarray


def word_codes(column) -> WordCodes:
    """``column``'s :class:`WordCodes`."""
    codes, values = flat_dictionary(column)
    return WordCodes(codes, values, string_array_hashes(values))


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
    if counts is None:  # a sort of the values alone, faster than an argsort
        values, n = np.unique(hashes, return_counts=True)
        return values, n.astype(np.int64, copy=False)
    order = np.argsort(hashes, kind="stable")
    ordered = hashes[order]
    starts = np.r_[0, np.flatnonzero(ordered[1:] != ordered[:-1]) + 1]
    return ordered[starts], np.add.reduceat(counts[order].astype(np.int64), starts)


#: a shard's hashes of all its groups, by bucket of hash prefixes: a reduce range is one slice of
#: it.  A record names its group by :func:`key_id`, so a reduce reads no index of the shard's groups
RECORD = np.dtype([("hash", np.uint64), ("count", np.int64), ("key", np.uint64)])
#: a shard's file starts with where the records of each hash prefix of BUCKET_BITS bits begin
#: (BUCKETS + 1 record numbers, uint32): a range reads the few it spans, then its records, two
#: reads of a few kilobytes, where opening, mapping and searching the whole file for each
#: (shard, range) pair made the reduce grow with their product (12 of 37 s of the audit at 100 M
#: words).  Ranges start and end on bucket bounds while there are no more ranges than buckets
BUCKET_BITS = 12
BUCKETS = 1 << BUCKET_BITS
_SHIFT = 64 - BUCKET_BITS
_OFFSET = np.dtype("<u4")
HEADER = (BUCKETS + 1) * _OFFSET.itemsize


def key_id(key: tuple) -> int:
    """A group key as 64 bits (xxh3 of its JSON): among a corpus's few hundred keys, no collision."""
    return xxhash.xxh3_64_intdigest(json.dumps(list(key)).encode())


def write_groups(folder: str | Path, shard: int, groups: dict[tuple, tuple[np.ndarray, np.ndarray]]) -> int:
    """A shard's groups (key -> (hashes, counts), hashes distinct) as one file in ``folder``: the
    bucket header (:data:`BUCKET_BITS`), then (hash, count, key id) records bucket after bucket,
    so that a reduce range reads one slice per shard whatever the number of groups (a slice per
    group cost a millisecond a shard and range: 90 s of the audit at 100 M words); returns how
    many hashes were written."""
    location.make_folder(folder)
    ordered = sorted(groups.items())
    sizes = [len(h) for _, (h, _) in ordered]
    records = np.empty(sum(sizes), RECORD)
    if len(records) > np.iinfo(_OFFSET).max:
        raise OverflowError(f"shard {shard}: {len(records)} hashes, more than a header's record numbers hold")
    hashes = np.concatenate([h for _, (h, _) in ordered]) if ordered else np.zeros(0, np.uint64)
    bucket = (hashes >> np.uint64(_SHIFT)).astype(np.uint16)
    # a bucket's records in any order (a range sorts what it reads): a radix sort on the bucket
    order = np.argsort(bucket, kind="stable")
    records["hash"] = hashes[order]
    if len(records):
        records["count"] = np.concatenate([c for _, (_, c) in ordered])[order]
        ids = np.array([key_id(key) for key, _ in ordered], np.uint64)
        records["key"] = np.repeat(ids, sizes)[order]
    header = np.zeros(BUCKETS + 1, _OFFSET)
    np.cumsum(np.bincount(bucket, minlength=BUCKETS), out=header[1:])
    path = location.join(folder, f"{shard:05d}.bin")
    if location.is_url(path):
        writing.write_bytes_in_place(header.tobytes() + records.tobytes(), path)
    else:
        try:
            with open(path, "wb") as sink:
                sink.write(header)
                sink.write(records)
        except OSError as exc:
            raise writing.write_failed(exc, path) from None
    return len(records)


def _shard_slices(path: str, bounds: list[tuple[int, int]], url: bool) -> list:
    """For each hash range [lo, hi) of ``bounds`` (consecutive, increasing), the records of the
    shard file ``path`` in the header's buckets that hold its hashes (the first and last may hold
    some beyond it): one read of the header's part and one of the records, for all the ranges;
    nothing if there is no file."""
    first, last = bounds[0][0] >> _SHIFT, (bounds[-1][1] - 1) >> _SHIFT
    at, size = first * _OFFSET.itemsize, (last - first + 2) * _OFFSET.itemsize
    if url:
        fs, inner = location.url_fs(path)
        try:
            head = np.frombuffer(fs.cat_file(inner, at, at + size), _OFFSET).tolist()
        except FileNotFoundError:
            return [b""] * len(bounds)
        start, stop = head[0], head[-1]
        data = fs.cat_file(inner, HEADER + start * RECORD.itemsize, HEADER + stop * RECORD.itemsize)
    else:
        try:
            fd = os.open(path, os.O_RDONLY)
        except FileNotFoundError:
            return [b""] * len(bounds)
        try:
            head = np.frombuffer(os.pread(fd, size, at), _OFFSET).tolist()  # Python ints: a few looked up
            start, stop = head[0], head[-1]
            data = os.pread(fd, (stop - start) * RECORD.itemsize, HEADER + start * RECORD.itemsize)
        finally:
            os.close(fd)
    view, width = memoryview(data), RECORD.itemsize
    # each range's buckets: where their records begin and end in ``data``
    return [
        view[(head[(lo >> _SHIFT) - first] - start) * width : (head[((hi - 1) >> _SHIFT) - first + 1] - start) * width]
        for lo, hi in bounds
    ]


def ranges(total_hashes: int) -> list[tuple[int, int]]:
    """Hash ranges [lo, hi) of at most :data:`RANGE_TARGET` hashes each, about (hashes are uniform)."""
    n = max(1, -(-total_hashes // RANGE_TARGET))
    if n <= BUCKETS:  # on bucket bounds: a range reads its shards' buckets whole
        cuts = [(i * BUCKETS // n) << _SHIFT for i in range(n)] + [2**64]
    else:
        cuts = [i * 2**64 // n for i in range(n + 1)]
    return list(itertools.pairwise(cuts))


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
    """Picklable reduce task: consecutive hash ranges -> for each, {family: Overlap} and the hashes
    that satisfy ``collect``.

    ``families``: family name -> list of members, each a group key or a list of group keys (the
    member is their union: a hash is in it if it is in any of them, its occurrences summed); a
    group may be a member of several families, and a key absent in a shard is empty there.
    ``collect``: family name -> (required bit, forbidden-if-alone bit): hashes with the first bit and
    any other bit are returned (train segments also in dev or test)."""

    def __init__(self, folder, shards: list[int], families: dict[str, list[tuple]], collect=None):
        self.folder, self.shards, self.families = str(folder), shards, families
        self.collect = collect or {}
        self.paths = [str(location.join(folder, f"{shard:05d}.bin")) for shard in shards]
        #: the families made from other families' runs (:func:`_union_plans`)
        self.unions = _union_plans(families)

    def __call__(self, group: tuple[tuple[int, int], ...]) -> list[tuple[dict[str, Overlap], dict[str, np.ndarray]]]:
        """Each range of ``group`` (consecutive ranges) reduced, its shards' records read together."""
        names = list(self.families)
        wanted = self._wanted(names)
        if not len(wanted[0]):
            return [({name: Overlap(Counter(), Counter()) for name in names}, {}) for _ in group]
        return [self._reduce(bounds, part, names, wanted) for bounds, part in zip(group, self._records(list(group)))]

    def _reduce(self, bounds, part: np.ndarray, names: list[str], wanted) -> tuple[dict[str, Overlap], dict]:
        out = {name: Overlap(Counter(), Counter()) for name in names}
        collected: dict[str, np.ndarray] = {}
        if not len(part):
            return out, collected
        runs = _family_runs(part, bounds, *wanted, len(names))
        del part
        if runs is None:
            return out, collected
        hashes, counts, member, starts, run_family = runs
        masks = _run_masks(member, starts)
        _tally(out, names, run_family, masks, starts, member, counts)
        self._collect(collected, names, run_family, masks, hashes[starts])
        for f, (bases, table) in self.unions.items():
            union = _union_runs(f, bases, table, counts, member, starts, run_family, hashes)
            if union is not None:
                u_family, u_masks, u_starts, u_member, u_counts, u_hashes = union
                _tally(out, names, u_family, u_masks, u_starts, u_member, u_counts)
                self._collect(collected, names, u_family, u_masks, u_hashes)
        return out, collected

    def _collect(self, collected: dict, names: list[str], run_family, masks, run_hashes) -> None:
        """The hashes of the runs that ``collect`` asks for (runs of several families at once)."""
        for name, bit in self.collect.items():
            in_family = run_family == names.index(name)
            if in_family.any():
                chosen = in_family & (masks >> bit & 1).astype(bool) & (masks != (1 << bit))
                collected[name] = run_hashes[chosen]

    def _wanted(self, names: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The members' key ids, sorted, with the family and member of each (a key id appears once
        per member it is part of)."""
        wanted = sorted(
            (key_id(tuple(key)), f, m)
            for f, name in enumerate(names)
            if f not in self.unions  # made from their groups' own families' runs
            for m, member in enumerate(self.families[name])
            for key in (member if isinstance(member, list) else [member])
        )
        return (
            np.array([k for k, _, _ in wanted], np.uint64),
            np.array([f for _, f, _ in wanted], np.int64),
            np.array([m for _, _, m in wanted], np.int64),
        )

    def _records(self, group: list[tuple[int, int]]) -> Iterator[np.ndarray]:
        """For each range [lo, hi) of ``group`` in turn, every shard's records with a hash in it,
        shard after shard (a range's array made when it is reduced)."""
        url = location.is_url(self.folder)
        slices = [_shard_slices(path, group, url) for path in self.paths]
        for k, (lo, hi) in enumerate(group):
            records = np.frombuffer(b"".join([shard[k] for shard in slices]), RECORD)
            if (lo | hi) & ((1 << _SHIFT) - 1):  # bounds inside buckets: their hashes beyond the range out
                hashes = records["hash"]
                records = records[(hashes >= np.uint64(lo)) & (hashes <= np.uint64(hi - 1))]
            yield records


def _run_masks(member: np.ndarray, starts: np.ndarray) -> np.ndarray:
    """Each run's members as a bit mask (``member``: each record's; ``starts``: where runs begin)."""
    return np.bitwise_or.reduceat(np.left_shift(np.int64(1), member), starts)


def _union_plans(families: dict[str, list]) -> dict[int, tuple[list[int], np.ndarray]]:
    """The families whose members are unions of other families' members (the sequences report's
    pooled view: a (split, lang) member is that pair's group of every corpus, and each corpus's
    groups are a family of their own).  Such a family is formed from those families' runs: their
    runs of one hash are its run, their members its member's.  Its records are then neither
    repeated for it nor sorted again with the others (half of the audit's reduce was the pooled
    view's).

    A family qualifies when each of its groups is a member, alone, of exactly one family that
    has no unions itself, and the members of those families are all in it, each in one member.
    Returns, by family number: the numbers of those families, and a table (family, member) -> its
    member (-1: none)."""
    names = list(families)
    plain = [all(not isinstance(m, list) for m in families[name]) for name in names]
    alone: dict[tuple, list[tuple[int, int]]] = {}  # a group key -> where it is a member alone
    for f, name in enumerate(names):
        if plain[f]:
            for m, member in enumerate(families[name]):
                alone.setdefault(tuple(member), []).append((f, m))
    plans = {}
    for f, name in enumerate(names):
        plan = None if plain[f] else _union_plan(families, names, families[name], alone)
        if plan is not None:
            plans[f] = plan
    return plans


def _union_plan(families: dict[str, list], names: list[str], members: list, alone: dict):
    """:func:`_union_plans` for one family of ``members``: its bases and table, or None."""
    mapping: dict[tuple[int, int], int] = {}  # (base family, its member) -> the union's member
    for u, member in enumerate(members):
        for key in member if isinstance(member, list) else [member]:
            places = alone.get(tuple(key), [])
            if len(places) != 1 or places[0] in mapping:  # in no plain family, in two, or twice here
                return None
            mapping[places[0]] = u
    bases = sorted({b for b, _ in mapping})
    if not bases or any((b, m) not in mapping for b in bases for m in range(len(families[names[b]]))):
        return None  # a base family's member in none of the union's: its records would count in none
    table = np.full((len(names), max(len(families[names[b]]) for b in bases)), -1, np.int64)
    for (b, m), u in mapping.items():
        table[b, m] = u
    return bases, table


def _union_runs(f: int, bases: list[int], table: np.ndarray, counts, member, starts, run_family, hashes):
    """Family ``f``'s runs, formed from its ``bases``' runs (:func:`_union_plans`): those runs
    ordered by hash (a stable sort of runs already sorted by hash within each family), each
    hash's runs made one.  Returns, as :func:`_tally` takes them, its runs' family, masks and
    starts, its records' members and counts, and its runs' hashes; None where the bases have no
    run."""
    run_end = np.r_[starts[1:], len(member)]
    chosen = np.flatnonzero(np.isin(run_family, bases))
    if not len(chosen):
        return None
    run_hashes = hashes[starts[chosen]]
    order = np.argsort(run_hashes, kind="stable")
    chosen, run_hashes = chosen[order], run_hashes[order]
    lengths = run_end[chosen] - starts[chosen]
    before = np.cumsum(lengths) - lengths  # where each run's records begin in the union's order
    records = np.repeat(starts[chosen] - before, lengths) + np.arange(int(lengths.sum()))
    u_member = table[np.repeat(run_family[chosen], lengths), member[records]]
    new_hash = np.r_[True, run_hashes[1:] != run_hashes[:-1]]
    u_starts = before[new_hash]
    u_masks = _run_masks(u_member, u_starts)
    u_family = np.full(len(u_starts), f, np.int64)
    return u_family, u_masks, u_starts, u_member, counts[records], run_hashes[new_hash]


def _family_runs(
    part: np.ndarray,
    bounds: tuple[int, int],
    wanted_ids: np.ndarray,
    wanted_family: np.ndarray,
    wanted_member: np.ndarray,
    n_families: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """Each record once per member its group is part of (groups in no family are left out),
    ordered by family, then hash (:func:`_family_order`): a run is then one family's occurrences
    of one hash.  Returns the hashes, counts and members, where each run starts and its family
    (None: no record is in a family)."""
    first, n = _key_entries(wanted_ids, part["key"])
    if n.max() <= 1:  # each group in one member at most: a record once or not at all
        record = np.flatnonzero(n)
        at = first[record]
        whole = len(record) == len(part)
    else:
        record = np.repeat(np.arange(len(part)), n)
        at = np.repeat(first - np.cumsum(n) + n, n) + np.arange(len(record))
        whole = False
    if not len(record):
        return None
    hashes = np.ascontiguousarray(part["hash"]) if whole else part["hash"][record]
    order, hashes, new_run = _family_order(hashes, wanted_family[at], bounds, n_families)
    counts = part["count"][order if whole else record[order]]
    at = at[order]
    starts = np.flatnonzero(new_run)
    return hashes, counts, wanted_member[at], starts, wanted_family[at[starts]]


#: the largest table :func:`_key_entries` looks key ids up in (above it, a binary search)
_LOOKUP_BITS = 16


def _key_entries(wanted_ids: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For each record's key id: where its entries start in the sorted ``wanted_ids`` and how many
    there are (0: the group is in no family).  A table indexed by the ids' low bits, the fewest
    that tell the wanted ids apart: a binary search per record cost as much as the sort."""
    unique, first, n = np.unique(wanted_ids, return_index=True, return_counts=True)
    for bits in range(max(1, (2 * len(unique)).bit_length()), _LOOKUP_BITS + 1):
        mask = np.uint64((1 << bits) - 1)
        slots = (unique & mask).astype(np.intp)
        if len(np.unique(slots)) < len(slots):
            continue
        # an empty slot holds an id whose low bits are not its own: no key id matches it
        table = (np.arange(1, (1 << bits) + 1, dtype=np.uint64)) & mask
        table[slots] = unique
        table_first, table_n = np.zeros(1 << bits, np.int64), np.zeros(1 << bits, np.int64)
        table_first[slots], table_n[slots] = first, n
        at = (keys & mask).astype(np.intp)
        return table_first[at], np.where(table[at] == keys, table_n[at], 0)
    keys = np.ascontiguousarray(keys)
    start = np.searchsorted(wanted_ids, keys, "left")
    return start, np.searchsorted(wanted_ids, keys, "right") - start


#: the fewest hash bits :func:`_family_order` keeps in its sort keys (below it, an exact sort)
KEPT_BITS = 24


def _family_order(
    hashes: np.ndarray, family: np.ndarray, bounds: tuple[int, int], n_families: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The order of the records by family, then hash, the hashes so ordered, and where a new
    (family, hash) run starts.  One sort of 64-bit words (a vectorized sort of values, a third of
    an argsort's time) made of the family, the hash's top bits within the range and the record's
    number (which gives the order back); where two different hashes of a family share their top
    bits (about one range in 200), an exact sort of the range instead."""
    lo, hi = bounds
    n = len(hashes)
    family_bits = max(1, (n_families - 1).bit_length())
    index_bits = max(1, (n - 1).bit_length())
    kept = 64 - family_bits - index_bits
    if kept >= KEPT_BITS:
        shift = np.uint64(max(0, (hi - lo - 1).bit_length() - kept))
        keys = family.astype(np.uint64) << np.uint64(kept + index_bits)
        keys |= ((hashes - np.uint64(lo)) >> shift) << np.uint64(index_bits)
        keys |= np.arange(n, dtype=np.uint64)
        keys.sort()
        order = (keys & np.uint64((1 << index_bits) - 1)).astype(np.intp)
        keys >>= np.uint64(index_bits)
        ordered = hashes[order]
        same = keys[1:] == keys[:-1]
        if not (same & (ordered[1:] != ordered[:-1])).any():
            return order, ordered, np.r_[True, ~same]
    order = np.lexsort((hashes, family))
    ordered, family = hashes[order], family[order]
    return order, ordered, np.r_[True, (ordered[1:] != ordered[:-1]) | (family[1:] != family[:-1])]


#: the largest table of (family, mask) pairs :func:`_tally` counts runs in (above it, a sort)
_DENSE_PAIRS = 1 << 20


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
    # the distinct (family, mask) pairs, numbered in that order, with their runs (hashes): counted
    # in a table of every (family, mask) where it is small (a family's members are few), else sorted
    width = int(masks.max()).bit_length()
    if masks.min() > 0 and len(names) << width <= _DENSE_PAIRS:
        code = run_family << width | masks
        pair_runs = np.bincount(code, minlength=len(names) << width)
        present = np.flatnonzero(pair_runs)
        number = np.zeros(len(pair_runs), np.int64)
        number[present] = np.arange(len(present))
        pair_of_run, pair_runs = number[code], pair_runs[present]
        pair_family, pair_mask = (present >> width).tolist(), (present & (1 << width) - 1).tolist()
    else:
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
    for results in runner.each(task, runs_of(ranges(total_hashes), RANGES_PER_TASK), label):
        for part, hashes in results:
            for family, overlap in part.items():
                overlaps[family].add(overlap)
            for family, values in hashes.items():
                collected.setdefault(family, []).append(values)
    return overlaps, {f: np.sort(np.concatenate(v)) for f, v in collected.items()}
