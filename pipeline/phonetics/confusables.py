"""Exact top-k phoneme-edit-distance neighbours of every word of a vocabulary (Zheng 2022, 3R).

For each word, the k other words whose phoneme sequences are closest by
Levenshtein distance, ties broken by (distance, word); homophones (distance 0)
are kept and flagged.  The result is identical to brute force, without its
quadratic cost:

1. Deletion neighbourhoods.  If two sequences are within edit distance r, deleting
   at most r symbols from each makes them equal.  Every sequence's variants with
   at most r deletions are hashed (numpy, vectorized per length); sequences that
   share a variant are candidate pairs, and candidates are verified with
   rapidfuzz's exact Levenshtein.  This finds *every* pair within distance r.
2. A word is settled once it has at least k verified neighbours within distance
   r: all words that can beat or tie its k-th neighbour are then known.  Radius r
   grows 0 to 4 for the words not yet settled.
3. The few words still unsettled (long, rare sequences) are compared with every
   word by rapidfuzz brute force, in blocks.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
from rapidfuzz import process
from rapidfuzz.distance import Levenshtein

from pipeline.engine.executor import resolve_workers, thread_map
from pipeline.errors import InputError, ParamsError

CONFUSABLES_SCHEMA = pa.schema(
    [
        pa.field("word", pa.string(), nullable=False),
        pa.field("phonemes", pa.string(), nullable=False),
        pa.field("neighbor", pa.string(), nullable=False),
        pa.field("neighbor_phonemes", pa.string(), nullable=False),
        pa.field("distance", pa.int16(), nullable=False),
        pa.field("rank", pa.int16(), nullable=False),
        pa.field("homophone", pa.bool_(), nullable=False),
    ],
    metadata={b"schema": b"punct-confusables/1"},
)

MAX_RADIUS = 4
MAX_VARIANTS = 20_000  # deletion variants per sequence at most (web2's longest, 20 phonemes at radius 4: 10,626)
PROBE = MAX_RADIUS + 2  # brute force first looks this many lengths away (the unsettled have k-th distance > MAX_RADIUS)
BLOCK = 256  # brute-force queries per rapidfuzz call (a uint8 matrix of BLOCK x vocabulary)
_BASE = np.uint64(0x100000001B3)
_ROW_BITS = np.uint64(24)  # rows share a 64-bit key with the top 40 bits of a variant hash


@dataclass
class Neighbours:
    """Top-k neighbours: ``index[i, j]`` is the j-th neighbour of word i (-1: none), ``distance`` likewise."""

    index: np.ndarray
    distance: np.ndarray
    stats: Counter


def encode(sequences: list[tuple[str, ...]]) -> tuple[list[str], dict[str, int]]:
    """Phoneme sequences as strings of one character per phoneme (what rapidfuzz compares)."""
    symbols = sorted({p for seq in sequences for p in seq})
    # code points below 256 when the inventory allows: rapidfuzz then matches characters through a
    # flat table instead of a hash map (1.7x faster on CMU phonemes); larger inventories (pinyin
    # syllables with tones) take CJK code points
    base = 0x21 if len(symbols) <= 0x100 - 0x21 else 0x4E00
    table = {p: chr(base + i) for i, p in enumerate(symbols)}
    return ["".join(table[p] for p in seq) for seq in sequences], table


def _variant_hashes(padded: np.ndarray, lengths: np.ndarray, radius: int, rows: np.ndarray):
    """Hashes of every variant with exactly ``radius`` deletions of the sequences ``rows``.

    A hash keeps only its top bits, so that it can share one sortable 64-bit key
    with a row number; collisions only add candidates, which are verified.
    """
    out_hash, out_row = [], []
    for length in np.unique(lengths[rows]).tolist():
        if length < radius:
            continue
        group = rows[lengths[rows] == length]
        matrix = padded[group, :length]
        keep_len = length - radius
        powers = _BASE ** np.arange(keep_len, 0, -1, dtype=np.uint64) if keep_len else np.zeros(0, np.uint64)
        salt = np.uint64((keep_len * 0x9E3779B97F4A7C15) % 2**64)
        for deleted in itertools.combinations(range(length), radius):
            kept = [p for p in range(length) if p not in deleted]
            h = (
                (matrix[:, kept] * powers).sum(axis=1, dtype=np.uint64) + salt
                if keep_len
                else np.full(len(group), salt)
            )
            out_hash.append(h >> _ROW_BITS << _ROW_BITS)
            out_row.append(group)
    if not out_hash:
        return np.zeros(0, np.uint64), np.zeros(0, np.int64)
    return np.concatenate(out_hash), np.concatenate(out_row)


def _unique(keys: np.ndarray) -> np.ndarray:
    """Sorted distinct values (a sort beats hashing for these large int64 arrays)."""
    keys = np.sort(keys, kind="stable")
    return keys[np.r_[True, keys[1:] != keys[:-1]]] if len(keys) else keys


def _join(index_hash, index_row, query_hash, query_row, n):
    """Distinct (query, word) pairs sharing a hash, self pairs removed."""
    index_key = np.sort(index_hash | index_row.astype(np.uint64), kind="stable")  # radix sort
    query_key = np.sort(query_hash | query_row.astype(np.uint64), kind="stable")
    row_mask = (np.uint64(1) << _ROW_BITS) - np.uint64(1)
    query_hash = query_key & ~row_mask
    query_row = (query_key & row_mask).astype(np.int64)
    lo = np.searchsorted(index_key, query_hash, "left")
    hi = np.searchsorted(index_key, query_hash | row_mask, "right")
    counts = hi - lo
    total = int(counts.sum())
    if not total:
        return np.zeros(0, np.int64), np.zeros(0, np.int64)
    starts = np.repeat(lo - (np.cumsum(counts) - counts), counts)
    words = (index_key[starts + np.arange(total)] & row_mask).astype(np.int64)
    queries = np.repeat(query_row, counts)
    keep = queries != words
    key = _unique(queries[keep] * n + words[keep])
    return key // n, key % n


def _brute_force(strings, lengths, rows, bounds, k, threads):
    """Top-k of ``rows`` against every word whose length differs by at most the row's bound (the
    k-th distance verified so far; ``max length``: none).

    A row without a bound is first compared with the words within ``PROBE`` lengths
    only: its k-th distance d there is exact when d <= PROBE (any word outside differs
    by more letters than d, so it cannot beat or tie), and otherwise a bound for a
    second pass over the wider window."""
    max_length = int(lengths.max())
    index = np.full((len(rows), k), -1, dtype=np.int64)
    distance = np.full((len(rows), k), -1, dtype=np.int64)
    rest = np.ones(len(rows), dtype=bool)  # rows still to be searched
    probe = np.flatnonzero(bounds >= max_length) if max_length > PROBE else np.zeros(0, np.int64)
    if len(probe):
        i, d = _window_top_k(strings, lengths, rows[probe], np.full(len(probe), PROBE), k, threads, select=True)
        kth = d[:, k - 1]
        exact = (kth >= 0) & (kth <= PROBE)
        index[probe[exact]], distance[probe[exact]] = i[exact], d[exact]
        rest[probe[exact]] = False
        bounds = bounds.copy()
        bounds[probe[~exact]] = np.where(kth[~exact] >= 0, kth[~exact], max_length)
    unbounded = bounds >= max_length
    for select in (False, True):
        part = np.flatnonzero(rest & (unbounded == select))
        if len(part):
            index[part], distance[part] = _window_top_k(strings, lengths, rows[part], bounds[part], k, threads, select)
    return index, distance


def _window_top_k(strings, lengths, rows, bounds, k, threads, select):
    """Top-k of ``rows`` among the words within ``bounds`` lengths; ``select``: find each row's k-th
    distance; otherwise the bound is taken as one (it is >= the k-th distance).  -1: fewer than k."""
    by_length = np.argsort(lengths, kind="stable")
    sorted_lengths = lengths[by_length]
    index = np.full((len(rows), k), -1, dtype=np.int64)
    distance = np.full((len(rows), k), -1, dtype=np.int64)
    groups: dict[tuple[int, int], list[int]] = {}
    for pos, (row, bound) in enumerate(zip(rows.tolist(), bounds.tolist())):
        groups.setdefault((int(lengths[row]), int(bound)), []).append(pos)
    for (length, bound), positions in sorted(groups.items()):
        lo = np.searchsorted(sorted_lengths, length - bound, "left")
        hi = np.searchsorted(sorted_lengths, length + bound, "right")
        columns = np.sort(by_length[lo:hi])  # word order = tie-break order
        column_strings = [strings[c] for c in columns]

        # bound now: the blocks run on threads inside this iteration
        def block(start: int, positions=positions, columns=columns, column_strings=column_strings, bound=bound):
            part = np.array(positions[start : start + BLOCK])
            part_rows = rows[part]
            matrix = process.cdist(
                [strings[r] for r in part_rows], column_strings, scorer=Levenshtein.distance, dtype=np.uint8, workers=1
            )
            self_col = np.searchsorted(columns, part_rows)  # each query is among the columns (same length)
            matrix[np.arange(len(part)), self_col] = 255  # not itself (no distance reaches 255: lengths are < 255)
            # every word up to the k-th smallest distance, then the k best by (distance, word)
            if not select:
                kth = np.full(len(part), bound)
            elif matrix.shape[1] > k:
                kth = np.partition(matrix, k - 1, axis=1)[:, k - 1]
            else:
                kth = np.full(len(part), 254)
            line, col = np.nonzero(matrix <= kth[:, None])
            dist = matrix[line, col].astype(np.int64)
            order = np.lexsort((columns[col], dist, line))
            line, col, dist = line[order], col[order], dist[order]
            first = np.searchsorted(line, np.arange(len(part)), "left")
            rank = np.arange(len(line)) - first[line]
            top = (rank < k) & (dist < 255)
            index[part[line[top]], rank[top]] = columns[col[top]]
            distance[part[line[top]], rank[top]] = dist[top]

        # blocks on threads: rapidfuzz and numpy's selection both release the GIL
        thread_map(block, range(0, len(positions), BLOCK), threads)
    return index, distance


def top_k(sequences: list[tuple[str, ...]], k: int = 3, threads: int | None = 0, progress=None) -> Neighbours:
    """Exact top-k neighbours of every sequence (order of ``sequences`` = tie-break order)."""
    n = len(sequences)
    if n == 0:
        raise InputError("the vocabulary is empty: no words to find neighbours for")
    if k < 1:
        raise ParamsError(f"k must be at least 1, not {k}")
    threads = resolve_workers(threads, "threads")
    strings, _table = encode(sequences)
    lengths = np.array([len(s) for s in strings], dtype=np.int64)
    if n >= 2 ** int(_ROW_BITS):
        raise InputError(f"vocabulary of {n} words is over the {2 ** int(_ROW_BITS)} this search supports")
    padded = np.zeros((n, int(lengths.max()) if n else 0), dtype=np.uint64)
    for i, text in enumerate(strings):
        padded[i, : len(text)] = [ord(c) for c in text]
    k_eff = min(k, n - 1)
    stats: Counter = Counter()
    # candidate neighbours found so far, as (query, word, distance)
    q, w, d = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.int64)
    settled = np.zeros(n, dtype=bool) if k_eff > 0 else np.ones(n, dtype=bool)
    for radius in range(0, MAX_RADIUS + 1):
        pending = np.flatnonzero(~settled)
        if not len(pending):
            break
        # sequences so long that their variants would explode are left to brute force; a query
        # of length L meets words up to L + radius long, so those are all indexed
        longest = max(L for L in range(int(lengths.max()) + 1) if math.comb(L + radius, radius) <= MAX_VARIANTS)
        pending = pending[lengths[pending] <= longest]
        a, b, dist = _candidates(strings, padded, lengths, pending, radius, threads)
        stats[f"candidates_radius_{radius}"] = len(a)
        q, w, d = _once_each(np.concatenate([q, a]), np.concatenate([w, b]), np.concatenate([d, dist]), n)
        within = np.bincount(q[d <= radius], minlength=n)
        searched = np.zeros(n, dtype=bool)  # only a word searched at this radius knows all words within it
        searched[pending] = True
        newly = searched & (within >= k_eff)
        stats[f"settled_radius_{radius}"] = int(newly.sum())
        settled |= newly
        if progress:
            progress(radius, int(settled.sum()), n)
    index = np.full((n, k), -1, dtype=np.int64)
    distance = np.full((n, k), -1, dtype=np.int64)
    order = np.lexsort((w, d, q))
    q, w, d = q[order], w[order], d[order]
    starts = np.searchsorted(q, np.arange(n), "left")
    ends = np.searchsorted(q, np.arange(n), "right")
    for i in np.flatnonzero(settled).tolist():
        take = min(k_eff, ends[i] - starts[i])
        index[i, :take] = w[starts[i] : starts[i] + take]
        distance[i, :take] = d[starts[i] : starts[i] + take]
    rest = np.flatnonzero(~settled)
    stats["brute_force_words"] = len(rest)
    if len(rest):
        index[rest, :k_eff], distance[rest, :k_eff] = _brute_force_rest(strings, lengths, rest, q, d, k_eff, threads)
        if progress:
            progress(MAX_RADIUS + 1, n, n)
    return Neighbours(index=index, distance=distance, stats=stats)


def _candidates(
    strings: list[str], padded: np.ndarray, lengths: np.ndarray, pending: np.ndarray, radius: int, threads: int
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query, word, distance) pairs whose deletion variants at ``radius`` meet, for the
    ``pending`` queries against every word."""
    n = len(strings)
    all_rows = np.arange(n)

    # variants only meet variants of the same length: one length at a time keeps memory bounded
    def pairs_meeting_at(m: int):
        qry = [_variant_hashes(padded, lengths, j, pending[lengths[pending] == m + j]) for j in range(radius + 1)]
        q_h = np.concatenate([h for h, _ in qry])
        if not len(q_h):
            return None
        idx = [_variant_hashes(padded, lengths, l, all_rows[lengths == m + l]) for l in range(radius + 1)]
        return _join(
            np.concatenate([h for h, _ in idx]),
            np.concatenate([r for _, r in idx]),
            q_h,
            np.concatenate([r for _, r in qry]),
            n,
        )

    # variant lengths on threads (numpy's sorts and arithmetic release the GIL)
    found = [ab for ab in thread_map(pairs_meeting_at, range(int(lengths.max()) + 1), threads) if ab is not None]
    pairs_a, pairs_b = [a for a, _ in found], [b for _, b in found]
    key = _unique(np.concatenate(pairs_a) * n + np.concatenate(pairs_b)) if pairs_a else np.zeros(0, np.int64)
    a, b = key // n, key % n
    if not len(a):
        return a, b, np.zeros(0, np.int64)
    d = process.cpdist([strings[i] for i in a], [strings[i] for i in b], scorer=Levenshtein.distance, workers=threads)
    return a, b, np.asarray(d, dtype=np.int64)


def _once_each(q: np.ndarray, w: np.ndarray, d: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The (query, word, distance) pairs with each (query, word) once, in key order: a pair found
    again at a larger radius must count once."""
    key = q * n + w
    order = np.argsort(key, kind="stable")
    first = order[np.r_[True, key[order][1:] != key[order][:-1]]] if len(key) else order
    return q[first], w[first], d[first]


def _brute_force_rest(
    strings: list[str],
    lengths: np.ndarray,
    rest: np.ndarray,
    q: np.ndarray,
    d: np.ndarray,
    k_eff: int,
    threads: int,
) -> tuple[np.ndarray, np.ndarray]:
    """Brute force for the ``rest`` of the words, within the length window that can still beat the
    best found so far (``q``, ``d``: the candidates' queries and distances, sorted by query then
    distance)."""
    bounds = np.full(len(rest), int(lengths.max()), dtype=np.int64)
    q_sorted = np.searchsorted(q, rest, "left")
    q_end = np.searchsorted(q, rest, "right")
    have = q_end - q_sorted >= k_eff
    # the k-th best distance found is an upper bound: longer or shorter words by more cannot beat it
    bounds[have] = d[q_sorted[have] + k_eff - 1]
    return _brute_force(strings, lengths, rest, bounds, k_eff, threads)


def brute_force_top_k(
    strings: list[str], queries: list[int], k: int = 3, threads: int | None = 0
) -> tuple[np.ndarray, np.ndarray]:
    """Reference implementation for tests and benchmarks: full rows of distances."""
    n = len(strings)
    matrix = process.cdist(
        [strings[i] for i in queries],
        strings,
        scorer=Levenshtein.distance,
        dtype=np.int32,
        workers=resolve_workers(threads, "threads"),
    ).astype(np.int64)
    keys = matrix * n + np.arange(n)
    keys[np.arange(len(queries)), queries] = np.iinfo(np.int64).max
    best = np.argsort(keys, axis=1, kind="stable")[:, :k]
    return best, np.take_along_axis(matrix, best, axis=1)


def confusables_table(words: list[str], sequences: list[tuple[str, ...]], neighbours: Neighbours) -> pa.Table:
    """One row per (word, neighbour): word, phonemes, neighbor, neighbor_phonemes, distance, rank, homophone."""
    index, distance = neighbours.index, neighbours.distance
    valid = index >= 0
    word_idx, rank = np.nonzero(valid)
    neighbor_idx = index[valid]
    dist = distance[valid]
    phon = np.array([" ".join(s) for s in sequences], dtype=object)
    words_arr = np.array(words, dtype=object)
    return pa.Table.from_arrays(
        [
            pa.array(words_arr[word_idx], pa.string()),
            pa.array(phon[word_idx], pa.string()),
            pa.array(words_arr[neighbor_idx], pa.string()),
            pa.array(phon[neighbor_idx], pa.string()),
            pa.array(dist, pa.int16()),
            pa.array(rank + 1, pa.int16()),
            pa.array(dist == 0, pa.bool_()),
        ],
        schema=CONFUSABLES_SCHEMA,
    )


def vocabulary_from_segments(source, min_count: int = 1) -> list[str]:
    """The distinct words of a segment dataset (a path: streamed batch by batch; or a table) seen at
    least ``min_count`` times.  Memory: the vocabulary with its counts, never the corpus."""
    import pyarrow.compute as pc

    from pipeline.engine.dataset import iter_batches

    batches = [source] if isinstance(source, pa.Table) else iter_batches(source, columns=["words"])
    counts: Counter = Counter()
    for batch in batches:
        flat = pc.list_flatten(batch.column("words") if isinstance(batch, pa.RecordBatch) else batch["words"])
        if len(flat):
            found = pc.value_counts(flat)
            counts.update(dict(zip(found.field("values").to_pylist(), found.field("counts").to_pylist())))
    return sorted(w for w, n in counts.items() if w and n >= min_count)


def build_confusables(
    words: list[str], g2p, k: int = 3, threads: int | None = 0, progress=None
) -> tuple[pa.Table, dict]:
    """Confusables table of a vocabulary with a language's g2p, and a report of what was skipped."""
    lowercase = getattr(g2p, "lang", "") == "en"
    vocabulary = sorted({(w.strip().lower() if lowercase else w.strip()) for w in words} - {""})
    if not vocabulary:
        raise InputError("the vocabulary is empty: no words to find neighbours for")
    sequences, skipped = g2p.phonemize(vocabulary)
    kept = [(w, s) for w, s in zip(vocabulary, sequences) if s]
    if not kept:
        raise InputError(f"no word of the vocabulary could be converted to phonemes (skipped: {dict(skipped)})")
    if len(kept) < 2:
        raise InputError("the vocabulary has a single convertible word: it has no neighbours")
    kept_words, kept_sequences = [w for w, _ in kept], [s for _, s in kept]
    neighbours = top_k(kept_sequences, k, threads=threads, progress=progress)
    table = confusables_table(kept_words, kept_sequences, neighbours)
    report = {
        # the entries given (a word list's non-empty lines: web2's 235,886) and the distinct words they
        # make once case-folded (English; web2: 234,371), the vocabulary searched
        "entries": sum(1 for w in words if w.strip()),
        "vocabulary": len(vocabulary),
        "words": len(kept_words),
        "skipped": dict(sorted(skipped.items())),
        "k": k,
        "rows": table.num_rows,
        "homophone_rows": int(np.sum(neighbours.distance[neighbours.index >= 0] == 0)),
        "search": dict(neighbours.stats),
    }
    return table, report
