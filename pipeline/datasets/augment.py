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

Both can also return, per output word, the position of its source word (-1 for an
inserted one), so other per-word columns (the case labels) follow the edits.
:func:`augmented` applies one of them to a segment table (per-epoch draw), and
:func:`load_confusables` reads the confusables stage's Parquet for phoneme edition.
"""

from __future__ import annotations

import os
from collections import Counter
from collections.abc import Mapping

import numpy as np
import pyarrow as pa

from pipeline.errors import ParamsError
from pipeline.labels import LABEL_TO_ID, LabelSet

UNK = "[UNK]"


def _merge(a: str, b: str, priority: Mapping[str, int] = LABEL_TO_ID) -> str:
    """The stronger of two labels, by their ids in the label set (``papers``: QUESTION > PERIOD > COMMA > O)."""
    return a if priority[a] >= priority[b] else b


def alam(
    words: list[str],
    labels: list[str],
    rng: np.random.Generator,
    alpha: float = 0.15,
    alpha_sub: float = 0.4,
    alpha_del: float = 0.4,
    unk: str = UNK,
    counts: Counter | None = None,
    with_source: bool = False,
):
    """Augmented (words, labels), plus the source position of each output word with ``with_source``."""
    out_w, out_l, source = [], [], []
    draws = rng.random(len(words))
    kinds = rng.random(len(words))
    for i, (word, label, changed, kind) in enumerate(zip(words, labels, draws, kinds)):
        if changed >= alpha:
            out_w.append(word)
            out_l.append(label)
            source.append(i)
            continue
        if kind < alpha_sub:
            out_w.append(unk)
            out_l.append(label)
            source.append(i)
            op = "substituted"
        elif kind < alpha_sub + alpha_del:
            op = "deleted"
        else:
            out_w += [word, unk]
            out_l += [label, "O"]
            source += [i, -1]
            op = "inserted"
        if counts is not None:
            counts[op] += 1
    if counts is not None:
        counts["tokens"] += len(words)
    return (out_w, out_l, source) if with_source else (out_w, out_l)


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
    with_source: bool = False,
    priority: Mapping[str, int] = LABEL_TO_ID,
):
    """Augmented (words, labels), plus the source position of each output word with ``with_source``;
    ``priority``: the label set's ids (which of two marks a deletion keeps)."""
    out_w: list[str] = []
    out_l: list[str] = []
    source: list[int] = []
    draws = rng.random(len(words))
    for i, (word, label) in enumerate(zip(words, labels)):
        r = draws[i]
        if r < p_delete:
            # forward label rule (Table I): the deleted word's mark moves to the previous word
            if label != "O" and out_l:
                out_l[-1] = _merge(out_l[-1], label, priority)
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
        source.append(i)
    if counts is not None:
        counts["tokens"] += len(words)
    return (out_w, out_l, source) if with_source else (out_w, out_l)


def epoch_rng(seed: int, epoch: int, index: int = 0) -> np.random.Generator:
    """The generator of one draw: the same (seed, epoch, example) always gives the same augmentation."""
    return np.random.default_rng([seed, epoch, index])


def augmented(
    segments: pa.Table,
    params: Mapping,
    epoch: int,
    seed: int,
    vocabulary,
    confusables,
    counts: Counter | None = None,
    indices=None,
    *,
    label_set: LabelSet,
) -> pa.Table:
    """The segments with a fresh augmentation draw for this epoch (``params``: kind alam | 3r and its rates).

    Row i draws from ``epoch_rng(seed, epoch, indices[i])`` (default: i), so a row gets the same
    draw wherever it is read.  A ``case`` column follows the edits (an inserted word is ``O``) and
    ``surface`` keeps only the forms of untouched words."""
    if hasattr(params, "model_dump"):
        params = params.model_dump()
    kind = params.get("kind")
    if not kind:
        return segments
    if kind not in ("alam", "3r"):
        raise ParamsError(f"unknown augmentation {kind!r} (alam or 3r)")
    words, labels = segments["words"].to_pylist(), segments["labels"].to_pylist()
    cases = segments["case"].to_pylist() if "case" in segments.column_names else None
    surfaces = segments["surface"].to_pylist() if "surface" in segments.column_names else None
    new_w, new_l, new_c, new_s = [], [], [], []
    for i, (w, l) in enumerate(zip(words, labels)):
        rng = epoch_rng(seed, epoch, int(indices[i]) if indices is not None else i)
        if kind == "alam":
            w2, l2, src = alam(
                w,
                l,
                rng,
                alpha=params.get("alpha", 0.15),
                alpha_sub=params.get("alpha_sub", 0.4),
                alpha_del=params.get("alpha_del", 0.4),
                counts=counts,
                with_source=True,
            )
        else:
            w2, l2, src = three_r(
                w,
                l,
                rng,
                vocabulary=vocabulary,
                confusables=confusables,
                p_delete=params.get("p_delete", 0.05),
                p_substitute=params.get("p_substitute", 0.05),
                p_phoneme=params.get("p_phoneme", 0.05),
                counts=counts,
                with_source=True,
                priority=label_set.to_id,
            )
        new_w.append(w2)
        new_l.append(l2)
        if cases is not None:
            c = cases[i]
            new_c.append(None if c is None else [c[k] if k >= 0 else "O" for k in src])
        if surfaces is not None:
            sf = surfaces[i]
            # a surface form belongs to its word: an edited word has none
            new_s.append(
                None if sf is None else [sf[k] if k >= 0 and w2[j] == w[k] else None for j, k in enumerate(src)]
            )
    columns = {name: segments[name] for name in segments.column_names}
    columns["words"] = pa.array(new_w, segments.schema.field("words").type)
    columns["labels"] = pa.array(new_l, segments.schema.field("labels").type)
    if cases is not None:
        columns["case"] = pa.array(new_c, segments.schema.field("case").type)
    if surfaces is not None:
        columns["surface"] = pa.array(new_s, segments.schema.field("surface").type)
    return pa.table(columns, schema=segments.schema)


def check_confusables(path: str | os.PathLike) -> list:
    """The confusables table's files, opened, or InputError naming a file that is not one."""
    from pipeline.engine.reading import open_parquet, parquet_files
    from pipeline.errors import InputError

    handles = []
    for file in parquet_files(path):
        handle = open_parquet(file)
        missing = {"word", "neighbor", "rank"} - set(handle.schema_arrow.names)
        if missing:
            raise InputError(f"{file}: not a confusables table (no column {', '.join(sorted(missing))})")
        handles.append(handle)
    return handles


def load_confusables(path: str | os.PathLike, k: int | None = None) -> dict[str, list[str]]:
    """word -> its confusable neighbours by rank, from the confusables stage's Parquet (a file or a
    directory of parts; columns word, neighbor, rank, ...).  ``k``: keep the k best of each word."""
    out: dict[str, list[tuple[int, str]]] = {}
    for handle in check_confusables(path):
        for batch in handle.iter_batches(columns=["word", "neighbor", "rank"], batch_size=65_536):
            for word, neighbor, rank in zip(*(batch.column(i).to_pylist() for i in range(3))):
                if k is None or rank <= k:  # ranks count from 1
                    out.setdefault(word, []).append((rank, neighbor))
    return {word: [n for _, n in sorted(pairs)] for word, pairs in out.items()}
