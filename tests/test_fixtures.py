"""The committed fixture corpora: every reader has one, and build.py writes exactly what is committed."""

import filecmp
import sys

import pytest
from support import corpora
from test_engine import READERS

from pipeline.ingest import ingest_table, readers


def test_every_reader_has_a_fixture_corpus(root, monkeypatch):
    """test_engine's READERS runs each reader on local workers and on Dask: it must name every
    registered reader, and each source must exist among the fixtures (a fresh clone runs them)."""
    monkeypatch.chdir(root)
    assert {name.split("-")[0] for name in READERS} == set(readers())
    for name, (lang, source, options) in READERS.items():
        reader = name.split("-")[0]
        path = corpora.FIXTURES / source
        assert path.exists(), path
        glob = "*.json" if reader == "news_json" else "*"
        table, report = ingest_table(reader, [path], lang if name != "text-blank" else "zh", "c", options, glob=glob)
        assert table.num_rows > 100 and report["words"] > 1000, name


@pytest.mark.real_corpora
def test_build_writes_the_committed_fixtures(root, tmp_path):
    sys.path.insert(0, str(root / "tests" / "fixtures"))
    try:
        import build
    finally:
        sys.path.pop(0)
    build.build(corpora.real_root(), tmp_path / "corpora")
    compared = filecmp.dircmp(corpora.FIXTURES, tmp_path / "corpora")

    def differences(d):
        yield from (d.left_only, d.right_only, d.diff_files, d.funny_files)
        for sub in d.subdirs.values():
            yield from differences(sub)

    assert not any(differences(compared))
    # dircmp trusts files whose size and time agree: compare the bytes as well
    for path in corpora.FIXTURES.rglob("*"):
        if path.is_file():
            assert path.read_bytes() == (tmp_path / "corpora" / path.relative_to(corpora.FIXTURES)).read_bytes(), path
