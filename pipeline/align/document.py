"""One document pair aligned: the reference's words matched with the hypothesis's
(:mod:`pipeline.align.matching`), then its marks and case moved across
(:mod:`pipeline.align.transfer`)."""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from pipeline.align.matching import align_tokens
from pipeline.align.transfer import POLICIES, DocumentAlignment, transfer_case, transfer_marks
from pipeline.errors import ParamsError
from pipeline.labels import CASE_TO_ID


def align_document(
    ref_words,
    ref_codes: np.ndarray,
    ref_segment_end: np.ndarray,
    hyp_words,
    policy: str = "guerreiro",
    verbalizer=None,
    ref_case: np.ndarray | None = None,
    ref_surface=None,
) -> DocumentAlignment:
    """Label ids for ``hyp_words`` transferred from the reference of the same document.

    Words are lists or Arrow string arrays; ``ref_codes`` label ids; ``ref_segment_end``
    marks the last word of each reference segment; ``ref_case`` case label ids (none: all O)
    and ``ref_surface`` the exact forms of the mixed-case words (null elsewhere).
    """
    if policy not in POLICIES:
        raise ParamsError(f"unknown policy {policy!r} (expected one of {', '.join(POLICIES)})")
    ref_words = ref_words if isinstance(ref_words, pa.Array) else pa.array(ref_words, pa.string())
    hyp_words = hyp_words if isinstance(hyp_words, pa.Array) else pa.array(hyp_words, pa.string())
    if ref_case is not None and not isinstance(ref_case, np.ndarray):
        ref_case = np.array([CASE_TO_ID[c] for c in ref_case], dtype=np.int8)  # labels given by name
    if ref_surface is not None and not isinstance(ref_surface, pa.Array):
        ref_surface = pa.array(ref_surface, pa.string())
    tokens = align_tokens(ref_words, hyp_words, verbalizer)
    n_ref, n_hyp = len(ref_words), len(hyp_words)
    result = DocumentAlignment(
        hyp_codes=np.zeros(n_hyp, dtype=np.int8),
        hyp_case=np.zeros(n_hyp, dtype=np.int8),
        substitutions=tokens.substitutions,
        deletions=tokens.deletions,
        insertions=tokens.insertions,
        ref_tokens=len(tokens.tokens),
    )
    has_marks = n_ref > 0 and bool((ref_codes > 0).any())
    has_case = n_ref > 0 and ref_case is not None and bool((ref_case > 0).any())
    if not has_marks and not has_case:
        return result
    tokens.recognize_similar()
    if has_case:
        transfer_case(result, tokens, ref_case, ref_surface, ref_words, hyp_words, policy)
    if has_marks:
        transfer_marks(result, tokens, ref_codes, ref_segment_end, policy)
    return result
