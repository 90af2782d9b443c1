"""ASR-error augmentation as pure, seeded functions over one segment's words and labels.

Usable inside a training data loader (a new draw each epoch: pass a generator
seeded with (seed, epoch)) and by a stage that materializes copies for audit.

* :func:`alam` (Alam et al. 2020, §4.3): each token is changed with probability
  ``alpha``; of the changed tokens a share ``alpha_sub`` is replaced by the unknown
  token (label kept), ``alpha_del`` is deleted (word and label removed), the rest
  get an unknown token inserted after them with label O.  Paper's best: 0.15, 0.4, 0.4.
* :func:`three_r` (Zheng et al. 2022, 3R): random word deletion with the forward
  label rule of its Table I (deleting a word that carries a mark moves the mark to
  the previous word), random word substitution by a random vocabulary word, and
  random phoneme edition: a word replaced by one of its confusable neighbours.
  5 % each by default.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from .labels import LABEL_TO_ID

UNK = "[UNK]"


def _merge(a: str, b: str) -> str:
    """The stronger of two labels (QUESTION > PERIOD > COMMA > O)."""
    return a if LABEL_TO_ID[a] >= LABEL_TO_ID[b] else b


def alam(
    words: list[str],
    labels: list[str],
    rng: np.random.Generator,
    alpha: float = 0.15,
    alpha_sub: float = 0.4,
    alpha_del: float = 0.4,
    unk: str = UNK,
    counts: Counter | None = None,
):
    out_w, out_l = [], []
    draws = rng.random(len(words))
    kinds = rng.random(len(words))
    for word, label, changed, kind in zip(words, labels, draws, kinds):
        if changed >= alpha:
            out_w.append(word)
            out_l.append(label)
            continue
        if kind < alpha_sub:
            out_w.append(unk)
            out_l.append(label)
            op = "substituted"
        elif kind < alpha_sub + alpha_del:
            op = "deleted"
        else:
            out_w += [word, unk]
            out_l += [label, "O"]
            op = "inserted"
        if counts is not None:
            counts[op] += 1
    if counts is not None:
        counts["tokens"] += len(words)
    return out_w, out_l


def three_r(
    words: list[str],
    labels: list[str],
    rng: np.random.Generator,
    vocabulary: list[str] | None = None,
    confusables: dict[str, list[str]] | None = None,
    p_delete: float = 0.05,
    p_substitute: float = 0.05,
    p_phoneme: float = 0.05,
    counts: Counter | None = None,
):
    out_w: list[str] = []
    out_l: list[str] = []
    draws = rng.random(len(words))
    for i, (word, label) in enumerate(zip(words, labels)):
        r = draws[i]
        if r < p_delete:
            # forward label rule (Table I): the deleted word's mark moves to the previous word
            if label != "O" and out_l:
                out_l[-1] = _merge(out_l[-1], label)
            if counts is not None:
                counts["deleted"] += 1
            continue
        if r < p_delete + p_substitute and vocabulary:
            word = vocabulary[int(rng.integers(len(vocabulary)))]
            if counts is not None:
                counts["substituted"] += 1
        elif r < p_delete + p_substitute + p_phoneme and confusables and confusables.get(word):
            options = confusables[word]
            word = options[int(rng.integers(len(options)))]
            if counts is not None:
                counts["phoneme_edited"] += 1
        out_w.append(word)
        out_l.append(label)
    if counts is not None:
        counts["tokens"] += len(words)
    return out_w, out_l


def epoch_rng(seed: int, epoch: int, index: int = 0) -> np.random.Generator:
    """The generator of one draw: the same (seed, epoch, example) always gives the same augmentation."""
    return np.random.default_rng([seed, epoch, index])
