import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared" / "corpora"


def _require_corpora() -> Path:
    if SHARED.is_dir():
        return SHARED
    reason = f"real corpora not found at {SHARED} (they ship beside the repo as ../shared/corpora)"
    if os.environ.get("PUNCT_REQUIRE_CORPORA"):
        pytest.fail(reason + "; PUNCT_REQUIRE_CORPORA is set, so they are mandatory")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared() -> Path:
    """``../shared/corpora``: skipped when absent, a failure in CI (PUNCT_REQUIRE_CORPORA=1)."""
    return _require_corpora()


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT
