"""Spoken-form verbalization: written numbers to the words an ASR system outputs.

``123.5`` -> ``one hundred twenty three point five`` (English), ``RM5`` -> ``lima ringgit``
(Malay), ``$45 billion`` -> ``forty five billion dollars``, ``in 1990`` -> ``in nineteen
ninety``.  Each language has a grammar module here that builds pynini FSTs from word
lists in ``lexicons/<lang>/verbalize/*.tsv``; the compiled FSTs are cached on disk,
keyed by a hash of those files and of the grammar code, so they are built once.

A class grammar reads a *group* of words (``july 25 2012``) and writes the spoken
words with ``|`` where each input word ends.  :meth:`Verbalizer.speak` walks a word
sequence: around each word with a digit it tries the windows of up to ``MAX_WORDS``
words (longest first; a window may start before the number only at one of the
language's context words, ``in``, ``july``, ``rs.``) against one union of all class
grammars, each class weighted by its rank, so the first class that accepts a
window wins.  Grammar names say what a class is for:

``date``          spoken: the words replace the group (``spoken:date`` counted);
``date:numeric_ambiguous`` (listed in the module's ``LEFT``) recognized but left as
                  written and counted (``left_written:date:numeric_ambiguous``); its
                  output is only a reading alignment may use;
``year:bare``     (listed in ``ALT``) never spoken: a further reading for alignment
                  (``1975`` is a cardinal in the spoken step, but the hypothesis may
                  say ``nineteen seventy five``).

A word with a digit that no class accepts is left as written and counted as
``left_written:unrecognized``.  Test cases are ``lexicons/<lang>/verbalize/<class>.cases``
files of ``input~expected`` lines (input words separated by spaces).
"""

from __future__ import annotations

import functools
import hashlib
import importlib
import os
import re
import unicodedata
from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import InputError, ParamsError
from pipeline.text.lexicon import LEXICON_DIR

_CACHE_VERSION = "2"
#: bound on the per-verbalizer cache of analysed windows (numbers repeat; memory stays small)
_CACHE_LIMIT = 200_000
#: a word the grammars may start from: a digit (ASCII, Devanagari, Bengali), a vulgar fraction, a web address
NUMERIC_PATTERN = "[0-9\u0966-\u096f\u09e6-\u09ef\u00bc-\u00be\u2150-\u215e]|^www\\.|^https?://"
_NUMERIC = re.compile(NUMERIC_PATTERN)
_TAG_END = "@"


class NoGrammarError(ParamsError):
    pass


def cache_dir() -> Path:
    base = os.environ.get("PUNCT_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "punct-corpora"
    )
    return Path(base) / "grammars"


@dataclass
class Spoken:
    """A word sequence in spoken form.

    ``source[j]``: the input word whose punctuation label output word ``j`` carries, or
    -1.  Every input index occurs exactly once, in order: on the output word where that
    input word's content ends (the group's last word for the group's last input word).
    """

    words: list[str]
    source: list[int]
    counts: Counter = field(default_factory=Counter)


@dataclass
class Group:
    """Input words ``start..end-1`` read together by grammar ``name``.

    ``readings``: each reading's output words per input word (``[["forty", "five"],
    ["billion", "dollars"]]``), the spoken one first.  ``spoken`` is False for a group
    left as written (its readings are only alternatives for alignment).
    """

    start: int
    end: int
    name: str
    spoken: bool
    readings: list[list[list[str]]]


def label_positions(segments: list[list[str]]) -> list[int] | None:
    """For each input word of a group, the output word that carries its label.

    Where its content ends, made strictly increasing with the last input word on the last
    output word; None when the group has fewer output than input words.
    """
    total = sum(len(s) for s in segments)
    n = len(segments)
    if total < n or n == 0:
        return None
    ends, seen = [], 0
    for seg in segments:
        seen += len(seg)
        ends.append(seen - 1)
    ends[-1] = total - 1
    for k in range(n - 2, -1, -1):
        ends[k] = min(ends[k], ends[k + 1] - 1)
    previous = -1
    for k in range(n):
        ends[k] = max(ends[k], previous + 1)
        previous = ends[k]
    return ends


class Verbalizer:
    """Applies a language's grammars to words and word sequences."""

    def __init__(self, lang: str, grammars: dict, module):
        import pynini

        self.lang = lang
        self.grammars = grammars  # name -> pynini.Fst, in rank order
        self.left = frozenset(getattr(module, "LEFT", ()))
        self.alternative = frozenset(getattr(module, "ALT", ()))
        self.max_words = getattr(module, "MAX_WORDS", 1)
        folder = LEXICON_DIR / lang / "verbalize"
        self.starters = frozenset(module.starters(folder)) if hasattr(module, "starters") else frozenset()
        native = getattr(module, "NATIVE_DIGITS", "")
        self._to_ascii = str.maketrans(native, "0123456789"[: len(native)]) if native else None
        self._pynini = pynini
        self._tagger = self._union(grammars)
        self._windows: dict[str, list[tuple[str, list[list[str]]]] | None] = {}

    def __reduce__(self):
        # FSTs do not pickle: a worker process rebuilds (or, forked, inherits) the cached grammars
        return get_verbalizer, (self.lang,)

    def _union(self, grammars: dict):
        from pynini.lib import pynutil

        pynini = self._pynini
        parts = []
        for rank, (name, fst) in enumerate(grammars.items()):
            tagged = pynutil.insert(name + _TAG_END) + fst
            parts.append(pynutil.add_weight(tagged, float(rank + 1)))
        return pynini.union(*parts)

    @staticmethod
    def might_apply(token: str) -> bool:
        """Cheap test: only words with a digit (any script), a vulgar fraction, or web addresses."""
        return bool(_NUMERIC.search(token))

    # --- one window -------------------------------------------------------------------

    def _normal(self, text: str) -> str:
        text = unicodedata.normalize("NFC", text)
        return text.translate(self._to_ascii) if self._to_ascii else text

    def _paths(self, text: str, fst, nshortest: int) -> list[tuple[str, float]]:
        pynini = self._pynini
        # a string outside the grammar's alphabet composes to an empty lattice (pynini does not
        # raise): an exception here is a fault, not an unreadable number, and is not hidden
        lattice = pynini.escape(text) @ fst
        if lattice.start() == pynini.NO_STATE_ID or lattice.num_states() == 0:
            return []
        lattice = lattice.project("output").rmepsilon()
        best = pynini.shortestpath(lattice, nshortest=nshortest, unique=nshortest > 1)
        out = [(o, float(w)) for _, o, w in best.paths().items()]
        return sorted(out, key=lambda p: p[1])

    def _window(self, text: str, n_words: int) -> tuple[str, list[list[list[str]]]] | None:
        """The class and readings of a window of ``n_words`` words, best first.

        None when no spoken or left class reads it with at least one output word per input word.
        """
        cached = self._windows.get(text, False)
        if cached is not False:
            return cached
        found = None
        paths = self._paths(self._normal(text), self._tagger, 12)
        if paths:
            readings: list[tuple[str, list[list[str]]]] = []
            for output, _weight in paths:
                name, _, spoken = output.partition(_TAG_END)
                segments = [unicodedata.normalize("NFC", s).split() for s in spoken.split("|")]
                if not any(segments) or (name, segments) in readings:
                    continue
                readings.append((name, segments))
            if readings and readings[0][0] not in self.alternative:
                # further readings of the same class (2012: "two thousand twelve") or of a class that
                # exists to offer them; another class's parse of the same text is no reading of it
                best = readings[0][0]
                usable = [
                    segments
                    for name, segments in readings
                    if (name == best or name in self.alternative)
                    and len(segments) == n_words
                    and label_positions(segments) is not None
                ]
                if usable and usable[0] is readings[0][1]:
                    found = (best, usable)
        if len(self._windows) >= _CACHE_LIMIT:
            self._windows.clear()
        self._windows[text] = found
        return found

    # --- sequences --------------------------------------------------------------------

    def analyse(
        self, words: list[str], stops: Collection[int] = (), candidates: list[int] | None = None
    ) -> list[Group]:
        """The groups of ``words`` that the grammars read, left to right, longest window first.

        ``stops``: indices of words after which a group may not go on (a sentence end).
        ``candidates``: the (ascending) indices of the words with digits, if already known.
        """
        groups: list[Group] = []
        stops = stops if isinstance(stops, (set, frozenset)) else set(stops)
        n = len(words)
        if candidates is None:
            candidates = [i for i, word in enumerate(words) if self.might_apply(word)]
        position = 0  # words before this one are settled
        windows, starters = self._windows, self.starters
        for d in candidates:
            if d < position:
                continue
            group = None
            for start in range(max(position, d - self.max_words + 1), d + 1):
                if start < d and words[start] not in starters:
                    continue
                if stops and any(k in stops for k in range(start, d)):
                    continue
                longest = min(self.max_words, n - start)
                for end in range(start + longest, d, -1):
                    if stops and any(k in stops for k in range(d, end - 1)):
                        continue
                    text = " ".join(words[start:end])
                    found = windows.get(text, False)
                    if found is False:
                        found = self._window(text, end - start)
                    if found is None:
                        continue
                    name, readings = found
                    group = Group(start, end, name, name not in self.left, readings)
                    break
                if group:
                    break
            if group is None:
                group = Group(d, d + 1, "unrecognized", False, [])
            groups.append(group)
            position = group.end
        return groups

    def speak(self, words: list[str], stops: Collection[int] = ()) -> Spoken:
        """``words`` in spoken form, with where each label goes and what was done (see :class:`Spoken`)."""
        out_words: list[str] = []
        source: list[int] = []
        counts: Counter = Counter()
        position = 0
        for group in self.analyse(words, stops):
            out_words += words[position : group.start]
            source += range(position, group.start)
            if group.spoken:
                counts[f"spoken:{group.name}"] += 1
                segments = group.readings[0]
                ends = label_positions(segments)
                base = len(out_words)
                for segment in segments:
                    out_words += segment
                group_source = [-1] * (len(out_words) - base)
                for k, end in enumerate(ends):
                    group_source[end] = group.start + k
                source += group_source
            else:
                counts[f"left_written:{group.name}"] += 1
                out_words += words[group.start : group.end]
                source += range(group.start, group.end)
            position = group.end
        out_words += words[position:]
        source += range(position, len(words))
        return Spoken(out_words, source, counts)

    # --- single words -----------------------------------------------------------------

    def verbalize(self, token: str, grammar: str | None = None) -> str | None:
        """Spoken form of one word: by ``grammar`` alone if given, else as :meth:`speak` reads it; else None."""
        if not token or not self.might_apply(token):
            return None
        if grammar is not None:
            paths = self._paths(self._normal(token), self.grammars[grammar], 1)
            return " ".join(paths[0][0].replace("|", " ").split()) if paths else None
        group = self.analyse([token])[0]
        return " ".join(group.readings[0][0]) if group.spoken else None

    def readings(self, token: str) -> list[str]:
        """Every distinct spoken form of one word, the spoken step's first (1990: cardinal, then year)."""
        if not token or not self.might_apply(token):
            return []
        group = self.analyse([token])[0]
        return [" ".join(r[0]) for r in group.readings]

    def verbalize_words(self, words: list[str]) -> list[str]:
        """The words in spoken form (see :meth:`speak`)."""
        return self.speak(words).words


def grammar_files(lang: str) -> list[Path]:
    folder = LEXICON_DIR / lang / "verbalize"
    return sorted(p for p in folder.glob("*") if p.suffix in (".tsv", ".txt")) if folder.is_dir() else []


def _fingerprint(lang: str) -> str:
    digest = hashlib.sha256(_CACHE_VERSION.encode())
    code = sorted(p for p in Path(__file__).parent.glob("*.py") if p.name != "__init__.py")
    for path in [*grammar_files(lang), *code]:
        digest.update(path.name.encode() + b"\0" + path.read_bytes())
    return digest.hexdigest()[:16]


@functools.cache
def get_verbalizer(lang: str) -> Verbalizer:
    """The verbalizer of a language (NoGrammarError if it has none)."""
    from pipeline.text import registry

    entry = registry.lookup(lang)
    if entry is None or entry.verbalizer is None:
        raise NoGrammarError(f"no verbalization grammar for language {lang!r}; available: {', '.join(available())}")
    module = importlib.import_module(entry.verbalizer)
    import pynini

    folder = cache_dir() / f"{lang}-{_fingerprint(lang)}"
    names = list(module.GRAMMARS)
    if all((folder / f"{n}.fst").exists() for n in names):
        grammars = {n: pynini.Fst.read(str(folder / f"{n}.fst")) for n in names}
    else:
        built = module.build(LEXICON_DIR / lang / "verbalize")
        if list(built) != names:
            raise ValueError(f"{module.__name__}.build() returned {list(built)}, GRAMMARS lists {names}")
        grammars = built
        folder.mkdir(parents=True, exist_ok=True)
        for name, fst in grammars.items():
            tmp = folder / f".{name}.{os.getpid()}.tmp"
            fst.write(str(tmp))
            os.replace(tmp, folder / f"{name}.fst")
    return Verbalizer(lang, grammars, module)


def verbalizer_or_none(lang: str) -> Verbalizer | None:
    """The language's verbalizer, or None where it has no grammar (alignment then compares words as written)."""
    try:
        return get_verbalizer(lang)
    except NoGrammarError:
        return None


def available() -> list[str]:
    from pipeline.text import registry

    return registry.codes("verbalizer")


def read_cases(path: Path) -> list[tuple[int, str, str]]:
    """``input~expected`` lines (``#`` comments) with their line numbers."""
    cases = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        if "~" not in line:
            raise InputError(f"{path}:{lineno}: expected input~expected, got {line!r}")
        written, spoken = line.split("~", 1)
        cases.append((lineno, written, spoken))
    return cases
