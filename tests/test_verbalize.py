"""Every grammar against its test-case file (lexicons/<lang>/verbalize/<grammar>.cases: written~spoken).

An empty expected side means the grammar must not accept the input.
"""

import unicodedata
from pathlib import Path

import pytest

from pipeline.lexicon import LEXICON_DIR
from pipeline.verbalize import NoGrammarError, available, get_verbalizer, read_cases

CASE_FILES = sorted(LEXICON_DIR.glob("*/verbalize/*.cases"))


def test_every_grammar_has_at_least_30_cases():
    for lang in available():
        verbalizer = get_verbalizer(lang)
        for grammar in verbalizer.grammars:
            path = LEXICON_DIR / lang / "verbalize" / f"{grammar}.cases"
            assert path.exists(), f"no test cases for {lang}/{grammar}"
            assert len(read_cases(path)) >= 30, path


@pytest.mark.parametrize("path", CASE_FILES, ids=lambda p: f"{p.parts[-3]}/{p.stem}")
def test_cases(path: Path):
    lang, grammar = path.parts[-3], path.stem
    verbalizer = get_verbalizer(lang)
    failures = []
    for lineno, written, spoken in read_cases(path):
        got = verbalizer.verbalize(written, grammar) or ""
        if got != unicodedata.normalize("NFC", spoken):
            failures.append(f"{path.name}:{lineno}: {written!r} -> {got!r}, expected {spoken!r}")
    assert not failures, "\n".join(failures)


def test_documented_examples():
    assert get_verbalizer("en").verbalize("123.5") == "one hundred twenty three point five"
    assert get_verbalizer("ms").verbalize("123.5") == "seratus dua puluh tiga perpuluhan lima"
    assert get_verbalizer("hi").verbalize("123") == "एक सौ तेईस"
    assert get_verbalizer("bn").verbalize("১২৩") == unicodedata.normalize("NFC", "একশ তেইশ")


def test_grammars_are_cached(tmp_path, monkeypatch):
    from pipeline import verbalize

    monkeypatch.setenv("PUNCT_CACHE_DIR", str(tmp_path))
    verbalize.get_verbalizer.cache_clear()
    try:
        get_verbalizer("hi")
        assert list(tmp_path.glob("grammars/hi-*/cardinal.fst"))
    finally:
        verbalize.get_verbalizer.cache_clear()


def test_unknown_language():
    with pytest.raises(NoGrammarError, match="no verbalization grammar for language 'xx'"):
        get_verbalizer("xx")
