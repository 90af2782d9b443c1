"""Marks and case moved from the reference words onto the hypothesis words aligned with them.

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

Case moves by the same alignment, word by word (a hypothesis is a lowercase transcript: its
own case labels are replaced, and counted when it had any).  A case label belongs to its word,
so the word is its own context: a hypothesis word aligned with a recognized reference word
(equal, or near-identical) takes that word's label, under every policy; ``nearest`` also gives
it to a substituted word aligned one-to-one (a misheard name, or another sentence-initial
word, still starts with a capital).  A mixed-case label (``M``) keeps its exact form
(``iPhone``) only on the same word; on another form (``iphones``) it becomes ``U`` or ``O`` by
the form's first cased letter (counted as approximated).  A reference word that the alignment
deleted, that was not recognized, or that is a number spoken as other words (``3D`` -> "three
d") gives no label: its hypothesis words keep ``O``, and the label is counted as dropped with
that reason.  Inserted hypothesis words keep ``O``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.align.matching import DEL, EQUAL, SUB, TokenAlignment
from pipeline.labels import CASE_TO_ID

POLICIES = ("guerreiro", "ueffing", "nearest")
_CASE_O, _CASE_U, _CASE_M = (CASE_TO_ID[c] for c in ("O", "U", "M"))


@dataclass
class DocumentAlignment:
    hyp_codes: np.ndarray  # one label id per hypothesis word
    substitutions: int = 0
    deletions: int = 0
    insertions: int = 0
    ref_tokens: int = 0
    marks: Counter = field(default_factory=Counter)  # transferred / moved / dropped:<reason>
    hyp_case: np.ndarray | None = None  # one case label id per hypothesis word
    hyp_surface: dict = field(default_factory=dict)  # hypothesis index -> exact form, where the label is M
    case: Counter = field(default_factory=Counter)  # reference / transferred / approximated / dropped:<reason>


def transfer_marks(
    result: DocumentAlignment,
    tokens: TokenAlignment,
    ref_codes: np.ndarray,
    ref_segment_end: np.ndarray,
    policy: str,
) -> None:
    """The reference's marks (label ids ``ref_codes``) onto the hypothesis gaps the ``policy``
    picks (module documentation); what is kept, moved, merged and dropped is counted."""
    n_ref = len(ref_codes)
    owner, aligned, block_end = tokens.owner, tokens.aligned, tokens.block_end
    recognized = np.bincount(owner, weights=(tokens.status != EQUAL), minlength=n_ref) == 0
    first_token = np.searchsorted(owner, np.arange(n_ref), side="left")
    last_token = np.searchsorted(owner, np.arange(n_ref), side="right") - 1
    # the last hypothesis word aligned at or before each reference token
    last_aligned = np.maximum.accumulate(aligned)

    marked = np.flatnonzero(ref_codes > 0)
    has_next = marked + 1 < n_ref
    next_word = np.minimum(marked + 1, n_ref - 1)
    left = recognized[marked]
    next_recognized = has_next & recognized[next_word]
    right = np.asarray(ref_segment_end, dtype=bool)[marked] | ~has_next | next_recognized
    if policy == "ueffing":
        keep = left & right
    elif policy == "guerreiro":
        keep = left | right
    else:
        keep = np.ones(len(marked), dtype=bool)
    result.marks["dropped:context_not_recognized"] = int((~keep).sum())
    # where each mark goes: see the module documentation
    target = np.where(
        left,
        aligned[last_token[marked]],
        np.where(
            next_recognized,
            aligned[first_token[next_word]] - 1,
            np.where(
                block_end[last_token[marked]] >= 0, block_end[last_token[marked]], last_aligned[last_token[marked]]
            ),
        ),
    )
    no_word = keep & (target < 0)
    result.marks["dropped:no_hypothesis_word_before"] = int(no_word.sum())
    keep &= ~no_word
    target, codes = target[keep], ref_codes[marked][keep]
    result.marks["transferred"] = int(keep.sum())
    result.marks["moved"] = int((~left[keep]).sum())
    result.marks["merged"] = int(len(target) - len(np.unique(target)))
    np.maximum.at(result.hyp_codes, target, codes)
    result.marks = Counter({k: v for k, v in result.marks.items() if v})


def transfer_case(
    result: DocumentAlignment,
    tokens: TokenAlignment,
    ref_case: np.ndarray,
    ref_surface,
    ref_words: pa.Array,
    hyp_words: pa.Array,
    policy: str,
) -> None:
    """The reference's case labels onto the hypothesis words aligned with their words (module
    documentation: Case); only the cased reference words (U/A/M) are looked at."""
    owner, status, aligned = tokens.owner, tokens.status, tokens.aligned
    cased = np.flatnonzero(ref_case > 0)
    first = np.searchsorted(owner, cased, side="left")  # each cased word's first spoken-form token
    n_tokens = np.searchsorted(owner, cased, side="right") - first
    # a number spoken as words: its tokens are not the word (one token may differ too: "5" -> five)
    spoken = n_tokens != 1
    single = np.flatnonzero(~spoken)
    if len(single):
        spoken[single] = pc.not_equal(
            tokens.tokens.take(pa.array(first[single])), tokens.ref_keys.take(pa.array(cased[single]))
        ).to_numpy(zero_copy_only=False)
    word_status = status[first]
    deleted = ~spoken & (word_status == DEL)
    recognized = ~spoken & (word_status == EQUAL)
    substituted = ~spoken & (word_status == SUB)
    take = recognized | substituted if policy == "nearest" else recognized
    targets, labels = aligned[first[take]], ref_case[cased[take]].astype(np.int8)
    approximated = 0
    for k in np.flatnonzero(labels == _CASE_M).tolist():
        word = int(cased[take][k])
        form = ref_surface[word].as_py() if ref_surface is not None else None
        if form and hyp_words[int(targets[k])].as_py().lower() == ref_words[word].as_py().lower():
            result.hyp_surface[int(targets[k])] = form
        else:
            labels[k] = _first_letter_case(form or "")
            approximated += 1
    result.hyp_case[targets] = labels
    result.case.update(
        {
            "reference": len(cased),
            "transferred": int(take.sum()),
            "approximated": approximated,
            "onto_substituted": int((take & substituted).sum()),
            "dropped:word_deleted": int(deleted.sum()),
            "dropped:word_not_recognized": int((substituted & ~take).sum()),
            "dropped:number_spoken": int(spoken.sum()),
        }
    )
    result.case = Counter({k: v for k, v in result.case.items() if v})


def _first_letter_case(form: str) -> int:
    """U when the first cased letter of ``form`` is a capital (McDonald), else O (iPhone)."""
    for char in form:
        if char.lower() != char.upper():
            return _CASE_U if char.isupper() else _CASE_O
    return _CASE_O
