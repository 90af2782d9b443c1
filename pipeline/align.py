"""Move reference punctuation onto ASR hypotheses (Guerreiro et al. 2021, §4 and Figure 2).

Both sides of a document are flattened to one word sequence (ASR segmentation
rarely matches the reference's) and compared after normalization: case-folded,
marks removed, curly apostrophes made straight, and, where the language has a
verbalization grammar, reference numbers spoken (``100`` -> ``one hundred``; the
hypothesis's ``a hundred`` reads as ``one hundred``).  rapidfuzz's word-level
Levenshtein alignment pairs reference and hypothesis words.

Each reference mark sits in the gap after its word (the *left* context); the
next reference word is its *right* context.  A context word is *recognized* when
all its (spoken-form) tokens aligned as equal; the end of a reference segment
or document counts as a recognized right context.  Policies:

``guerreiro``  transfer when the left or the right context was recognized.
``ueffing``    transfer only when both were (Ueffing et al. 2013).
``nearest``    always transfer, to the nearest aligned gap.

Where the mark goes: after the hypothesis word aligned with the left word when
that word was recognized; otherwise just before the hypothesis word aligned with
the recognized right word (so after any inserted words); at a segment end,
or for ``nearest`` with neither context recognized, after the last hypothesis word
aligned at or before the left word (a substituted left word counts; a deleted one
hands the mark to the word before).  Inserted hypothesis words never receive a
mark of their own.  Two marks landing on one gap keep the higher label
(QUESTION > PERIOD > COMMA); the other is counted as merged.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import fuzz
from rapidfuzz.distance import Levenshtein

from .labels import LABEL_TO_ID, LABELS
from .scripts import dominant_script

POLICIES = ("guerreiro", "ueffing", "nearest")
_LABEL_ARRAY = pa.array(LABELS, pa.string())
# unit words after which the hypothesis's "a" means "one" (a hundred, a thousand)
_A_MEANS_ONE = frozenset({"hundred", "thousand", "million", "billion", "trillion"})
_EQUAL, _SUB, _DEL = 0, 1, 2
#: a substituted word this similar (rapidfuzz ratio, 0-100) to its reference still counts as recognized
SIMILARITY = 80.0


class AlignmentError(ValueError):
    pass


@dataclass
class DocumentAlignment:
    hyp_codes: np.ndarray            # one label id per hypothesis word
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    ref_tokens: int = 0
    marks: Counter = field(default_factory=Counter)  # transferred / moved / dropped:<reason>


def match_keys(words: pa.Array) -> pa.Array:
    """The form words are compared in: case-folded, marks and quotes removed, ’ -> '."""
    keys = pc.utf8_lower(words)
    keys = pc.replace_substring(keys, "\u2019", "'")
    keys = pc.replace_substring_regex(keys, r"[^\P{P}'%]", "")  # punctuation but ' and %
    # a word made only of marks keeps its own form, so it can still match itself
    return pc.if_else(pc.equal(pc.binary_length(keys), 0), words, keys)


def expand_numbers(words: list[str], keys: list[str], verbalizer, hyp_vocabulary=frozenset()) -> tuple[list[str], np.ndarray]:
    """Reference keys with numbers spoken; returns tokens and each token's word index.

    Where the grammars read a number several ways (1990: "one thousand nine hundred
    ninety", "nineteen ninety"), the reading with most words found in the
    hypothesis document wins; the first grammar's on a tie.
    """
    tokens: list[str] = []
    owner: list[int] = []
    for i, key in enumerate(keys):
        parts = [key]
        if verbalizer is not None and any(c.isdigit() for c in key):
            readings = verbalizer.readings(words[i].lower().strip("\"'()[]{}"))
            if readings:
                best = max(readings, key=lambda r: sum(w in hyp_vocabulary for w in r.split()) / len(r.split()))
                parts = best.split()
        tokens.extend(parts)
        owner.extend([i] * len(parts))
    return tokens, np.asarray(owner, dtype=np.int64)


def canonical_hypothesis(keys: list[str]) -> list[str]:
    """ASR forms that mean the same as the reference's spoken numbers: 'a hundred' -> 'one hundred'."""
    out = list(keys)
    for i in range(len(out) - 1):
        if out[i] == "a" and out[i + 1] in _A_MEANS_ONE:
            out[i] = "one"
    return out


def _pairs(ref_tokens: list[str], hyp_tokens: list[str]):
    """Per reference token: status (equal/sub/del) and aligned hypothesis index (-1 if deleted)."""
    status = np.full(len(ref_tokens), _DEL, dtype=np.int8)
    aligned = np.full(len(ref_tokens), -1, dtype=np.int64)
    block_end = np.full(len(ref_tokens), -1, dtype=np.int64)  # last hyp index of a replace block, at its last ref token
    subs = dels = ins = 0
    for op in Levenshtein.opcodes(ref_tokens, hyp_tokens):
        tag, r0, r1, h0, h1 = op.tag, op.src_start, op.src_end, op.dest_start, op.dest_end
        if tag == "insert":
            ins += h1 - h0
            continue
        paired = min(r1 - r0, h1 - h0)
        status[r0 : r0 + paired] = _EQUAL if tag == "equal" else _SUB
        aligned[r0 : r0 + paired] = np.arange(h0, h0 + paired)
        if tag == "replace":
            block_end[r1 - 1] = h1 - 1
            subs += paired
            dels += (r1 - r0) - paired
            ins += (h1 - h0) - paired
        elif tag == "delete":
            dels += r1 - r0
    return status, aligned, block_end, subs, dels, ins


def _similar(a: str, b: str, threshold: float = SIMILARITY) -> bool:
    return fuzz.ratio(a, b) >= threshold


def align_document(
    ref_words: list[str],
    ref_codes: np.ndarray,
    ref_segment_end: np.ndarray,
    hyp_words: list[str],
    policy: str = "guerreiro",
    verbalizer=None,
) -> DocumentAlignment:
    """Label ids for ``hyp_words`` transferred from the reference of the same document."""
    if policy not in POLICIES:
        raise ValueError(f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    n_hyp = len(hyp_words)
    result = DocumentAlignment(hyp_codes=np.zeros(n_hyp, dtype=np.int8))
    ref_keys = match_keys(pa.array(ref_words, pa.string())).to_pylist() if ref_words else []
    hyp_keys = canonical_hypothesis(match_keys(pa.array(hyp_words, pa.string())).to_pylist()) if hyp_words else []
    ref_tokens, owner = expand_numbers(ref_words, ref_keys, verbalizer, frozenset(hyp_keys))
    result.ref_tokens = len(ref_tokens)
    status, aligned, block_end, result.substitutions, result.deletions, result.insertions = _pairs(ref_tokens, hyp_keys)
    # the last hypothesis word aligned at or before each reference token
    last_aligned = np.maximum.accumulate(aligned) if len(aligned) else aligned

    n_ref = len(ref_words)
    if n_ref == 0:
        return result
    first_token = np.searchsorted(owner, np.arange(n_ref), side="left")
    last_token = np.searchsorted(owner, np.arange(n_ref), side="right") - 1
    # a word is recognized when every one of its tokens aligned as equal
    # near-identical substitutions (okay/ok, colour/color, bird/birds) count as recognized
    for j in np.flatnonzero(status == _SUB):
        if _similar(ref_tokens[j], hyp_keys[aligned[j]]):
            status[j] = _EQUAL
    not_equal = np.bincount(owner, weights=(status != _EQUAL), minlength=n_ref) > 0
    recognized = ~not_equal

    for i in np.flatnonzero(ref_codes > 0):
        code = int(ref_codes[i])
        left = bool(recognized[i])
        boundary = bool(ref_segment_end[i]) or i == n_ref - 1
        right = boundary or bool(recognized[i + 1])
        if policy == "ueffing" and not (left and right):
            result.marks["dropped:context_not_recognized"] += 1
            continue
        if policy == "guerreiro" and not (left or right):
            result.marks["dropped:context_not_recognized"] += 1
            continue
        if left:
            target = int(aligned[last_token[i]])
        elif i + 1 < n_ref and recognized[i + 1]:
            target = int(aligned[first_token[i + 1]]) - 1
        elif block_end[last_token[i]] >= 0:
            # the left word ends a garbled stretch: the mark follows the whole stretch
            target = int(block_end[last_token[i]])
        else:
            target = int(last_aligned[last_token[i]])
        if target < 0:
            result.marks["dropped:no_hypothesis_word_before"] += 1
            continue
        if not left:
            result.marks["moved"] += 1
        if result.hyp_codes[target] > 0:
            result.marks["merged"] += 1
        result.hyp_codes[target] = max(result.hyp_codes[target], code)
        result.marks["transferred"] += 1
    return result


def _documents(table: pa.Table) -> dict[str, tuple[list[str], np.ndarray, np.ndarray, list[int]]]:
    """doc_id -> (words, label ids, segment-end flags, row indices), documents in first-seen order."""
    docs: dict[str, tuple] = {}
    doc_ids = table["doc_id"].to_pylist()
    words = table["words"].to_pylist()
    labels = table["labels"].to_pylist()
    for row, (doc, w, l) in enumerate(zip(doc_ids, words, labels)):
        entry = docs.setdefault(doc, ([], [], [], []))
        entry[0].extend(w)
        entry[1].extend(LABEL_TO_ID[x] for x in l)
        entry[2].extend([False] * (len(w) - 1) + [True] if w else [])
        entry[3].append(row)
    return {d: (w, np.asarray(c, dtype=np.int8), np.asarray(e, dtype=bool), rows) for d, (w, c, e, rows) in docs.items()}


def pair_documents(ref_docs: list[str], hyp_docs: list[str], pair_by: str = "id") -> list[tuple[str, str]]:
    """Pairs of (reference, hypothesis) documents.

    ``id``: documents of the same id (two single-document sides pair up whatever their ids);
    ``order``: the k-th hypothesis document with the k-th reference document.
    """
    if pair_by == "order":
        if len(hyp_docs) > len(ref_docs):
            raise AlignmentError(f"{len(hyp_docs)} hypothesis documents but only {len(ref_docs)} reference documents")
        return list(zip(ref_docs, hyp_docs))
    if pair_by != "id":
        raise ValueError(f"pair_by must be id or order, not {pair_by!r}")
    if len(ref_docs) == 1 and len(hyp_docs) == 1:
        return [(ref_docs[0], hyp_docs[0])]
    missing = [d for d in hyp_docs if d not in set(ref_docs)]
    if missing:
        raise AlignmentError(
            f"{len(missing)} hypothesis document(s) have no reference document of the same id, e.g. {missing[0]!r}"
        )
    return [(d, d) for d in hyp_docs]


def align_tables(
    ref: pa.Table,
    hyp: pa.Table,
    policy: str = "guerreiro",
    verbalizer=None,
    max_wer: float = 0.5,
    force: bool = False,
    corpus: str | None = None,
    pair_by: str = "id",
) -> tuple[pa.Table, dict]:
    """Hypothesis segments labelled from the reference, and the alignment report."""
    ref_docs, hyp_docs = _documents(ref), _documents(hyp)
    warnings = []
    hyp_marks = int(pc.sum(pc.not_equal(pc.list_flatten(hyp["labels"]), "O")).as_py() or 0) if hyp.num_rows else 0
    if hyp_marks:
        warnings.append(f"the hypothesis carried {hyp_marks} punctuation labels: ignored (stripped)")
    if not any(len(d[0]) for d in hyp_docs.values()):
        if not force:
            raise AlignmentError("the hypothesis is empty: no words to align; pass --force to write an empty output")
        warnings.append("the hypothesis is empty")
    pairs = pair_documents(list(ref_docs), list(hyp_docs), pair_by) if hyp_docs else []
    ref_all = [w for d, _ in pairs for w in ref_docs[d][0]]
    hyp_all = [w for _, d in pairs for w in hyp_docs[d][0]]
    ref_script, hyp_script = dominant_script(ref_all[:5000]), dominant_script(hyp_all[:5000])
    if ref_script and hyp_script and ref_script != hyp_script:
        raise AlignmentError(
            f"reference is in {ref_script} script but hypothesis in {hyp_script}: not transcripts of the same text"
        )
    totals = Counter()
    marks = Counter()
    hyp_label_codes = {}
    per_document = []
    for ref_id, hyp_id in pairs:
        words, codes, seg_end, _ = ref_docs[ref_id]
        result = align_document(words, codes, seg_end, hyp_docs[hyp_id][0], policy, verbalizer)
        hyp_label_codes[hyp_id] = result.hyp_codes
        doc_errors = result.substitutions + result.deletions + result.insertions
        per_document.append({"reference": ref_id, "hypothesis": hyp_id,
                             "wer": round(doc_errors / max(result.ref_tokens, 1), 4)})
        totals.update(substitutions=result.substitutions, deletions=result.deletions,
                      insertions=result.insertions, ref_tokens=result.ref_tokens)
        marks.update(result.marks)
    errors = totals["substitutions"] + totals["deletions"] + totals["insertions"]
    wer = errors / totals["ref_tokens"] if totals["ref_tokens"] else 1.0
    if wer > max_wer and not force:
        worst = max(per_document, key=lambda d: d["wer"]) if per_document else {}
        raise AlignmentError(
            f"WER {wer:.3f} exceeds {max_wer}: the reference and hypothesis are probably not the same documents"
            + (f" (worst: {worst['reference']} vs {worst['hypothesis']}, WER {worst['wer']})" if worst else "")
            + "; pass --force to align anyway"
        )

    # the hypothesis's own words and segments, labels from the transfer
    labels_column = []
    doc_ids = hyp["doc_id"].to_pylist()
    offsets_in_doc: Counter = Counter()
    for doc, words in zip(doc_ids, hyp["words"].to_pylist()):
        start = offsets_in_doc[doc]
        codes = hyp_label_codes[doc][start : start + len(words)]
        offsets_in_doc[doc] += len(words)
        labels_column.append([LABELS[c] for c in codes])
    from .schema import segments_table

    out = segments_table(
        corpus or (hyp["corpus"][0].as_py() if hyp.num_rows else "aligned"),
        hyp["lang"][0].as_py() if hyp.num_rows else (ref["lang"][0].as_py() if ref.num_rows else "und"),
        hyp["doc_id"], hyp["seg_id"], hyp["words"], labels_column,
    )
    reference_marks = int(sum(int((ref_docs[r][1] > 0).sum()) for r, _ in pairs))
    dropped = {k.split(":", 1)[1]: v for k, v in sorted(marks.items()) if k.startswith("dropped:")}
    report = {
        "policy": policy,
        "documents": len(pairs),
        "reference_words": len(ref_all),
        "hypothesis_words": len(hyp_all),
        "wer": {
            "wer": round(wer, 4),
            "substitutions": totals["substitutions"],
            "deletions": totals["deletions"],
            "insertions": totals["insertions"],
            "reference_tokens": totals["ref_tokens"],
        },
        "marks": {
            "reference": reference_marks,
            "transferred": marks["transferred"],
            "moved": marks["moved"],
            "merged": marks["merged"],
            "dropped": dropped,
        },
        "labels_before": _label_counts(ref),
        "labels_after": _label_counts(out),
        "warnings": warnings,
        "per_document": per_document,
    }
    return out, report


def _label_counts(table: pa.Table) -> dict[str, int]:
    counts = dict.fromkeys(LABELS, 0)
    if table.num_rows:
        for row in pc.value_counts(pc.list_flatten(table["labels"])).to_pylist():
            counts[row["values"]] = int(row["counts"])
    return counts
