"""Package exports resolved on first use, so importing a package does not import its heavy modules
(``pipeline.training`` would otherwise pull in torch for a caller that wants only its config)."""

from __future__ import annotations

import importlib


def lazy_exports(package: str, exports: dict[str, str]):
    """A module ``__getattr__`` and ``__dir__`` for ``package`` that import ``exports[name]`` (a
    submodule name) when ``name`` is first read."""

    def __getattr__(name: str):
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(f"{package}.{module}"), name)

    def __dir__():
        return sorted(exports)

    return __getattr__, __dir__
