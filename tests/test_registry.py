"""One language registry (issue 33 item 2): a language's normalizer, verbalizer and g2p found the
same way, built-ins without installed metadata, plugins through ``punct_corpora.languages``."""

from __future__ import annotations

import sys
from importlib.metadata import EntryPoint

import pytest

from pipeline.text import registry

PLUGIN = """
from pipeline.text.languages import Language

LANGUAGE = Language("xq", "Testish", lowercase=True)
G2P = "pipeline.phonetics.g2p.ms"
"""


@pytest.fixture
def entry_points(monkeypatch):
    """Install entry points of the languages group (none by default: a checkout not installed)."""
    from pipeline.phonetics.g2p import get_g2p
    from pipeline.text.languages import get_language
    from pipeline.text.verbalize import get_verbalizer

    installed: list[EntryPoint] = []

    def fake(group=None, **_):
        return [e for e in installed if e.group == group]

    def forget():
        registry.clear()
        for cached in (get_language, get_g2p, get_verbalizer):
            cached.cache_clear()

    monkeypatch.setattr(registry.metadata, "entry_points", fake)
    forget()
    yield installed
    forget()


def test_built_ins_are_found_without_installed_metadata(entry_points):
    from pipeline.phonetics.g2p import g2p_module
    from pipeline.text.languages import available_languages, get_language
    from pipeline.text.verbalize import available

    assert {"en", "hi", "zh", "ms", "bn"} <= set(available_languages())
    assert get_language("hi").code == "hi"
    assert available() == ["bn", "en", "hi", "ms"]
    assert g2p_module("ta") == "pipeline.phonetics.g2p.indic"
    assert registry.lookup("en") == registry.LanguageModules(
        "en", "pipeline.text.languages.en", "pipeline.text.verbalize.en", "pipeline.phonetics.g2p.en"
    )
    assert registry.lookup("_indic") is None and registry.lookup("klingon") is None


def test_a_plugin_adds_a_language_with_its_g2p(entry_points, tmp_path, monkeypatch):
    (tmp_path / "xq_language.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_points.append(EntryPoint("xq", "xq_language", registry.GROUP))
    from pipeline.phonetics.g2p import get_g2p
    from pipeline.text.languages import available_languages, get_language
    from pipeline.text.verbalize import NoGrammarError, get_verbalizer

    assert "xq" in available_languages()
    language = get_language("xq")
    assert language.name == "Testish"
    assert language.normalize_words(["ka\u2019ta"]) == ["ka'ta"]
    assert get_g2p("xq").phonemize(["saya"])[0][0]  # the Malay converter, as the plugin named it
    with pytest.raises(NoGrammarError, match="no verbalization grammar for language 'xq'"):
        get_verbalizer("xq")
    sys.modules.pop("xq_language", None)


def test_a_plugin_cannot_replace_a_built_in(entry_points, tmp_path, monkeypatch, caplog):
    (tmp_path / "fake_en.py").write_text(PLUGIN, encoding="utf-8")
    monkeypatch.syspath_prepend(str(tmp_path))
    entry_points.append(EntryPoint("en", "fake_en", registry.GROUP))
    with caplog.at_level("WARNING"):
        assert registry.lookup("en").language == "pipeline.text.languages.en"
    assert "language 'en' of fake_en ignored" in caplog.text


def test_an_unknown_language_is_one_params_error(entry_points):
    from pipeline.errors import ParamsError
    from pipeline.phonetics.g2p import get_g2p
    from pipeline.text.languages import get_language

    with pytest.raises(ParamsError, match="unknown language code 'xx'; available: as, bn"):
        get_language("xx")
    with pytest.raises(ParamsError, match="no grapheme-to-phoneme conversion for language 'xx'"):
        get_g2p("xx")


def test_the_two_reader_lookups_have_two_names():
    import corpora
    from pipeline import ingest

    assert not hasattr(ingest, "get_reader")
    assert ingest.reader_module("tsv").__name__ == "corpora.labelled_tsv"
    assert corpora.get_reader("tsv") is ingest.reader_module("tsv").prepare
