"""`dvc repro` of the default pipeline in a fresh copy of the repository."""

import hashlib
import json
import shutil
import subprocess
import sys

import pytest
import yaml


def _copy_repo(root, dest):
    files = subprocess.run(
        ["git", "ls-files", "-co", "--exclude-standard"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.split("\n")
    for name in filter(None, files):
        src = root / name
        if src.is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / name)
    subprocess.run(["git", "init", "-q"], cwd=dest, check=True)


def _dvc(args, cwd):
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"DVC_NO_ANALYTICS": "1", "PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": str(cwd)},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _digests(folder):
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.glob("*.parquet"))}


@pytest.mark.slow
def test_default_repro_runs_and_is_deterministic(root, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(root, repo)
    _dvc(["repro"], repo)
    params = yaml.safe_load((repo / "params.yaml").read_text())
    audit = json.loads((repo / "reports" / "audit.json").read_text())
    assert {k for k in audit if not k.startswith("dataset:")} == set(params["corpora"]) | set(params["alignments"])
    assert {k for k in audit if k.startswith("dataset:")} == {f"dataset:{d}" for d in params["datasets"]}
    for name in params["corpora"]:
        assert audit[name]["words"] > 0, name
        stats = json.loads((repo / "data" / "stats" / f"{name}.json").read_text())
        assert stats["words"] == audit[name]["words"]
    for name, entry in params["alignments"].items():
        report = json.loads((repo / "data" / "alignment" / f"{name}.json").read_text())
        assert report["hypothesis_words"] == audit[entry["hyp"]]["words"] == audit[name]["words"]
        assert report["marks"]["transferred"] > 0
    first = _digests(repo / "data" / "segments")
    assert "up to date" in _dvc(["status", "dvc.yaml"], repo)
    _dvc(["repro", "--force"], repo)
    assert _digests(repo / "data" / "segments") == first  # byte-identical outputs
