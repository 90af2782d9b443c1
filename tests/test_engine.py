"""Sharded streaming stages: local process pool and Dask give byte-identical output; a killed worker."""

import hashlib
import os
import signal
import threading
import time
from pathlib import Path

import pytest

from pipeline.engine import IngestTextStep, line_shards, run_sharded
from pipeline.io import read_segments


def digests(folder: Path) -> dict:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


@pytest.fixture(scope="module")
def hindi(shared):
    return [shared / "indic/flores/hin_Deva.devtest", shared / "indic/ntrex/newstest2019-ref.hin.txt"]


def test_shards_cover_every_line_once(hindi):
    shards = line_shards(hindi, 250)
    total_lines = sum(len(p.read_bytes().splitlines()) for p in hindi)
    assert sum(s.stop_byte - s.start_byte for s in shards) == sum(p.stat().st_size for p in hindi)
    assert len(shards) == sum(-(-len(p.read_bytes().splitlines()) // 250) for p in hindi)
    assert total_lines > 2500


def test_local_and_dask_identical(hindi, tmp_path):
    shards = line_shards(hindi, 400)
    step = IngestTextStep("hi", "hindi")
    one = run_sharded(step, shards, tmp_path / "one", engine="local", workers=1)
    two = run_sharded(step, shards, tmp_path / "two", engine="local", workers=2)
    dask = run_sharded(step, shards, tmp_path / "dask", engine="dask", workers=2)
    assert digests(tmp_path / "one") == digests(tmp_path / "two") == digests(tmp_path / "dask")
    assert one == two == dask
    table = read_segments(next((tmp_path / "one").glob("part-00000.parquet")))
    assert table.num_rows > 0 and table["doc_id"][0].as_py() == "hin_Deva.devtest:1"
    assert sum(r["words"] for r in one) > 50_000


class SlowStep(IngestTextStep):
    def __call__(self, shard):
        time.sleep(0.4)
        return super().__call__(shard)


def test_dask_worker_killed_mid_stage(hindi, tmp_path):
    from distributed import Client, LocalCluster

    shards = line_shards(hindi, 200)
    reference = tmp_path / "reference"
    run_sharded(IngestTextStep("hi", "hindi"), shards, reference, engine="local", workers=1)
    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, silence_logs=50)
    client = Client(cluster)
    try:
        pids = list(client.run(os.getpid).values())

        def kill_one():
            time.sleep(1.5)
            os.kill(pids[0], signal.SIGKILL)

        killer = threading.Thread(target=kill_one)
        killer.start()
        out = tmp_path / "killed"
        try:
            run_sharded(SlowStep("hi", "hindi"), shards, out, engine="dask", scheduler=cluster.scheduler_address)
            completed = True
        except Exception:
            completed = False
        killer.join()
        if completed:
            assert digests(out) == digests(reference)  # the killed worker's shards were recomputed
        else:
            assert not out.exists()  # failed cleanly: nothing partial
        assert not [p for p in tmp_path.iterdir() if p.name.startswith(".killed")]  # no staging left
        rerun = tmp_path / "rerun"
        run_sharded(IngestTextStep("hi", "hindi"), shards, rerun, engine="dask", scheduler=cluster.scheduler_address)
        assert digests(rerun) == digests(reference)
    finally:
        client.close()
        cluster.close()


class Broken(IngestTextStep):
    def __call__(self, shard):
        if shard.index == 3:
            raise RuntimeError("disk on fire")
        return super().__call__(shard)


def test_failure_leaves_nothing(tmp_path, hindi):
    with pytest.raises(RuntimeError, match="disk on fire"):
        run_sharded(Broken("hi", "hindi"), line_shards(hindi, 300), tmp_path / "out", engine="local", workers=2)
    assert list(tmp_path.iterdir()) == []


def test_ingest_stage_with_an_engine(tmp_path, shared, root):
    """A registry entry with `engine:` writes a directory of shards that every reader accepts."""
    import yaml

    from stages import ingest

    params = tmp_path / "params.yaml"
    entry = {
        "reader": "text",
        "lang": "ta",
        "input": str(shared / "indic/flores/tam_Taml.devtest"),
        "quoting": "csv",
        "engine": "local",
        "workers": 2,
        "shard_lines": 300,
    }
    params.write_text(yaml.safe_dump({"corpora": {"tamil": entry}}))
    assert ingest.main(["tamil", "--params", str(params), "--out-dir", str(tmp_path / "data")]) == 0
    out = tmp_path / "data/segments/tamil.parquet"
    assert out.is_dir() and len(list(out.glob("part-*.parquet"))) == 4
    from corpora import get_reader

    direct = get_reader("text")(
        [shared / "indic/flores/tam_Taml.devtest"], lang="ta", corpus="tamil", doc_boundary="line", quoting="csv"
    ).table
    sharded = read_segments(out)
    assert sharded["words"].to_pylist() == direct["words"].to_pylist()
    assert sharded["labels"].to_pylist() == direct["labels"].to_pylist()
