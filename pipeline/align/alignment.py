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

import contextlib
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from pipeline.align.pairing import AlignmentError, Pairing, pair
from pipeline.engine.executor import map_ordered
from pipeline.errors import ParamsError
from pipeline.labels import CASE_LABELS, CASE_TO_ID, PAPERS, LabelSet
from pipeline.schema import CASE_VALUES, segments_table
from pipeline.text.scripts import dominant_script
from pipeline.text.verbalize import NUMERIC_PATTERN, label_positions

POLICIES = ("guerreiro", "ueffing", "nearest")
_CASE_O, _CASE_U, _CASE_M = (CASE_TO_ID[c] for c in ("O", "U", "M"))
# unit words after which the hypothesis's "a" means "one" (a hundred, a thousand)
_A_MEANS_ONE = frozenset({"hundred", "thousand", "million", "billion", "trillion"})
_EQUAL, _SUB, _DEL = 0, 1, 2
#: a substituted word this similar (rapidfuzz ratio, 0-100) to its reference still counts as recognized
SIMILARITY = 80.0


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


def match_keys(words: pa.Array) -> pa.Array:
    """The form words are compared in: case-folded, marks and quotes removed, ’ -> '."""
    keys = pc.utf8_lower(words)
    # only words with something other than letters and digits need the regex (a few percent)
    other = pc.invert(pc.utf8_is_alnum(keys))
    if not pc.any(other).as_py():
        return keys
    cleaned = pc.replace_substring(keys.filter(other), "\u2019", "'")
    cleaned = pc.replace_substring_regex(cleaned, r"[^\P{P}'%]", "")  # punctuation but ' and %
    keys = pc.replace_with_mask(keys, other, cleaned)
    # a word made only of marks keeps its own form, so it can still match itself
    return pc.if_else(pc.equal(pc.binary_length(keys), 0), words, keys)


def expand_numbers(
    words: pa.Array, keys: pa.Array, verbalizer, hyp_keys: pa.Array | None = None
) -> tuple[pa.Array, np.ndarray]:
    """Reference keys with numbers spoken; returns the tokens and each token's word index.

    The reference is read as the spoken step reads it (:meth:`Verbalizer.analyse`): whole
    groups (``$45 billion``, ``in 1990``, ``july 25 2012``), each input word owning at least
    one token.  Where a group has several readings (2012: "twenty twelve", "two thousand
    twelve"; 9/11, left as written: "nine eleven"), the reading found as a phrase in the
    hypothesis document wins, then the one with most words in its vocabulary, the spoken
    step's reading on a tie.
    """
    n = len(keys)
    with_digits = (
        np.flatnonzero(pc.match_substring_regex(words, NUMERIC_PATTERN).to_numpy(zero_copy_only=False))
        if verbalizer is not None and n
        else np.zeros(0, dtype=np.int64)
    )
    if not len(with_digits):
        return keys, np.arange(n, dtype=np.int64)
    pieces, lengths, done = [], np.ones(n, dtype=np.int64), 0
    hypothesis = _HypothesisWords(hyp_keys)
    for group in _number_groups(words, with_digits, verbalizer):
        if not group.readings:
            continue
        segments = hypothesis.best(group.readings)
        previous = -1
        for k, end in enumerate(label_positions(segments)):
            lengths[group.start + k] = end - previous
            previous = end
        pieces += [keys.slice(done, group.start - done), pa.array([w for s in segments for w in s], pa.string())]
        done = group.end
    pieces.append(keys.slice(done))
    return pa.concat_arrays(pieces), np.repeat(np.arange(n, dtype=np.int64), lengths)


def _number_groups(words: pa.Array, with_digits: np.ndarray, verbalizer):
    """The verbalizer's groups around the words with digits, reading only the words near them."""
    reach = verbalizer.max_words
    # runs of number words close enough that one group could span them are read together
    breaks = np.flatnonzero(np.diff(with_digits) > 2 * reach) + 1
    runs = np.split(with_digits, breaks)
    spans = [(max(0, int(run[0]) - reach + 1), min(len(words), int(run[-1]) + reach)) for run in runs]
    # the words near numbers, fetched and read at once; a group never spans two stretches
    near = np.concatenate([np.arange(lo, hi) for lo, hi in spans])
    text = [w.lower().strip("\"'()[]{}") for w in words.take(pa.array(near)).to_pylist()]
    lengths = np.array([hi - lo for lo, hi in spans])
    stretch_ends = set((np.cumsum(lengths) - 1).tolist())
    starts = np.cumsum(lengths) - lengths
    candidates = np.concatenate([run - lo + start for run, (lo, _), start in zip(runs, spans, starts)])
    for group in verbalizer.analyse(text, stops=stretch_ends, candidates=candidates.tolist()):
        shift = int(near[group.start]) - group.start
        group.start += shift
        group.end += shift
        yield group


class _HypothesisWords:
    """The hypothesis document's words and text, built on first use, to pick among readings."""

    def __init__(self, hyp_keys: pa.Array | None):
        self._keys = hyp_keys
        self._vocabulary: set[str] | None = None
        self._text = ""

    def best(self, readings: list[list[list[str]]]) -> list[list[str]]:
        if len(readings) == 1 or self._keys is None:
            return readings[0]
        if self._vocabulary is None:
            self._vocabulary = set(pc.unique(self._keys).to_pylist())
            self._text = " " + " ".join(self._keys.to_pylist()) + " "

        def score(reading):
            flat = [w for segment in reading for w in segment]
            phrase = f" {' '.join(flat)} " in self._text
            return phrase, sum(w in self._vocabulary for w in flat) / len(flat)

        scores = [score(r) for r in readings]
        return readings[scores.index(max(scores))]


def canonical_hypothesis(keys: pa.Array) -> pa.Array:
    """ASR forms that mean the same as the reference's spoken numbers: 'a hundred' -> 'one hundred'."""
    if len(keys) < 2:
        return keys
    before_unit = np.zeros(len(keys), dtype=bool)
    before_unit[:-1] = pc.is_in(keys.slice(1), value_set=pa.array(sorted(_A_MEANS_ONE))).to_numpy(zero_copy_only=False)
    mask = pc.and_(pc.equal(keys, "a"), pa.array(before_unit))
    return pc.if_else(mask, "one", keys)


#: n-gram length and minimum spacing of the anchors that split long documents
ANCHOR_N, ANCHOR_SPACING = 4, 200


def _anchors(ref: np.ndarray, hyp: np.ndarray) -> list[tuple[int, int]]:
    """Start positions (ref, hyp) of n-grams occurring exactly once on each side, in order on both.

    Such matches are in any sensible alignment, so aligning the stretches between
    them separately gives the same result at a fraction of the quadratic cost.
    """
    n = ANCHOR_N
    if len(ref) < 4 * ANCHOR_SPACING or len(hyp) < 4 * ANCHOR_SPACING:
        return []

    def grams(ids):
        ids = ids.astype(np.uint64)
        h = np.zeros(len(ids) - n + 1, dtype=np.uint64)
        for k in range(n):
            h = h * np.uint64(1_000_003) + ids[k : len(ids) - n + 1 + k]
        return h

    gr, gh = grams(ref), grams(hyp)
    # n-grams seen exactly once on each side: one sort over both sides together
    both = np.concatenate([gr, gh])
    side = np.concatenate([np.zeros(len(gr), dtype=np.int8), np.ones(len(gh), dtype=np.int8)])
    order = np.argsort(both, kind="stable")
    sorted_grams, sorted_side = both[order], side[order]
    new = np.r_[True, sorted_grams[1:] != sorted_grams[:-1]]
    starts = np.flatnonzero(new)
    sizes = np.diff(np.r_[starts, len(both)])
    # a group of exactly two, one from each side (stable sort: the reference one first)
    pair_starts = starts[(sizes == 2)]
    pair_starts = pair_starts[(sorted_side[pair_starts] == 0) & (sorted_side[pair_starts + 1] == 1)]
    if not len(pair_starts):
        return []
    pos_r = order[pair_starts]
    pos_h = order[pair_starts + 1] - len(gr)
    order = np.argsort(pos_r)
    pos_r, pos_h = pos_r[order], pos_h[order]
    # a few candidates per anchor interval are plenty; the chain below skips the wrong ones
    step = max(1, len(pos_r) // (4 * len(ref) // ANCHOR_SPACING + 1))
    pos_r, pos_h = pos_r[::step], pos_h[::step]
    # longest chain increasing on both sides (patience sorting)
    import bisect

    tails: list[int] = []
    tail_idx: list[int] = []
    parent = [-1] * len(pos_h)
    for k, value in enumerate(pos_h.tolist()):
        j = bisect.bisect_left(tails, value)
        if j == len(tails):
            tails.append(value)
            tail_idx.append(k)
        else:
            tails[j] = value
            tail_idx[j] = k
        parent[k] = tail_idx[j - 1] if j else -1
    chain = []
    k = tail_idx[-1] if tail_idx else -1
    while k >= 0:
        chain.append(k)
        k = parent[k]
    chain.reverse()
    anchors, last_r, last_h = [], -ANCHOR_SPACING, -ANCHOR_SPACING
    for k in chain:
        r, h = int(pos_r[k]), int(pos_h[k])
        if r - last_r >= ANCHOR_SPACING and h - last_h >= n and r >= last_r + n:
            anchors.append((r, h))
            last_r, last_h = r, h
    return anchors


_TAGS = {"equal": 0, "replace": 1, "insert": 2, "delete": 3}


def _pairs(ref: np.ndarray, hyp: np.ndarray):
    """Per reference token: status (equal/sub/del), aligned hypothesis index (-1 if deleted),
    the last hypothesis index of the replace block it ends (-1 otherwise); and S, D, I counts."""
    ops = []  # (tag, ref start, ref end, hyp start, hyp end) over the whole document
    r0 = h0 = 0
    for r, h in [*_anchors(ref, hyp), (len(ref), len(hyp))]:
        if r > r0 or h > h0:
            for tag, a0, a1, b0, b1 in Levenshtein.opcodes(ref[r0:r].tolist(), hyp[h0:h].tolist()).as_list():
                ops.append((_TAGS[tag], a0 + r0, a1 + r0, b0 + h0, b1 + h0))
        if r < len(ref):
            ops.append((0, r, r + ANCHOR_N, h, h + ANCHOR_N))
        r0, h0 = r + ANCHOR_N, h + ANCHOR_N
    ops = np.array(ops, dtype=np.int64).reshape(-1, 5)
    tag, a0, a1, b0, b1 = ops.T
    len_a, len_b = a1 - a0, b1 - b0
    paired = np.where(tag <= 1, np.minimum(len_a, len_b), 0)
    # every paired (ref, hyp) position, block by block
    starts = np.repeat(np.cumsum(paired) - paired, paired)
    within = np.arange(int(paired.sum())) - starts
    ref_pos = np.repeat(a0, paired) + within
    hyp_pos = np.repeat(b0, paired) + within
    status = np.full(len(ref), _DEL, dtype=np.int8)
    aligned = np.full(len(ref), -1, dtype=np.int64)
    status[ref_pos] = np.where(np.repeat(tag, paired) == 0, _EQUAL, _SUB)
    aligned[ref_pos] = hyp_pos
    block_end = np.full(len(ref), -1, dtype=np.int64)
    replace = tag == 1
    block_end[a1[replace] - 1] = b1[replace] - 1
    subs = int(paired[replace].sum())
    dels = int(len_a[tag == 3].sum() + (len_a - paired)[replace].sum())
    ins = int(len_b[tag == 2].sum() + (len_b - paired)[replace].sum())
    return status, aligned, block_end, subs, dels, ins


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
    n_ref, n_hyp = len(ref_words), len(hyp_words)
    result = DocumentAlignment(hyp_codes=np.zeros(n_hyp, dtype=np.int8), hyp_case=np.zeros(n_hyp, dtype=np.int8))
    ref_keys = match_keys(ref_words)
    hyp_keys = canonical_hypothesis(match_keys(hyp_words))
    ref_tokens, owner = expand_numbers(ref_words, ref_keys, verbalizer, hyp_keys)
    result.ref_tokens = len(ref_tokens)
    ids = pc.dictionary_encode(pa.concat_arrays([ref_tokens, hyp_keys])).indices.to_numpy(zero_copy_only=False)
    status, aligned, block_end, result.substitutions, result.deletions, result.insertions = _pairs(
        ids[: len(ref_tokens)], ids[len(ref_tokens) :]
    )
    has_marks = n_ref > 0 and bool((ref_codes > 0).any())
    has_case = n_ref > 0 and ref_case is not None and bool((ref_case > 0).any())
    if not has_marks and not has_case:
        return result
    # near-identical substitutions (okay/ok, colour/color, bird/birds) count as recognized
    subs = np.flatnonzero(status == _SUB)
    if len(subs):
        similarity = process.cpdist(
            ref_tokens.take(pa.array(subs)).to_pylist(),
            hyp_keys.take(pa.array(aligned[subs])).to_pylist(),
            scorer=fuzz.ratio,
        )
        status[subs[similarity >= SIMILARITY]] = _EQUAL
    if has_case:
        _transfer_case(
            result, ref_case, ref_surface, ref_words, ref_keys, ref_tokens, owner, status, aligned, hyp_words, policy
        )
    if not has_marks:
        return result
    recognized = np.bincount(owner, weights=(status != _EQUAL), minlength=n_ref) == 0
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
    return result


def _transfer_case(
    result: DocumentAlignment,
    ref_case: np.ndarray,
    ref_surface,
    ref_words: pa.Array,
    ref_keys: pa.Array,
    ref_tokens: pa.Array,
    owner: np.ndarray,
    status: np.ndarray,
    aligned: np.ndarray,
    hyp_words: pa.Array,
    policy: str,
) -> None:
    """The reference's case labels onto the hypothesis words aligned with their words (module
    documentation: Case); only the cased reference words (U/A/M) are looked at."""
    cased = np.flatnonzero(ref_case > 0)
    first = np.searchsorted(owner, cased, side="left")  # each cased word's first spoken-form token
    n_tokens = np.searchsorted(owner, cased, side="right") - first
    # a number spoken as words: its tokens are not the word (one token may differ too: "5" -> five)
    spoken = n_tokens != 1
    single = np.flatnonzero(~spoken)
    if len(single):
        spoken[single] = pc.not_equal(
            ref_tokens.take(pa.array(first[single])), ref_keys.take(pa.array(cased[single]))
        ).to_numpy(zero_copy_only=False)
    word_status = status[first]
    deleted = ~spoken & (word_status == _DEL)
    recognized = ~spoken & (word_status == _EQUAL)
    substituted = ~spoken & (word_status == _SUB)
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


@dataclass
class _Document:
    words: pa.Array  # the document's words, in order
    codes: np.ndarray  # label id of each word
    segment_end: np.ndarray  # True for the last word of each segment
    positions: np.ndarray  # where the words sit in the table's flattened word column
    case: np.ndarray | None = None  # case label id of each word (with_case)
    surface: pa.Array | None = None  # exact form of each mixed-case word, else null (with_case)


def _documents(table: pa.Table, with_case: bool = False, label_set: LabelSet | None = PAPERS) -> dict[str, _Document]:
    """The table's documents (in first-seen order) as flat word sequences, their label codes in
    ``label_set`` (None: not wanted, all 0: a hypothesis's labels are not read)."""
    if table.num_rows == 0:
        return {}
    words = pc.list_flatten(table["words"].combine_chunks())
    if label_set is None:
        codes = np.zeros(len(words), np.int8)
    else:
        flat_labels = pc.list_flatten(table["labels"].combine_chunks())
        codes = pc.index_in(flat_labels, value_set=label_set.values).to_numpy(zero_copy_only=False)
    case = surface = None
    if with_case:
        case = pc.index_in(pc.list_flatten(table["case"].combine_chunks()), value_set=CASE_VALUES).to_numpy(
            zero_copy_only=False
        )
        surface = pc.list_flatten(table["surface"].combine_chunks())
    lengths = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False)
    ends = np.cumsum(lengths)
    segment_end = np.zeros(len(words), dtype=bool)
    segment_end[ends[lengths > 0] - 1] = True
    encoded = pc.dictionary_encode(table["doc_id"].combine_chunks())
    row_doc = encoded.indices.to_numpy(zero_copy_only=False)
    word_doc = np.repeat(row_doc, lengths)
    order = np.argsort(word_doc, kind="stable")
    bounds = np.searchsorted(word_doc[order], np.arange(len(encoded.dictionary) + 1))
    docs = {}
    for k, doc_id in enumerate(encoded.dictionary.to_pylist()):
        positions = order[bounds[k] : bounds[k + 1]]
        taken = pa.array(positions)
        docs[doc_id] = _Document(
            words.take(taken),
            codes[positions].astype(np.int8),
            segment_end[positions],
            positions,
            case[positions].astype(np.int8) if with_case else None,
            surface.take(taken) if with_case else None,
        )
    return docs


def _align_job(job) -> DocumentAlignment:
    return align_document(*job)


@dataclass
class AlignReport:
    """What an alignment did, summed over documents and shards (:meth:`merge`); :meth:`finish` checks
    the whole corpus (WER, an empty hypothesis) and words the report."""

    policy: str
    documents: int = 0
    reference_words: int = 0
    hypothesis_words: int = 0
    errors: Counter = field(default_factory=Counter)  # substitutions, deletions, insertions, reference_tokens
    marks: Counter = field(default_factory=Counter)  # reference, transferred, moved, merged, dropped:<reason>
    labels_after: Counter = field(default_factory=Counter)
    ignored_hypothesis_labels: int = 0
    per_document: list = field(default_factory=list)
    # reference (cased words), transferred, approximated, onto_substituted, dropped:<reason>
    case: Counter = field(default_factory=Counter)
    case_before: Counter = field(default_factory=Counter)  # case labels of the paired reference documents
    case_after: Counter = field(default_factory=Counter)
    ignored_hypothesis_case: int = 0
    #: document pairs above max_wer, not aligned: {reference, hypothesis, wer, hypothesis_words}
    over_max_wer: list = field(default_factory=list)

    def merge(self, other: AlignReport) -> AlignReport:
        self.documents += other.documents
        self.over_max_wer += other.over_max_wer
        self.reference_words += other.reference_words
        self.hypothesis_words += other.hypothesis_words
        self.errors.update(other.errors)
        self.marks.update(other.marks)
        self.labels_after.update(other.labels_after)
        self.ignored_hypothesis_labels += other.ignored_hypothesis_labels
        self.per_document += other.per_document
        self.case.update(other.case)
        self.case_before.update(other.case_before)
        self.case_after.update(other.case_after)
        self.ignored_hypothesis_case += other.ignored_hypothesis_case
        return self

    @property
    def wer(self) -> float:
        e = self.errors
        errors = e["substitutions"] + e["deletions"] + e["insertions"]
        return errors / e["reference_tokens"] if e["reference_tokens"] else 1.0

    def finish(
        self, labels_before: dict[str, int], max_wer: float = 0.5, force: bool = False, pairing: Pairing | None = None
    ) -> dict:
        warnings = pairing.warnings() if pairing is not None else []
        if self.ignored_hypothesis_labels:
            warnings.append(
                f"the hypothesis carried {self.ignored_hypothesis_labels} punctuation labels: ignored (stripped)"
            )
        if self.ignored_hypothesis_case:
            warnings.append(
                f"the hypothesis carried {self.ignored_hypothesis_case} capitalized words: their case "
                "replaced by the reference's"
            )
        if self.over_max_wer:
            pairs = _pairs_named(self.over_max_wer)
            if not force:
                raise AlignmentError(
                    f"{len(self.over_max_wer)} document pair(s) above max_wer {max_wer}, probably not the same "
                    f"document: {pairs}; check the pairing (--pair-by, --pairs), or pass --force to leave these "
                    "pairs out and report them"
                )
            words = sum(d["hypothesis_words"] for d in self.over_max_wer)
            warnings.append(
                f"{len(self.over_max_wer)} document pair(s) above max_wer {max_wer} left out, not aligned "
                f"({words} hypothesis words): {pairs}"
            )
        if not self.hypothesis_words and not self.over_max_wer:
            if not force:
                raise AlignmentError(
                    "the hypothesis is empty: no words to align; pass --force to write an empty output"
                )
            warnings.append("the hypothesis is empty")
        check_wer(self.wer, self.per_document, max_wer, force)
        dropped = {k.split(":", 1)[1]: int(v) for k, v in sorted(self.marks.items()) if k.startswith("dropped:")}
        case_dropped = {k.split(":", 1)[1]: int(v) for k, v in sorted(self.case.items()) if k.startswith("dropped:")}
        return {
            "policy": self.policy,
            "documents": self.documents,
            "reference_words": self.reference_words,
            "hypothesis_words": self.hypothesis_words,
            "wer": {
                "wer": round(self.wer, 4),
                **{k: int(self.errors[k]) for k in ("substitutions", "deletions", "insertions")},
                "reference_tokens": int(self.errors["reference_tokens"]),
            },
            "marks": {
                **{k: int(self.marks[k]) for k in ("reference", "transferred", "moved", "merged")},
                "dropped": dropped,
            },
            "labels_before": {k: int(labels_before.get(k, 0)) for k in labels_before},
            "labels_after": {k: int(self.labels_after[k]) for k in labels_before},
            "case": {
                "labels_before": {k: int(self.case_before[k]) for k in CASE_LABELS},
                **{k: int(self.case[k]) for k in ("reference", "transferred", "approximated", "onto_substituted")},
                "dropped": case_dropped,
                "labels_after": {k: int(self.case_after[k]) for k in CASE_LABELS},
            },
            **(pairing or Pairing([])).report(),
            "over_max_wer": sorted(self.over_max_wer, key=lambda d: (d["hypothesis"], d["reference"])),
            "warnings": warnings,
            "ignored_hypothesis_labels": self.ignored_hypothesis_labels,
            "ignored_hypothesis_case": self.ignored_hypothesis_case,
            "per_document": self.per_document,
        }


def _pairs_named(pairs: list[dict]) -> str:
    """``'ref' vs 'hyp' (WER 0.91)``, for the first few pairs in the hypothesis's order."""
    from pipeline.align.pairing import SHOWN

    ordered = sorted(pairs, key=lambda d: (d["hypothesis"], d["reference"]))
    named = ", ".join(f"{d['reference']!r} vs {d['hypothesis']!r} (WER {d['wer']})" for d in ordered[:SHOWN])
    return named + (f" and {len(ordered) - SHOWN} more" if len(ordered) > SHOWN else "")


def align_part(
    ref: pa.Table,
    hyp: pa.Table,
    pairs: list[tuple[str, str]],
    policy: str = "guerreiro",
    verbalizer=None,
    corpus: str | None = None,
    workers: int = 1,
    label_set: LabelSet = PAPERS,
    max_wer: float | None = None,
) -> tuple[pa.Table, AlignReport]:
    """The hypothesis rows labelled from the reference by the document ``pairs`` (every hypothesis
    document of ``hyp`` in a pair), and the part's report; ``label_set``: the reference's labels,
    which the output gets.  A pair whose WER is above ``max_wer`` is not aligned: its hypothesis
    rows are left out and the pair is listed in the report's ``over_max_wer`` (its marks and
    errors are not counted); a wrong pairing puts a reference's marks on unrelated words."""
    ref_docs, hyp_docs = _documents(ref, with_case=True, label_set=label_set), _documents(hyp, label_set=None)
    report = AlignReport(policy)
    flat_hyp_labels = pc.list_flatten(hyp["labels"]) if hyp.num_rows else pa.array([], pa.string())
    report.ignored_hypothesis_labels = int(pc.sum(pc.not_equal(flat_hyp_labels, "O")).as_py() or 0)
    flat_hyp_case = pc.list_flatten(hyp["case"]) if hyp.num_rows else pa.array([], pa.string())
    report.ignored_hypothesis_case = int(pc.sum(pc.not_equal(flat_hyp_case, "O")).as_py() or 0)
    if pairs:
        ref_script = dominant_script(ref_docs[pairs[0][0]].words[:2000].to_pylist())
        hyp_script = dominant_script(hyp_docs[pairs[0][1]].words[:2000].to_pylist())
        if ref_script and hyp_script and ref_script != hyp_script:
            raise AlignmentError(
                f"reference is in {ref_script} script but hypothesis in {hyp_script}: not transcripts of the same text"
            )
    report.documents = len(pairs)
    report.reference_words = sum(len(ref_docs[d].words) for d, _ in pairs)
    report.hypothesis_words = sum(len(hyp_docs[d].words) for _, d in pairs)
    hyp_codes = np.zeros(len(flat_hyp_labels), dtype=np.int8)
    hyp_case = np.zeros(len(flat_hyp_labels), dtype=np.int8)
    hyp_surface: dict[int, str] = {}
    kept_words = np.ones(len(flat_hyp_labels), dtype=bool)
    jobs = [_job(ref_docs[r], hyp_docs[h], policy, verbalizer) for r, h in pairs]
    for (ref_id, hyp_id), result in zip(pairs, map_ordered(_align_job, jobs, workers)):
        positions = hyp_docs[hyp_id].positions
        doc_errors = result.substitutions + result.deletions + result.insertions
        doc_wer = round(doc_errors / max(result.ref_tokens, 1), 4)
        if max_wer is not None and doc_wer > max_wer:
            report.over_max_wer.append(
                {"reference": ref_id, "hypothesis": hyp_id, "wer": doc_wer, "hypothesis_words": len(positions)}
            )
            report.documents -= 1
            report.reference_words -= len(ref_docs[ref_id].words)
            report.hypothesis_words -= len(positions)
            kept_words[positions] = False
            continue
        hyp_codes[positions] = result.hyp_codes
        hyp_case[positions] = result.hyp_case
        hyp_surface.update({int(positions[i]): form for i, form in result.hyp_surface.items()})
        report.case.update(result.case)
        report.case_before.update(
            dict(zip(CASE_LABELS, np.bincount(ref_docs[ref_id].case, minlength=len(CASE_LABELS)).tolist()))
        )
        report.per_document.append({"reference": ref_id, "hypothesis": hyp_id, "wer": doc_wer})
        report.errors.update(
            substitutions=result.substitutions,
            deletions=result.deletions,
            insertions=result.insertions,
            reference_tokens=result.ref_tokens,
        )
        report.marks.update(result.marks)
        report.marks["reference"] += int((ref_docs[ref_id].codes > 0).sum())
    # the hypothesis's own words, segments and case, labels from the transfer
    words_column = hyp["words"].combine_chunks()
    offsets = pc.subtract(words_column.offsets, words_column.offsets[0]) if hyp.num_rows else pa.array([0], pa.int32())
    labels_column = pa.ListArray.from_arrays(offsets, label_set.values.take(pa.array(hyp_codes)))
    surface = pa.nulls(len(hyp_case), pa.string())
    if hyp_surface:
        rows = sorted(hyp_surface)
        mask = np.zeros(len(hyp_case), dtype=bool)
        mask[rows] = True
        surface = pc.replace_with_mask(surface, pa.array(mask), pa.array([hyp_surface[r] for r in rows], pa.string()))
    out = segments_table(
        corpus or (hyp["corpus"][0].as_py() if hyp.num_rows else "aligned"),
        hyp["lang"][0].as_py() if hyp.num_rows else (ref["lang"][0].as_py() if ref.num_rows else "und"),
        hyp["doc_id"],
        hyp["seg_id"],
        hyp["words"],
        labels_column,
        case=pa.ListArray.from_arrays(offsets, CASE_VALUES.take(pa.array(hyp_case))),
        surface=pa.ListArray.from_arrays(offsets, surface),
        vocabulary=label_set.labels,
    )
    if report.over_max_wer:
        left_out = pa.array([d["hypothesis"] for d in report.over_max_wer], pa.string())
        out = out.filter(pc.invert(pc.is_in(out["doc_id"], value_set=left_out)))
    report.labels_after.update(label_counts(out, label_set))
    kept_case = hyp_case[kept_words]
    report.case_after.update(dict(zip(CASE_LABELS, np.bincount(kept_case, minlength=len(CASE_LABELS)).tolist())))
    return out, report


def _job(ref: _Document, hyp: _Document, policy: str, verbalizer) -> tuple:
    """:func:`align_document`'s arguments for a document pair (the surface forms only where there are any)."""
    surface = ref.surface if ref.surface is not None and ref.surface.null_count < len(ref.surface) else None
    return (ref.words, ref.codes, ref.segment_end, hyp.words, policy, verbalizer, ref.case, surface)


def align_tables(
    ref: pa.Table,
    hyp: pa.Table,
    policy: str = "guerreiro",
    verbalizer=None,
    max_wer: float = 0.5,
    force: bool = False,
    corpus: str | None = None,
    pair_by: str = "id",
    workers: int = 1,
    pairs_file=None,
    label_set: LabelSet = PAPERS,
) -> tuple[pa.Table, dict]:
    """Hypothesis segments labelled from the reference, and the alignment report (tables in memory).

    ``workers`` > 1 aligns documents on that many processes (0: one per core); the
    output is the same whatever the number.  Documents are paired by ``pair_by`` (and
    ``pairs_file``), see :mod:`pipeline.align.pairing`; with ``force``, a hypothesis document
    left unpaired is left out of the output and reported.
    """
    hyp_ids = list(_documents(hyp, label_set=None))
    ref_ids = list(_documents(ref, label_set=label_set))
    pairing = pair(ref_ids, hyp_ids, pair_by, pairs_file, force) if hyp_ids else Pairing([])
    if pairing.unpaired_hypothesis:
        hyp = hyp.filter(pc.is_in(hyp["doc_id"], value_set=pa.array([h for _, h in pairing.pairs], pa.string())))
    out, report = align_part(ref, hyp, pairing.pairs, policy, verbalizer, corpus, workers, label_set, max_wer)
    return out, report.finish(label_counts(ref, label_set), max_wer, force, pairing)


def check_wer(wer: float, per_document: list[dict], max_wer: float, force: bool) -> None:
    if wer > max_wer and not force:
        worst = max(per_document, key=lambda d: d["wer"]) if per_document else {}
        raise AlignmentError(
            f"WER {wer:.3f} exceeds {max_wer}: the reference and hypothesis are probably not the same documents"
            + (f" (worst: {worst['reference']} vs {worst['hypothesis']}, WER {worst['wer']})" if worst else "")
            + "; pass --force to align anyway"
        )


def label_counts(table: pa.Table | pa.RecordBatch, label_set: LabelSet = PAPERS) -> dict[str, int]:
    """Words per label of ``label_set`` (every label present, 0 when absent)."""
    from pipeline.labels import count_labels

    return count_labels(table["labels"], label_set.labels) if table.num_rows else dict.fromkeys(label_set.labels, 0)


# ---------------------------------------------------------------------------- datasets, sharded


class AlignStep:
    """A hypothesis shard -> its segments labelled from the reference documents they pair with;
    only those reference documents are read (a filtered scan), so memory is bounded by the shard."""

    def __init__(
        self,
        ref_path: str,
        policy: str,
        lang: str | None,
        corpus: str,
        pairing: dict | None,
        label_set: LabelSet = PAPERS,
        max_wer: float | None = None,
    ):
        self.ref_path, self.policy, self.lang, self.corpus = str(ref_path), policy, lang, corpus
        self.label_set = label_set
        self.max_wer = max_wer
        self.pairing = pairing  # hyp doc -> ref doc per shard index (documents not in it are left out); None: by id

    def __call__(self, shard):
        from pipeline.engine.dataset import read_shard
        from pipeline.engine.location import is_url
        from pipeline.engine.reading import conform_segments, open_input, parquet_files
        from pipeline.engine.step import StepResult
        from pipeline.text.verbalize import verbalizer_or_none

        hyp = read_shard(shard)
        if self.pairing is not None:
            mapping = self.pairing.get(shard.index, {})
            if hyp.num_rows and len(mapping) < len(set(hyp["doc_id"].to_pylist())):  # unpaired, left out (--force)
                hyp = hyp.filter(pc.is_in(hyp["doc_id"], value_set=pa.array(list(mapping), pa.string())))
        hyp_ids = list(_documents(hyp, label_set=None))
        if self.pairing is None:
            mapping = {d: d for d in hyp_ids}
        wanted = sorted(set(mapping.values()))
        tables = []
        for file in parquet_files(self.ref_path):
            found = None
            if wanted:
                # a local file by its path (read natively); a URL through a file object, closed once read
                with open_input(file) if is_url(file) else contextlib.nullcontext(file) as source:
                    found = pq.read_table(source, filters=[("doc_id", "in", wanted)])
            if found is not None and found.num_rows:
                tables.append(conform_segments(found, file))
        ref = pa.concat_tables(tables) if tables else None
        known = set(_documents(ref, label_set=self.label_set)) if ref is not None else set()
        missing = [d for d in hyp_ids if mapping.get(d) not in known]
        if missing:
            raise AlignmentError(
                f"{len(missing)} hypothesis document(s) have no reference document of the same id, e.g. {missing[0]!r}"
            )
        lang = self.lang or (hyp["lang"][0].as_py() if hyp.num_rows else None)
        pairs = [(mapping[d], d) for d in hyp_ids]
        out, report = align_part(
            ref if ref is not None else hyp.slice(0, 0),
            hyp,
            pairs,
            self.policy,
            verbalizer_or_none(lang) if lang else None,
            self.corpus,
            label_set=self.label_set,
            max_wer=self.max_wer,
        )
        return StepResult(out, payload=report)


def align_datasets(
    ref_path,
    hyp_path,
    out,
    report,
    policy: str = "guerreiro",
    lang: str | None = None,
    corpus: str | None = "aligned",
    pair_by: str = "id",
    max_wer: float = 0.5,
    force: bool = False,
    engine=None,
    pairs_file=None,
) -> dict:
    """Reference punctuation onto a hypothesis dataset, shard by shard, into ``out`` (a folder of parts)
    and ``report``; the WER check covers the whole corpus and, failing, leaves no output.  Documents
    are paired by ``pair_by`` (and ``pairs_file``) before any shard is aligned, so a pairing
    problem fails at once (:mod:`pipeline.align.pairing`)."""
    from pipeline.engine import writing
    from pipeline.engine.dataset import (
        counts_of,
        dataset_labels,
        finish,
        iter_batches,
        manifest_entry,
        row_shards,
        run_step,
    )
    from pipeline.engine.executor import executor
    from pipeline.params import EngineParams
    from pipeline.schema import SCHEMA_NAME

    engine = engine or EngineParams()
    check_languages(lang, {"reference": ref_path, "hypothesis": hyp_path})
    # the reference's labels go onto the hypothesis (whose own labels are dropped, whatever their set)
    label_set = dataset_labels(ref_path)
    shards = row_shards(hyp_path, engine.shard_rows)
    ref_docs = _document_ids(ref_path)
    hyp_docs_by_shard = [_shard_document_ids(s) for s in shards]
    hyp_docs = [d for docs in hyp_docs_by_shard for d in docs]
    pairing = pair(ref_docs, hyp_docs, pair_by, pairs_file, force) if hyp_docs else Pairing([])
    by_hyp = {h: r for r, h in pairing.pairs}
    mapping = {s.index: {d: by_hyp[d] for d in docs if d in by_hyp} for s, docs in zip(shards, hyp_docs_by_shard)}
    with writing.Outputs(inputs=[ref_path, hyp_path]) as outputs:
        folder = outputs.dataset(out, kind="segments")
        report_path = outputs.file(report)
        with executor(engine.engine, engine.workers, engine.scheduler) as runner:
            step = AlignStep(ref_path, policy, lang, corpus, mapping, label_set, max_wer)
            results = run_step(runner, step, shards, folder, "align", label_set)
        merged = AlignReport(policy)
        for result in results:
            merged.merge(result.payload)
        labels_before = dict.fromkeys(label_set.labels, 0)
        for batch in iter_batches(ref_path, columns=["labels"]):
            for label, n in label_counts(batch, label_set).items():
                labels_before[label] += n
        out_report = merged.finish(labels_before, max_wer, force, pairing)
        counts_of(results)
        finish(folder, "segments", results, schema=SCHEMA_NAME, **manifest_entry(label_set))
        writing.write_json_in_place(out_report, report_path)
    return out_report


def _dataset_languages(path) -> list[str]:
    """The distinct values of a dataset's ``lang`` column, sorted (streamed)."""
    from pipeline.engine.dataset import iter_batches

    seen: set[str] = set()
    for batch in iter_batches(path, columns=["lang"]):
        column = batch.column(0)
        if len(column):
            seen.update(
                v
                for v in pc.unique(
                    column.dictionary_decode() if pa.types.is_dictionary(column.type) else column
                ).to_pylist()
                if v
            )
    return sorted(seen)


def check_languages(lang: str | None, datasets: dict[str, str]) -> None:
    """The alignment's ``lang`` (its number grammars) is the language of both datasets' rows, and the
    two are one language: refused otherwise (the reference read as one language, the transcript
    as another, or a grammar of a third)."""
    found = {side: _dataset_languages(path) for side, path in datasets.items()}
    for side, langs in found.items():
        if lang is not None and langs and langs != [lang]:
            raise ParamsError(
                f"lang {lang!r} differs from the {side} dataset {datasets[side]}, whose rows are in "
                f"{', '.join(map(repr, langs))} (its lang column): align it with the language it was ingested in"
            )
    ref_langs, hyp_langs = found.get("reference"), found.get("hypothesis")
    if ref_langs and hyp_langs and ref_langs != hyp_langs:
        raise ParamsError(
            f"the reference dataset {datasets['reference']} is in {', '.join(map(repr, ref_langs))} but the "
            f"hypothesis dataset {datasets['hypothesis']} in {', '.join(map(repr, hyp_langs))} (their lang "
            "columns): not the same text"
        )


def _document_ids(path) -> list[str]:
    """A dataset's document ids in order of appearance (documents are contiguous), streamed."""
    from pipeline.engine.dataset import iter_batches

    out: list[str] = []
    for batch in iter_batches(path, columns=["doc_id"]):
        values = batch.column(0).to_numpy(zero_copy_only=False)
        if not len(values):
            continue
        starts = np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]
        for v in values[starts].tolist():
            if not out or out[-1] != v:
                out.append(v)
    return out


def _shard_document_ids(shard) -> list[str]:
    from pipeline.engine.dataset import read_rows

    values = read_rows(shard, ["doc_id"])["doc_id"].to_numpy(zero_copy_only=False)
    if not len(values):
        return []
    return values[np.r_[0, np.flatnonzero(values[1:] != values[:-1]) + 1]].tolist()
