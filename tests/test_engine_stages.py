"""Every stage after ingest, sharded: the same output as one shard (or the in-memory function), the
same bytes from the local pool (1 or 2 workers) and Dask, whole-corpus checks before anything is
written, documents never cut."""

import itertools
import json
import shutil

import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.corpora import FIXTURES, require_real
from support.datasets import digests, write_dataset

from pipeline.align.datasets import align_datasets
from pipeline.align.pairing import AlignmentError
from pipeline.align.tables import align_tables
from pipeline.datasets.oversample import oversample_dataset
from pipeline.datasets.sequences import build_sequences, sequences_dataset, train_tokenizer
from pipeline.datasets.split import SplitInput, split_dataset
from pipeline.engine.dataset import read_rows, row_shards
from pipeline.engine.reading import read_segments
from pipeline.engine.writing import write_parquet
from pipeline.errors import InputError
from pipeline.labels import LABELS, PAPERS
from pipeline.operations.audit import audit
from pipeline.params import EngineParams, OversampleParams, SequencesParams, SplitParams
from pipeline.schema import concat, segments_table, with_column

ENGINES = (("one", "local", 1), ("two", "local", 2), ("dask", "dask", 2))


def asr_like(table: pa.Table) -> pa.Table:
    """A hypothesis from the reference: every 13th word lost, every 17th misheard, no punctuation."""
    words = []
    position = 0
    for row in table["words"].to_pylist():
        out = []
        for w in row:
            position += 1
            if position % 13 == 0:
                continue
            out.append("uh" if position % 17 == 0 else w)
        words.append(out)
    labels = pa.array([["O"] * len(w) for w in words], pa.list_(pa.string()))
    return segments_table(
        "talks_asr", "en", table["doc_id"], table["seg_id"], pa.array(words), labels, vocabulary=LABELS
    )


@pytest.fixture(scope="module")
def talks(shared, tmp_path_factory):
    """Real TED talks (16 documents): the reference as a dataset of a part per talk, the hypothesis
    as one part."""
    from corpora import get_reader

    files = sorted((shared / "iwslt_en_raw").glob("*.xml"))
    ref = get_reader("ted_xml")(files, lang="en", corpus="talks").table
    folder = tmp_path_factory.mktemp("talks")
    write_dataset(ref, folder / "ref.parquet", by_doc=True)
    hyp = asr_like(ref)
    write_dataset(hyp, folder / "hyp.parquet")
    return folder, ref, hyp


def test_row_shards_never_split_a_document(talks):
    folder, _ref, hyp = talks
    shards = row_shards(folder / "hyp.parquet", 100)
    assert len(shards) > 5
    tables = [read_rows(s) for s in shards]
    assert sum(t.num_rows for t in tables) == hyp.num_rows
    docs_per_shard = [set(t["doc_id"].to_pylist()) for t in tables]
    for a, b in itertools.pairwise(docs_per_shard):
        assert not a & b  # a document lies in one shard
    assert concat(tables)["words"].to_pylist() == hyp["words"].to_pylist()


@pytest.mark.slow
def test_align_sharded_equals_in_memory_on_every_engine(talks, tmp_path):
    folder, ref, hyp = talks
    from pipeline.text.verbalize import verbalizer_or_none

    whole, whole_report = align_tables(ref, hyp, corpus="aligned", workers=1, verbalizer=verbalizer_or_none("en"))
    for name, engine, workers in ENGINES:
        report = align_datasets(
            folder / "ref.parquet",
            folder / "hyp.parquet",
            tmp_path / name,
            tmp_path / f"{name}.json",
            lang="en",
            corpus="aligned",
            engine=EngineParams(engine=engine, workers=workers, shard_rows=150),
        )
        assert report == whole_report
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert len(list((tmp_path / "one").glob("part-*"))) > 3
    assert read_segments(tmp_path / "one").equals(whole)
    assert 0.05 < whole_report["wer"]["wer"] < 0.2 and whole_report["marks"]["transferred"] > 1000


def test_align_checks_the_whole_corpus_before_writing(talks, tmp_path):
    folder, _ref, hyp = talks
    engine = EngineParams(workers=2, shard_rows=150)
    with pytest.raises(AlignmentError, match=r"document pair\(s\) above max_wer 0\.01"):
        align_datasets(
            folder / "ref.parquet",
            folder / "hyp.parquet",
            tmp_path / "out",
            tmp_path / "r.json",
            lang="en",
            max_wer=0.01,
            engine=engine,
        )
    assert list(tmp_path.iterdir()) == []  # no output, no staging, no lock left
    stray = segments_table("x", "en", ["no-such-talk"], [0], [["hello", "world"]], [["O", "O"]], vocabulary=LABELS)
    write_dataset(concat([hyp, stray]), tmp_path / "stray.parquet")
    with pytest.raises(AlignmentError, match="no-such-talk"):
        align_datasets(
            folder / "ref.parquet",
            tmp_path / "stray.parquet",
            tmp_path / "out",
            tmp_path / "r.json",
            lang="en",
            engine=engine,
        )
    assert not (tmp_path / "out").exists() and not (tmp_path / "r.json").exists()


def test_align_by_order_across_shards(talks, tmp_path):
    """Documents paired by position, however the hypothesis is sharded."""
    folder, ref, hyp = talks
    renamed = with_column(hyp, "doc_id", pc.binary_join_element_wise("asr-", hyp["doc_id"], ""))
    write_dataset(renamed, tmp_path / "hyp.parquet")
    from pipeline.text.verbalize import verbalizer_or_none

    expected, _ = align_tables(ref, renamed, pair_by="order", verbalizer=verbalizer_or_none("en"))
    align_datasets(
        folder / "ref.parquet",
        tmp_path / "hyp.parquet",
        tmp_path / "out",
        tmp_path / "r.json",
        pair_by="order",
        corpus="talks_asr",
        engine=EngineParams(workers=2, shard_rows=120),
    )
    assert read_segments(tmp_path / "out")["labels"].to_pylist() == expected["labels"].to_pylist()


def test_a_document_across_part_files_is_refused(talks, tmp_path):
    """On every engine, and first in file order: an unreadable part after it, scanned in the same
    task, does not hide it."""
    from pipeline.engine.executor import executor

    _folder, _ref, hyp = talks
    docs = hyp["doc_id"].to_pylist()
    second = docs.index(next(d for d in docs if d != docs[0]))  # where the second document starts
    (tmp_path / "d").mkdir()
    write_parquet(hyp.slice(0, second), tmp_path / "d" / "part-00000.parquet")
    write_parquet(hyp.slice(second, 2), tmp_path / "d" / "part-00001.parquet")
    write_parquet(hyp.slice(second + 2, 2), tmp_path / "d" / "part-00002.parquet")
    with pytest.raises(InputError, match="continues from"):
        row_shards(tmp_path / "d", 100)
    for k in range(3, 8):  # inline, files go two to a task: parts 2 and 3 together
        (tmp_path / "d" / f"part-{k:05d}.parquet").write_bytes(b"not parquet")
    for _name, engine, workers in (("inline", "inline", 1), *ENGINES):
        with executor(engine, workers) as runner, pytest.raises(InputError, match=r"part-00002\.parquet: document"):
            row_shards(tmp_path / "d", 100, runner)


@pytest.mark.slow
def test_row_shards_the_same_on_every_engine(talks, tmp_path):
    """The files are scanned on the workers, a few to a task: the shards do not depend on it."""
    from pipeline.engine.executor import executor

    _folder, _ref, hyp = talks
    write_dataset(hyp, tmp_path / "parts", parts=7)
    # the same dataset twice is refused (it would be counted twice): two inputs are two copies
    with pytest.raises(InputError, match=r"the same dataset as .*parts, given twice"):
        row_shards([tmp_path / "parts", f"{tmp_path}/parts/"], 30)
    shutil.copytree(tmp_path / "parts", tmp_path / "copy")
    paths = [tmp_path / "parts", tmp_path / "copy"]  # two inputs: sources 0 and 1
    expected = row_shards(paths, 30)
    assert len({s.path for s in expected if s.source == 0}) == 7 and {s.source for s in expected} == {0, 1}
    assert len({s.path for s in expected}) == 14
    assert [s.index for s in expected] == list(range(len(expected)))
    for _name, engine, workers in ENGINES:
        with executor(engine, workers) as runner:
            assert row_shards(paths, 30, runner) == expected


@pytest.mark.slow
def test_sequences_sharded_equal_in_memory_on_every_engine(talks, tmp_path):
    """Chunks pack consecutive segments of a talk; shards hold whole talks, so any sharding gives
    the in-memory sequences."""
    _folder, ref, _hyp = talks
    table = with_column(ref, "split", pa.array(["train"] * ref.num_rows))
    write_dataset(table, tmp_path / "segments.parquet", by_doc=True)
    params = SequencesParams(tokenizer="train", vocab_size=3000, lowercase=True, max_len=128, stride=8)
    for name, engine, workers in ENGINES:
        report = sequences_dataset(
            tmp_path / "segments.parquet",
            params,
            tmp_path / name,
            tmp_path / f"tok-{name}",
            tmp_path / f"{name}.json",
            "talks",
            engine=EngineParams(engine=engine, workers=workers, shard_rows=300),
        )
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert digests(tmp_path / "tok-one") == digests(tmp_path / "tok-dask")
    tokenizer = train_tokenizer(iter(pc.list_flatten(table["words"]).to_pylist()), vocab_size=3000, lowercase=True)
    whole, counts = build_sequences(table, tokenizer, max_len=128, stride=8, label_set=PAPERS)
    assert read_segments_plain(tmp_path / "one").equals(whole)
    assert report["sequences"] == dict(counts) and counts["chunks"] > 300


def test_sequences_failing_in_the_driver_leaves_nothing(talks, tmp_path):
    """A tokenizer that cannot be loaded ends the run with its own error, on the pool and inline,
    and leaves no output, staging or scratch."""
    _folder, ref, _hyp = talks
    table = with_column(ref, "split", pa.array(["train"] * ref.num_rows))
    write_dataset(table, tmp_path / "segments.parquet", by_doc=True)
    params = SequencesParams(tokenizer=str(tmp_path / "no-tokenizer-here"), max_len=128)
    for engine, workers in (("local", 2), ("local", 1)):
        with pytest.raises(InputError, match="cannot be loaded"):
            sequences_dataset(
                tmp_path / "segments.parquet",
                params,
                tmp_path / "out",
                tmp_path / "tok",
                tmp_path / "report.json",
                "talks",
                engine=EngineParams(engine=engine, workers=workers, shard_rows=50),
            )
        assert sorted(p.name for p in tmp_path.iterdir()) == ["segments.parquet"]


def read_segments_plain(path):
    import pyarrow.parquet as pq

    return (
        pq.read_table(path)
        .replace_schema_metadata(None)
        .cast(__import__("pipeline.datasets.sequences", fromlist=["SEQUENCE_SCHEMA"]).SEQUENCE_SCHEMA)
    )


@pytest.mark.parametrize(
    "corpora",
    [
        pytest.param("fixtures", id="fixtures", marks=pytest.mark.slow),  # a dask cluster, many shardings
        pytest.param("real", id="real", marks=[pytest.mark.slow, pytest.mark.real_corpora]),
    ],
)
def test_split_oversample_same_on_every_sharding_and_engine(corpora, tmp_path):
    """The dataset stages over the Malay news (the committed cut in every clone, the whole crawl
    too where it is present): shards of a few hundred rows on each engine give the rows of one shard of
    everything, and the same bytes on every engine."""
    from corpora import get_reader

    root = FIXTURES if corpora == "fixtures" else require_real()
    news = get_reader("news_json")(
        sorted((root / "malay_news").glob("*.json")),
        lang="ms",
        corpus="malay",
        sources="lexicons/ms/news_sources.tsv",
        spoken=True,
    ).table
    write_dataset(news, tmp_path / "news.parquet", parts=3)
    shard_rows = 300 if corpora == "real" else 100
    assert len(row_shards([tmp_path / "news.parquet"], shard_rows)) > 3
    split = SplitParams(ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=3, min_sentences=2)
    oversample = OversampleParams.model_validate({"question_share": 0.01, "augment": {"kind": "alam", "copies": 2}})
    runs = {"whole": EngineParams(workers=1, shard_rows=10**9)}
    runs.update({name: EngineParams(engine=e, workers=w, shard_rows=shard_rows) for name, e, w in ENGINES})
    reports = {}
    for name, engine in runs.items():
        out = tmp_path / name
        split_report = split_dataset(
            [SplitInput("malay", str(tmp_path / "news.parquet"))],
            split,
            out / "split.parquet",
            out / "split.json",
            engine,
        )
        over_report = oversample_dataset(
            out / "split.parquet",
            oversample,
            3,
            out / "over.parquet",
            out / "aug.parquet",
            out / "over.json",
            engine=engine,
        )
        audit(
            [out / "split.parquet", out / "over.parquet"],
            out / "audit",
            engine,
            names=["split", "over"],
        )
        reports[name] = (split_report, over_report)
    audits = {name: digests(tmp_path / name / "audit") for name in runs}
    assert len(audits["whole"]) >= 5 and all(a == audits["whole"] for a in audits.values())
    for part in ("split.parquet", "over.parquet", "aug.parquet"):
        expected = read_segments(tmp_path / "whole" / part)
        for name in ("one", "two", "dask"):
            assert read_segments(tmp_path / name / part).equals(expected), (name, part)
        assert digests(tmp_path / "one" / part) == digests(tmp_path / "two" / part) == digests(tmp_path / "dask" / part)
    assert all(r == reports["whole"] for r in reports.values())
    split_report, over_report = reports["whole"]
    assert split_report["documents_with_too_few_sentences_dropped"] > 0
    assert over_report["oversampling"]["inserted"] > 0
    assert over_report["oversampling"]["after"] == pytest.approx(0.01, abs=0.001)


def test_row_shards_over_many_row_groups(talks, tmp_path):
    """A file of many row groups: each shard reads only the groups that hold its rows, and the
    shards together give back every row once, in order."""
    import pyarrow.parquet as pq

    _folder, _ref, hyp = talks
    pq.write_table(hyp, tmp_path / "hyp.parquet", row_group_size=97)
    assert pq.ParquetFile(tmp_path / "hyp.parquet").metadata.num_row_groups > 10
    shards = row_shards(tmp_path / "hyp.parquet", 250)
    tables = [read_rows(s) for s in shards]
    assert concat(tables).to_pylist() == hyp.to_pylist()
    assert all(a.stop == b.start for a, b in itertools.pairwise(shards))


def test_row_shards_cut_each_file_into_equal_shards(talks, tmp_path):
    """A part a little longer than a shard (an earlier stage's part with rows inserted) is one
    shard, not a shard and a sliver; a part of 1.6 shards is two equal ones; no shard passes 1.5
    ``rows_per_shard`` and a document, and together they give back every row in order."""
    import pyarrow.parquet as pq

    _folder, _ref, hyp = talks
    one_row_docs = with_column(hyp.slice(0, 160), "doc_id", pa.array([f"d{i:03d}" for i in range(160)]))
    for rows, expected in ((100, [(0, 100)]), (140, [(0, 140)]), (160, [(0, 80), (80, 160)])):
        pq.write_table(one_row_docs.slice(0, rows), tmp_path / f"{rows}.parquet")
        assert [(s.start, s.stop) for s in row_shards(tmp_path / f"{rows}.parquet", 100)] == expected
    docs = hyp["doc_id"].to_pylist()
    longest = max(sum(1 for _ in group) for _, group in itertools.groupby(docs))
    pq.write_table(hyp, tmp_path / "c.parquet")
    shards = row_shards(tmp_path / "c.parquet", 100)
    assert [s.index for s in shards] == list(range(len(shards)))
    assert all(s.stop - s.start <= 150 + longest for s in shards)
    assert concat([read_rows(s) for s in shards]).to_pylist() == hyp.to_pylist()


def _cuts_by_rule(doc_ids: list[str], rows_per_shard: int) -> list[tuple[int, int]]:
    """The shards' rule applied row by row: cut at the first document start at least ``target``
    rows after the shard's start; a tail under a quarter of a shard joins the shard before it."""
    rows = len(doc_ids)
    target = max(1, -(-rows // max(1, int(rows / rows_per_shard + 0.5))))
    cuts, start = [], 0
    for row in range(1, rows):
        if doc_ids[row] != doc_ids[row - 1] and row - start >= target:
            cuts.append((start, row))
            start = row
    if rows - start < target // 4 and cuts:
        cuts[-1] = (cuts[-1][0], rows)
    elif rows > start:
        cuts.append((start, rows))
    return cuts


def test_row_shards_follow_the_rule_across_read_batches(tmp_path):
    """The scan compares documents a read batch (65,536 rows) at a time: documents that run over a
    batch's end, one-row documents and long ones give the cuts of the rule applied row by row."""
    import numpy as np
    import pyarrow.parquet as pq

    rng = np.random.default_rng(14)
    lengths = np.where(rng.random(40_000) < 0.05, rng.integers(50, 3_000, 40_000), rng.integers(1, 6, 40_000))
    doc_ids = [f"doc{i}" for i, n in enumerate(lengths.tolist()) for _ in range(n)][:200_000]
    assert len(doc_ids) == 200_000
    pq.write_table(pa.table({"doc_id": doc_ids}), tmp_path / "docs.parquet", row_group_size=30_000)
    for rows_per_shard in (1, 7, 5_000, 70_000, 10**6):
        shards = row_shards(tmp_path / "docs.parquet", rows_per_shard)
        assert [(s.start, s.stop) for s in shards] == _cuts_by_rule(doc_ids, rows_per_shard), rows_per_shard


def test_stage_with_bad_input_is_one_line_and_no_output(tmp_path, capsys):
    """An ingest that meets invalid UTF-8 ends with one line naming the file, exit 2, nothing written."""
    from support.datasets import write_params

    from stages import ingest

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"one line.\n" + b"caf\xe9 au lait.\n")
    params = write_params(
        tmp_path / "params.yaml", {"corpora": {"bad": {"reader": "text", "lang": "en", "input": str(bad)}}}
    )
    args = ["bad", "--params", str(params), "--out", str(tmp_path / "out.parquet"), "--stats", str(tmp_path / "s.json")]
    assert ingest.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # progress lines may come first; the failure itself is one line, no traceback
    assert [line for line in err if not line.startswith("ingest bad: ")] == [err[-1]]
    assert err[-1].startswith("error: ") and "bad.txt: invalid UTF-8 at byte offset 13 (line 2)" in err[-1]
    assert ingest.main([*args, "-q"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "params.yaml"]


def test_align_stage(talks, tmp_path):
    from support.datasets import write_params

    from stages import align

    folder, _ref, _hyp = talks
    params = write_params(
        tmp_path / "params.yaml",
        {
            "corpora": {
                "talks": {"reader": "ted_xml", "lang": "en", "input": "-"},
                "talks_asr": {"reader": "transcript", "lang": "en", "input": "-"},
            },
            "alignments": {"aligned": {"ref": "talks", "hyp": "talks_asr", "engine": {"shard_rows": 200}}},
        },
    )
    args = [
        "aligned",
        "--params",
        str(params),
        "--ref",
        str(folder / "ref.parquet"),
        "--hyp",
        str(folder / "hyp.parquet"),
        "--out",
        str(tmp_path / "out"),
        "--report",
        str(tmp_path / "r.json"),
    ]
    assert align.main(args) == 0
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["hypothesis_words"] == sum(len(w) for w in read_segments(tmp_path / "out")["words"].to_pylist())


def test_one_value_reads_the_statistics_of_every_part(talks, tmp_path):
    """The sequences report skips its per-corpus audit when the statistics show one corpus."""
    from pipeline.engine.dataset import one_value

    _folder, ref, _hyp = talks
    write_dataset(ref, tmp_path / "one", parts=3)
    assert one_value(tmp_path / "one", "corpus")
    assert not one_value(tmp_path / "one", "no_such_column")
    corpus = ["a" if i < ref.num_rows - 5 else "b" for i in range(ref.num_rows)]
    write_dataset(with_column(ref, "corpus", pa.array(corpus)), tmp_path / "two", parts=3)
    assert not one_value(tmp_path / "two", "corpus")  # only the last part holds "b"
    assert not one_value([tmp_path / "one", tmp_path / "two"], "corpus")


@pytest.mark.parametrize("corpora", ["interleaved", "one per shard"])
def test_audit_views_in_one_pass_equal_separate_audits(talks, tmp_path, corpora):
    """The sequences report audits a dataset pooled and per corpus in one pass over it: the same
    summaries as two audits, even when the pooled name is also one of the corpora's names.  The
    pooled view's hash groups are unions of the per-corpus ones; where a shard holds one corpus,
    the two views also share its tallies."""
    from pipeline.audit.stats import AuditView, audit_dataset_views, audit_datasets
    from pipeline.engine.executor import executor

    _folder, ref, _hyp = talks
    docs = ref["doc_id"].to_pylist()
    first = {d: i for i, d in reversed(list(enumerate(docs)))}
    if corpora == "interleaved":
        corpus = ["c0" if first[d] % 3 else "c1" for d in docs]  # whole documents in each corpus
    else:  # the first half of the documents in c0: most shards hold one corpus
        corpus = ["c0" if first[d] < len(docs) // 2 else "c1" for d in docs]
    split = [["train", "train", "dev", "test"][first[d] % 4] for d in docs]
    table = with_column(with_column(ref, "corpus", pa.array(corpus)), "split", pa.array(split))
    write_dataset(table, tmp_path / "segments.parquet", parts=3)
    expected = ("train", "dev", "test")
    with executor("local", 2) as runner:
        pooled = audit_datasets(runner, [tmp_path / "segments.parquet"], tmp_path / "a", 300, ["c0"], 1.0, expected)
        per_corpus = audit_datasets(runner, [tmp_path / "segments.parquet"], tmp_path / "b", 300)
        views = [AuditView(["c0"], expected_splits=expected), AuditView()]
        both = audit_dataset_views(runner, [tmp_path / "segments.parquet"], tmp_path / "c", 300, views)
    assert set(per_corpus[0]) == {"c0", "c1"} and set(pooled[0]) == {"c0"}
    assert pooled[0]["c0"]["words"] == per_corpus[0]["c0"]["words"] + per_corpus[0]["c1"]["words"]
    assert both == [pooled, per_corpus]


def test_sequences_report_audits_in_the_packing_pass(talks, tmp_path, monkeypatch):
    """The report's distribution is the audit of the stage's input, computed from the rows that the
    packing reads: every shard's segments are read once, not again for an audit."""
    from pipeline.audit.stats import AuditView, audit_dataset_views
    from pipeline.engine import dataset
    from pipeline.engine.executor import executor

    _folder, ref, _hyp = talks
    splits = ["train", "dev", "test"] * (ref.num_rows // 3) + ["train"] * (ref.num_rows % 3)
    table = with_column(ref, "split", pa.array(splits))
    write_dataset(table, tmp_path / "segments.parquet", by_doc=True)
    reads = []
    real = dataset.read_rows
    monkeypatch.setattr(
        dataset, "read_rows", lambda shard, columns=None, **k: reads.append(columns) or real(shard, columns, **k)
    )
    params = SequencesParams(tokenizer="train", vocab_size=1000, max_len=128)
    report = sequences_dataset(
        tmp_path / "segments.parquet",
        params,
        tmp_path / "seq",
        tmp_path / "tok",
        tmp_path / "r.json",
        "talks",
        engine=EngineParams(workers=1, shard_rows=300),
    )
    shards = row_shards(tmp_path / "segments.parquet", 300)
    segment_reads = [c for c in reads if c is None or "labels" in c]
    assert len(shards) > 3 and len(segment_reads) == len(shards)  # the packing's reads, one a shard
    monkeypatch.setattr(dataset, "read_rows", real)
    view = AuditView(["talks"], expected_splits=("train", "dev", "test"))
    with executor("local", 1) as runner:
        ((alone, _),) = audit_dataset_views(runner, [tmp_path / "segments.parquet"], tmp_path / "a", 300, [view])
    assert report["distribution"] == alone and "per_corpus" not in report
    assert report["distribution"]["talks"]["words"] == sum(len(w) for w in table["words"].to_pylist())
    assert report["distribution"]["talks"]["leakage"]["documents_in_several_splits"] > 0
