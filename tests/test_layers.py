"""The package's layers: every import inside ``pipeline/`` goes down, never up or round.

Read statically (``ast``), so imports inside functions count too: a lazy import is still a
dependency.  The layers are those of ``pipeline/__init__.py``'s docstring.
"""

import ast

from conftest import ROOT

# lowest first; a part may import its own package and any part of a lower layer
LAYERS = [
    {"_lazy", "errors"},
    {"labels"},
    {"schema"},
    {"engine"},
    {"text"},
    {"ingest", "phonetics", "audit"},
    {"params"},
    {"align", "datasets"},
    {"training"},
    {"operations", "entrypoint"},
    {"cli"},
    {"__main__"},
]
LAYER_OF = {part: i for i, layer in enumerate(LAYERS) for part in layer}
PACKAGE = ROOT / "pipeline"


def _part(module: str) -> str | None:
    """``pipeline.engine.writing`` -> ``engine``; ``pipeline.cli`` -> ``cli``; other packages -> None."""
    names = module.split(".")
    if names[0] != "pipeline" or len(names) < 2:
        return None
    return names[1]


def _imports():
    """(importing part, imported part, file, line) for every import of another part of ``pipeline``."""
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(ROOT)
        if rel.parts[1] == "__init__.py":
            continue  # the package's own docstring and version
        source = rel.parts[1].removesuffix(".py")
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                targets = [node.module] if node.module != "pipeline" else [f"pipeline.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                continue
            for target in targets:
                part = _part(target)
                if part is not None and part != source:
                    yield source, part, rel, node.lineno


def test_every_part_has_a_layer():
    parts = {p.name.removesuffix(".py") for p in PACKAGE.iterdir() if p.suffix == ".py" or (p / "__init__.py").exists()}
    parts.discard("__init__")
    assert parts == set(LAYER_OF), "a part of pipeline/ missing from LAYERS, or a layer naming no part"


def test_imports_go_down_only():
    upward = [
        f"{rel}:{line}: {source} (layer {LAYER_OF[source]}) imports {part} (layer {LAYER_OF[part]})"
        for source, part, rel, line in _imports()
        if LAYER_OF[part] >= LAYER_OF[source]
    ]
    assert not upward, "\n".join(upward)


def test_the_layers_are_the_documented_ones():
    doc = (PACKAGE / "__init__.py").read_text(encoding="utf-8")
    for layer in LAYERS:
        for part in layer - {"__main__", "_lazy"}:
            assert f"``{part}``" in doc, f"pipeline/__init__.py does not describe {part}"
