"""Inputs and outputs as fsspec URLs: the Indic recipe (ingest, split, oversample, sequences,
audit) reads and writes through a URL, scratch included, with the same bytes as on local paths."""

import hashlib
from pathlib import Path

import fsspec
import pytest
from support.ingesting import ingest_files
from support.objstore import register

from pipeline import errors
from pipeline.audit.reports import write_outputs
from pipeline.audit.stats import audit_datasets
from pipeline.datasets.oversample import oversample_dataset
from pipeline.datasets.sequences import sequences_dataset
from pipeline.datasets.split import SplitInput, split_dataset
from pipeline.engine import location, reading, writing
from pipeline.engine.executor import executor
from pipeline.params import EngineParams, OversampleParams, SequencesParams, SplitParams

SPLIT = SplitParams(ratios={"train": 0.8, "dev": 0.1, "test": 0.1}, seed=5, stratify=True, drop_train_duplicates=True)
OVERSAMPLE = OversampleParams.model_validate({"question_share": 0.02, "augment": {"kind": "alam", "copies": 1}})
SEQUENCES = SequencesParams(tokenizer="train", vocab_size=2000, max_len=64, stride=8)


def recipe(corpora: Path, base, engine: EngineParams) -> None:
    """The Indic recipe from FLORES text into ``base`` (a local folder or a URL)."""
    out = lambda *names: location.join(base, *names)  # noqa: E731
    for lang, name in (("hi", "hin_Deva"), ("bn", "ben_Beng")):
        ingest_files(
            "text",
            [str(corpora / "indic" / "flores" / f"{name}.devtest")],
            lang,
            f"flores_{lang}",
            out("segments", f"flores_{lang}.parquet"),
            out("stats", f"flores_{lang}.json"),
            options={"doc_boundary": "line"},
            engine=engine.engine,
            workers=engine.workers,
            lines_per_shard=200,
        )
    inputs = [SplitInput(f"flores_{lang}", str(out("segments", f"flores_{lang}.parquet"))) for lang in ("hi", "bn")]
    split_dataset(inputs, SPLIT, out("indic", "split.parquet"), out("indic", "split.json"), engine)
    oversample_dataset(
        out("indic", "split.parquet"),
        OVERSAMPLE,
        5,
        out("indic", "oversampled.parquet"),
        out("indic", "augmented.parquet"),
        out("indic", "oversample.json"),
        engine=engine,
    )
    sequences_dataset(
        out("indic", "oversampled.parquet"),
        SEQUENCES,
        out("indic", "sequences.parquet"),
        out("indic", "tokenizer"),
        out("indic", "report.json"),
        "indic",
        [out("indic", "split.json"), out("indic", "oversample.json")],
        engine,
    )
    paths = [out("segments", f"flores_{lang}.parquet") for lang in ("hi", "bn")]
    with writing.Outputs(inputs=paths) as outputs, executor(engine.engine, engine.workers) as runner:
        result, histograms = audit_datasets(runner, paths, outputs.scratch(out("audit", "audit.json")), 300)
    write_outputs(result, histograms, out("audit"), inputs=paths)


def files_of(base) -> dict[str, str]:
    """Every file under ``base`` (a folder or a URL): relative name -> md5."""
    fs, root = location.url_fs(base) if location.is_url(base) else (fsspec.filesystem("file"), str(base))
    root = root.rstrip("/")
    return {f[len(root) + 1 :]: hashlib.md5(fs.cat_file(f)).hexdigest() for f in sorted(fs.find(root))}


@pytest.fixture(scope="module")
def local_run(shared, tmp_path_factory):
    base = tmp_path_factory.mktemp("local")
    recipe(shared, base, EngineParams(workers=2, shard_rows=300))
    return files_of(base)


def test_the_recipe_on_an_object_store_gives_the_local_bytes(shared, local_run, tmp_path, monkeypatch):
    """Forked workers read and write ``objstore://`` (renames are copies there); nothing is
    written where the run runs, and no staging or scratch is left."""
    store = tmp_path / "store"
    store.mkdir()
    register(str(store))
    monkeypatch.chdir(tmp_path / "store")
    recipe(shared, "objstore://bucket/run", EngineParams(workers=2, shard_rows=300))
    found = files_of("objstore://bucket/run")
    assert found == local_run
    assert {p.name for p in store.iterdir()} == {"bucket"}  # no "objstore:" folder: no URL taken for a path
    assert len([f for f in found if f.startswith("indic/split.parquet/part-")]) > 3
    assert not [f for f in found if "staging" in f or f.startswith(".")]


def test_the_recipe_in_memory_gives_the_local_bytes(shared, local_run):
    recipe(shared, "memory://punct-test/run", EngineParams(workers=1, shard_rows=300))
    try:
        assert files_of("memory://punct-test/run") == local_run
    finally:
        fsspec.filesystem("memory").rm("/punct-test", recursive=True)


@pytest.mark.slow  # a dask cluster through the whole recipe
def test_the_recipe_on_dask_through_file_urls(shared, local_run, tmp_path):
    recipe(shared, f"file://{tmp_path}/run", EngineParams(engine="dask", workers=2, shard_rows=300))
    assert files_of(tmp_path / "run") == local_run


def test_a_url_output_replaces_only_an_output_of_its_kind(tmp_path):
    register(str(tmp_path))
    fs, _ = location.url_fs("objstore://b")
    (tmp_path / "b" / "notes").mkdir(parents=True)
    (tmp_path / "b" / "notes" / "readme.txt").write_bytes(b"mine")
    with pytest.raises(errors.OutputError, match="did not write"), writing.Outputs() as outputs:
        outputs.dataset("objstore://b/notes")
    assert fs.cat_file("b/notes/readme.txt") == b"mine"
    for run in range(2):  # the second run replaces the first's output (of two parts, then of one)
        with writing.Outputs() as outputs:
            folder = outputs.dataset("objstore://b/data")
            for part in range(2 - run):
                writing.write_text_in_place(f"run {run}", location.join(folder, f"part-0000{part}.txt"))
            writing.write_manifest(folder, {"kind": "test"})
    assert fs.cat_file("b/data/part-00000.txt") == b"run 1"
    assert sorted(p.rsplit("/", 1)[-1] for p in fs.find("b")) == ["_punct.json", "part-00000.txt", "readme.txt"]


def _write_url_dataset(run: int) -> None:
    with writing.Outputs() as outputs:
        folder = outputs.dataset("objstore://b/data")
        for part in range(2):
            writing.write_text_in_place(f"run {run}", location.join(folder, f"part-0000{part}.txt"))
        writing.write_manifest(folder, {"kind": "test", "run": run})


def test_a_url_output_is_never_removed_before_its_replacement_is_there(tmp_path, monkeypatch):
    """A run that fails while copying its files into place (the manifest copied, the first part
    not) leaves the earlier version of every part: the earlier output is not removed first."""
    register(str(tmp_path))
    fs, _ = location.url_fs("objstore://b")
    _write_url_dataset(0)
    copied: list[str] = []
    moving = type(fs).mv

    def full_after_one(self, path1, path2, recursive=False, **kwargs):
        if copied:
            raise OSError(28, "No space left on device")
        copied.append(path2)
        moving(self, path1, path2, recursive=recursive)

    monkeypatch.setattr(type(fs), "mv", full_after_one)
    with pytest.raises(errors.OutputError, match="cannot put the output in place"):
        _write_url_dataset(1)
    assert copied == ["b/data/_punct.json"]
    assert [fs.cat_file(f"b/data/part-0000{part}.txt") for part in range(2)] == [b"run 0", b"run 0"]
    monkeypatch.undo()
    _write_url_dataset(1)
    assert [fs.cat_file(f"b/data/part-0000{part}.txt") for part in range(2)] == [b"run 1", b"run 1"]


def test_a_failed_run_leaves_nothing_at_the_url(tmp_path):
    register(str(tmp_path))
    with pytest.raises(RuntimeError), writing.Outputs() as outputs:
        writing.write_text_in_place("half", location.join(outputs.dataset("objstore://b/data"), "part-00000.txt"))
        outputs.scratch("objstore://b/data")
        raise RuntimeError("killed")
    assert list(tmp_path.rglob("*")) == [tmp_path / "b"]


def test_bad_urls_are_one_line(tmp_path):
    with pytest.raises(errors.InputError, match=r"^nosuchprotocol://x/y: cannot use this URL"):
        reading.read_bytes("nosuchprotocol://x/y")
    with pytest.raises(errors.InputError, match=r"^memory://punct-none/x: input does not exist$"):
        reading.input_files("memory://punct-none/x")
    register(str(tmp_path))
    with pytest.raises(errors.InputError, match="no part-"):
        (tmp_path / "empty").mkdir()
        reading.parquet_files("objstore://empty")


def test_the_command_line_reads_and_writes_urls(root, tmp_path):
    """``punct ingest`` from a URL input and ``punct audit`` into a URL: the files a local run writes."""
    from pipeline.cli import main

    register(str(tmp_path))
    fs, _ = location.url_fs("objstore://x")
    fs.makedirs("in", exist_ok=True)
    fs.put_file(str(root / "corpora/samples/en/talks.txt"), "in/talks.txt")
    for base in ("objstore://out", str(tmp_path / "local")):
        source = "objstore://in/talks.txt" if location.is_url(base) else str(root / "corpora/samples/en/talks.txt")
        ingest_args = ["--reader", "text", "--lang", "en", "--corpus", "talks", source]
        out, stats = location.join(base, "talks.parquet"), location.join(base, "s.json")
        assert main(["ingest", *ingest_args, "--out", str(out), "--stats", str(stats)]) == 0
        assert main(["audit", str(out), "--out", str(location.join(base, "rep"))]) == 0
    assert files_of("objstore://out") == files_of(tmp_path / "local")
    assert "rep/audit.json" in files_of("objstore://out")


def test_align_and_the_confusables_vocabulary_through_urls(shared, tmp_path):
    from support.datasets import write_dataset
    from test_engine_stages import asr_like

    from corpora import get_reader
    from pipeline.align.datasets import align_datasets
    from pipeline.phonetics.confusables import vocabulary_from_segments

    files = sorted((shared / "iwslt_en_raw").glob("*.xml"))[:4]
    ref = get_reader("ted_xml")(files, lang="en", corpus="talks").table
    hyp = asr_like(ref)
    local = tmp_path / "local"
    write_dataset(ref, local / "ref.parquet", by_doc=True)
    write_dataset(hyp, local / "hyp.parquet", parts=2)
    register(str(tmp_path / "store"))
    (tmp_path / "store").mkdir()
    fs, _ = location.url_fs("objstore://x")
    fs.put(str(local), "in", recursive=True)
    for base, source in ((str(local), str(local)), ("objstore://out", "objstore://in")):
        align_datasets(
            location.join(source, "ref.parquet"),
            location.join(source, "hyp.parquet"),
            location.join(base, "aligned.parquet"),
            location.join(base, "aligned.json"),
            lang="en",
            corpus="aligned",
            engine=EngineParams(workers=2, shard_rows=100),
        )
    # the report's marker (.aligned.json.punct) comes along: it lets a later run replace the report
    wanted = {k: v for k, v in files_of(local).items() if k.lstrip(".").startswith("aligned")}
    assert files_of("objstore://out") == wanted and len(wanted) > 3
    assert vocabulary_from_segments("objstore://in/ref.parquet", 2) == vocabulary_from_segments(
        str(local / "ref.parquet"), 2
    )


@pytest.mark.parametrize("stage", ["export", "train"])
def test_export_and_training_refuse_a_url_in_one_line(stage, tmp_path, capsys):
    import importlib

    module = importlib.import_module(f"stages.{stage}")
    params = tmp_path / "params.yaml"
    params.write_text("{}\n")
    args = ["x", "--params", str(params)]
    args += ["--in", str(tmp_path), "--out", "s3://bucket/exports"] if stage == "export" else ["--dataset", "s3://b/d"]
    assert module.main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "local paths only" in err[0] and "s3://" in err[0]
