"""The training data path: every train row once per epoch from streamed Parquet parts, token-budget
batches, process shares, augmentation in the workers (3R phoneme edition from the confusables
stage's output), case columns through augmentation, the mixed-case lexicon."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import torch
from support.training import as_documents, dataset, tokenizer_of, with_split

from pipeline.datasets.augment import augmented, load_confusables
from pipeline.datasets.sequences import IGNORE
from pipeline.labels import PAPERS
from pipeline.phonetics.confusables import CONFUSABLES_SCHEMA
from pipeline.training.data import (
    BatchSpec,
    EpochBatches,
    count_batches,
    index_rows,
    loader,
    mixed_case_lexicon,
    plan_windows,
    sequences_with_case,
)


@pytest.fixture(scope="module")
def sample(iwslt_dev, tmp_path_factory):
    table = with_split(as_documents(iwslt_dev.slice(0, 600), 25), ["train"] * 540 + ["dev"] * 60)
    tokenizer = tokenizer_of(table)
    # three parts of small row groups: windows over several files and row groups
    return table, tokenizer, dataset(tmp_path_factory.mktemp("data"), table, tokenizer, parts=3)


def spec_of(data, **kw):
    values = dict(
        batch_size=8,
        max_tokens=0,
        pad_id=data.tokenizer.pad_token_id,
        pad_multiple=8,
        max_len=64,
        seed=5,
        case=False,
        label_set=data.label_set,
    )
    return BatchSpec(**{**values, **kw})


def epoch(data, spec, number=0, rank=0, world=1, workers=0, window=64, segments=False):
    index = index_rows(data.segments if segments else data.sequences, "train", lengths=not segments)
    windows = plan_windows(index, number, spec.seed, window)
    return list(loader(EpochBatches(index, windows, spec, number, rank, world), workers, False, 0))


def rows_of(batches):
    """Each trained row's token ids (padding cut), as a multiset."""
    out = Counter()
    for b in batches:
        for ids, mask in zip(b["input_ids"].tolist(), b["attention_mask"].tolist()):
            out[tuple(i for i, m in zip(ids, mask) if m)] += 1
    return out


def test_every_train_row_once_per_epoch(sample):
    _, _, data = sample
    expected = Counter()
    for table in data.split("train"):
        expected.update(tuple(r) for r in table["input_ids"].to_pylist())
    assert len(data.sequences) == 3 and sum(expected.values()) > 100
    spec = spec_of(data)
    one = epoch(data, spec)
    assert rows_of(one) == expected
    assert rows_of(epoch(data, spec, workers=2)) == expected  # worker processes read the same rows
    again = epoch(data, spec)
    assert all(torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(one, again))  # seeded
    other = epoch(data, spec, number=1)
    assert rows_of(other) == expected and any(
        not torch.equal(a["input_ids"], b["input_ids"]) for a, b in zip(one, other)
    )  # a new order every epoch
    assert len(one) == count_batches(index_rows(data.sequences, "train", True), spec, 0, 64, 1)
    assert all(b["input_ids"].shape[1] % 8 == 0 for b in one)


def test_token_budget_batches_waste_less_padding(sample, tmp_path):
    table, tokenizer, _ = sample
    data = dataset(tmp_path, table, tokenizer, parts=2, mode="segment")  # one sequence per segment: lengths vary
    fixed = epoch(data, spec_of(data), window=4096)
    budget = epoch(data, spec_of(data, max_tokens=320), window=4096)
    assert rows_of(fixed) == rows_of(budget)
    for b in budget:
        assert b["input_ids"].numel() <= 320
    index = index_rows(data.sequences, "train", True)
    assert len(budget) == count_batches(index, spec_of(data, max_tokens=320), 0, 4096, 1)

    def waste(batches):
        padded = sum(b["input_ids"].numel() for b in batches)
        return 1 - sum(b["tokens"] for b in batches) / padded

    assert waste(fixed) > 0.3 and waste(budget) < waste(fixed) / 3
    # and the short sequences went together, the long ones together
    widths = sorted(b["input_ids"].shape[1] for b in budget)
    assert widths[0] < widths[-1]


@pytest.mark.parametrize("max_tokens", [0, 320])
def test_process_shares_make_up_the_global_batch(sample, max_tokens):
    _, _, data = sample
    spec = spec_of(data, batch_size=4, max_tokens=max_tokens // 2)
    whole = epoch(data, spec_of(data, batch_size=8, max_tokens=max_tokens), window=4096)
    shares = [epoch(data, spec, rank=r, world=2, window=4096) for r in (0, 1)]
    assert len(shares[0]) == len(shares[1]) == len(whole)  # the processes stay in step
    for w, a, b in zip(whole, *shares):
        # a process with no row of a batch trains on a row that counts nothing (tokens 0)
        assert rows_of([w]) == rows_of([x for x in (a, b) if x["tokens"]])
        assert w["n_labels"] == a["n_labels"] == b["n_labels"] == int((w["labels"] != IGNORE).sum())
        assert (a["labels"] != IGNORE).sum() + (b["labels"] != IGNORE).sum() == w["n_labels"]


def test_a_share_without_rows_counts_nothing(sample):
    """A window's last global batch can have fewer rows than there are processes: a process without a
    row trains on one whose labels are all ignored, so every process makes the same steps."""
    _, _, data = sample
    world, spec = 3, spec_of(data, batch_size=1)
    shares = [epoch(data, spec, rank=r, world=world, window=4096) for r in range(world)]
    assert len({len(s) for s in shares}) == 1
    empty = [b for s in shares for b in s if not b["tokens"]]
    assert empty and all((b["labels"] == IGNORE).all() for b in empty)
    trained = sum((rows_of([b for b in s if b["tokens"]]) for s in shares), Counter())
    assert trained == rows_of(epoch(data, spec, window=4096))


@pytest.fixture
def word_level(sample, tmp_path):
    """A word-level tokenizer over the train words and fake confusable neighbours (never train words), the
    confusables Parquet naming them, and a dataset folder with it."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    table, _, _ = sample
    vocab = sorted({w for ws in table["words"].to_pylist() for w in ws})
    frequent = [w for w, _ in Counter(w for ws in table["words"].to_pylist() for w in ws).most_common(60)]
    rows = [(w, f"zq{w}{rank}", rank) for w in frequent for rank in (1, 2, 3)]
    conf = pa.table(
        {
            "word": [r[0] for r in rows],
            "phonemes": ["P"] * len(rows),
            "neighbor": [r[1] for r in rows],
            "neighbor_phonemes": ["P"] * len(rows),
            "distance": pa.array([1] * len(rows), pa.int16()),
            "rank": pa.array([r[2] for r in rows], pa.int16()),
            "homophone": [False] * len(rows),
        },
        schema=CONFUSABLES_SCHEMA,
    )
    pq.write_table(conf, tmp_path / "en_talks.parquet")
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = specials + vocab + [r[1] for r in rows]
    tok = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", cls_token="[CLS]", sep_token="[SEP]"
    )
    data = dataset(tmp_path / "data", table, tokenizer, parts=2)
    return data, tmp_path / "en_talks.parquet", {r[1]: r[0] for r in rows}


def test_load_confusables_by_rank(word_level):
    _, path, _ = word_level
    confusables = load_confusables(path)
    assert len(confusables) == 60
    word = next(iter(confusables))
    assert confusables[word] == [f"zq{word}1", f"zq{word}2", f"zq{word}3"]
    assert load_confusables(path, k=1)[word] == [f"zq{word}1"]


def test_3r_phoneme_edition_in_a_training_epoch(word_level):
    """The words a training epoch feeds the model include phoneme edits, each one a confusable
    neighbour of the word it replaced, drawn in the loader's workers from the confusables Parquet."""
    data, path, neighbour_of = word_level
    confusables = load_confusables(path)
    spec = spec_of(
        data,
        segments=True,
        tokenizer=data.tokenizer,
        options=data.options,
        augmentation={"kind": "3r", "p_delete": 0.0, "p_substitute": 0.0, "p_phoneme": 0.3},
        confusables=confusables,
    )
    batches = epoch(data, spec, workers=2, window=100, segments=True)
    fed = Counter()
    for b in batches:
        for ids, mask in zip(b["input_ids"].tolist(), b["attention_mask"].tolist()):
            fed.update(data.tokenizer.convert_ids_to_tokens([i for i, m in zip(ids, mask) if m]))
    edited = {w: n for w, n in fed.items() if w.startswith("zq")}
    originals = Counter()
    for table in _segments(data):
        originals.update(w for ws in table["words"].to_pylist() for w in ws)
    confusable_tokens = sum(originals[w] for w in confusables)
    # about 30 % of the words that have neighbours, and every edit a neighbour of an original word
    assert 0.2 * confusable_tokens < sum(edited.values()) < 0.4 * confusable_tokens
    assert set(edited) <= set(neighbour_of) and len(edited) > 20
    assert sum(b["stats"].get("phoneme_edited", 0) for b in batches) == sum(edited.values())
    # the edited words replace theirs: words that have neighbours appear less often than in the data
    assert sum(fed[w] for w in confusables) == confusable_tokens - sum(edited.values())
    # another epoch, another draw
    later = epoch(data, spec, number=1, workers=0, window=100, segments=True)
    assert rows_of(later) != rows_of(batches)


def _segments(data):
    from pipeline.training.data import split_tables

    return split_tables(data.segments, "train", ["words"])


def test_augmentation_carries_case_and_surface():
    table = pa.table(
        {
            "corpus": ["c"],
            "lang": ["en"],
            "doc_id": ["d"],
            "seg_id": pa.array([0], pa.int32()),
            "words": [["the", "iphone", "is", "from", "apple", "inc", "in", "california"]],
            "labels": [["O", "O", "O", "O", "O", "O", "O", "PERIOD"]],
            "split": ["train"],
            "case": [["U", "M", "O", "O", "U", "U", "O", "U"]],
            "surface": [[None, "iPhone", None, None, None, None, None, None]],
        }
    )
    seen = Counter()
    for draw in range(40):
        out = augmented(table, {"kind": "alam", "alpha": 0.5}, draw, 1, None, None, label_set=PAPERS)
        words, case, surface = out["words"][0].as_py(), out["case"][0].as_py(), out["surface"][0].as_py()
        assert len(words) == len(case) == len(surface) == len(out["labels"][0].as_py())
        original = dict(zip(table["words"][0].as_py(), table["case"][0].as_py()))
        for w, c, s in zip(words, case, surface):
            assert c == ("O" if w == "[UNK]" and w not in original else original.get(w, c)) or w == "[UNK]"
            assert s is None or (w == "iphone" and s == "iPhone")
            seen["unk" if w == "[UNK]" else "word"] += 1
    assert seen["unk"] > 10


def test_sequence_case_labels_sit_with_the_punctuation_labels(sample):
    table, tokenizer, _ = sample
    small = table.slice(20, 20)  # the end of one document and the start of the next
    cases = [["U" if i % 3 == 0 else "O" for i, _ in enumerate(ws)] for ws in small["words"].to_pylist()]
    first = small["doc_id"][0].as_py()
    # a document without case information: -100 throughout
    cases = [None if doc == first else c for doc, c in zip(small["doc_id"].to_pylist(), cases)]
    assert len(set(small["doc_id"].to_pylist())) == 2
    cased = small.set_column(small.schema.get_field_index("case"), "case", pa.array(cases, pa.list_(pa.string())))
    sequences, _ = sequences_with_case(cased, tokenizer, max_len=64, label_set=PAPERS)
    unknown = small["doc_id"][0].as_py()
    for labels, case, doc in zip(
        sequences["labels"].to_pylist(), sequences["case_labels"].to_pylist(), sequences["doc_id"].to_pylist()
    ):
        if doc == unknown:
            assert set(case) == {IGNORE}
        else:
            assert [l != IGNORE for l in labels] == [c != IGNORE for c in case]
    assert set(np.concatenate([np.array(c) for c in sequences["case_labels"].to_pylist()])) == {IGNORE, 0, 1}


def test_mixed_case_lexicon_keeps_the_most_frequent_form(tmp_path):
    rows = [
        (["iphone", "is", "here"], [None, None, None], "train"),
        (["iphone", "ipad", "mcdonald"], ["iPhone", "iPad", "McDonald"], "train"),
        (["iphone", "ipad"], ["IPhone", "IPAD"], "train"),
        (["iphone"], ["iPhone"], "train"),
        (["ebay"], ["eBay"], "test"),
    ]
    table = pa.table(
        {
            "words": [r[0] for r in rows],
            "surface": pa.array([r[1] for r in rows], pa.list_(pa.string())),
            "split": [r[2] for r in rows],
        }
    )
    pq.write_table(table, tmp_path / "part-00000.parquet")
    assert mixed_case_lexicon([tmp_path / "part-00000.parquet"]) == {
        "iphone": "iPhone",
        "ipad": "IPAD",  # a tie: the alphabetically first
        "mcdonald": "McDonald",
    }


def test_sequences_of_the_version_2_layout_still_train(sample, tmp_path):
    """A sequences file written before ``attention_mask`` was dropped (layout 2, the column all
    ones) is indexed with the same rows and lengths."""
    _table, _tokenizer, data = sample
    files = []
    for part in data.sequences:
        new = pq.read_table(part)
        ids = new["input_ids"].combine_chunks()
        masks = pa.ListArray.from_arrays(ids.offsets, pa.array(np.ones(len(ids.values), np.int8)))
        files.append(tmp_path / part.name)
        pq.write_table(new.add_column(new.schema.get_field_index("input_ids") + 1, "attention_mask", masks), files[-1])
    assert "attention_mask" in pq.read_schema(files[0]).names
    ours, theirs = index_rows(data.sequences, "train", True), index_rows(files, "train", True)
    assert len(ours) > 0 and np.array_equal(ours.row, theirs.row) and np.array_equal(ours.length, theirs.length)
