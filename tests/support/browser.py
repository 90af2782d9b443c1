"""The audit page in a real browser: Debian's headless Chromium (``.ci/run`` installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest

#: the audit page's bar colours, one per punctuation label
BAR_COLORS = ("#1f77b4", "#d62728", "#2ca02c", "#ff7f0e")


def chromium() -> str:
    """The browser's path; else the test skips (fails in CI, where ``.ci/run`` installs it)."""
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    message = "chromium is not installed (.ci/run installs Debian's chromium)"
    if os.environ.get("PUNCT_REQUIRE_CORPORA"):
        pytest.fail(message)
    pytest.skip(message)


def screenshot(page: Path, shot: Path, width: int, height: int, profile: Path) -> np.ndarray:
    """``page`` rendered at ``width`` x ``height`` into ``shot``: its pixels (height, width, RGB),
    after asserting the page logged no console message and threw nothing."""
    from PIL import Image

    flags = [
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={profile}",
        "--enable-logging=stderr",
        "--v=0",
        "--hide-scrollbars",
        f"--window-size={width},{height}",
    ]
    proc = subprocess.run(
        [chromium(), *flags, f"--screenshot={shot}", page.as_uri()], capture_output=True, text=True, timeout=120
    )
    assert shot.exists(), proc.stderr[-2000:]
    console = [line for line in proc.stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line]
    assert not console, console
    return np.asarray(Image.open(shot).convert("RGB"))


def missing_colors(image: np.ndarray, colors=BAR_COLORS) -> list[str]:
    """The ``#rrggbb`` colours of which ``image`` has no pixel."""
    present = {tuple(c) for c in np.unique(image.reshape(-1, 3), axis=0)}
    return [c for c in colors if tuple(int(c[i : i + 2], 16) for i in (1, 3, 5)) not in present]
