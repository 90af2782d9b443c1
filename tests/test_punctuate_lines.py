"""``punctuate`` keeps the input's lines: each line is a segment and gives one output line, through
torch and ONNX alike; ``--join`` makes each input one running text; ``-`` is stdin; ``-q``
silences the summary; ``Punctuator.punctuate`` does the same with ``join``."""

import json
import subprocess
import sys

import pytest
from support.reliability import ROOT, call, run_module

from pipeline.training.punctuator import Punctuator, segments_of

LINES = ["so we went to the talk", "", "and it was good how are you"]


@pytest.fixture
def three_lines(tmp_path):
    path = tmp_path / "three.txt"
    path.write_text("\n".join(LINES) + "\n", encoding="utf-8")
    return path


def words(line: str) -> list[str]:
    return [w.strip(",.?!").lower() for w in line.split()]


@pytest.mark.parametrize("kind", ["ckpt", "onnx"])
def test_a_three_line_file_comes_back_as_three_lines(tiny_models, three_lines, kind, capsys):
    rc, stderr = call("pipeline", ["punctuate", "--model", tiny_models / kind, three_lines])
    out = capsys.readouterr().out
    assert rc == 0 and stderr.startswith("punctuate: 13 words in ")
    assert [words(line) for line in out.splitlines()] == [line.split() for line in LINES]
    assert out.endswith("\n") and out.count("\n") == 3
    rc, stderr = call("pipeline", ["punctuate", "-q", "--join", "--model", tiny_models / kind, three_lines])
    joined = capsys.readouterr().out
    assert (rc, stderr) == (0, "")  # -q: no summary
    assert joined.count("\n") == 1 and words(joined) == " ".join(LINES).split()


def test_jsonl_gives_one_record_per_line(tiny_models, three_lines, capsys):
    assert call("pipeline", ["punctuate", "-q", "--format", "jsonl", "--model", tiny_models / "onnx", three_lines]) == (
        0,
        "",
    )
    records = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [(r["input"], r["line"], len(r["words"])) for r in records] == [
        (str(three_lines), 1, 6),
        (str(three_lines), 2, 0),
        (str(three_lines), 3, 7),
    ]


def test_dash_reads_stdin_beside_files(tiny_models, three_lines):
    text = "hello there\r\nhow are you"  # CRLF, and no newline at the end
    proc = run_module("pipeline", ["punctuate", "-q", "--model", tiny_models / "onnx", "-", three_lines], input=text)
    assert proc.returncode == 0 and proc.stderr == ""
    lines = proc.stdout.splitlines()
    assert [words(line) for line in lines] == [["hello", "there"], ["how", "are", "you"], *[s.split() for s in LINES]]


def test_the_python_api_keeps_lines_unless_joined(tiny_models):
    punctuator = Punctuator.load(tiny_models / "onnx")
    texts = ["\n".join(LINES), "one line only"]
    kept = punctuator.punctuate(texts)
    assert [t.count("\n") for t in kept] == [2, 0]
    assert [words(line) for line in kept[0].split("\n")] == [line.split() for line in LINES]
    joined = punctuator.punctuate(texts, join=True)
    assert "\n" not in joined[0] and words(joined[0]) == " ".join(LINES).split()
    assert segments_of("a\r\nb\n\n") == ["a", "b", ""] and segments_of("a\nb", join=True) == ["a\nb"]


def test_a_long_line_is_still_windowed(tiny_models, tmp_path, capsys):
    path = tmp_path / "long.txt"
    path.write_text(" ".join(["we went to the talk"] * 120) + "\nshort line\n", encoding="utf-8")
    args = ["punctuate", "-q", "--window", "40", "--overlap", "10", "--model", tiny_models / "onnx", path]
    assert call("pipeline", args) == (0, "")
    lines = capsys.readouterr().out.splitlines()
    assert [len(line.split()) for line in lines] == [600, 2]


def test_the_onnx_command_starts_without_pandas_which_still_loads_when_asked(tiny_models, three_lines):
    # pyarrow imports pandas on its first array, a third of punctuate's start-up: the command keeps
    # pyarrow from it, and an explicit pandas call afterwards still works
    code = (
        "import sys\n"
        "from pipeline.cli import main\n"
        "rc = main(['punctuate', '-q', '--model', sys.argv[1], sys.argv[2]])\n"
        "print('pandas imported' if 'pandas' in sys.modules else 'no pandas', rc, file=sys.stderr)\n"
        "import pyarrow as pa\n"
        "print(type(pa.table({'a': [1]}).to_pandas()).__name__, file=sys.stderr)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(tiny_models / "onnx"), str(three_lines)],
        capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    assert proc.stderr.splitlines() == ["no pandas 0", "DataFrame"], proc.stderr
    assert proc.stdout.count("\n") == 3
