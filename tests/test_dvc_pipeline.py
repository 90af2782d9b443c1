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


def _dvc(args, cwd, **env):
    proc = subprocess.run(
        [sys.executable, "-m", "dvc", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        env={"DVC_NO_ANALYTICS": "1", "PATH": f"{sys.prefix}/bin:/usr/bin:/bin", "HOME": str(cwd), **env},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc.stdout


def _digests(folder):
    """Every file of every dataset (a folder of parts) or file under ``folder``, by relative path."""
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _check_deps_cover_imports(repo, records):
    """Each stage's deps in dvc.yaml list every project file its process imported: a change to any
    of them reruns the stage, and nothing else is a dep by accident of the closure."""
    stages = yaml.safe_load((repo / "dvc.yaml").read_text())["stages"]
    by_command = {}
    for name, stage in stages.items():
        words = stage["cmd"].split()
        by_command[(words[2], words[3] if not words[3].startswith("-") else None)] = name
    seen = set()
    for line in records.read_text().splitlines():
        record = json.loads(line)
        module = "stages." + record["argv"][0].rsplit("/", 1)[-1].removesuffix(".py")
        argument = record["argv"][1] if len(record["argv"]) > 1 and not record["argv"][1].startswith("-") else None
        name = by_command[(module, argument)]
        seen.add(name)
        deps = [str(d) for d in stages[name]["deps"]]
        for file in record["files"]:
            assert not file.startswith(".."), f"{name} imported {file} from outside the repository copy"
            assert any(file == d or file.startswith(d.rstrip("/") + "/") for d in deps), f"{name}: {file} not in deps"
    assert seen == set(stages), f"stages without an import record: {set(stages) - seen}"


@pytest.mark.slow
def test_default_repro_runs_and_is_deterministic(root, tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _copy_repo(root, repo)
    records = tmp_path / "imports.jsonl"
    # the recorder lives outside the copy, so that it is not one of the files a stage imported
    recorder = root / "tests" / "support" / "record_imports"
    _dvc(["repro"], repo, PUNCT_RECORD_IMPORTS=str(records), PYTHONPATH=str(recorder))
    _check_deps_cover_imports(repo, records)
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
    # the exported model runs through punctuate
    exported = [f"models/{name}-{entry['format']}" for name, entry in params.get("export_model", {}).items()]
    text = "so how are you i am fine thanks"
    for folder in exported:
        punctuated = subprocess.run(
            [sys.executable, "-m", "pipeline", "punctuate", "--model", folder, "-q"],
            input=text + "\n",
            cwd=repo,
            capture_output=True,
            text=True,
        )
        assert punctuated.returncode == 0, punctuated.stderr
        assert [w.strip(",.?").lower() for w in punctuated.stdout.split()] == text.split(" ")
    first = {**_digests(repo / "data"), **{f"{f}/{k}": v for f in exported for k, v in _digests(repo / f).items()}}
    assert first and "up to date" in _dvc(["status", "dvc.yaml"], repo)
    _dvc(["repro", "--force"], repo)
    again = {**_digests(repo / "data"), **{f"{f}/{k}": v for f in exported for k, v in _digests(repo / f).items()}}
    assert again == first  # byte-identical outputs, every stage


@pytest.mark.slow  # walks the imports of every stage
def test_dvc_yaml_is_generated_from_the_params_files(root):
    """dvc.yaml and real/dvc.yaml are what `python -m stages.dvc_yaml` writes from the params files."""
    proc = subprocess.run(
        [sys.executable, "-m", "stages.dvc_yaml", "--check"], cwd=root, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
