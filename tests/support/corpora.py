"""Where the tests find their corpora: the one place that decides between the real ones and the fixtures.

The real corpora live beside the repository as ``../shared/corpora`` (their README names sources and
licences).  A clone without them gets ``tests/fixtures/shared/corpora``: small files cut from them by
``tests/fixtures/build.py`` (or written in their formats where a licence forbids copying), at the same
relative paths, so a test reads ``root / "indic/flores/hin_Deva.devtest"`` either way.

``PUNCT_SHARED_CORPORA`` names the real root instead of ``../shared/corpora``; a folder that does not
exist (``PUNCT_SHARED_CORPORA=/nonexistent``) simulates a fresh clone.  Tests whose assertions need the
whole real corpora (exact counts, paper-scale numbers) carry the ``real_corpora`` mark: they skip on
the fixtures, and fail instead where ``PUNCT_REQUIRE_CORPORA`` is set (CI).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "corpora"
FIXTURES = ROOT / "tests" / "fixtures" / "shared" / "corpora"

#: fixture files that are not cut from the real ones (their licences forbid copying, see the
#: fixtures' README): same format, other content, so a check of a real line or talk needs the real file
SYNTHETIC = ("iwslt_en/", "iwslt_en_raw/", "iwslt_zh/iwslt20", "bangla_news/")


def real_root() -> Path:
    """Where the real corpora are expected (they may be absent)."""
    forced = os.environ.get("PUNCT_SHARED_CORPORA")
    return Path(forced) if forced else REAL


def has_real_corpora() -> bool:
    return real_root().is_dir()


def corpus_root() -> Path:
    """The real corpora where present, else the committed fixtures in the same layout."""
    return real_root() if has_real_corpora() else FIXTURES


def missing_reason() -> str:
    return f"real corpora not found at {real_root()} (they ship beside the repo as ../shared/corpora)"


def required() -> bool:
    """CI sets ``PUNCT_REQUIRE_CORPORA``: a test that needs the real corpora fails without them."""
    return bool(os.environ.get("PUNCT_REQUIRE_CORPORA"))


def require_real() -> Path:
    """The real corpora's root; else the test skips, or fails where ``PUNCT_REQUIRE_CORPORA`` is set."""
    if has_real_corpora():
        return real_root()
    reason = missing_reason()
    if required():
        pytest.fail(reason + "; PUNCT_REQUIRE_CORPORA is set, so they are mandatory")
    pytest.skip(reason)


def require_real_content(rel: str) -> None:
    """Skip (or fail, in CI) a check of ``rel``'s actual lines where the fixture of ``rel`` is synthetic."""
    if rel.startswith(SYNTHETIC):
        require_real()
