"""One operation per command: the command line and the DVC stages call the same function, so a
check, a default or an output cannot differ between them; importing the library changes nothing."""

import hashlib
import json
import os
import subprocess
import sys

import pytest
import yaml

from pipeline import cli
from pipeline.errors import ParamsError
from pipeline.operations.entries import entry, load_entry
from stages import confusables as confusables_stage
from stages import split as split_stage
from stages import train as train_stage


def _digests(folder):
    return {
        str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(folder.rglob("*"))
        if p.is_file()
    }


def _error_line(capsys) -> str:
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("error:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


def test_a_missing_entry_names_the_closest(tmp_path):
    params = tmp_path / "params.yaml"
    params.write_text(yaml.safe_dump({"confusables": {"en_talks": {"lang": "en", "word_list": "w.txt"}}}))
    with pytest.raises(ParamsError, match=r"confusables\.en_talk: no such entry; did you mean 'en_talks'\?"):
        load_entry(params, "confusables", "en_talk")
    with pytest.raises(ParamsError, match=r"^p\.yaml: datasets\.zzz: no such dataset$"):
        entry(type("Params", (), {"datasets": {"ted": 1}})(), "datasets", "zzz", "p.yaml")


@pytest.mark.parametrize(
    ("stage", "argv", "expected"),
    [
        (split_stage, ["samples_mult", "--out", "o", "--report", "r.json"], "datasets.samples_mult: no such dataset"),
        (train_stage, ["tinyy"], "train.tinyy: no such train entry; did you mean 'tiny'?"),
        (confusables_stage, ["en_talk", "--vocab", "v", "--out", "o", "--report", "r"], "did you mean 'en_talks'?"),
    ],
)
def test_every_stage_refuses_a_missing_entry_the_same_way(stage, argv, expected, root, capsys, monkeypatch):
    monkeypatch.chdir(root)
    assert stage.main(argv) == 2
    assert expected in _error_line(capsys)


def test_keep_stress_is_refused_for_a_language_without_stress_by_the_stage_and_the_cli(tmp_path, capsys):
    words = tmp_path / "words.txt"
    words.write_text("makan\nminum\n")
    params = tmp_path / "params.yaml"
    params.write_text(
        yaml.safe_dump({"confusables": {"ms_words": {"lang": "ms", "word_list": str(words), "keep_stress": True}}})
    )
    out = tmp_path / "c.parquet"
    argv = ["ms_words", "--params", str(params), "--vocab", str(words), "--out", str(out)]
    argv += ["--report", str(out) + ".json"]
    assert confusables_stage.main(argv) == 2
    assert "confusables.ms_words.keep_stress: means nothing for language 'ms'" in _error_line(capsys)
    assert cli.main(["confusables", "--lang", "ms", "--vocab", str(words), "--keep-stress", "--out", str(out)]) == 2
    assert "--keep-stress: means nothing for language 'ms'" in _error_line(capsys)
    assert not out.exists()


@pytest.fixture(scope="module")
def segments(root, tmp_path_factory):
    """Two committed samples ingested by the command line, one document a line."""
    folder = tmp_path_factory.mktemp("segments")
    for corpus, lang, path in (("talks", "en", "en/talks.txt"), ("ayat", "ms", "ms/ayat.txt")):
        argv = ["ingest", "--reader", "text", "--lang", lang, "--corpus", corpus, "--doc-boundary", "line"]
        assert cli.main([*argv, str(root / "corpora/samples" / path), "--out", str(folder / f"{corpus}.parquet")]) == 0
    return folder


def test_split_command_equals_the_stage(segments, tmp_path):
    """`punct-corpora split` with options, with a params file, and the DVC stage: the same bytes."""
    params = tmp_path / "params.yaml"
    split = {"ratios": {"train": 0.6, "dev": 0.2, "test": 0.2}, "seed": 7, "min_marks": 1}
    params.write_text(
        yaml.safe_dump(
            {
                "corpora": {
                    "talks": {"reader": "text", "lang": "en", "input": "unused.txt"},
                    "ayat": {"reader": "text", "lang": "ms", "input": "unused.txt"},
                },
                "datasets": {"both": {"corpora": ["talks", "ayat"], "split": split}},
            },
            sort_keys=False,  # the ratios in the order the options give them
        )
    )
    runs = {}
    for how in ("options", "params", "stage"):
        out, report = tmp_path / how / "split.parquet", tmp_path / how / "report.json"
        outputs = ["--out", str(out), "--report", str(report)]
        if how == "options":
            rc = cli.main(
                [
                    "split",
                    str(segments / "talks.parquet"),
                    str(segments / "ayat.parquet"),
                    "--ratios",
                    "train=0.6",
                    "dev=0.2",
                    "test=0.2",
                    "--seed",
                    "7",
                    "--min-marks",
                    "1",
                    "--out",
                    str(out),
                    "--report",
                    str(report),
                ]
            )
        elif how == "params":
            rc = cli.main(
                ["split", "--params", str(params), "--dataset", "both", "--segments-dir", str(segments), *outputs]
            )
        else:
            rc = split_stage.main(["both", "--params", str(params), "--segments-dir", str(segments), *outputs])
        assert rc == 0, how
        runs[how] = {**_digests(out), "report": hashlib.sha256(report.read_bytes()).hexdigest()}
    assert runs["options"] == runs["params"] == runs["stage"]
    import json

    from pipeline.engine.reading import read_segments

    table = read_segments(tmp_path / "stage" / "split.parquet")
    assert set(table["split"].to_pylist()) == {"train", "dev", "test"}
    assert set(table["corpus"].to_pylist()) == {"talks", "ayat"}
    assert json.loads((tmp_path / "stage" / "report.json").read_text())


def test_split_command_refusals(segments, tmp_path, capsys):
    base = ["split", str(segments / "talks.parquet"), "--out", str(tmp_path / "o"), "--report", str(tmp_path / "r")]
    assert cli.main([*base, "--ratios", "train=x"]) == 2
    assert "--ratios" in _error_line(capsys)
    assert cli.main([*base, "--counts", "train=3", "--fixed", f"{segments / 'ayat.parquet'}=valid"]) == 2
    assert "not a split (train, dev, test)" in _error_line(capsys)
    assert cli.main([*base, "--ratios", "train=1", "--params", "params.yaml", "--dataset", "x"]) == 2
    assert "not with --params" in _error_line(capsys)
    assert cli.main([*base, "--strict"]) == 2
    assert "strict checks split counts" in _error_line(capsys)
    assert not (tmp_path / "o").exists()
    # neither ratios nor counts: the params schema's default ratios, as `split: {}` in a params file
    assert cli.main(base) == 0
    assert json.loads((tmp_path / "r").read_text())


def test_importing_the_library_leaves_the_environment_unchanged(root):
    code = (
        "import importlib, os, pkgutil\n"
        "before = dict(os.environ)\n"
        "import pipeline\n"
        "for m in pkgutil.walk_packages(pipeline.__path__, 'pipeline.'):\n"
        "    if not m.name.endswith('__main__'):\n"
        "        importlib.import_module(m.name)\n"
        "changed = sorted(k for k in set(before) | set(os.environ) if before.get(k) != os.environ.get(k))\n"
        "print(changed)\n"
    )
    env = {k: v for k, v in os.environ.items() if k not in ("ARROW_DEFAULT_MEMORY_POOL", "TOKENIZERS_PARALLELISM")}
    out = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
