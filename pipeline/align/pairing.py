"""Which reference document each hypothesis document is aligned with.

``pair_by``:

* ``id``: documents of the same id (two single-document sides pair up whatever their ids, as a
  reference file and its transcript do);
* ``order``: the k-th hypothesis document with the k-th reference document;
* ``file``: the pairs a two-column file names (``reference_id<TAB or space>hypothesis_id`` per
  line; blank lines and ``#`` comments skipped).

A document left without a partner is never dropped silently: the pairing lists it, with its
reason, for the report and the warnings.  A hypothesis document left out would lose its words
from the output, so it is an error unless ``force`` (then it is left out and counted); a
reference document without a hypothesis is counted and warned about.

Ids that readers make from positions in a file (``talk#0``, ``talk#1``: the text reader's
documents, news articles without an id) say nothing about content: two files of the same name
pair by id as they would by order, so a document missing from one side shifts every pair after
it.  Pairing by such ids is warned about; each pair's own WER check (``max_wer``) then refuses a
pair that is not the same document.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from pipeline.errors import InputError, ParamsError

PAIR_BY = ("id", "order", "file")
#: ids an error message or warning shows of each side
SHOWN = 5
#: an id a reader made from a position in a file: ``<stem>#<k>``, perhaps made unique by ``~<n>``
POSITIONAL_ID = re.compile(r".*#[0-9]+(~[0-9]+)?")


class AlignmentError(InputError):
    """The reference and hypothesis cannot be aligned as given (wrong pairing, languages, WER)."""


@dataclass
class Pairing:
    """(reference, hypothesis) document pairs, and the documents of either side left unpaired."""

    pairs: list[tuple[str, str]]
    unpaired_reference: list[str] = field(default_factory=list)
    unpaired_hypothesis: list[str] = field(default_factory=list)
    #: why the unpaired documents are unpaired (one reason per side)
    reasons: dict[str, str] = field(default_factory=dict)
    #: what the user should know about the pairing itself (warnings)
    notes: list[str] = field(default_factory=list)

    def report(self) -> dict:
        """The report's account of the pairing: counts, the ids (all of them) and the reasons."""
        skipped = [
            {"side": side, "id": doc, "reason": self.reasons.get(side, "")}
            for side, docs in (("reference", self.unpaired_reference), ("hypothesis", self.unpaired_hypothesis))
            for doc in docs
        ]
        return {
            "pairs": len(self.pairs),
            "unpaired_reference": len(self.unpaired_reference),
            "unpaired_hypothesis": len(self.unpaired_hypothesis),
            "skipped": skipped,
        }

    def warnings(self) -> list[str]:
        out = []
        for side, docs in (("reference", self.unpaired_reference), ("hypothesis", self.unpaired_hypothesis)):
            if docs:
                left = " (left out of the output)" if side == "hypothesis" else ""
                out.append(f"{len(docs)} {side} document(s) not aligned{left}: {self.reasons[side]}: {_ids(docs)}")
        return out + self.notes


def _ids(ids: list[str]) -> str:
    shown = ", ".join(repr(d) for d in ids[:SHOWN])
    return shown + (f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else "")


def read_pairs(path) -> list[tuple[str, str]]:
    """The pairs of a pairing file (two columns: reference id, hypothesis id), or InputError naming
    the file and line of a malformed or repeated entry."""
    from pipeline.engine.reading import read_text

    pairs, seen = [], {}
    for number, line in enumerate(read_text(path).splitlines(), 1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        fields = text.split("\t") if "\t" in text else text.split()
        if len(fields) != 2 or not all(f.strip() for f in fields):
            raise InputError(
                f"{path}:{number}: expected two columns (reference id, hypothesis id), got {len(fields)}: {text!r}"
            )
        ref, hyp = (f.strip() for f in fields)
        if hyp in seen:
            raise InputError(f"{path}:{number}: hypothesis document {hyp!r} already paired on line {seen[hyp]}")
        seen[hyp] = number
        pairs.append((ref, hyp))
    if not pairs:
        raise InputError(f"{path}: no pairs (expected lines of: reference id, hypothesis id)")
    return pairs


def pair(
    ref_docs: list[str],
    hyp_docs: list[str],
    pair_by: str = "id",
    pairs_file=None,
    force: bool = False,
) -> Pairing:
    """The :class:`Pairing` of the two sides' documents (module doc); AlignmentError when a
    hypothesis document is left unpaired (or, by order, the counts differ) without ``force``."""
    if pair_by not in PAIR_BY:
        raise ParamsError(f"pair_by must be one of {', '.join(PAIR_BY)}, not {pair_by!r}")
    if (pair_by == "file") != (pairs_file is not None):
        raise ParamsError("pairs: a pairing file goes with pair_by file, and pair_by file needs one")
    if pair_by == "order":
        n = min(len(ref_docs), len(hyp_docs))
        result = Pairing(list(zip(ref_docs[:n], hyp_docs[:n])), ref_docs[n:], hyp_docs[n:])
        if len(ref_docs) != len(hyp_docs):
            if not force:
                raise AlignmentError(
                    f"pair by order: the reference has {len(ref_docs)} documents and the hypothesis "
                    f"{len(hyp_docs)} (reference {_ids(ref_docs)}; hypothesis {_ids(hyp_docs)}): check how "
                    "each side's documents are separated (--doc-boundary), or pass --force to pair the first "
                    f"{n} and report the rest"
                )
            result.reasons = {
                "reference": f"beyond the hypothesis's {len(hyp_docs)} documents",
                "hypothesis": f"beyond the reference's {len(ref_docs)} documents",
            }
        return result
    if pair_by == "id" and len(ref_docs) == 1 and len(hyp_docs) == 1:
        return Pairing([(ref_docs[0], hyp_docs[0])])
    if pair_by == "id":
        known = set(ref_docs)
        pairs = [(d, d) for d in hyp_docs if d in known]
        reason = "no document of the same id on the other side"
        positional = [h for _, h in pairs if POSITIONAL_ID.fullmatch(h)]
    else:
        pairs = _file_pairs(pairs_file, ref_docs, hyp_docs)
        reason = f"not in the pairs file {pairs_file}"
    paired_ref, paired_hyp = {r for r, _ in pairs}, {h for _, h in pairs}
    result = Pairing(
        pairs,
        [d for d in ref_docs if d not in paired_ref],
        [d for d in hyp_docs if d not in paired_hyp],
        {"reference": reason, "hypothesis": reason},
    )
    if pair_by == "id" and positional:
        result.notes.append(
            f"{len(positional)} of {len(pairs)} pair(s) by id have ids made from positions in a file "
            f"({_ids(positional)}): they pair by position, as --pair-by order does, and a document missing "
            "from one side shifts the pairs after it; each pair's WER is checked against max_wer"
        )
    if result.unpaired_hypothesis and not force:
        hint = (
            "; pair them by position with --pair-by order, or name the pairs with --pair-by file --pairs FILE"
            if pair_by == "id"
            else "; add them to the pairs file"
        )
        where = "of the same id" if pair_by == "id" else f"in the pairs file {pairs_file}"
        unpaired_ref = result.unpaired_reference
        raise AlignmentError(
            f"{len(result.unpaired_hypothesis)} of {len(hyp_docs)} hypothesis document(s) have no reference "
            f"document {where}: hypothesis ids {_ids(result.unpaired_hypothesis)}; "
            f"{'unpaired ' if unpaired_ref else ''}reference ids {_ids(unpaired_ref or ref_docs)}"
            f"{hint}; or pass --force to leave them out and report them"
        )
    return result


def _file_pairs(path, ref_docs: list[str], hyp_docs: list[str]) -> list[tuple[str, str]]:
    """The file's pairs in the hypothesis's document order; an id of either side that is no document
    of that side is an error naming the file and the side's ids."""
    pairs = read_pairs(path)
    refs, hyps = set(ref_docs), set(hyp_docs)
    for side, known, docs, index in (("reference", refs, ref_docs, 0), ("hypothesis", hyps, hyp_docs, 1)):
        unknown = [p[index] for p in pairs if p[index] not in known]
        if unknown:
            raise InputError(
                f"{path}: {len(unknown)} {side} id(s) that are no {side} document: {_ids(unknown)} "
                f"(the {side} documents are {_ids(docs)})"
            )
    by_hyp = {h: r for r, h in pairs}
    return [(by_hyp[h], h) for h in hyp_docs if h in by_hyp]
