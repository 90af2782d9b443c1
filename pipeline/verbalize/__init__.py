"""Spoken-form verbalization: written numbers to the words an ASR system outputs.

``123.5`` -> ``one hundred twenty three point five`` (English), ``RM5`` -> ``lima ringgit``
(Malay).  Each language has a grammar module here that builds pynini FSTs from
word lists in ``lexicons/<lang>/verbalize/*.tsv``; the compiled FSTs are cached
on disk, keyed by a hash of those files and of the module, so they are built once.
Test cases are ``lexicons/<lang>/verbalize/<grammar>.cases`` files of
``input~expected`` lines.
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
import unicodedata
from pathlib import Path

from ..lexicon import LEXICON_DIR

_CACHE_VERSION = "1"


class NoGrammarError(ValueError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("PUNCT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "punct-corpora"
    )
    return Path(base) / "grammars"


class Verbalizer:
    """Applies a language's grammars to single tokens."""

    def __init__(self, lang: str, grammars: dict):
        import pynini

        self.lang = lang
        self.grammars = grammars  # name -> pynini.Fst
        self._readings: dict[str, list[str]] = {}
        self._pynini = pynini

    def __reduce__(self):
        # FSTs do not pickle: a worker process rebuilds (or, forked, inherits) the cached grammars
        return get_verbalizer, (self.lang,)

    @staticmethod
    def might_apply(token: str) -> bool:
        """Cheap test: only tokens with a digit, or web addresses, can be verbalized."""
        return any(c.isdigit() for c in token) or token.startswith(("www.", "http://", "https://"))

    def verbalize(self, token: str, grammar: str | None = None) -> str | None:
        """Spoken form of ``token`` by the first grammar that accepts it (or ``grammar``), else None."""
        if not token or not self.might_apply(token):
            return None
        for name in [grammar] if grammar else self.grammars:
            spoken = self._apply(token, self.grammars[name])
            if spoken is not None:
                return spoken
        return None

    def readings(self, token: str) -> list[str]:
        """Every distinct spoken form the grammars give (1990: cardinal and year readings)."""
        if not token or not self.might_apply(token):
            return []
        cached = self._readings.get(token)
        if cached is not None:
            return cached
        out = []
        for fst in self.grammars.values():
            spoken = self._apply(token, fst)
            if spoken is not None and spoken not in out:
                out.append(spoken)
        if len(self._readings) < 100_000:  # numbers repeat; the cache stays bounded
            self._readings[token] = out
        return out

    def _apply(self, token: str, fst) -> str | None:
        pynini = self._pynini
        try:
            lattice = pynini.escape(token) @ fst
        except Exception:  # a symbol outside the grammar's alphabet
            return None
        if lattice.start() == pynini.NO_STATE_ID or lattice.num_states() == 0:
            return None
        out = pynini.shortestpath(lattice).project("output").rmepsilon().string()
        # NFC, as the pipeline's text: word lists typed with precomposed letters match normalized words
        return unicodedata.normalize("NFC", re.sub(r" +", " ", out).strip())

    def verbalize_words(self, words: list[str]) -> list[str]:
        """Each word replaced by its spoken form where a grammar accepts it."""
        out = []
        for word in words:
            spoken = self.verbalize(word)
            out.append(word if spoken is None else spoken)
        return out


def grammar_files(lang: str) -> list[Path]:
    folder = LEXICON_DIR / lang / "verbalize"
    return sorted(p for p in folder.glob("*") if p.suffix in (".tsv", ".txt")) if folder.is_dir() else []


def _fingerprint(lang: str, module) -> str:
    digest = hashlib.sha256(_CACHE_VERSION.encode())
    for path in [*grammar_files(lang), Path(module.__file__), *sorted(Path(__file__).parent.glob("builders*.py"))]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def get_verbalizer(lang: str) -> Verbalizer:
    """The verbalizer of a language (NoGrammarError if it has none)."""
    try:
        module = importlib.import_module(f"{__name__}.{lang}")
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{lang}":
            raise
        raise NoGrammarError(
            f"no verbalization grammar for language {lang!r}; available: {', '.join(available())}"
        ) from None
    import pynini

    folder = cache_dir() / f"{lang}-{_fingerprint(lang, module)}"
    names = list(module.GRAMMARS)
    if all((folder / f"{n}.fst").exists() for n in names):
        grammars = {n: pynini.Fst.read(str(folder / f"{n}.fst")) for n in names}
    else:
        grammars = module.build(LEXICON_DIR / lang / "verbalize")
        folder.mkdir(parents=True, exist_ok=True)
        for name, fst in grammars.items():
            tmp = folder / f".{name}.{os.getpid()}.tmp"
            fst.write(str(tmp))
            os.replace(tmp, folder / f"{name}.fst")
    return Verbalizer(lang, grammars)


def verbalizer_or_none(lang: str) -> Verbalizer | None:
    """The language's verbalizer, or None where it has no grammar (alignment then compares words as written)."""
    try:
        return get_verbalizer(lang)
    except NoGrammarError:
        return None


def available() -> list[str]:
    import pkgutil

    return sorted(m.name for m in pkgutil.iter_modules(__path__) if not m.name.startswith("builders"))


def read_cases(path: Path) -> list[tuple[int, str, str]]:
    """``input~expected`` lines (``#`` comments) with their line numbers."""
    cases = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if "~" not in line:
            raise ValueError(f"{path}:{lineno}: expected input~expected, got {line!r}")
        written, spoken = line.split("~", 1)
        cases.append((lineno, written, spoken))
    return cases
