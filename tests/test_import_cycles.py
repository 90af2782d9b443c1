"""No module of ``pipeline/`` imports, directly or round others, a module that imports it back.

Read statically (``ast``), so every way one module reaches another counts: an import at the top, an
import inside a function (lazy), ``importlib.import_module("pipeline....")`` with a literal name, and
a name a package exports lazily (``from pipeline.training import Punctuator`` reaches
``pipeline.training.punctuator``).
"""

import ast

from conftest import ROOT

PACKAGE = ROOT / "pipeline"


def _module_of(path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


MODULES = {_module_of(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def _lazy_exports(module: str) -> dict[str, str]:
    """``name -> submodule`` of a package's ``lazy_exports(__name__, {...})`` call."""
    path = MODULES.get(module)
    if path is None or path.name != "__init__.py":
        return {}
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_exports" and len(node.args) == 2:
            mapping = node.args[1]
            if isinstance(mapping, ast.Dict):
                return {
                    k.value: f"{module}.{v.value}"
                    for k, v in zip(mapping.keys, mapping.values)
                    if isinstance(k, ast.Constant) and isinstance(v, ast.Constant)
                }
    return {}


def _targets(node) -> list[str]:
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
        out = []
        for alias in node.names:
            sub = f"{node.module}.{alias.name}"
            if sub in MODULES:
                out.append(sub)
            else:
                out.append(_lazy_exports(node.module).get(alias.name, node.module))
        return out
    if (
        isinstance(node, ast.Call)
        and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and isinstance(node.args[0].value, str)
    ):
        return [node.args[0].value]
    return []


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in MODULES}
    for module, path in MODULES.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            for target in _targets(node):
                # importing pipeline.a.b imports its packages first: the nearest known module stands for it
                while target and target not in MODULES:
                    target = target.rpartition(".")[0]
                if target and target != module and not module.startswith(target + "."):
                    graph[module].add(target)
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return out


def test_the_graph_sees_lazy_and_importlib_imports():
    graph = _graph()
    # a lazy import inside a function, and a name a package exports lazily
    assert "pipeline.training.punctuator" in graph["pipeline.operations.punctuate"]
    assert _lazy_exports("pipeline.training")["Punctuator"] == "pipeline.training.punctuator"
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_no_import_circles():
    cycles = _cycles(_graph())
    assert not cycles, "modules that import each other, directly or round others:\n" + "\n".join(
        " <-> ".join(c) for c in cycles
    )
