"""Token matching: the words of a reference and a hypothesis document, paired by edit distance
(Guerreiro et al. 2021, §4 and Figure 2).

Both sides of a document are flattened to one word sequence (ASR segmentation
rarely matches the reference's) and compared after normalization: case-folded,
marks removed, curly apostrophes made straight, and, where the language has a
verbalization grammar, reference numbers spoken (``100`` -> ``one hundred``; the
hypothesis's ``a hundred`` reads as ``one hundred``).  rapidfuzz's word-level
Levenshtein alignment pairs reference and hypothesis words; long documents are cut at
n-grams found once on each side, which any sensible alignment keeps.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from rapidfuzz import fuzz, process
from rapidfuzz.distance import Levenshtein

from pipeline.text.verbalize import NUMERIC_PATTERN, label_positions

# unit words after which the hypothesis's "a" means "one" (a hundred, a thousand)
_A_MEANS_ONE = frozenset({"hundred", "thousand", "million", "billion", "trillion"})
#: a reference token's status: aligned with an equal word, substituted, or deleted
EQUAL, SUB, DEL = 0, 1, 2
#: a substituted word this similar (rapidfuzz ratio, 0-100) to its reference still counts as recognized
SIMILARITY = 80.0


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
    status = np.full(len(ref), DEL, dtype=np.int8)
    aligned = np.full(len(ref), -1, dtype=np.int64)
    status[ref_pos] = np.where(np.repeat(tag, paired) == 0, EQUAL, SUB)
    aligned[ref_pos] = hyp_pos
    block_end = np.full(len(ref), -1, dtype=np.int64)
    replace = tag == 1
    block_end[a1[replace] - 1] = b1[replace] - 1
    subs = int(paired[replace].sum())
    dels = int(len_a[tag == 3].sum() + (len_a - paired)[replace].sum())
    ins = int(len_b[tag == 2].sum() + (len_b - paired)[replace].sum())
    return status, aligned, block_end, subs, dels, ins


@dataclass
class TokenAlignment:
    """A document's reference tokens (its words, numbers spoken) paired with the hypothesis words."""

    ref_keys: pa.Array  # each reference word's match key
    hyp_keys: pa.Array  # each hypothesis word's match key
    tokens: pa.Array  # the reference tokens
    owner: np.ndarray  # the reference word of each token
    status: np.ndarray  # each token's EQUAL / SUB / DEL
    aligned: np.ndarray  # each token's hypothesis index (-1: deleted)
    block_end: np.ndarray  # the last hypothesis index of the replace block a token ends (-1 otherwise)
    substitutions: int
    deletions: int
    insertions: int

    def recognize_similar(self) -> None:
        """Near-identical substitutions (okay/ok, colour/color, bird/birds) count as recognized."""
        subs = np.flatnonzero(self.status == SUB)
        if len(subs):
            similarity = process.cpdist(
                self.tokens.take(pa.array(subs)).to_pylist(),
                self.hyp_keys.take(pa.array(self.aligned[subs])).to_pylist(),
                scorer=fuzz.ratio,
            )
            self.status[subs[similarity >= SIMILARITY]] = EQUAL


def align_tokens(ref_words: pa.Array, hyp_words: pa.Array, verbalizer) -> TokenAlignment:
    """The reference words (numbers spoken by ``verbalizer``, None: as written) aligned with the
    hypothesis words, compared by their match keys."""
    ref_keys = match_keys(ref_words)
    hyp_keys = canonical_hypothesis(match_keys(hyp_words))
    tokens, owner = expand_numbers(ref_words, ref_keys, verbalizer, hyp_keys)
    ids = pc.dictionary_encode(pa.concat_arrays([tokens, hyp_keys])).indices.to_numpy(zero_copy_only=False)
    status, aligned, block_end, subs, dels, ins = _pairs(ids[: len(tokens)], ids[len(tokens) :])
    return TokenAlignment(ref_keys, hyp_keys, tokens, owner, status, aligned, block_end, subs, dels, ins)
