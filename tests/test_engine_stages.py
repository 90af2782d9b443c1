"""Align and sequences as sharded stages: the same output as the unsharded functions, the same bytes
from the local pool (1 or 2 workers) and Dask, whole-corpus checks before anything is written."""

import hashlib
import itertools
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from pipeline.align import AlignmentError, align_tables
from pipeline.engine import align_sharded, read_row_shard, row_shards, sequences_sharded
from pipeline.io import InputError, read_segments, write_parquet
from pipeline.schema import concat, segments_table
from pipeline.sequences import build_sequences, train_tokenizer


def digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


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
    return segments_table(
        "talks_asr",
        "en",
        table["doc_id"],
        table["seg_id"],
        pa.array(words, pa.list_(pa.string())),
        pa.array([["O"] * len(w) for w in words], pa.list_(pa.string())),
    )


@pytest.fixture(scope="module")
def talks(shared, tmp_path_factory):
    """Real TED talks (16 documents): the reference as a sharded directory (a part per talk), the
    hypothesis as one file."""
    from corpora import get_reader

    files = sorted((shared / "iwslt_en_raw").glob("*.xml"))
    ref = get_reader("ted_xml")(files, lang="en", corpus="talks").table
    folder = tmp_path_factory.mktemp("talks")
    docs = list(dict.fromkeys(ref["doc_id"].to_pylist()))
    for i, doc in enumerate(docs):
        write_parquet(ref.filter(pc.equal(ref["doc_id"], doc)), folder / "ref.parquet" / f"part-{i:05d}.parquet")
    hyp = asr_like(ref)
    write_parquet(hyp, folder / "hyp.parquet")
    return folder, ref, hyp


def test_row_shards_never_split_a_document(talks):
    folder, _ref, hyp = talks
    shards = row_shards(folder / "hyp.parquet", 100)
    assert len(shards) > 5
    tables = [read_row_shard(s) for s in shards]
    assert sum(t.num_rows for t in tables) == hyp.num_rows
    docs_per_shard = [set(t["doc_id"].to_pylist()) for t in tables]
    for a, b in itertools.pairwise(docs_per_shard):
        assert not a & b  # a document lies in one shard
    assert concat(tables)["words"].to_pylist() == hyp["words"].to_pylist()


def test_align_sharded_equals_unsharded_on_every_engine(talks, tmp_path):
    folder, ref, hyp = talks
    from pipeline.verbalize import verbalizer_or_none

    whole, whole_report = align_tables(ref, hyp, corpus="aligned", workers=1, verbalizer=verbalizer_or_none("en"))
    runs = {}
    for name, engine, workers in (("one", "local", 1), ("two", "local", 2), ("dask", "dask", 2)):
        runs[name] = align_sharded(
            folder / "ref.parquet",
            folder / "hyp.parquet",
            tmp_path / name,
            lang="en",
            corpus="aligned",
            engine=engine,
            workers=workers,
            shard_rows=150,
        )
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert len(digests(tmp_path / "one")) == runs["one"]["shards"] > 3
    sharded = read_segments(tmp_path / "one")
    assert sharded["labels"].to_pylist() == whole["labels"].to_pylist()
    assert sharded["words"].to_pylist() == hyp["words"].to_pylist()
    for report in runs.values():
        same = {k: v for k, v in report.items() if k not in ("engine", "shards")}
        assert same == whole_report
    assert 0.05 < whole_report["wer"]["wer"] < 0.2 and whole_report["marks"]["transferred"] > 1000


def test_align_sharded_checks_the_whole_corpus_before_writing(talks, tmp_path):
    folder, _ref, hyp = talks
    with pytest.raises(AlignmentError, match=r"exceeds 0\.01"):
        align_sharded(
            folder / "ref.parquet",
            folder / "hyp.parquet",
            tmp_path / "out",
            lang="en",
            max_wer=0.01,
            workers=2,
            shard_rows=150,
        )
    assert not (tmp_path / "out").exists() and list(tmp_path.iterdir()) == []
    stray = segments_table("x", "en", ["no-such-talk"], [0], [["hello", "world"]], [["O", "O"]])
    write_parquet(concat([hyp, stray]), tmp_path / "stray.parquet")
    with pytest.raises(AlignmentError, match="no-such-talk"):
        align_sharded(folder / "ref.parquet", tmp_path / "stray.parquet", tmp_path / "out", lang="en", workers=1)
    assert not (tmp_path / "out").exists()


def test_a_document_across_part_files_is_refused(talks, tmp_path):
    _folder, _ref, hyp = talks
    first = hyp.slice(0, 10)
    write_parquet(first.slice(0, 5), tmp_path / "d" / "part-00000.parquet")
    write_parquet(first.slice(5), tmp_path / "d" / "part-00001.parquet")
    with pytest.raises(InputError, match="continues from"):
        row_shards(tmp_path / "d", 100)


def test_sequences_sharded_equal_unsharded_on_every_engine(talks, tmp_path):
    """Chunks pack consecutive segments of a talk, so shards must hold whole talks."""
    import pyarrow.parquet as pq

    _folder, ref, _hyp = talks
    table = ref.set_column(ref.schema.get_field_index("split"), "split", pa.array(["train"] * ref.num_rows))
    write_parquet(table, tmp_path / "segments.parquet")
    tokenizer = train_tokenizer(iter(pc.list_flatten(table["words"]).to_pylist()), vocab_size=3000, lowercase=True)
    tokenizer.save_pretrained(str(tmp_path / "tokenizer"))
    whole, counts = build_sequences(table, tokenizer, max_len=128, stride=8)
    results = {}
    for name, engine, workers in (("one", "local", 1), ("two", "local", 2), ("dask", "dask", 2)):
        results[name] = sequences_sharded(
            tmp_path / "segments.parquet",
            tmp_path / "tokenizer",
            tmp_path / name,
            engine=engine,
            workers=workers,
            shard_rows=300,
            max_len=128,
            stride=8,
        )
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    sharded = pq.read_table(tmp_path / "one")
    assert results["one"]["shards"] > 3
    assert sharded.to_pylist() == whole.to_pylist()
    assert {k: results["one"][k] for k in counts} == dict(counts) and counts["chunks"] > 300


def test_align_and_sequences_stages_with_an_engine(talks, tmp_path):
    """Registry entries with `engine:` give sharded outputs equal to the unsharded stages' outputs."""
    import shutil

    import pyarrow.parquet as pq
    import yaml

    from stages import align, dataset

    folder, _ref, _hyp = talks
    data = tmp_path / "data"
    shutil.copytree(folder / "ref.parquet", data / "segments/talks.parquet")
    shutil.copy(folder / "hyp.parquet", data / "segments/talks_asr.parquet")
    sequences = {"tokenizer": "train", "vocab_size": 2000, "max_len": 96}
    params = {
        "alignments": {
            "plain": {"ref": "talks", "hyp": "talks_asr", "lang": "en"},
            "sharded": {
                "ref": "talks",
                "hyp": "talks_asr",
                "lang": "en",
                "engine": "local",
                "workers": 2,
                "shard_rows": 200,
            },
            "by_order": {"ref": "talks", "hyp": "talks_asr", "pair_by": "order", "engine": "local"},
        },
        "datasets": {
            "plain": {
                "corpora": ["sharded"],
                "split": {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}},
                "oversample": {},
                "sequences": sequences,
            },
            "sharded": {
                "corpora": ["sharded"],
                "split": {"ratios": {"train": 0.8, "dev": 0.1, "test": 0.1}},
                "oversample": {},
                "sequences": {**sequences, "engine": "dask", "workers": 2, "shard_rows": 200},
            },
        },
    }
    (tmp_path / "params.yaml").write_text(yaml.safe_dump(params))
    common = ["--params", str(tmp_path / "params.yaml"), "--data-dir", str(data)]
    assert align.main(["plain", *common]) == 0
    assert align.main(["sharded", *common]) == 0
    assert align.main(["by_order", *common]) == 2  # refused: shards pair documents by id
    assert (data / "segments/sharded.parquet").is_dir()
    plain, sharded = read_segments(data / "segments/plain.parquet"), read_segments(data / "segments/sharded.parquet")
    assert sharded["labels"].to_pylist() == plain["labels"].to_pylist()
    import json

    reports = [json.loads((data / f"alignment/{n}.json").read_text()) for n in ("plain", "sharded")]
    assert reports[1]["wer"] == reports[0]["wer"] and reports[1]["labels_after"] == reports[0]["labels_after"]
    for name in ("plain", "sharded"):
        assert dataset.main([name, *common]) == 0
    out = data / "datasets"
    assert (out / "sharded/sequences.parquet").is_dir()
    assert (
        pq.read_table(out / "sharded/sequences.parquet").to_pylist()
        == pq.read_table(out / "plain/sequences.parquet").to_pylist()
    )


def test_row_shards_over_many_row_groups(talks, tmp_path):
    """A file of many row groups: each shard reads only the groups that hold its rows, and the
    shards together give back every row once, in order."""
    import pyarrow.parquet as pq

    _folder, _ref, hyp = talks
    pq.write_table(hyp, tmp_path / "hyp.parquet", row_group_size=97)
    assert pq.ParquetFile(tmp_path / "hyp.parquet").metadata.num_row_groups > 10
    shards = row_shards(tmp_path / "hyp.parquet", 250)
    tables = [read_row_shard(s) for s in shards]
    assert concat(tables).to_pylist() == hyp.to_pylist()
    assert all(a.stop == b.start for a, b in itertools.pairwise(shards))


def test_ingest_stage_with_an_engine_reports_bad_input(tmp_path, capsys):
    """A sharded ingest that meets invalid UTF-8 ends with the stage's error line naming the file,
    and leaves no output."""
    import yaml

    from stages import ingest

    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"one line.\n" + b"caf\xe9 au lait.\n")
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump(
            {"corpora": {"bad": {"reader": "text", "lang": "en", "input": str(bad), "engine": "local", "workers": 1}}}
        )
    )
    assert ingest.main(["bad", "--params", str(params), "--out-dir", str(tmp_path / "data")]) == 2
    assert "bad.txt" in capsys.readouterr().err
    assert not (tmp_path / "data" / "segments" / "bad.parquet").exists()
