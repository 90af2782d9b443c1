"""Short functions: none in the package, the readers or the stages over 150 lines, at most 8 over
80.  A long function is split by job into named helpers, not by length into parts."""

import ast

from conftest import ROOT

LONGEST, LONG, MOST_LONG = 150, 80, 8


def _lengths():
    for folder in ("pipeline", "corpora", "stages"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                    yield node.end_lineno - node.lineno + 1, f"{path.relative_to(ROOT)}:{node.lineno} {node.name}"


def test_no_function_is_over_150_lines_and_few_over_80():
    lengths = sorted(_lengths(), reverse=True)
    assert len(lengths) > 500  # the walk found the code
    assert not [f"{n} lines: {where}" for n, where in lengths if n > LONGEST]
    long = [f"{n} lines: {where}" for n, where in lengths if n > LONG]
    assert len(long) <= MOST_LONG, "\n".join(long)
