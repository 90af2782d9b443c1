"""From labelled segments to model-ready datasets: splits, oversampling, augmentation, sequences, exports."""

from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.datasets import digests, write_dataset
from support.reference import build_sequences_reference

from corpora import get_reader
from pipeline.datasets.augment import alam, three_r
from pipeline.datasets.export import export_datasets
from pipeline.datasets.oversample import oversample_dataset
from pipeline.datasets.sequences import build_sequences, train_tokenizer, words_from_sequences
from pipeline.datasets.split import SplitInput, split_dataset
from pipeline.engine.hashsets import word_codes
from pipeline.engine.reading import read_segments
from pipeline.labels import LABELS, PAPERS
from pipeline.params import OversampleParams, SplitParams
from pipeline.schema import segments_table, with_column


@pytest.fixture(scope="module")
def news(shared):
    """Bangla news articles (one document each), the stand-in corpus of the Bangla recipe."""
    return get_reader("news_json")(
        [shared / "bangla_news/articles_2025-12-29.json"],
        lang="bn",
        corpus="bn_news",
        fields={"title": "headline", "text": "article", "source": "paper_name", "id": "url"},
    ).table


def _split(tables, params: dict, tmp_path, name="out", fixed=None):
    inputs = []
    for i, table in enumerate(tables):
        folder = write_dataset(table, tmp_path / f"in-{name}-{i}", parts=2)
        inputs.append(SplitInput(f"c{i}", str(folder), (fixed or {}).get(i)))
    report = split_dataset(inputs, SplitParams.model_validate(params), tmp_path / name, tmp_path / f"{name}.json")
    return read_segments(tmp_path / name), report


def _doc_splits(table):
    out = {}
    for d, s in zip(table["doc_id"].to_pylist(), table["split"].to_pylist()):
        out.setdefault(d, set()).add(s)
    return out


def test_splits_are_stable_and_disjoint(news, tmp_path):
    ratios = {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 5}
    first, _ = _split([news], ratios, tmp_path, "first")
    per_doc = _doc_splits(first)
    assert all(len(s) == 1 for s in per_doc.values())  # a document lies in one split
    # old documents keep their split when others are added
    extra = segments_table(
        "x", "bn", [f"new-{i}" for i in range(50)], [0] * 50, [["ক"]] * 50, [["PERIOD"]] * 50, vocabulary=LABELS
    )
    more, _ = _split([news, extra], ratios, tmp_path, "more")
    again = _doc_splits(more)
    assert all(again[d] == per_doc[d] for d in per_doc)
    counts = Counter(next(iter(s)) for s in per_doc.values())
    assert abs(counts["train"] / len(per_doc) - 0.8) < 0.08
    by_count, report = _split([news], {"counts": {"train": 200, "dev": 50, "test": 20}, "seed": 5}, tmp_path, "n")
    docs = Counter(next(iter(s)) for s in _doc_splits(by_count).values())
    assert docs == Counter({"train": 200, "dev": 50, "test": 20})
    assert report["documents_beyond_counts"] == len(per_doc) - 270  # every document left out is reported


def test_split_counts_match_the_rule_on_any_sharding(news, tmp_path):
    """Count splits take documents in hash order: the first 20 by (hash, id) go to train, whatever the shards."""
    from pipeline.datasets.split import doc_hash

    table, _ = _split([news], {"counts": {"train": 20, "dev": 5}, "seed": 9}, tmp_path)
    docs = sorted(set(news["doc_id"].to_pylist()), key=lambda d: (doc_hash(d, 9), d))
    expected = {**dict.fromkeys(docs[:20], "train"), **dict.fromkeys(docs[20:25], "dev")}
    assert {d: next(iter(s)) for d, s in _doc_splits(table).items()} == expected


def test_document_hashes_are_the_per_document_hash(news):
    """The array of document hashes (one digest buffer) equals the documented hash of each id: a
    blake2b digest of seed and id, big-endian, over 2**64 (as the splits were always drawn)."""
    import hashlib

    from pipeline.datasets.split import doc_hashes

    ids = [*sorted(set(news["doc_id"].to_pylist())), "", "é#1"]
    for seed in (0, 9, 2021):
        expected = [
            int.from_bytes(hashlib.blake2b(f"{seed}\0{d}".encode(), digest_size=8).digest(), "big") / 2**64 for d in ids
        ]
        assert doc_hashes(ids, seed).tolist() == expected


def _assert_cut_80_10_10_in_hash_order(strata: dict[str, list[str]], got: dict[str, str], seed: int) -> None:
    """Each stratum's documents, in hash order, are train, then dev, then test, at exact 80/10/10 cuts."""
    from pipeline.datasets.split import doc_hash

    for members in strata.values():
        order = sorted(members, key=lambda d: (doc_hash(d, seed), d))
        n = len(order)
        cut1, cut2 = round(0.8 * n), round(0.9 * n)
        assert [got[d] for d in order] == ["train"] * cut1 + ["dev"] * (cut2 - cut1) + ["test"] * (n - cut2)


@pytest.mark.parametrize("keys_per_task", [1, 64])
def test_stratified_split_exact_shares_per_stratum(shared, tmp_path, monkeypatch, keys_per_task):
    """Gupta 2021: each stratum (the marks a line has) cut by the ratios in hash order, whether the
    cut points' pass reads the shards' keys one task a shard or several."""
    from pipeline.datasets import split
    from pipeline.datasets.split import marks_of

    monkeypatch.setattr(split, "KEYS_PER_TASK", keys_per_task)

    lines = get_reader("text")(
        [shared / "indic/flores/hin_Deva.devtest"], lang="hi", corpus="h", doc_boundary="line", quoting="csv"
    ).table
    params = {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 21, "stratify": True, "min_marks": 1}
    table, report = _split([lines], params, tmp_path)
    assert report["segments_without_marks_dropped"] == sum(
        1 for labels in lines["labels"].to_pylist() if all(l == "O" for l in labels)
    )
    strata = {}
    for doc, labels in zip(lines["doc_id"].to_pylist(), lines["labels"].to_pylist()):
        if any(l != "O" for l in labels):
            strata.setdefault(marks_of(labels), []).append(doc)
    got = {d: next(iter(s)) for d, s in _doc_splits(table).items()}
    _assert_cut_80_10_10_in_hash_order(strata, got, 21)


@pytest.mark.real_corpora  # more FLORES lines than the committed cut
def test_stratified_split_of_multi_sentence_documents(shared, tmp_path):
    """A document's stratum is the set of marks over all its sentences, so documents of five
    sentences still split 80/10/10 (marks joined per sentence made nearly every document a stratum
    of its own, and each such one-document stratum rounded to train)."""
    from pipeline.datasets.split import marks_of

    lines = (shared / "indic/flores/hin_Deva.devtest").read_text(encoding="utf-8").splitlines()
    text = tmp_path / "docs.txt"
    text.write_text("".join(line + "\n" + ("\n" if i % 5 == 4 else "") for i, line in enumerate(lines)), "utf-8")
    docs = get_reader("text")([text], lang="hi", corpus="h", doc_boundary="blank_line", quoting="csv").table
    params = {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 3, "stratify": True}
    table, _ = _split([docs], params, tmp_path)
    labels_of: dict[str, list[str]] = {}
    for doc, labels in zip(docs["doc_id"].to_pylist(), docs["labels"].to_pylist()):
        labels_of.setdefault(doc, []).extend(labels)
    strata: dict[str, list[str]] = {}
    for doc, labels in labels_of.items():
        strata.setdefault(marks_of(labels), []).append(doc)
    assert len(strata) <= 8 and len(labels_of) > 150
    got = {d: next(iter(s)) for d, s in _doc_splits(table).items()}
    _assert_cut_80_10_10_in_hash_order(strata, got, 3)
    shares = Counter(got.values())
    assert abs(shares["dev"] / len(got) - 0.1) < 0.02 and abs(shares["test"] / len(got) - 0.1) < 0.02


def test_segment_and_document_filters_compose(shared, tmp_path):
    """min_marks drops segments, then min_sentences drops documents by the end marks of the
    segments left (both kept as one row mask, the table filtered once): the rows and the
    counts of a plain Python filter, whatever the parts."""
    from pipeline.labels import LABELS, SENTENCE_END_IDS

    ends = {LABELS[i] for i in SENTENCE_END_IDS}
    lines = (shared / "indic/flores/hin_Deva.devtest").read_text(encoding="utf-8").splitlines()[:400]
    text = tmp_path / "docs.txt"
    # documents of 1 to 4 lines, some lines without a mark (their last word's mark cut off)
    body = []
    for i, line in enumerate(lines):
        body.append(line.rstrip("।.?!") if i % 3 == 0 else line)
        if i % 4 == i % 7 % 4:
            body.append("")
    text.write_text("\n".join(body) + "\n", "utf-8")
    docs = get_reader("text")([text], lang="hi", corpus="h", doc_boundary="blank_line", quoting="csv").table
    params = {"ratios": {"train": 0.8, "dev": 0.2}, "seed": 4, "min_marks": 1, "min_sentences": 1}
    table, report = _split([docs], params, tmp_path)
    rows = list(zip(docs["doc_id"].to_pylist(), docs["seg_id"].to_pylist(), docs["labels"].to_pylist()))
    marked = [r for r in rows if sum(l != "O" for l in r[2]) >= 1]
    sentences = Counter()
    for doc, _, labels in marked:
        sentences[doc] += sum(l in ends for l in labels)
    kept = [(doc, seg) for doc, seg, _ in marked if sentences[doc] > 1]
    assert 0 < len(kept) < len(marked) < len(rows)  # both filters drop something here
    assert list(zip(table["doc_id"].to_pylist(), table["seg_id"].to_pylist())) == kept
    assert report["segments_without_marks_dropped"] == len(rows) - len(marked)
    assert report["documents_with_too_few_sentences_dropped"] == sum(1 for n in sentences.values() if n <= 1)


def test_smallest_keys_are_heapq_nsmallest_with_hash_ties():
    """Count splits take a shard's n smallest (hash, doc_id, corpus) keys; tuples are made only for
    the documents whose hash can be among them, ties on the hash included."""
    import heapq

    from pipeline.datasets.split import _Docs

    rng = np.random.default_rng(3)
    tied = rng.choice([0.1, 0.25, 0.5, 0.75], size=60) + rng.choice([0.0, 0.01], size=60)
    for hashes in (tied, rng.random(60)):
        doc_ids = pa.array([f"d{i:03d}" for i in rng.permutation(60)])
        corpora = pa.array(rng.choice(["a", "b"], size=60).tolist())
        docs = _Docs(pa.table({"x": [0]}), None, np.zeros(1, np.int64), hashes, doc_ids, corpora, None)
        every = list(zip(hashes.tolist(), doc_ids.to_pylist(), corpora.to_pylist()))
        for n in (0, 1, 7, 15, 16, 59, 60, 200):
            assert docs.smallest_keys(n) == heapq.nsmallest(n, every)


@pytest.mark.parametrize(
    "column",
    [
        pa.array(["a", "a", "b", None, None, "b", "b"]),
        pa.chunked_array([["a", "a"], ["a", "b"], [], ["b", "c"]]),
        pa.array(["x", "x", "y", "x"]).dictionary_encode(),
        pa.array([], pa.string()),
        pa.array(["q"]),
    ],
)
def test_value_changes_compare_as_python_values(column):
    from pipeline.engine.dataset import value_changes

    values = column.to_pylist()
    assert value_changes(column).tolist() == [i == 0 or values[i] != values[i - 1] for i in range(len(values))]


def test_duplicate_report_and_drop(tmp_path):
    table = segments_table(
        "c",
        "en",
        ["a", "b", "c"],
        [0, 0, 0],
        [["hello", "there"], ["hello", "there"], ["bye"]],
        [["O", "PERIOD"], ["O", "PERIOD"], ["PERIOD"]],
        vocabulary=LABELS,
    )
    fixed = {0: "train", 1: "test", 2: "dev"}
    parts = [table.slice(i, 1) for i in range(3)]
    _kept, report = _split(parts, {}, tmp_path, "keep", fixed)
    assert report["duplicates_across_splits"] == {"test+train": 1}
    dropped, report = _split(parts, {"drop_train_duplicates": True}, tmp_path, "drop", fixed)
    assert report["train_duplicates_dropped"] == 1 and dropped["split"].to_pylist() == ["test", "dev"]


def test_question_oversampling_train_only(news, tmp_path):
    table, _ = _split([news], {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 1}, tmp_path, "split")
    report = oversample_dataset(
        tmp_path / "split",
        OversampleParams(question_share=0.02),
        3,
        tmp_path / "over",
        tmp_path / "aug",
        tmp_path / "over.json",
    )
    out = read_segments(tmp_path / "over")
    train = out.filter(pc.equal(out["split"], "train"))
    flat = pc.list_flatten(train["labels"])
    share = pc.sum(pc.equal(flat, "QUESTION")).as_py() / len(flat)
    assert abs(share - 0.02) < 0.002 and report["oversampling"]["after"] == pytest.approx(share, abs=1e-6)
    assert report["oversampling"]["inserted"] > 0
    rest = table.filter(pc.not_equal(table["split"], "train"))
    assert out.filter(pc.not_equal(out["split"], "train")).equals(rest)  # dev/test untouched
    # every copy is a question sentence of train, inside a train document of its language
    assert (
        train.num_rows == table.filter(pc.equal(table["split"], "train")).num_rows + report["oversampling"]["inserted"]
    )


def test_oversampling_same_bytes_on_every_bucketing_and_index_run(news, tmp_path, monkeypatch, caplog):
    """Copies travel from senders to buckets of receiving shards, then from a bucket's file to each
    receiver; the driver writes the index of the messages in sorted runs of a bounded number of
    messages.  A bucket per receiver (a message per shard pair), the default buckets, one bucket
    for all, and runs of two messages give the same bytes, on two workers."""
    import logging

    from pipeline.datasets import oversample
    from pipeline.params import EngineParams

    _split([news], {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 1}, tmp_path, "split")
    engine = EngineParams(workers=2, shard_rows=40)
    outputs = {}
    for name, width, run_messages in (
        ("per receiver", 1, 10**6),
        ("default", None, 10**6),
        ("one bucket", 10**6, 10**6),
        ("runs of two", 1, 2),
    ):
        monkeypatch.setattr(oversample, "BUCKET_SHARDS", width)
        monkeypatch.setattr(oversample, "RUN_MESSAGES", run_messages)
        caplog.clear()
        with caplog.at_level(logging.INFO, logger="pipeline.datasets.oversample"):
            report = oversample_dataset(
                tmp_path / "split",
                OversampleParams(question_share=0.02),
                3,
                tmp_path / name / "over",
                tmp_path / name / "aug",
                tmp_path / name / "over.json",
                engine=engine,
            )
        (line,) = [r.getMessage() for r in caplog.records if "copy messages" in r.getMessage()]
        messages, buckets, _, runs = (int(w) for w in line.split() if w.isdigit())
        outputs[name] = (digests(tmp_path / name / "over"), report, messages, buckets, runs)
    per_receiver, default, one_bucket, many_runs = outputs.values()
    assert per_receiver[2] > 100 and per_receiver[4] == 1
    assert per_receiver[2] >= default[2] > one_bucket[2] and one_bucket[3] == 1
    assert many_runs[2] == per_receiver[2] and many_runs[4] > 10
    assert per_receiver[1]["oversampling"]["inserted"] > 0
    for other in (default, one_bucket, many_runs):
        assert other[:2] == per_receiver[:2]


def test_oversampling_with_3r_copies_same_on_every_sharding(news, tmp_path):
    """Question oversampling with materialized 3R copies (phoneme edition from a confusables
    table): shards of 40 rows give the rows of one shard, the same bytes on one worker and two,
    and the copies hold neighbours of the confusables table in place of train words."""
    import pyarrow.parquet as pq

    from pipeline.params import EngineParams

    table, _ = _split([news], {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 1}, tmp_path, "split")
    train_words = Counter(
        w for row in table.filter(pc.equal(table["split"], "train"))["words"].to_pylist() for w in row
    )
    common = [w for w, _ in train_words.most_common(40)]
    neighbours = [f"{w}~{r}" for w in common for r in (1, 2)]  # words no text holds
    confusables = tmp_path / "confusables.parquet"
    pq.write_table(
        pa.table({"word": [w for w in common for _ in (1, 2)], "neighbor": neighbours, "rank": [1, 2] * len(common)}),
        confusables,
    )
    params = OversampleParams.model_validate(
        {"question_share": 0.02, "augment": {"kind": "3r", "p_phoneme": 0.3, "copies": 2, "confusables": "c"}}
    )
    runs = {
        "whole": EngineParams(workers=1, shard_rows=10**9),
        "one": EngineParams(workers=1, shard_rows=40),
        "two": EngineParams(workers=2, shard_rows=40),
    }
    reports = {}
    for name, engine in runs.items():
        out = tmp_path / name
        reports[name] = oversample_dataset(
            tmp_path / "split",
            params,
            3,
            out / "over",
            out / "aug",
            out / "r.json",
            confusables=confusables,
            engine=engine,
        )
    assert reports["one"] == reports["two"] == reports["whole"]
    for part in ("over", "aug"):
        assert read_segments(tmp_path / "one" / part).equals(read_segments(tmp_path / "whole" / part))
        assert digests(tmp_path / "one" / part) == digests(tmp_path / "two" / part)
    augmented = read_segments(tmp_path / "whole" / "aug")
    edited = Counter(w for row in augmented["words"].to_pylist() for w in row if w in set(neighbours))
    assert sum(edited.values()) > 50 and reports["whole"]["augmentation"]["kind"] == "3r"


def _insert_reference(table: pa.Table, incoming: pa.Table) -> pa.Table:
    """The insertion rule written plainly: copies in order, each into its target document (the
    target_doc-th train document of its language) at min(int(position * (n + 1)), n) of the n
    rows it has by then; seg_id renumbered in the documents that received copies."""
    rows = table.to_pylist()
    docs, train_docs = [], {}
    for row in rows:
        if not docs or (docs[-1][0]["corpus"], docs[-1][0]["doc_id"]) != (row["corpus"], row["doc_id"]):
            docs.append([])
            if row["split"] == "train":
                train_docs.setdefault(row["lang"], []).append(len(docs) - 1)
        docs[-1].append(dict(row))
    touched = set()
    for copy in incoming.to_pylist():
        d = train_docs[copy["target_lang"]][copy["target_doc"]]
        items = docs[d]
        first = items[0]
        new = {**first, **{k: copy[k] for k in ("words", "labels", "case", "surface", "lang")}}
        items.insert(min(int(copy["position"] * (len(items) + 1)), len(items)), new)
        touched.add(d)
    for d in touched:
        for k, row in enumerate(docs[d]):
            row["seg_id"] = k
    return pa.Table.from_pylist([row for items in docs for row in items], schema=table.schema)


@pytest.mark.parametrize("encoded", [False, True], ids=["strings", "dictionaries"])
def test_question_copies_are_inserted_by_the_documented_rule(news, tmp_path, encoded):
    """The vectorized insertion of question copies equals the rule applied one copy at a time, with
    several copies into one document, several languages and copies at both ends of a document; a
    shard read as dictionaries (as the stage reads it) keeps its dictionaries, the copies' new
    values appended as Arrow's unification of the two dictionaries appends them."""
    from pipeline.datasets.oversample import COPY_SCHEMA, _insert
    from pipeline.schema import ENCODED_STRINGS, SEGMENT_SCHEMA, as_dictionaries

    table, _ = _split([news], {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}, "seed": 1}, tmp_path, "split")
    table = table.slice(0, 600)
    langs = np.where(np.arange(table.num_rows) % 7 < 4, "ms", "en")  # two languages, whole documents kept apart
    doc_first = {}
    for i, d in enumerate(table["doc_id"].to_pylist()):
        doc_first.setdefault(d, i)
    table = with_column(table, "lang", pa.array([langs[doc_first[d]] for d in table["doc_id"].to_pylist()]))
    reference_docs = {}
    for row in table.to_pylist():
        if row["split"] == "train":
            reference_docs.setdefault(row["lang"], {}).setdefault(row["doc_id"], None)
    rng = np.random.default_rng(4)
    copies = []
    for k in range(120):
        lang = ["ms", "en"][k % 2]
        n_docs = len(reference_docs[lang])
        source = table.slice(int(rng.integers(table.num_rows)), 1).to_pylist()[0]
        copies.append({
            "lang": source["lang"], "words": source["words"], "labels": source["labels"],
            "case": source["case"], "surface": source["surface"], "target_lang": lang,
            "target_doc": int(rng.integers(min(n_docs, 5))),  # a few documents get many copies
            "order_i": k, "order_j": 0, "position": [0.0, 0.999999, float(rng.random())][k % 3],
        })  # fmt: skip
    incoming = pa.Table.from_pylist(copies, schema=COPY_SCHEMA)
    got = _insert(as_dictionaries(table) if encoded else table, incoming)
    assert got.num_rows == table.num_rows + incoming.num_rows
    if encoded:
        for name in ("words", "labels", "case", "surface"):
            shard = as_dictionaries(table)[name].combine_chunks()
            unified = pa.concat_arrays([shard, incoming[name].combine_chunks().cast(ENCODED_STRINGS)])
            assert got[name].combine_chunks().values.dictionary.equals(unified.values.dictionary)
        got = got.cast(SEGMENT_SCHEMA)
    assert got.equals(_insert_reference(table, incoming))


def test_augmentation_rates_on_100k_words():
    rng = np.random.default_rng(11)
    counts = Counter()
    for _ in range(2000):
        alam(["w"] * 60, ["O"] * 59 + ["PERIOD"], rng, counts=counts)
    assert counts["tokens"] >= 100_000
    for op, expected in (("substituted", 0.15 * 0.4), ("deleted", 0.15 * 0.4), ("inserted", 0.15 * 0.2)):
        assert abs(counts[op] / counts["tokens"] - expected) <= 0.1 * expected, op
    counts = Counter()
    vocab = ["a", "b", "c"]
    for _ in range(2000):
        three_r(
            ["like"] * 60, ["O"] * 60, rng, vocabulary=vocab, confusables={"like": ["alike", "bike"]}, counts=counts
        )
    for op in ("deleted", "substituted", "phoneme_edited"):
        assert abs(counts[op] / counts["tokens"] - 0.05) <= 0.005, op


class _Fixed:
    """A generator whose draws are given: which words RWD deletes."""

    def __init__(self, draws):
        self.draws = np.array(draws)

    def random(self, n):
        return self.draws[:n]


def test_rwd_forward_label_rule_table_i():
    words = ["i", "like", "cooking", "mom", "and", "dad"]
    labels = ["O", "O", "COMMA", "O", "O", "PERIOD"]
    # Scenario 1: deleting "mom" removes its label
    assert three_r(words, labels, _Fixed([0.9, 0.9, 0.9, 0.01, 0.9, 0.9])) == (
        ["i", "like", "cooking", "and", "dad"],
        ["O", "O", "COMMA", "O", "PERIOD"],
    )
    # Scenario 2: deleting "dad" keeps its PERIOD on the word before it
    assert three_r(words, labels, _Fixed([0.9, 0.9, 0.9, 0.9, 0.9, 0.01])) == (
        ["i", "like", "cooking", "mom", "and"],
        ["O", "O", "COMMA", "O", "PERIOD"],
    )


@pytest.fixture(scope="module")
def dev_sample(shared):
    table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev").table.slice(0, 600)
    return with_column(table, "split", pa.array(["train"] * 600))


@pytest.mark.parametrize(
    "mode,stride,slot", [("chunk", 0, False), ("segment", 0, False), ("chunk", 8, False), ("chunk", 0, True)]
)
def test_sequences_fit_and_reconstruct(dev_sample, mode, stride, slot):
    tokenizer = train_tokenizer((w for ws in dev_sample["words"].to_pylist() for w in ws), vocab_size=800)
    sequences, _counts = build_sequences(
        dev_sample, tokenizer, max_len=48, mode=mode, stride=stride, slot_filling=slot, label_set=PAPERS
    )
    reference, _ = build_sequences_reference(
        dev_sample, tokenizer, max_len=48, mode=mode, stride=stride, slot_filling=slot
    )
    assert sequences.equals(reference)  # the vectorized packing is the plain rule
    given, _ = build_sequences(
        dev_sample, tokenizer, max_len=48, mode=mode, stride=stride, slot_filling=slot, label_set=PAPERS,
        words=word_codes(dev_sample["words"]),
    )  # fmt: skip
    assert given.equals(sequences)  # the words' codes made by the caller (shared with the audit) or here
    assert max(len(ids) for ids in sequences["input_ids"].to_pylist()) <= 48
    recovered = words_from_sequences(sequences, tokenizer, PAPERS)[("dev2012", "train")]
    gold = [l for labels in dev_sample["labels"].to_pylist() for l in labels]
    assert [i for i, _ in recovered] == list(range(len(gold)))
    assert [l for _, l in recovered] == gold
    if slot:
        for ids, index in zip(sequences["input_ids"].to_pylist(), sequences["word_index"].to_pylist()):
            words_here = {w for w in index if w >= 0}
            assert ids.count(tokenizer.mask_token_id) == len(words_here)


def test_exports_round_trip(dev_sample, tmp_path):
    write_dataset(dev_sample, tmp_path / "dev")
    export_datasets([tmp_path / "dev"], "tsv", tmp_path / "tsv")
    back = get_reader("tsv")([tmp_path / "tsv/train.tsv"], lang="en", corpus="dev").table
    assert back["words"].to_pylist() == dev_sample["words"].to_pylist()
    assert back["labels"].to_pylist() == dev_sample["labels"].to_pylist()
    export_datasets([tmp_path / "dev"], "nemo", tmp_path / "nemo")
    text = (tmp_path / "nemo/train/text.txt").read_text().splitlines()
    labels = (tmp_path / "nemo/train/labels.txt").read_text().splitlines()
    assert len(text) == len(labels) == dev_sample.num_rows
    assert all(len(t.split()) == len(l.split()) for t, l in zip(text, labels))


def test_word_pieces_ignore_the_padding_a_pretrained_tokenizer_carries():
    """The packaged MiniLM's tokenizer.json pads every encoding to 128: a word is still its own pieces."""
    from transformers import AutoTokenizer

    from pipeline.datasets.pretrained import pretrained_path
    from pipeline.datasets.sequences import PieceCache

    tokenizer = AutoTokenizer.from_pretrained(pretrained_path("packaged:minilm"))
    words = ["restoration", "the", "punctuation", "zzyzx", "naïve"]
    pieces = [p.tolist() for p in PieceCache(tokenizer).pieces(words)]  # before any call through transformers
    expected = tokenizer(words, add_special_tokens=False)["input_ids"]
    assert pieces == expected
    assert max(len(e) for e in expected) < 8


def test_piece_cache_cleared_when_full_gives_the_same_pieces():
    """A cache over its limit starts again; the ids of every word stay the tokenizer's own."""
    from pipeline.datasets.sequences import PieceCache

    words = ["the", "cat", "sat", "on", "the", "mat", "while", "a", "dog", "barked", "at", "the", "cats"]
    tokenizer = train_tokenizer(iter(words), vocab_size=60)
    cache = PieceCache(tokenizer, limit=4)
    expected = [e.ids or [tokenizer.unk_token_id] for e in tokenizer.backend_tokenizer.encode_batch(words)]
    for batch in (words[:3], words[3:9], words[:5], words[9:]):
        distinct = list(dict.fromkeys(batch))
        start, length = cache.lookup(distinct)
        assert len(cache.index) <= max(4, len(distinct))
        got = [cache.flat[s : s + n].tolist() for s, n in zip(start.tolist(), length.tolist())]
        assert got == [expected[words.index(w)] for w in distinct]


@pytest.mark.parametrize("tokenizer_name", ["train", "packaged:minilm"])
def test_sequences_step_packs_with_the_saved_backend_as_with_transformers(dev_sample, tmp_path, tokenizer_name):
    """The workers of the sequences stage pack with the tokenizer's backend alone, loaded from its
    JSON (the packaged MiniLM's pads to 128: turned off), and never import transformers or torch."""
    import pickle
    import subprocess
    import sys

    from pipeline.datasets.pretrained import load_tokenizer, save_tokenizer
    from pipeline.datasets.sequences import SequencesStep, packing_files
    from pipeline.engine.dataset import row_shards

    if tokenizer_name == "train":
        tokenizer = train_tokenizer((w for ws in dev_sample["words"].to_pylist() for w in ws), vocab_size=800)
    else:
        tokenizer = load_tokenizer(tokenizer_name)
    save_tokenizer(tokenizer, tmp_path / "tok")
    backend = packing_files(tokenizer, tmp_path / "tok", tmp_path)
    shard = row_shards(write_dataset(dev_sample, tmp_path / "segments", parts=1), 10**6)[0]
    light = SequencesStep(tmp_path / "tok", 64, "chunk", 0, False, PAPERS, backend)(shard).table
    full = SequencesStep(tmp_path / "tok", 64, "chunk", 0, False, PAPERS)(shard).table
    assert light.equals(full) and light.num_rows > 10
    (tmp_path / "step.pickle").write_bytes(
        pickle.dumps((SequencesStep(tmp_path / "tok", 64, "chunk", 0, False, PAPERS, backend), shard))
    )
    probe = (
        "import pickle, sys; from pipeline.datasets.sequences import SequencesStep; "
        f"step, shard = pickle.loads(open({str(tmp_path / 'step.pickle')!r}, 'rb').read()); "
        "print(step(shard).table.num_rows, 'transformers' in sys.modules, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == [str(light.num_rows), "False", "False"]


def test_sequences_driver_trains_and_saves_a_tokenizer_without_torch(tmp_path):
    """Training, saving and loading back a trained tokenizer import no torch (AutoTokenizer would:
    about 190 MB, which made the driver the stage's largest process)."""
    import subprocess
    import sys

    probe = (
        "import sys; from pipeline.datasets.sequences import train_tokenizer, packing_files; "
        "from pipeline.datasets.pretrained import save_tokenizer; "
        "tok = train_tokenizer(iter('the cat sat on the mat'.split()), vocab_size=40); "
        f"save_tokenizer(tok, {str(tmp_path / 'tok')!r}); "
        f"path, ids = packing_files(tok, {str(tmp_path / 'tok')!r}, {str(tmp_path)!r}); "
        "print(ids['unk_token_id'] is not None, 'torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["True", "False"]
    assert (tmp_path / "backend.json").is_file()


@pytest.mark.parametrize("lowercase", [False, True])
def test_tokenizer_trained_on_word_counts_is_the_one_trained_on_the_text(shared, lowercase):
    """The sequences stage counts words in the workers and feeds the trainer each distinct word
    repeated by its count: the tokenizer must be byte for byte the one trained on the running
    text (raw lines, not yet NFC, so the normalizer's work is part of the check)."""
    from collections import Counter

    from pipeline.datasets.sequences import normalized_counts, repeated_words

    lines = []
    for name in ("indic/flores/hin_Deva.devtest", "indic/flores/ben_Beng.devtest", "iwslt_en/dev2012.tsv"):
        lines += (shared / name).read_text(encoding="utf-8").splitlines()[:400]
    # words that normalize alike, final sigma, dotted I, a word that is a lone combining mark
    lines += ["ΟΔΟΣ ΟΔΟΣ. Σ İstanbul istanbul STRASSE Straße", "Cafe\u0301 Café \u0301 \u093e"] * 40
    counts = Counter(w for line in lines for w in line.split())
    assert max(counts.values()) > 300  # some words are repeated over more than one line of repeats
    from_text = train_tokenizer(iter([lines]), vocab_size=1500, lowercase=lowercase)
    from_counts = train_tokenizer(repeated_words(counts, per_line=64), vocab_size=1500, lowercase=lowercase)
    assert from_counts.backend_tokenizer.to_str() == from_text.backend_tokenizer.to_str()
    # as the stage trains it: words normalized once each, the trainer without its normalizer
    normalized = normalized_counts(counts, lowercase)
    assert len(normalized) < len(counts)  # "Cafe\u0301" and "Café" are one word
    from_normalized = train_tokenizer(repeated_words(normalized, per_line=64), 1500, lowercase, normalized=True)
    assert from_normalized.backend_tokenizer.to_str() == from_text.backend_tokenizer.to_str()
    assert len(from_text.get_vocab()) == 1500
