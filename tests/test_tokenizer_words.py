"""The trained tokenizer's input: the ``train_words`` most frequent distinct train words (ties by the
word), their counts exact whatever the sharding, the workers and the reduce ranges, scaled down to
about ``train_occurrences`` occurrences."""

import pytest
from support.datasets import digests, write_dataset

from pipeline import params as P
from pipeline.datasets import sequences
from pipeline.datasets.sequences import (
    count_train_words,
    repeated_words,
    scaled_counts,
    sequences_dataset,
    train_tokenizer,
)
from pipeline.engine.dataset import row_shards
from pipeline.engine.executor import executor
from pipeline.labels import LABELS
from pipeline.params import EngineParams, SequencesParams
from pipeline.schema import segments_table

#: train occurrences per word: "Café" is written composed 3 times and decomposed 3 times (one word
#: once normalized: 6); beta, delta and gamma tie at 5
TRAIN = {"alpha": 9, "Café": 3, "Cafe\u0301": 3, "gamma": 5, "beta": 5, "delta": 5, "eps": 2, "zeta": 1}
#: the 4 most frequent: alpha, Café, then of the three at 5 the first two by the word
TOP_4 = {"alpha": 9, "Café": 6, "beta": 5, "delta": 5}


def corpus_table():
    """40 one-segment documents, the train words spread round robin over them (so every shard
    holds a part of most counts); dev and test documents repeat a word train does not have, more
    often than any train word."""
    occurrences = [w for w, n in sorted(TRAIN.items()) for _ in range(n)]
    docs = [[] for _ in range(30)]  # fewer than the 33 occurrences: none empty
    for i, word in enumerate(occurrences):
        docs[i % len(docs)].append(word)
    words = [*docs, *[["heldout"] * 4 for _ in range(10)]]
    splits = ["train"] * 30 + ["dev"] * 5 + ["test"] * 5
    return segments_table(
        "c",
        "en",
        [f"d{i}" for i in range(40)],
        [0] * 40,
        words,
        [["O"] * len(w) for w in words],
        split=splits,
        vocabulary=LABELS,
    )


@pytest.fixture
def dataset(tmp_path):
    table = corpus_table()
    counted = {}
    for row, split in zip(table["words"].to_pylist(), table["split"].to_pylist()):
        for w in row if split == "train" else ():
            counted[w] = counted.get(w, 0) + 1
    assert counted == TRAIN  # the table holds exactly the counts above
    return write_dataset(table, tmp_path / "segments.parquet", parts=3)


@pytest.mark.parametrize("engine,workers", [("inline", 1), ("local", 2)])
def test_the_cap_and_tie_rule_whatever_the_shards_and_ranges(dataset, tmp_path, monkeypatch, engine, workers):
    for n, (shard_rows, per_range) in enumerate([(1000, 500_000), (7, 500_000), (3, 2), (1, 1)]):
        monkeypatch.setattr(sequences, "WORDS_PER_RANGE", per_range)  # many ranges: each sums its words
        with executor(engine, workers) as runner:
            shards = row_shards(dataset, shard_rows, runner)
            top, distinct = count_train_words(runner, shards, tmp_path / f"w{n}", False, 4)
            everything, _ = count_train_words(runner, shards, tmp_path / f"all{n}", False, 100)
        assert top == TOP_4 and list(top) == list(TOP_4)  # most frequent first, ties by the word
        assert distinct == 7 == len(everything)  # the two spellings of Café are one word
        assert everything["Café"] == 6 and "heldout" not in everything and everything["zeta"] == 1


@pytest.mark.slow  # a dask cluster
def test_the_stage_trains_on_the_capped_words_the_same_on_every_engine(dataset, tmp_path):
    params = SequencesParams(tokenizer="train", vocab_size=100, max_len=32, train_words=4)
    for name, engine, workers, rows in (("one", "local", 1, 1000), ("two", "local", 2, 3), ("dask", "dask", 2, 7)):
        sequences_dataset(
            dataset,
            params,
            tmp_path / f"seq-{name}",
            tmp_path / f"tok-{name}",
            tmp_path / f"{name}.json",
            "c",
            engine=EngineParams(engine=engine, workers=workers, shard_rows=rows),
        )
    assert digests(tmp_path / "tok-one") == digests(tmp_path / "tok-two") == digests(tmp_path / "tok-dask")
    expected = train_tokenizer(repeated_words(TOP_4), 100, normalized=True).backend_tokenizer.to_str()
    from transformers import PreTrainedTokenizerFast

    saved = PreTrainedTokenizerFast.from_pretrained(str(tmp_path / "tok-one"))
    assert saved.backend_tokenizer.to_str() == expected
    assert "gamma" not in saved.get_vocab() and "delta" in saved.get_vocab()


def test_counts_scaled_to_the_occurrence_budget():
    counts = {"a": 1000, "b": 10, "c": 1}
    assert scaled_counts(counts, 1011) == counts  # within the budget: unchanged
    assert scaled_counts(counts, 101) == {"a": 99, "b": 1, "c": 1}  # n * 101 // 1011, at least 1
    assert scaled_counts(counts, 101) == scaled_counts(dict(reversed(counts.items())), 101)


def test_the_caps_must_be_positive():
    for key in ("train_words", "train_occurrences"):
        with pytest.raises(P.ParamsError, match=key):
            P.validate(P.SequencesParams, {key: 0}, "params.yaml")


def test_words_normalized_in_one_call_as_one_by_one():
    """The normalizer runs once over a batch of words joined by spaces: each piece is its word
    normalized alone, across marks that compose or reorder at a word's edge, lowercasing that
    lengthens a word, and a word that holds a space (normalized on its own)."""
    import pyarrow as pa

    from pipeline.datasets.sequences import NormalizedWords, normalized_words, tokenizer_normalizer
    from pipeline.engine.hashsets import string_array_hashes

    words = [
        "Cafe\u0301", "\u0301start", "a\u0323\u0307", "\u0915\u093c", "\u0bc6\u0bbe", "\u1100\u1161",
        "\u1161", "\u0130stanbul", "\u03a3\u039f\u03a3", "", "x", "Ǆ", "ﬃ",
    ]  # fmt: skip
    for lowercase in (False, True):
        normalize = tokenizer_normalizer(lowercase).normalize_str
        expected = [normalize(w) for w in words]
        assert normalized_words(pa.array(words), lowercase).to_pylist() == expected
        assert normalized_words(pa.array(["a b", *words]), lowercase).to_pylist() == [normalize("a b"), *expected]
        cache = NormalizedWords(lowercase, limit=5)
        for batch in (words[:4], words[2:9], words, words[::-1]):
            got, hashes = cache(pa.array(batch))
            assert got.to_pylist() == [normalize(w) for w in batch]
            assert hashes.tolist() == string_array_hashes(got).tolist()
            assert len(cache.index) <= max(5, len(batch))


def test_combined_groups_hold_consecutive_shards_within_the_limit():
    from pipeline.datasets.sequences import combined_groups

    groups = combined_groups([0, 1, 2, 3, 4, 5], [3, 4, 9, 12, 1, 2], 10)
    assert groups == [[0, 1], [2], [3], [4, 5]]  # a shard over the limit alone
    assert [s for g in groups for s in g] == list(range(6))
    assert combined_groups([], [], 10) == []
    assert combined_groups([0, 1], [0, 0], 10) == [[0, 1]]  # shards without train words


def test_a_row_sample_is_the_same_whatever_the_rows_asked_at_once():
    from pipeline.datasets.sequences import RowSample

    sample = RowSample(2**62, block_rows=3)  # a quarter of the blocks
    every = sample.rows(0, 3000)
    assert 0.15 < every.mean() < 0.35
    blocks = every.reshape(-1, 3)
    assert (blocks.all(axis=1) | ~blocks.any(axis=1)).all()  # a block is in or out as a whole
    for start, n in ((0, 1), (1, 5), (2, 4), (299, 700), (2999, 1)):
        assert (sample.rows(start, n) == every[start : start + n]).all()
    assert RowSample(2**62, block_rows=3).rows(0, 3000).tolist() == every.tolist()  # seeded


def test_a_row_sample_only_above_the_budget_and_over_enough_blocks():
    from pipeline.datasets.sequences import SAMPLE_MIN_BLOCKS, RowSample

    rows = 1000 * SAMPLE_MIN_BLOCKS
    assert RowSample.of(100, 100, rows, block_rows=10) is None  # the budget holds every word
    assert RowSample.of(100, 1000, SAMPLE_MIN_BLOCKS * 10, block_rows=10) is None  # too few blocks to sample
    sample = RowSample.of(100, 1000, rows, block_rows=10)
    assert sample.share == pytest.approx(0.1)
    small = RowSample.of(1, 10**9, rows, block_rows=10)  # a tiny budget still samples many blocks
    assert small.share == pytest.approx(SAMPLE_MIN_BLOCKS / (rows / 10))


@pytest.mark.parametrize("engine,workers", [("inline", 1), ("local", 2)])
def test_sampled_counts_are_the_sampled_rows_counts_whatever_the_shards(dataset, tmp_path, engine, workers):
    """Counted from a sample of blocks of 2 rows: exactly the train words of the rows in kept blocks
    (numbered through the 3 part files), whatever the shards; a shard the sample misses is not
    read."""
    import unicodedata

    from pipeline.datasets.sequences import RowSample

    sample = RowSample(2**63, block_rows=2)  # half of the 20 blocks
    table = corpus_table()
    kept = sample.rows(0, table.num_rows)
    assert 0 < kept.sum() < table.num_rows
    expected: dict[str, int] = {}
    for row, split, keep in zip(table["words"].to_pylist(), table["split"].to_pylist(), kept):
        for w in row if keep and split == "train" else ():
            w = unicodedata.normalize("NFC", w)
            expected[w] = expected.get(w, 0) + 1
    for n, shard_rows in enumerate((1000, 7, 3, 1)):
        with executor(engine, workers) as runner:
            shards = row_shards(dataset, shard_rows, runner)
            counts, distinct = count_train_words(runner, shards, tmp_path / f"s{n}", False, 100, sample)
        assert counts == expected and distinct == len(expected)
        files = list((tmp_path / f"s{n}").glob("0*.arrow"))
        missed = sum(not sample.rows(s.first_row, s.stop - s.start).any() for s in shards)
        assert len(files) == len(shards) - missed
    assert missed > 0  # one row a shard: the shards of dropped blocks were skipped


def test_shards_number_their_rows_through_every_input(tmp_path):
    from pipeline.engine.dataset import scan_datasets

    first = write_dataset(corpus_table(), tmp_path / "a.parquet", parts=3)
    second = write_dataset(corpus_table().slice(0, 12), tmp_path / "b.parquet", parts=2)
    second_words = corpus_table().slice(0, 12)["words"].to_pylist()
    for shard_rows in (1, 5, 1000):
        scan = scan_datasets([first, second], shard_rows)
        numbered = [s.first_row + k for s in scan.shards for k in range(s.stop - s.start)]
        assert numbered == list(range(52))
        words = sum(len(row) for row in [*corpus_table()["words"].to_pylist(), *second_words])
        assert scan.word_slots == words  # every row holds words: a slot a word
