"""The hash exchange behind duplicates and distinct counts: exact, whatever the ranges and shards."""

import itertools
import random
from collections import Counter

import pytest

from pipeline.engine import hashsets
from pipeline.engine.executor import executor


def _shards(seed: int, n_shards: int, words: int = 3000, sizes: tuple[int, int] = (50, 400)):
    """Words spread over shards and three groups, with repeats inside and across groups."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(words)]
    return [
        {group: [rng.choice(vocabulary) for _ in range(rng.randrange(*sizes))] for group in ("train", "dev", "test")}
        for _ in range(n_shards)
    ]


def _expected(shards):
    members = {}
    occurrences = Counter()
    for shard in shards:
        for bit, group in enumerate(("train", "dev", "test")):
            for word in shard[group]:
                members[word] = members.get(word, 0) | 1 << bit
    for shard in shards:
        for bit, group in enumerate(("train", "dev", "test")):
            for word in shard[group]:
                occurrences[(members[word], bit)] += 1
    return Counter(members.values()), occurrences, members


@pytest.mark.parametrize("range_target", [7, 500, hashsets.RANGE_TARGET])
@pytest.mark.parametrize("engine", ["inline", "local"])
@pytest.mark.parametrize("where", ["folder", "url"])
@pytest.mark.parametrize("per_task", [1, 4])
def test_overlaps_are_exact_for_any_ranges(tmp_path, monkeypatch, range_target, engine, where, per_task):
    """On a URL, a range reads the buckets its shard's header locates (ranges inside buckets
    with a small target); a task reading several ranges' records at once counts each alike."""
    monkeypatch.setattr(hashsets, "RANGE_TARGET", range_target)
    monkeypatch.setattr(hashsets, "RANGES_PER_TASK", per_task)
    folder = tmp_path
    if where == "url":
        from support.objstore import register

        register(str(tmp_path))
        folder = "objstore://exchange"
    shards = _shards(1, 5)
    written = 0
    for index, shard in enumerate(shards):
        groups = {("word", g): hashsets.distinct(hashsets.hash_values(words)) for g, words in shard.items()}
        if index == 3:
            del groups[("word", "dev")]  # a group absent from a shard is empty there
            shard["dev"] = []
        written += hashsets.write_groups(folder, index, groups)
    family = {"word": [("word", "train"), ("word", "dev"), ("word", "test")]}
    assert len(hashsets.ranges(written)) == -(-written // range_target)
    with executor(engine, 2) as runner:
        overlaps, collected = hashsets.reduce(runner, folder, list(range(5)), family, written, collect={"word": 0})
    masks, occurrences, members = _expected(shards)
    if where == "url":
        assert (tmp_path / "exchange" / "00004.bin").is_file()
    assert overlaps["word"].masks == masks
    assert overlaps["word"].occurrences == occurrences
    # train words also in dev or test, as sorted hashes
    shared = [w for w, mask in members.items() if mask & 1 and mask != 1]
    assert collected["word"].tolist() == sorted(hashsets.hash_values(shared).tolist())


@pytest.mark.parametrize("path", ["exact sort", "binary search", "inside buckets", "sorted pairs"])
def test_overlaps_are_exact_on_every_path_of_the_reduce(tmp_path, monkeypatch, path):
    """The reduce's fallbacks give the same answers: an exact sort where top bits of hashes are too
    few to sort on, a binary search of key ids where no lookup table tells them apart, ranges
    narrower than the header's buckets (more ranges than buckets), which read hashes beyond them,
    and (family, mask) pairs sorted where a table of them would be too large."""
    if path == "exact sort":
        monkeypatch.setattr(hashsets, "KEPT_BITS", 64)
    elif path == "binary search":
        monkeypatch.setattr(hashsets, "_LOOKUP_BITS", 0)
    elif path == "sorted pairs":
        monkeypatch.setattr(hashsets, "_DENSE_PAIRS", 0)
    shards = _shards(4, 3, 20_000, (1000, 1500)) if path == "inside buckets" else _shards(4, 3)
    written = sum(
        hashsets.write_groups(
            tmp_path, index, {("word", g): hashsets.distinct(hashsets.hash_values(w)) for g, w in shard.items()}
        )
        for index, shard in enumerate(shards)
    )
    if path == "inside buckets":
        monkeypatch.setattr(hashsets, "RANGE_TARGET", 2)
        assert len(hashsets.ranges(written)) > hashsets.BUCKETS
    family = {"word": [("word", "train"), ("word", "dev"), ("word", "test")]}
    with executor("inline") as runner:
        overlaps, collected = hashsets.reduce(runner, tmp_path, [0, 1, 2], family, written, collect={"word": 0})
    masks, occurrences, members = _expected(shards)
    assert overlaps["word"].masks == masks
    assert overlaps["word"].occurrences == occurrences
    shared = [w for w, mask in members.items() if mask & 1 and mask != 1]
    assert collected["word"].tolist() == sorted(hashsets.hash_values(shared).tolist())


def test_hashes_sharing_their_top_bits_are_told_apart():
    """Two hashes of a family that agree in the bits the one sort keeps: the order falls back to an
    exact sort, so they form two runs, each hash's records together."""
    import numpy as np

    base = np.uint64(0x5000_0000_0000_0000)
    hashes = np.array([base + 2, base + 1, base + 2, base + 1, base + 7], np.uint64)
    family = np.array([0, 0, 0, 0, 1])
    order, ordered, new_run = hashsets._family_order(hashes, family, (0, 2**64), 2)
    assert ordered.tolist() == [int(base) + 1, int(base) + 1, int(base) + 2, int(base) + 2, int(base) + 7]
    assert new_run.tolist() == [True, False, True, False, True]
    assert hashes[order].tolist() == ordered.tolist()


@pytest.mark.parametrize("range_target", [7, hashsets.RANGE_TARGET])
@pytest.mark.parametrize("own_families", [("a",), ("a", "b")])
def test_a_member_made_of_several_groups_is_their_union(tmp_path, monkeypatch, range_target, own_families):
    """A family member may be a list of groups (the sequences report's pooled view, from its
    per-corpus groups), and a group may be in several families: the same overlaps and collected
    hashes as the union written as one group.  Where every corpus's groups are a family of their
    own, the union is formed from their runs, not from its records read again."""
    monkeypatch.setattr(hashsets, "RANGE_TARGET", range_target)
    splits = ("train", "dev", "test")
    corpora = {"a": _shards(2, 4), "b": _shards(3, 4)}
    written = pooled_written = 0
    for index in range(4):
        groups, pooled = {}, {}
        for corpus, shards in corpora.items():
            for split, words in shards[index].items():
                groups[("word", corpus, split)] = hashsets.distinct(hashsets.hash_values(words))
        for split in splits:
            words = [w for shards in corpora.values() for w in shards[index][split]]
            pooled[("word", split)] = hashsets.distinct(hashsets.hash_values(words))
        written += hashsets.write_groups(tmp_path / "corpora", index, groups)
        pooled_written += hashsets.write_groups(tmp_path / "pooled", index, pooled)
    families = {
        **{corpus: [("word", corpus, s) for s in splits] for corpus in own_families},
        "pooled": [[("word", "a", s), ("word", "b", s)] for s in splits],
    }
    assert list(hashsets._union_plans(families)) == ([len(own_families)] if len(own_families) == 2 else [])
    with executor("local", 2) as runner:
        union, union_collected = hashsets.reduce(
            runner, tmp_path / "corpora", list(range(4)), families, 2 * written, collect={"pooled": 0}
        )
        direct, direct_collected = hashsets.reduce(
            runner, tmp_path / "pooled", list(range(4)), {"pooled": [("word", s) for s in splits]},
            pooled_written, collect={"pooled": 0},
        )  # fmt: skip
    for corpus in own_families:
        masks, occurrences, _ = _expected(corpora[corpus])
        assert union[corpus].masks == masks and union[corpus].occurrences == occurrences
    assert union["pooled"].masks == direct["pooled"].masks
    assert union["pooled"].occurrences == direct["pooled"].occurrences
    assert union["pooled"].occurrences.total() > union["a"].occurrences.total()
    assert union_collected["pooled"].tolist() == direct_collected["pooled"].tolist()


def test_a_union_is_formed_from_runs_only_where_its_groups_map_one_to_one():
    """A union family is formed from other families' runs only where each of its groups is a
    member, alone, of one plain family whose members it all holds, each in one member: otherwise its
    records are read for it (a record counted in two members, or a base family's record in none)."""
    a, b = ("w", "a", "train"), ("w", "a", "test")
    assert list(hashsets._union_plans({"a": [a, b], "u": [[a], [b]]})) == [1]
    assert hashsets._union_plans({"a": [a, b], "u": [[a, b]]})[1][1].tolist() == [[0, 0], [-1, -1]]
    assert hashsets._union_plans({"a": [a, b], "u": [[a], [a, b]]}) == {}  # a in two members
    assert hashsets._union_plans({"a": [a, b], "u": [[a]]}) == {}  # b's records in no member
    assert hashsets._union_plans({"a": [a, b], "c": [a], "u": [[a], [b]]}) == {}  # a alone in two families


def test_ranges_cover_the_hash_space_without_gaps():
    """Up to one range per bucket of the shard files' headers, ranges start and end on bucket bounds."""
    bucket = 2 ** (64 - hashsets.BUCKET_BITS)
    for total in (0, 1, hashsets.RANGE_TARGET, 10 * hashsets.RANGE_TARGET + 1, 5000 * hashsets.RANGE_TARGET):
        bounds = hashsets.ranges(total)
        assert bounds[0][0] == 0 and bounds[-1][1] == 2**64
        assert all(a[1] == b[0] and a[0] < a[1] for a, b in itertools.pairwise(bounds))
        assert len(bounds) == max(1, -(-total // hashsets.RANGE_TARGET))
        if len(bounds) <= hashsets.BUCKETS:
            assert all(lo % bucket == 0 for lo, _ in bounds)


def _chunk_reference(value: str) -> int:
    """The string hash written out one chunk at a time (what the array code must compute)."""
    import numpy as np

    data = value.encode()
    total = 0
    for k in range(0, len(data), 8):
        chunk = np.uint64(int.from_bytes(data[k : k + 8], "little"))
        with np.errstate(over="ignore"):
            mixed = hashsets._splitmix64(np.array([chunk ^ (np.uint64(len(data) - k) * hashsets._PLACE)], np.uint64))
        total = (total + int(mixed[0])) % 2**64
    with np.errstate(over="ignore"):
        last = np.array([np.uint64(total) ^ (np.uint64(len(data)) * hashsets._MIX)], np.uint64)
    return int(hashsets._splitmix64(last)[0])


def test_string_hashes_are_the_chunk_hash_on_any_array_layout():
    """Array layouts (slices, large strings, chunks, dictionaries, nulls) do not change a string's
    hash; strings of every length hash alike; no two distinct strings of a sample collide."""
    import pyarrow as pa

    rng = random.Random(3)
    alphabet = "ab अआइক্ষ漢字\x00é"
    values = ["".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 30))) for _ in range(5000)]
    values += ["", "x" * 7, "x" * 8, "x" * 9, "x" * 64, "x" * 65, "y" * 200, "a", "a\x00", "\x00", "\x00" * 8]
    expected = [_chunk_reference(v) for v in values]
    assert hashsets.hash_values(values).tolist() == expected
    array = pa.array(values)
    for start, length in ((0, 10), (7, 300), (len(values) - 9, 9), (3, 0)):
        assert hashsets.string_array_hashes(array.slice(start, length)).tolist() == expected[start : start + length]
    assert hashsets.string_array_hashes(array.cast(pa.large_string())).tolist() == expected
    chunked = pa.chunked_array([array.slice(0, 100), array.slice(100)])
    assert hashsets.string_hashes(chunked).tolist() == expected
    assert hashsets.string_hashes(array.dictionary_encode()).tolist() == expected
    with_nulls = pa.array(["q", None, "q", ""])
    empty, q = _chunk_reference(""), _chunk_reference("q")
    assert hashsets.string_array_hashes(with_nulls).tolist() == [q, empty, q, empty]
    assert hashsets.string_hashes(with_nulls).tolist() == [q, empty, q, empty]
    assert hashsets.string_hashes(with_nulls.dictionary_encode()).tolist() == [q, empty, q, empty]
    assert len(set(expected)) == len(set(values))
