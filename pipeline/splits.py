"""Deterministic document-level splits and question oversampling.

A document's split is decided by a seeded hash of its id alone, so it keeps its
split when other documents are added: ratio splits compare the hash, as a number
in [0, 1), with the cumulative ratios; count splits (4000/500/200 documents) take
documents in hash order.  Oversampling (Rao 2022) copies question sentences of
train into other train documents until a target question share; dev and test are
never touched.
"""

from __future__ import annotations

import hashlib
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .schema import conform, segments_table

SPLITS = ("train", "dev", "test")


def doc_hash(doc_id: str, seed: int) -> float:
    """A number in [0, 1) fixed by the document id and the seed."""
    digest = hashlib.blake2b(f"{seed}\0{doc_id}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") / 2**64


def assign_splits(
    doc_ids: list[str],
    ratios: dict[str, float] | None = None,
    counts: dict[str, int] | None = None,
    seed: int = 0,
    strata: dict[str, str] | None = None,
) -> dict[str, str | None]:
    """``{doc_id: split}``; with counts, documents beyond the counts get None (left out).

    ``strata`` (doc -> stratum, e.g. which marks a line has) splits each stratum by the
    same ratios, so every split gets the same mix (Gupta 2021: valid/test with the
    label distribution of train)."""
    if strata is not None:
        if ratios is None:
            raise ValueError("stratified splits take ratios")
        groups: dict[str, list[str]] = {}
        for d in sorted(set(doc_ids)):
            groups.setdefault(strata[d], []).append(d)
        out = {}
        for members in groups.values():
            out.update(_stratum_by_counts(members, ratios, seed))
        return out
    unique = sorted(set(doc_ids))
    if (ratios is None) == (counts is None):
        raise ValueError("give either split ratios or split counts")
    hashes = {d: doc_hash(d, seed) for d in unique}
    if ratios is not None:
        total = sum(ratios.values())
        if total <= 0 or any(r < 0 for r in ratios.values()):
            raise ValueError(f"split ratios must be non-negative with a positive sum, not {ratios}")
        bounds, acc = [], 0.0
        for name, ratio in ratios.items():
            acc += ratio / total
            bounds.append((acc, name))
        out = {}
        for d, h in hashes.items():
            out[d] = next((name for bound, name in bounds if h < bound), bounds[-1][1])
        return out
    order = sorted(unique, key=lambda d: (hashes[d], d))
    out, start = {}, 0
    for name, n in counts.items():
        for d in order[start : start + n]:
            out[d] = name
        start += n
    for d in order[start:]:
        out[d] = None
    return out


def _stratum_by_counts(members: list[str], ratios: dict[str, float], seed: int) -> dict[str, str]:
    """Exact shares inside one stratum: documents in hash order, cut by the ratios."""
    total = sum(ratios.values())
    order = sorted(members, key=lambda d: (doc_hash(d, seed), d))
    out, start, acc = {}, 0, 0.0
    names = list(ratios)
    for k, name in enumerate(names):
        acc += ratios[name] / total
        stop = len(order) if k == len(names) - 1 else round(acc * len(order))
        for d in order[start:stop]:
            out[d] = name
        start = stop
    return out


def marks_of(labels: list[str]) -> str:
    """A line's stratum: the set of marks it contains."""
    return "+".join(sorted(set(labels) - {"O"})) or "none"


def apply_splits(table: pa.Table, assignment: dict[str, str | None]) -> pa.Table:
    """The table with its ``split`` column set; rows of unassigned documents removed."""
    splits = [assignment.get(d) for d in table["doc_id"].to_pylist()]
    table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(splits, pa.string()))
    return table.filter(pc.invert(pc.is_null(table["split"])))


def duplicates_across_splits(table: pa.Table) -> Counter:
    """Segments (exact word sequences) that occur in more than one split, counted per split pair."""
    seen: dict[tuple, set] = {}
    for words, split in zip(table["words"].to_pylist(), table["split"].to_pylist()):
        seen.setdefault(tuple(words), set()).add(split)
    return Counter("+".join(sorted(s)) for s in seen.values() if len(s) > 1)


def drop_train_duplicates(table: pa.Table) -> tuple[pa.Table, int]:
    """Remove train segments whose exact words also occur in dev or test."""
    held_out = {tuple(w) for w, s in zip(table["words"].to_pylist(), table["split"].to_pylist()) if s != "train"}
    keep = [
        not (s == "train" and tuple(w) in held_out)
        for w, s in zip(table["words"].to_pylist(), table["split"].to_pylist())
    ]
    return table.filter(pa.array(keep)), keep.count(False)


def question_share(table: pa.Table) -> float:
    flat = pc.list_flatten(table["labels"]) if table.num_rows else pa.array([], pa.string())
    return pc.sum(pc.equal(flat, "QUESTION")).as_py() / len(flat) if len(flat) else 0.0


def oversample_questions(table: pa.Table, target_share: float, seed: int = 0) -> tuple[pa.Table, dict]:
    """Insert copies of train question sentences into other train documents until QUESTION
    reaches ``target_share`` of train's words (Rao 2022); other splits are returned unchanged."""
    is_train = pc.equal(table["split"], "train").to_numpy(zero_copy_only=False)
    train = table.filter(pa.array(is_train))
    rest = table.filter(pa.array(~is_train))
    words, labels = train["words"].to_pylist(), train["labels"].to_pylist()
    docs = train["doc_id"].to_pylist()
    questions = [i for i, l in enumerate(labels) if l and l[-1] == "QUESTION"]
    n_words = sum(len(w) for w in words)
    n_q = sum(l.count("QUESTION") for l in labels)
    report = {"before": round(n_q / n_words, 6) if n_words else 0.0, "inserted": 0}
    if not questions or not n_words or n_q / n_words >= target_share:
        report["after"] = report["before"]
        return table, report
    rng = np.random.default_rng(seed)
    doc_list = sorted(set(docs))
    inserts: dict[str, list[int]] = {}
    while n_q / n_words < target_share:
        source = questions[int(rng.integers(len(questions)))]
        target_doc = doc_list[int(rng.integers(len(doc_list)))]
        if len(doc_list) > 1:
            while target_doc == docs[source]:
                target_doc = doc_list[int(rng.integers(len(doc_list)))]
        inserts.setdefault(target_doc, []).append(source)
        n_q += labels[source].count("QUESTION")
        n_words += len(words[source])
        report["inserted"] += 1
    # each copy goes after a random segment of its target document; seg_ids renumbered
    by_doc: dict[str, list[int]] = {}
    for i, d in enumerate(docs):
        by_doc.setdefault(d, []).append(i)
    out_doc, out_seg, out_words, out_labels = [], [], [], []
    for d in sorted(by_doc, key=lambda d: by_doc[d][0]):
        rows = [("orig", i) for i in by_doc[d]]
        for source in inserts.get(d, []):
            rows.insert(int(rng.integers(len(rows) + 1)), ("copy", source))
        for k, (_, i) in enumerate(rows):
            out_doc.append(d)
            out_seg.append(k)
            out_words.append(words[i])
            out_labels.append(labels[i])
    corpus, lang = train["corpus"][0].as_py(), train["lang"][0].as_py()
    new_train = segments_table(corpus, lang, out_doc, out_seg, out_words, out_labels, ["train"] * len(out_doc))
    report["after"] = round(n_q / n_words, 6)
    return pa.concat_tables([conform(new_train), conform(rest)]), report
