import os
from pathlib import Path

import pytest
from support import corpora
from support.models import tiny_models  # noqa: F401 (a fixture of the model tests, built once a session)

ROOT = Path(__file__).resolve().parent.parent


def pytest_configure(config):
    # under pytest-xdist each worker process has a core of its own: torch's and Arrow's thread
    # pools would otherwise each take every core and contend (a test that sets its own keeps it)
    if os.environ.get("PYTEST_XDIST_WORKER"):
        os.environ.setdefault("OMP_NUM_THREADS", "1")
    config.addinivalue_line(
        "markers",
        "real_corpora: needs the whole real corpora (../shared/corpora): skipped on the fixtures, "
        "a failure where PUNCT_REQUIRE_CORPORA is set",
    )


@pytest.hookimpl(tryfirst=True)  # before the fixtures, which may read the real files
def pytest_runtest_setup(item):
    if item.get_closest_marker("real_corpora") is not None:
        corpora.require_real()


@pytest.fixture(scope="session")
def shared() -> Path:
    """The corpus root: ``../shared/corpora`` where present, else the committed fixtures (same layout)."""
    return corpora.corpus_root()


@pytest.fixture(scope="session")
def root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def iwslt_dev(shared):
    """The first 600 segments of IWSLT dev2012, read once: each training test takes its first rows."""
    from support.training import iwslt

    return iwslt(shared, 600)
