"""What every stage entry point does the same way: read a params section, list inputs."""

from __future__ import annotations

from pathlib import Path

import yaml

from pipeline import io


def load_params(path: str | Path, *keys: str):
    """The section ``keys`` of a params file, with a clear error if it is missing."""
    data = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
    node = data
    for depth, key in enumerate(keys):
        if not isinstance(node, dict) or key not in node:
            raise SystemExit(f"error: {path}: no params section {'.'.join(keys[: depth + 1])!r}")
        node = node[key]
    return node


def input_files(path: str | Path, pattern: str = "*") -> list[Path]:
    """A file, or the regular files of a directory matching ``pattern`` (``pipeline.io.input_files``)."""
    try:
        return io.input_files(path, pattern)
    except io.InputError as exc:
        raise SystemExit(f"error: {exc}") from None
