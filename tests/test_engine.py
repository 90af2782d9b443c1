"""Sharded ingest: every reader through the same step on any engine gives the in-memory reader's
rows and counts, the same bytes from the local pool (1 or 2 workers) and Dask; a killed worker; a
failure leaves nothing."""

import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from support.corpora import has_real_corpora
from support.datasets import digests
from support.ingesting import ingest_files

from pipeline.engine.reading import read_json, read_segments
from pipeline.engine.textfiles import line_shards
from pipeline.entrypoint import HEAP_TOP_PAD, NUMPY_AVX512, cpu_flags
from pipeline.ingest import IngestStep, ingest_table, plan

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def hindi(shared):
    return [shared / "indic/flores/hin_Deva.devtest", shared / "indic/ntrex/newstest2019-ref.hin.txt"]


def test_shards_cover_every_line_once(hindi):
    shards = line_shards(hindi, 250)
    assert sum(s.stop_byte - s.start_byte for s in shards) == sum(p.stat().st_size for p in hindi)
    assert len(shards) == sum(-(-len(p.read_bytes().splitlines()) // 250) for p in hindi)
    assert [s.index for s in shards] == list(range(len(shards)))


@pytest.mark.parametrize("block", [7, 1000, 4096])
@pytest.mark.parametrize("doc_boundary", ["line", "blank_line"])
def test_shards_do_not_depend_on_the_scan_block(hindi, tmp_path, monkeypatch, block, doc_boundary):
    """The scan reads blocks ending on a line end (a CR last in a block may be half a CRLF): any
    block size gives the same shards, over LF, CRLF, lone CR and blank-line documents."""
    from pipeline.engine import textfiles

    lines = hindi[0].read_bytes().splitlines()[:300]
    ends = [b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n \r\n"]
    path = tmp_path / "mixed.txt"
    path.write_bytes(b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines)))
    expected = line_shards([path], 40, doc_boundary)
    monkeypatch.setattr(textfiles, "BLOCK", block)
    assert line_shards([path], 40, doc_boundary) == expected
    assert len(expected) > 3 and expected[-1].stop_byte == path.stat().st_size


@pytest.mark.parametrize("workers", [1, 2])
def test_line_shards_scanned_in_ranges_equal_the_scan_in_one_pass(hindi, tmp_path, monkeypatch, workers):
    """The ``line`` shards are found by workers over byte ranges of the files (cut at line starts,
    a CRLF never split): the same shards as one scan of each file, whatever the ranges, over LF,
    CRLF, lone CR, blank and invisible-only lines, a BOM, a last line without an end, an empty file."""
    from pipeline.engine import textfiles
    from pipeline.engine.executor import executor

    lines = hindi[0].read_bytes().splitlines()[:300]
    ends = [b"\n", b"\r\n", b"\r", b"\n\n", b"\r\n \r\n", "\n\u200b\r".encode()]
    mixed = tmp_path / "mixed.txt"
    mixed.write_bytes(textfiles.reading.BOM + b"".join(line + ends[i % len(ends)] for i, line in enumerate(lines)))
    open_end = tmp_path / "open_end.txt"
    open_end.write_bytes(b"\r\n".join(lines[:77]))
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    files = [mixed, empty, open_end]
    monkeypatch.setattr(textfiles, "BLOCK", 509)
    for range_bytes in (1000, 7919, 1 << 26):
        monkeypatch.setattr(textfiles, "RANGE_BYTES", range_bytes)
        for lines_per_shard in (1, 7, 40, 1000):
            expected = textfiles.serial_line_shards(files, lines_per_shard, "line")
            with executor("local", workers) as runner:
                assert textfiles.line_shards(files, lines_per_shard, "line", runner) == expected
    assert len(textfiles.serial_line_shards(files, 7, "line")) > 60


def test_dataset_scan_gives_the_label_set_and_one_value_as_the_files_do(tmp_path):
    """One worker pass gives the shards, the label set and whether a column holds one value: the
    answers of :func:`labels_of` and :func:`one_value`, which read the footers here."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    from pipeline.engine.dataset import labels_of, one_value, row_shards, scan_datasets
    from pipeline.engine.executor import executor
    from pipeline.labels import PAPERS

    folder = tmp_path / "plain"
    folder.mkdir()
    for i in range(3):
        table = pa.table({"doc_id": [f"d{i}#{k // 3}" for k in range(30)], "corpus": ["c"] * 30, "n": list(range(30))})
        pq.write_table(table, folder / f"part-{i:05d}.parquet")
    with executor("local", 2) as runner:
        scan = scan_datasets([folder], 10, runner, one_values=("corpus", "n"))
        assert scan.shards == row_shards([folder], 10, runner) and len(scan.shards) == 9
    assert scan.labels == labels_of([folder]) == PAPERS
    assert (
        scan.one_value
        == {"corpus": one_value(folder, "corpus"), "n": one_value(folder, "n")}
        == {
            "corpus": True,
            "n": False,
        }
    )


def _lines_by_rule(data: bytes) -> list[tuple[int, int, int]]:
    """(content start, content end, next start) per line, byte by byte: LF, CRLF or a lone CR ends
    a line; a last line without one counts."""
    out, start, i = [], 0, 0
    while i < len(data):
        if data[i] == 10 or data[i] == 13:
            step = 2 if data[i] == 13 and data[i + 1 : i + 2] == b"\n" else 1
            out.append((start, i, i + step))
            start = i = i + step
        else:
            i += 1
    return out + ([(start, len(data), len(data))] if start < len(data) else [])


def test_line_bounds_and_blank_lines_follow_the_rule():
    """The scan's line ends (a fast path for text without CR, found or told) and blank flags (most lines decided
    by their first byte) against the rule applied line by line: the module doc's blank rule on the
    decoded line, over LF, CRLF and lone CR files with whitespace, controls and invisible characters."""
    import random

    import numpy as np

    from pipeline.engine.textfiles import _BLANK_TEXT, blank_flags, line_bounds

    pieces = ["word", "शब्द", "中", " ", "\t", "\x00", "\x7f", "\u00a0", "\u2003", "\u3000", "\u1680"]
    pieces += ["\u200b", "\u200c", "\u200d", "\u200e", "\u200f", "\u2060", "\ufeff", "\u00ad", "\u2028"]
    rng = random.Random(14)
    for _ in range(2000):
        crlf = rng.random() < 0.5  # half the texts without CR: the fast path
        terminators = ["\n", "\r\n", "\r"] if crlf else ["\n"]
        lines = ["".join(rng.choices(pieces, k=rng.choice([0, 1, 2, 5]))) + rng.choice(terminators) for _ in range(20)]
        data = ("".join(lines) + rng.choice(["", "x", " "])).encode()
        expected = _lines_by_rule(data)
        array = np.frombuffer(data, np.uint8)
        starts, ends, nexts = line_bounds(array)
        assert list(zip(starts.tolist(), ends.tolist(), nexts.tolist())) == expected, data
        # told whether the bytes hold a CR (as the blocks' reader knows), the same bounds
        told = line_bounds(array, b"\r" in data)
        assert list(zip(*(a.tolist() for a in told))) == expected, data
        blank = [_BLANK_TEXT.fullmatch(data[a:b].decode()) is not None for a, b, _ in expected]
        assert blank_flags(array, starts, ends).tolist() == blank, data


# every reader over a real corpus, with the options it is used with
READERS = {
    "text": ("hi", "indic/flores/hin_Deva.devtest", {"doc_boundary": "line", "quoting": "csv"}),
    "text-blank": ("en", "iwslt_zh/iwslt2010_dev_zh.txt", {}),  # stands in: blank-line documents over shards
    "transcript": ("zh", "iwslt_zh/iwslt2011_test_zh.txt", {}),
    "tsv": ("bn", "bangla", {}),
    "ted_xml": ("en", "iwslt_en_raw", {}),
    "news_json": ("ms", "malay_news", {"sources": "lexicons/ms/news_sources.tsv"}),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(READERS))
def test_every_reader_sharded_equals_in_memory(shared, tmp_path, name, root, monkeypatch):
    monkeypatch.chdir(root)
    reader = name.split("-")[0]
    lang, source, options = READERS[name]
    if name == "text-blank":
        lang = "zh"
    path = shared / source
    glob = "*.json" if reader == "news_json" else "*"
    table, report = ingest_table(reader, [path], lang, "c", options, spoken=reader == "news_json", glob=glob)
    out = {}
    for run, engine, workers in (("one", "local", 1), ("two", "local", 2), ("dask", "dask", 2)):
        out[run] = ingest_files(
            reader,
            [path],
            lang,
            "c",
            tmp_path / run,
            tmp_path / f"{run}.json",
            options=options,
            spoken=reader == "news_json",
            glob=glob,
            engine=engine,
            workers=workers,
            lines_per_shard=97,
        )
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert out["one"] == out["two"] == out["dask"] == report == read_json(tmp_path / "one.json")
    sharded = read_segments(tmp_path / "one")
    assert sharded.equals(table)
    assert table.num_rows > 100 and report["words"] > 1000


def test_blank_line_documents_numbered_across_shards(tmp_path):
    text = "One. Two.\n\n\nThree?\nFour!\n\n\u200b\nFive.\r\nSix.\rSeven.\n"
    path = tmp_path / "doc.txt"
    path.write_text(text, encoding="utf-8")
    whole, report = ingest_table("text", [path], "en", "c", lines_per_shard=1000)
    for size in (1, 2, 3, 5):
        table, sharded_report = ingest_table("text", [path], "en", "c", lines_per_shard=size)
        assert table.equals(whole) and sharded_report == report, size
    assert whole["doc_id"].to_pylist() == ["doc#0", "doc#2", "doc#2", "doc#4", "doc#4", "doc#4"]
    assert whole["seg_id"].to_pylist() == [0, 0, 1, 0, 1, 2]
    assert report["blank_lines"] == 4 and report["lines"] == 10


def test_a_shard_never_cuts_a_document(tmp_path):
    """Documents longer than a shard: each lies whole in one part file, as the dataset stages need."""
    import pyarrow.parquet as pq

    from pipeline.engine.dataset import row_shards

    docs = ["\n".join(f"Document {d} says {k}." for k in range(10)) for d in range(12)]
    path = tmp_path / "docs.txt"
    path.write_text("\n\n".join(docs) + "\n", encoding="utf-8")
    shards = line_shards([path], 25, "blank_line")
    assert 1 < len(shards) < 12 and sum(s.stop_byte - s.start_byte for s in shards) == path.stat().st_size
    assert len(line_shards([path], 25, "file")) == 1
    whole, report = ingest_table("text", [path], "en", "c")
    ingest_files(
        "text", [path], "en", "c", tmp_path / "out", tmp_path / "out.json", engine="local", workers=2, lines_per_shard=7
    )
    assert read_segments(tmp_path / "out").equals(whole) and report["segments"] == 120
    owners = {}
    for part in sorted((tmp_path / "out").glob("part-*.parquet")):
        for doc in set(pq.read_table(part, columns=["doc_id"])["doc_id"].to_pylist()):
            assert owners.setdefault(doc, part.name) == part.name, f"{doc} cut across parts"
    assert len(owners) == 12 and len(set(owners.values())) > 1
    assert sum(1 for _ in row_shards([tmp_path / "out"], 5)) > 1  # a stage over it accepts it


@pytest.mark.slow
def test_local_and_dask_identical(hindi, tmp_path):
    real = has_real_corpora()  # else the committed cuts: shards of fewer lines
    runs = {}
    for run, engine, workers in (("one", "local", 1), ("two", "local", 2), ("dask", "dask", 2)):
        runs[run] = ingest_files(
            "text",
            hindi,
            "hi",
            "hindi",
            tmp_path / run,
            options={"doc_boundary": "line"},
            engine=engine,
            workers=workers,
            lines_per_shard=400 if real else 200,
        )
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert runs["one"] == runs["two"] == runs["dask"]
    assert len(list((tmp_path / "one").glob("part-*.parquet"))) > 5
    table = read_segments(tmp_path / "one")
    assert table["doc_id"][0].as_py() == "hin_Deva#0" and runs["one"]["words"] > (50_000 if real else 30_000)


class SlowStep(IngestStep):
    def __call__(self, shard):
        time.sleep(0.4)
        return super().__call__(shard)


@pytest.mark.slow
def test_dask_worker_killed_mid_stage(hindi, tmp_path):
    from distributed import Client, LocalCluster

    from pipeline.engine.dataset import finish, run_step
    from pipeline.engine.executor import DaskExecutor
    from pipeline.ingest import validate_options
    from pipeline.labels import PAPERS

    options = validate_options("text", {"doc_boundary": "line"})
    shards, _, _ = plan("text", hindi, "hi", options, 200, "*", None, "papers", "papers")
    reference = tmp_path / "reference"
    ingest_files(
        "text", hindi, "hi", "hindi", reference, options={"doc_boundary": "line"}, workers=1, lines_per_shard=200
    )
    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        dashboard_address=None,
        silence_logs=50,
        scheduler_kwargs={"dashboard": False, "dashboard_address": "127.0.0.1:0"},
    )
    client = Client(cluster)
    try:
        pids = list(client.run(os.getpid).values())

        def kill_one():
            time.sleep(1.5)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_one)
        killer.start()
        out = tmp_path / "killed"
        out.mkdir()
        runner = DaskExecutor(2, cluster.scheduler_address)
        try:
            results = run_step(
                runner,
                SlowStep("text", "hi", "hindi", options, False, None, {}, "papers", "papers"),
                shards,
                out,
                labels=PAPERS,
            )
            finish(out, "segments", results, schema="punct-segments/2")
            completed = True
        except Exception:
            completed = False
        finally:
            runner.client.close()
        killer.join()
        if completed:  # the killed worker's shards were recomputed on the other
            assert digests(out) == digests(reference)
    finally:
        client.close()
        cluster.close()


class Broken(IngestStep):
    def __call__(self, shard):
        if shard.index == 1:
            raise RuntimeError("disk on fire")
        return super().__call__(shard)


def test_failure_leaves_nothing(tmp_path, hindi, monkeypatch):
    import pipeline.ingest as ingest_module

    monkeypatch.setattr(ingest_module, "IngestStep", Broken)
    with pytest.raises(RuntimeError, match="disk on fire"):
        ingest_files(
            "text", hindi, "hi", "hindi", tmp_path / "out", tmp_path / "out.json", workers=2, lines_per_shard=300
        )
    assert list(tmp_path.iterdir()) == []


def test_ingest_stage_with_an_engine(tmp_path, shared, root):
    """A registry entry with an engine section writes the same dataset as the in-memory reader."""
    from support.datasets import write_params

    from corpora import get_reader
    from stages import ingest as stage

    source = shared / "indic/flores/tam_Taml.devtest"
    entry = {
        "reader": "text",
        "lang": "ta",
        "input": str(source),
        "doc_boundary": "line",
        "quoting": "csv",
        # four shards of the real file's 1012 lines, or of the committed cut's 300
        "engine": {"engine": "local", "workers": 2, "shard_lines": 300 if has_real_corpora() else 75},
    }
    params = write_params(tmp_path / "params.yaml", {"corpora": {"tamil": entry}})
    out = tmp_path / "data/segments/tamil.parquet"
    args = ["tamil", "--params", str(params), "--out", str(out), "--stats", str(tmp_path / "data/stats/tamil.json")]
    assert stage.main(args) == 0
    assert len(list(out.glob("part-*.parquet"))) == 4
    direct = get_reader("text")([source], lang="ta", corpus="tamil", doc_boundary="line", quoting="csv").table
    assert read_segments(out).equals(direct)


# the entry points that handle data (stages.dvc_yaml writes dvc.yaml from the params alone)
DATA_ENTRY_POINTS = ["pipeline.cli", *sorted(f"stages.{p.stem}" for p in (ROOT / "stages").glob("[a-z]*.py"))]
DATA_ENTRY_POINTS.remove("stages.dvc_yaml")
DATA_ENTRY_POINTS.remove("stages.common")  # shared by the stages, not one


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="jemalloc is chosen on Linux only")
@pytest.mark.parametrize("module", DATA_ENTRY_POINTS)
def test_entry_points_allocate_arrow_memory_from_jemalloc(module):
    """Arrow fixes its allocator when pyarrow is imported: an entry point whose module imported pyarrow
    before its ``main`` chose jemalloc would keep mimalloc, whose retained memory grows with the
    shards a worker runs."""
    env = {k: v for k, v in os.environ.items() if k != "ARROW_DEFAULT_MEMORY_POOL"}
    code = (
        f"import sys, {module} as entry\n"
        "assert 'pyarrow' not in sys.modules, 'pyarrow imported with the entry point'\n"
        "try:\n    entry.main(['--help'])\nexcept SystemExit:\n    pass\n"
        "import pyarrow as pa\nprint(pa.default_memory_pool().backend_name)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[-1] == "jemalloc"  # after the help text


#: a worker's round of shards, as far as its heap sees it: arrays allocated and freed again (96 KB
#: each: from the heap, under malloc's mmap threshold); prints the page faults of ten rounds after
#: a first, in this process and in a worker it forks
_HEAP_ROUNDS = """
import multiprocessing, resource, sys
import numpy as np
from pipeline.entrypoint import prepare_process
if sys.argv[1] == "prepared":
    prepare_process()

def rounds(n):
    for _ in range(n):
        arrays = [np.ones(12_000) for _ in range(400)]
        del arrays

def faults(_=None):
    rounds(1)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
    rounds(10)
    return resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before

with multiprocessing.get_context("fork").Pool(1) as pool:
    print(faults(), pool.apply(faults))
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's malloc option")
def test_a_prepared_process_and_its_forked_workers_keep_freed_heap_pages():
    """Pages a shard's arrays freed are kept for the next shard's (glibc's M_TOP_PAD, set by the
    entry points), where malloc gave them back and the kernel faulted them in again; and the
    processes started from there (Dask's workers) get it from the environment."""
    env = {k: v for k, v in os.environ.items() if k != "MALLOC_TOP_PAD_"}
    faults = {}
    for kind in ("plain", "prepared"):
        out = subprocess.run(
            [sys.executable, "-c", _HEAP_ROUNDS, kind], cwd=ROOT, env=env, capture_output=True, text=True
        )
        assert out.returncode == 0, out.stderr
        faults[kind] = [int(n) for n in out.stdout.split()]
    plain, prepared = faults["plain"], faults["prepared"]
    assert min(plain) > 10_000, plain  # the pattern does give pages back without the option
    assert all(p * 10 < q for p, q in zip(prepared, plain)), faults
    code = "import os\nfrom pipeline.entrypoint import prepare_process\nprepare_process()\n"
    code += "print(os.environ['MALLOC_TOP_PAD_'])"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.stdout.strip() == str(HEAP_TOP_PAD), out.stderr
    # what the scaling guide tells a cluster's workers to set
    assert f"MALLOC_TOP_PAD_={HEAP_TOP_PAD}" in (ROOT / "docs" / "guides" / "scaling.md").read_text()


def test_cpu_flags_are_read_from_the_first_flags_line():
    cpuinfo = "processor\t: 0\nflags\t\t: fpu sse2 avx2 fma\n\nprocessor\t: 1\nflags\t\t: fpu\n"
    assert cpu_flags(cpuinfo) == {"fpu", "sse2", "avx2", "fma"}
    assert cpu_flags("processor\t: 0\n") == set()


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="an x86 CPU with AVX2 and FMA, on Linux")
def test_a_prepared_process_computes_numpy_products_with_one_cpus_kernels():
    """numpy's OpenBLAS kernels are Haswell's on every CPU with AVX2 and FMA, AVX-512 ones too
    (their sums in another order changed g2p's phonemes, hence the confusables); a user's own
    $OPENBLAS_CORETYPE is kept."""
    code = (
        "from pipeline.entrypoint import prepare_process\nprepare_process()\n"
        "import numpy, threadpoolctl\n"
        "print(*[i.get('architecture') for i in threadpoolctl.threadpool_info() if i['internal_api'] == 'openblas'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_CORETYPE"}
    for given, expected in ((None, "Haswell"), ("Sandybridge", "Sandybridge")):
        run_env = env if given is None else {**env, "OPENBLAS_CORETYPE": given}
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=run_env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split() == [expected], out.stdout


@pytest.mark.skipif(not {"avx2", "fma"} <= cpu_flags(), reason="an x86 CPU with AVX2 and FMA, on Linux")
def test_a_prepared_process_runs_numpys_avx2_loops_and_no_avx512_ones():
    """numpy's loops above AVX2 are off on every CPU with AVX2 and FMA, AVX-512 ones too (their
    powers differ in the last bits; their sort is slower on AMD's Zen 4), and on none below it;
    a user's own $NPY_DISABLE_CPU_FEATURES is kept."""
    code = (
        "from pipeline.entrypoint import prepare_process\nprepare_process()\n"
        "from numpy._core._multiarray_umath import __cpu_dispatch__, __cpu_features__\n"
        "print(*[f for f in __cpu_dispatch__ if __cpu_features__[f]] or ['none'])"
    )
    env = {k: v for k, v in os.environ.items() if k != "NPY_DISABLE_CPU_FEATURES"}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["X86_V3"], out.stdout  # the dispatch target of AVX2 and FMA alone
    kept = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, env={**env, "NPY_DISABLE_CPU_FEATURES": "X86_V3"},
        capture_output=True, text=True,
    )  # fmt: skip
    assert kept.returncode == 0 and "X86_V3" not in kept.stdout.split(), kept.stdout + kept.stderr
    # the scaling guide gives a cluster's workers the same value
    guide = " ".join((ROOT / "docs" / "guides" / "scaling.md").read_text().split())
    assert f'NPY_DISABLE_CPU_FEATURES="{NUMPY_AVX512}"' in guide


# =========================================================== the executor against a hostile user


class CountedRefusal:
    """A step that notes each call in a file and refuses its input (as a bad input file would)."""

    def __init__(self, calls: Path):
        self.calls = calls

    def __call__(self, item):
        from pipeline.errors import InputError

        with open(self.calls, "a") as sink:
            sink.write(f"{item}\n")
        raise InputError(f"bad.txt: line {item}: not valid")


class CrashOnce:
    """A step whose worker dies the first time (a crash, not bad input): retried on another."""

    def __init__(self, flag: Path):
        self.flag = flag

    def __call__(self, item):
        if not self.flag.exists():
            self.flag.write_text("crashed")
            os._exit(1)
        return item * 2


@pytest.mark.slow
def test_dask_does_not_retry_bad_input_but_retries_a_crash(tmp_path):
    from pipeline.engine.executor import executor
    from pipeline.errors import InputError

    calls = tmp_path / "calls.txt"
    with executor("dask", 2) as runner:
        with pytest.raises(InputError, match=r"^bad.txt: line 7: not valid$"):
            runner.map(CountedRefusal(calls), [7])
        assert calls.read_text() == "7\n"  # one try: bad input fails the same way every time
        assert runner.started == 1  # one item: one worker started, not two
        assert runner.map(CrashOnce(tmp_path / "flag"), [1, 2, 3]) == [2, 4, 6]
        assert runner.started == 2
    assert (tmp_path / "flag").read_text() == "crashed"


@pytest.mark.slow
def test_dask_with_q_prints_the_one_error_line(tmp_path):
    (tmp_path / "good.txt").write_text("Hello there.\n")
    (tmp_path / "bad.txt").write_bytes(b"Fine.\n\xff\xfe broken\n")
    # Another cluster on the machine holds dask's default HTTP port: the run must not warn about it.
    with socket.socket() as taken:
        try:
            taken.bind(("", 8787))
            taken.listen()
        except OSError:
            pass  # already held by something else, which is the case under test
        proc = subprocess.run(
            [sys.executable, "-m", "pipeline", "ingest", "-q", "--engine", "dask", "--workers", "2",
             "--shard-lines", "1", "--reader", "text", "--lang", "en", "--corpus", "c",
             "good.txt", "bad.txt", "--out", "out.parquet"],
            cwd=tmp_path, capture_output=True, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)},
        )  # fmt: skip
    assert proc.returncode == 2
    assert len(proc.stderr.splitlines()) == 1, proc.stderr  # no cluster start-up, no worker traceback
    assert proc.stderr.startswith("error: bad.txt: invalid UTF-8 at byte offset 6 (line 2)")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.txt", "good.txt"]


def pid_of(_item) -> int:
    return os.getpid()


def test_the_local_pool_forks_no_more_workers_than_items(caplog):
    from pipeline.engine.executor import LocalExecutor, cores, resolve_workers

    runner = LocalExecutor(8)
    try:
        assert len(set(runner.map(pid_of, [1, 2]))) <= 2 and runner.started == 2
        assert len(set(runner.map(pid_of, range(3)))) <= 3 and runner.started == 3  # grown for a wider pass
    finally:
        runner.close()
    with caplog.at_level("WARNING"):
        assert resolve_workers(cores() + 1) == cores() + 1
    assert f"workers: {cores() + 1} is above the {cores()} core(s)" in caplog.text


def test_passes_are_timed_as_records_not_log_lines(tmp_path, monkeypatch):
    import json

    from pipeline.engine import executor as ex

    monkeypatch.setenv("PUNCT_TIMINGS", str(tmp_path / "timings.jsonl"))
    with ex.executor("local", 2) as runner:
        assert runner.map(pid_of, range(3), label="a pass") and runner.map(pid_of, [1], label="another")
        runner.map(pid_of, [1])  # unlabelled: not a pass of the stage
    records = [json.loads(line) for line in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert [(r["label"], r["items"], r["engine"]) for r in records] == [("a pass", 3, "local"), ("another", 1, "local")]
    assert all(r["seconds"] >= 0 and r["pid"] == os.getpid() for r in records)
    assert ex.TIMINGS[-2:] == records
    monkeypatch.setenv("PUNCT_TIMINGS", str(tmp_path / "no" / "such" / "folder" / "t.jsonl"))
    from pipeline.errors import ParamsError

    with pytest.raises(ParamsError, match=r"^PUNCT_TIMINGS=.*t.jsonl: cannot write the timings"):
        ex.record_timing("x", 1.0, 1)


def inner_map(item):
    from pipeline.engine.executor import map_ordered

    return sum(map_ordered(abs, [-item, -1, -2], workers=2))


def test_map_ordered_inside_map_ordered_keeps_each_ones_items():
    """The items live with each call's workers, not in a module global a nested call would reset."""
    from pipeline.engine.executor import map_ordered

    assert map_ordered(inner_map, list(range(12)), workers=2, chunks_per_worker=3) == [i + 3 for i in range(12)]


def test_a_driver_records_its_peak_memory_and_its_largest_workers(tmp_path, root):
    """A process that ran an executor records, when it ends, its own peak RSS and its largest
    worker's: a worker that held 300 MB is the larger."""
    import json
    import subprocess
    import sys

    timings = tmp_path / "timings.jsonl"
    code = (
        "from pipeline.engine.executor import executor\n"
        "def grow(n):\n"
        "    block = bytearray(n << 20)\n"
        "    block[::4096] = b'x' * len(block[::4096])\n"
        "    return len(block)\n"
        "with executor('local', 2) as runner:\n"
        "    runner.map(grow, [300, 1], label='grow')\n"
    )
    env = {**os.environ, "PUNCT_TIMINGS": str(timings), "PYTHONPATH": str(root)}
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    records = [json.loads(line) for line in timings.read_text().splitlines()]
    (memory,) = [r for r in records if r["label"] == "peak memory"]
    assert memory["worker_rss_mb"] > max(300, memory["driver_rss_mb"] + 100) and memory["driver_rss_mb"] > 10, memory


def test_a_clusters_start_is_timed_apart_inside_its_pass(tmp_path, monkeypatch):
    """A Dask cluster starts inside the first pass that needs workers: its start is its own record,
    written before the pass's (whose seconds include it), so a model of more workers can count it
    as serial."""
    import json

    from pipeline.engine import executor as ex

    monkeypatch.setenv("PUNCT_TIMINGS", str(tmp_path / "timings.jsonl"))
    with ex.executor("dask", 1) as runner:
        runner.map(pid_of, range(2), label="a pass")
        runner.map(pid_of, range(2), label="another")
    records = [json.loads(line) for line in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert [(r["label"], r["items"]) for r in records] == [(ex.ENGINE_START, 1), ("a pass", 2), ("another", 2)]
    assert 0 < records[0]["seconds"] <= records[1]["seconds"]


def test_a_dask_pass_imports_its_functions_module_on_every_worker_first(tmp_path, monkeypatch):
    """A pass's function's module is imported on each worker before its tasks run, timed with the
    workers' start (every worker pays it once, at the same time: not work that more workers share);
    a later pass over a function of another module adds a record of that import alone."""
    import json
    import sys

    from pipeline.engine import executor as ex

    monkeypatch.setenv("PUNCT_TIMINGS", str(tmp_path / "timings.jsonl"))
    with ex.executor("dask", 2) as runner:
        runner.map(pid_of, range(3), label="a pass")
        loaded = runner.client.run(lambda: "pipeline.engine.hashsets" in sys.modules)
        assert not any(loaded.values())  # imported by none of the tasks so far
        from pipeline.engine.hashsets import hash_values

        runner.map(hash_values, [["a"], ["b"]], label="another")
        loaded = runner.client.run(lambda: "pipeline.engine.hashsets" in sys.modules)
        runner.map(pid_of, range(3), label="again")
    assert len(loaded) == 2 and all(loaded.values())
    records = [json.loads(line) for line in (tmp_path / "timings.jsonl").read_text().splitlines()]
    assert [(r["label"], r["items"]) for r in records] == [
        (ex.ENGINE_START, 2),
        ("a pass", 3),
        (ex.ENGINE_START, 0),
        ("another", 2),
        ("again", 3),
    ]
