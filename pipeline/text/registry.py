"""The language registry: for a language code, the modules of its normalizer (a ``Language``), its
spoken-form grammar and its grapheme-to-phoneme converter, all found the same way.

Built-in languages are found in the project's own packages, without installed metadata (a
checkout on ``PYTHONPATH`` works as well as an installed copy): a module per code under
:mod:`pipeline.text.languages`, a grammar module per code under :mod:`pipeline.text.verbalize`,
and the converters of :mod:`pipeline.phonetics.g2p` listed below (one module serves the eleven
Indic languages).  The project's pyproject declares the same modules in the entry-point group
``punct_corpora.languages``, for tools that read entry points.

Another package adds a language through that group: the entry point's name is the code and its
value a module that defines ``LANGUAGE`` (a :class:`~pipeline.text.languages.Language`) and,
optionally, ``VERBALIZER`` and ``G2P``: the names of its grammar module (``GRAMMARS`` and
``build(folder)``, as the built-in ones) and of its converter module (``make(lang)``).  A code
that is built in stays the built-in one: a plugin adds languages, it does not replace them.
"""

from __future__ import annotations

import functools
import importlib
import importlib.util
import logging
import pkgutil
from dataclasses import dataclass
from importlib import metadata

log = logging.getLogger(__name__)

GROUP = "punct_corpora.languages"
LANGUAGES = "pipeline.text.languages"
VERBALIZERS = "pipeline.text.verbalize"
#: the built-in converters by code: modules of pipeline.phonetics.g2p (named, not imported: the
#: text package does not depend on phonetics)
G2P_MODULES = {
    "en": "pipeline.phonetics.g2p.en",
    "ms": "pipeline.phonetics.g2p.ms",
    "zh": "pipeline.phonetics.g2p.zh",
    **{
        code: "pipeline.phonetics.g2p.indic"
        for code in ("as", "bn", "gu", "hi", "kn", "ml", "mr", "or", "pa", "ta", "te")
    },
}


@dataclass(frozen=True)
class LanguageModules:
    """Where a language's parts live (module names; None: the language has no such part)."""

    code: str
    language: str
    verbalizer: str | None = None
    g2p: str | None = None
    builtin: bool = True


def _submodules(package: str, skip=lambda name: False) -> list[str]:
    # found without importing the package: a stage that needs no grammar must not load the
    # verbalizer package (its DVC deps list only what it imports)
    path = importlib.util.find_spec(package).submodule_search_locations
    return sorted(m.name for m in pkgutil.iter_modules(path) if not m.name.startswith("_") and not skip(m.name))


@functools.cache
def builtin() -> dict[str, LanguageModules]:
    """The project's own languages, from its packages."""
    grammars = set(_submodules(VERBALIZERS, skip=lambda name: name.startswith("builders")))
    return {
        code: LanguageModules(
            code,
            f"{LANGUAGES}.{code}",
            f"{VERBALIZERS}.{code}" if code in grammars else None,
            G2P_MODULES.get(code),
        )
        for code in _submodules(LANGUAGES)
    }


def _plugin(entry) -> LanguageModules:
    module = importlib.import_module(entry.value)
    return LanguageModules(
        entry.name, entry.value, getattr(module, "VERBALIZER", None), getattr(module, "G2P", None), builtin=False
    )


@functools.cache
def languages() -> dict[str, LanguageModules]:
    """Every language: the built-in ones, then those plugins add."""
    found = dict(builtin())
    for entry in sorted(metadata.entry_points(group=GROUP), key=lambda e: e.name):
        if entry.name in found:
            if found[entry.name].language != entry.value:
                log.warning("language %r of %s ignored: the code is built in", entry.name, entry.value)
            continue
        found[entry.name] = _plugin(entry)
    return found


def lookup(code: str) -> LanguageModules | None:
    """The modules of ``code``, or None where no language has that code."""
    return languages().get(code) if isinstance(code, str) else None


def codes(part: str = "language") -> list[str]:
    """The codes of the languages that have ``part`` (language, verbalizer or g2p)."""
    return sorted(code for code, entry in languages().items() if getattr(entry, part))


def clear() -> None:
    """Forget what was found (a test that installs a plugin)."""
    builtin.cache_clear()
    languages.cache_clear()
