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
    sources: list[int] | None = None,
):
    """``sources``, if given, receives for each output word the index of the input word it is
    (-1 for an inserted or substituted token), so other per-word columns can follow."""
    out_w, out_l = [], []
    src: list[int] = sources if sources is not None else []
    draws = rng.random(len(words))
    kinds = rng.random(len(words))
    for i, (word, label, changed, kind) in enumerate(zip(words, labels, draws, kinds)):
        if changed >= alpha:
            out_w.append(word)
            out_l.append(label)
            src.append(i)
            continue
        if kind < alpha_sub:
            out_w.append(unk)
            out_l.append(label)
            src.append(-1)
            op = "substituted"
        elif kind < alpha_sub + alpha_del:
            op = "deleted"
        else:
            out_w += [word, unk]
            out_l += [label, "O"]
            src += [i, -1]
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
    sources: list[int] | None = None,
):
    """``sources``: as for :func:`alam` (-1 for a substituted or phoneme-edited word)."""
    out_w: list[str] = []
    out_l: list[str] = []
    src: list[int] = sources if sources is not None else []
    draws = rng.random(len(words))
    for i, (word, label) in enumerate(zip(words, labels)):
        original = word
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
        src.append(i if word == original else -1)
    if counts is not None:
        counts["tokens"] += len(words)
    return out_w, out_l


def augmented(segments, params: dict, epoch: int, seed: int, vocabulary, confusables, first_index: int = 0):
    """``segments`` (a segment table) with one augmentation draw per row, drawn by
    ``epoch_rng(seed, epoch, first_index + row)``: a row's draw depends on its index among the
    rows augmented together (train's), not on how they are batched.  Kept words keep their case
    label; substituted, edited and inserted ones are lowercase."""
    from .schema import segments_table, with_column

    kind = params.get("kind")
    if not kind or segments.num_rows == 0:
        return segments
    columns = {name: [] for name in ("words", "labels", "case", "surface")}
    rows = zip(*(segments[name].to_pylist() for name in columns))
    for i, (words, labels, case, surface) in enumerate(rows, first_index):
        rng = epoch_rng(seed, epoch, i)
        sources: list[int] = []
        if kind == "alam":
            w, l = alam(
                words,
                labels,
                rng,
                alpha=params.get("alpha", 0.15),
                alpha_sub=params.get("alpha_sub", 0.4),
                alpha_del=params.get("alpha_del", 0.4),
                sources=sources,
            )
        elif kind == "3r":
            w, l = three_r(
                words,
                labels,
                rng,
                vocabulary=vocabulary,
                confusables=confusables,
                p_delete=params.get("p_delete", 0.05),
                p_substitute=params.get("p_substitute", 0.05),
                p_phoneme=params.get("p_phoneme", 0.05),
                sources=sources,
            )
        else:
            raise ValueError(f"unknown augmentation {kind!r} (alam or 3r)")
        columns["words"].append(w)
        columns["labels"].append(l)
        columns["case"].append([case[k] if k >= 0 else "O" for k in sources])
        columns["surface"].append([surface[k] if k >= 0 else None for k in sources])
    table = segments_table(
        "x",
        "x",
        segments["doc_id"],
        segments["seg_id"],
        columns["words"],
        columns["labels"],
        segments["split"],
        case=columns["case"],
        surface=columns["surface"],
    )
    return with_column(with_column(table, "corpus", segments["corpus"]), "lang", segments["lang"])


def load_confusables(path) -> dict[str, list[str]]:
    """Word -> its confusable neighbours in rank order, from a confusables Parquet (3R's phoneme edition)."""
    from . import io

    table = io.open_parquet(path).read(columns=["word", "neighbor", "rank"])
    out: dict[str, list[tuple[int, str]]] = {}
    for word, neighbor, rank in zip(*(table[c].to_pylist() for c in ("word", "neighbor", "rank"))):
        out.setdefault(word, []).append((rank, neighbor))
    return {word: [n for _, n in sorted(pairs)] for word, pairs in out.items()}


def epoch_rng(seed: int, epoch: int, index: int = 0) -> np.random.Generator:
    """The generator of one draw: the same (seed, epoch, example) always gives the same augmentation."""
    return np.random.default_rng([seed, epoch, index])
