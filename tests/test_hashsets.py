"""The hash exchange behind duplicates and distinct counts: exact, whatever the ranges and shards."""

import itertools
import random
from collections import Counter

import pytest

from pipeline import hashsets
from pipeline.executor import executor


def _shards(seed: int, n_shards: int):
    """Words spread over shards and three groups, with repeats inside and across groups."""
    rng = random.Random(seed)
    vocabulary = [f"w{i}" for i in range(3000)]
    return [
        {group: [rng.choice(vocabulary) for _ in range(rng.randrange(50, 400))] for group in ("train", "dev", "test")}
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
def test_overlaps_are_exact_for_any_ranges(tmp_path, monkeypatch, range_target, engine):
    monkeypatch.setattr(hashsets, "RANGE_TARGET", range_target)
    shards = _shards(1, 5)
    written = 0
    for index, shard in enumerate(shards):
        groups = {("word", g): hashsets.distinct(hashsets.hash_values(words)) for g, words in shard.items()}
        if index == 3:
            del groups[("word", "dev")]  # a group absent from a shard is empty there
            shard["dev"] = []
        written += hashsets.write_groups(tmp_path, index, groups)
    family = {"word": [("word", "train"), ("word", "dev"), ("word", "test")]}
    assert len(hashsets.ranges(written)) == -(-written // range_target)
    with executor(engine, 2) as runner:
        overlaps, collected = hashsets.reduce(runner, tmp_path, list(range(5)), family, written, collect={"word": 0})
    masks, occurrences, members = _expected(shards)
    assert overlaps["word"].masks == masks
    assert overlaps["word"].occurrences == occurrences
    # train words also in dev or test, as sorted hashes
    shared = [w for w, mask in members.items() if mask & 1 and mask != 1]
    assert collected["word"].tolist() == sorted(hashsets.hash_values(shared).tolist())


def test_ranges_cover_the_hash_space_without_gaps():
    for total in (0, 1, hashsets.RANGE_TARGET, 10 * hashsets.RANGE_TARGET + 1):
        bounds = hashsets.ranges(total)
        assert bounds[0][0] == 0 and bounds[-1][1] == 2**64
        assert all(a[1] == b[0] for a, b in itertools.pairwise(bounds))
        assert len(bounds) == max(1, -(-total // hashsets.RANGE_TARGET))
