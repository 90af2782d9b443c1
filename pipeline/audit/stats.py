"""Label distributions, lengths, drift and leakage of segment datasets, streamed over shards.

Definitions (also printed in the reports):

* sentence length: the number of words in a run that ends with a PERIOD or QUESTION
  label (in another label set: a label that merges to one), counted inside one document (runs
  may span segments); words after a document's last end mark form no sentence.  Mean, population standard deviation
  (ddof=0) and percentiles (linear interpolation, as numpy's).
* segment length: words per segment (a row of the table).
* OOV rate (dev/test): the share of the split's word tokens absent from train's vocabulary.
* drift: a split's label share minus train's, in percentage points; above the
  threshold it is listed under ``warnings``.
* leakage: documents found in several splits, and segments (exact word sequences)
  found in several splits.  A document is a (corpus, doc_id) pair: ``talks#1`` of two corpora
  are two documents.  Where documents leak, the first few are named per pair of splits.
* case: words per capitalization label (O/U/A/M) and their shares.
* labels: counted per label of the dataset's label set; outside ``papers`` also merged to the
  papers' four classes (``merged_labels``, ``merged_label_shares``), to compare with them.

Every number is exact and the same as over the whole table in memory: counts and sums add up
over shards (a document lies in one shard, so its sentences do), lengths are kept as integer
histograms (exact means, standard deviations and percentiles), and vocabularies, documents
and segments are counted by hash across shards (:mod:`pipeline.engine.hashsets`).
"""

from __future__ import annotations

import copy
import tempfile
from collections import Counter
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from pipeline.engine import hashsets
from pipeline.engine.dataset import read_rows, scan_datasets, value_changes
from pipeline.engine.executor import Executor
from pipeline.labels import CASE_LABELS, PAPERS_CLASSES, LabelSet
from pipeline.schema import flat_codes

PERCENTILES = (50, 90, 99)
NO_SPLIT = "-"
#: leaked documents named per pair of splits
LEAKED_NAMED = 5

NOTES = [
    "Sentence length = words in a run ending with PERIOD or QUESTION, inside one document; "
    "words after a document's last end mark form no sentence; std is the population std (ddof=0).",
    "Alam et al. (2020) Table 2 reports means exactly 1 lower than this definition gives on the same files "
    "(EN dev 13.5 vs 14.48, test 13.8 vs 14.80, ASR 14.2 vs 15.19; BN dev 12.1 vs 13.10, news 12.4 vs 13.36) "
    "while the standard deviations agree to one decimal (10.7, 9.6, 9.7, 7.2, 7.2).  A constant shift leaves the "
    "std unchanged, so the paper counted one word fewer per sentence: the number of words before the one "
    "carrying the end mark (equivalently, the gaps between words), an off-by-one in its script.",
    "OOV rate = share of a split's word tokens not in the train split's vocabulary.",
    "Drift = label share of a split minus that of train, in percentage points.",
    "Case labels: O lowercase or caseless, U first letter upper, A all upper, M mixed (the exact form is kept).",
]


def label_codes(labels: pa.Array, label_set: LabelSet) -> np.ndarray:
    """Label strings -> int8 ids (order of the label set's labels)."""
    return pc.index_in(labels, value_set=label_set.values).to_numpy(zero_copy_only=False).astype(np.int8)


def sentence_lengths(table: pa.Table, label_set: LabelSet) -> np.ndarray:
    """Words per sentence (see module doc); rows must be in document order."""
    if table.num_rows == 0:
        return np.zeros(0, dtype=np.int64)
    labels = table["labels"].combine_chunks()
    codes = label_codes(pc.list_flatten(labels), label_set)
    word_counts = pc.list_value_length(labels).to_numpy(zero_copy_only=False)
    new_doc = value_changes(table["doc_id"])
    row_start = np.r_[0, np.cumsum(word_counts)[:-1]]
    doc_start = np.repeat(np.maximum.accumulate(np.where(new_doc, row_start, 0)), word_counts)
    ends = np.flatnonzero(np.isin(codes, list(label_set.sentence_end_ids)))
    if not len(ends):
        return np.zeros(0, dtype=np.int64)
    prev_end = np.r_[-1, ends[:-1]]
    starts = np.maximum(prev_end + 1, doc_start[ends])
    return ends - starts + 1


# ------------------------------------------------------------------------------ aggregates


@dataclass
class Tally:
    """What adds up over shards for one (corpus, split, lang): counts and length histograms."""

    words: int = 0
    segments: int = 0
    labels: Counter = field(default_factory=Counter)
    case: Counter = field(default_factory=Counter)
    sentences: Counter = field(default_factory=Counter)  # sentence length -> sentences
    segment_lengths: Counter = field(default_factory=Counter)
    label_set: LabelSet | None = None  # None: an empty sum, which takes the set of what is added

    def add(self, other: Tally) -> Tally:
        if other.label_set is not None:  # the tallies added are of one set (datasets do not mix them)
            self.label_set = other.label_set
        self.words += other.words
        self.segments += other.segments
        for name in ("labels", "case", "sentences", "segment_lengths"):
            getattr(self, name).update(getattr(other, name))
        return self


def _histogram(values: np.ndarray) -> Counter:
    """How often each length occurs, in increasing order of the lengths."""
    if not len(values):
        return Counter()
    if values.min() >= 0 and values.max() < 4 * len(values) + 4096:  # a count per length: no sort
        n = np.bincount(values)
        lengths = np.flatnonzero(n)
        n = n[lengths]
    else:
        lengths, n = np.unique(values, return_counts=True)
    return Counter(dict(zip(lengths.tolist(), n.tolist())))


def _value_counts(flat: pa.Array) -> Counter:
    return (
        Counter({row["values"]: int(row["counts"]) for row in pc.value_counts(flat).to_pylist()})
        if len(flat)
        else Counter()
    )


def tally(table: pa.Table, label_set: LabelSet, sentence_table: pa.Table | None = None) -> Tally:
    labels = pc.list_flatten(table["labels"].combine_chunks())
    return Tally(
        words=len(labels),
        segments=table.num_rows,
        labels=_value_counts(labels),
        case=_value_counts(pc.list_flatten(table["case"].combine_chunks())),
        sentences=_histogram(sentence_lengths(table if sentence_table is None else sentence_table, label_set)),
        segment_lengths=_histogram(pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False)),
        label_set=label_set,
    )


@dataclass(frozen=True)
class TableShard:
    """An in-memory table as a shard (the same audit over tables a caller holds)."""

    table: pa.Table
    index: int
    source: int = 0
    words: hashsets.WordCodes | None = None  # the words' codes, where the caller made them


class AuditShard:
    """Picklable step: a shard's tallies per (corpus, split, lang) and its hash groups, for each view.

    A view names the corpus of every row of each input (``names[i]`` for the rows of input i;
    None: the rows' own corpora); several views of one shard share its read, codes and hashes
    (the sequences report audits a dataset pooled and per corpus).  Hash groups are keyed by view;
    the views in ``derived`` write none (their groups are unions of another view's, formed in the
    reduce: see :func:`aggregate_views`).

    Tallies are kept per (corpus, split, lang) and, since sentence runs depend on which rows are
    taken together, also per (corpus, split) with lang "*", per (corpus, "*", lang) and per
    (corpus, "*", "*"): each computed on exactly the rows such a summary covers.  Everything is
    numpy over integer codes of the shard's labels (no per-row Python)."""

    COLUMNS = ["corpus", "lang", "doc_id", "words", "labels", "case", "split"]

    def __init__(
        self,
        folder,
        views: list[list[str | None] | None] | None = None,
        derived: frozenset = frozenset(),
        *,
        label_set: LabelSet,
    ):
        self.folder, self.views, self.derived = str(folder), views or [None], derived
        self.label_set = label_set

    def __call__(self, shard) -> tuple[list[dict], int]:
        words = None
        if isinstance(shard, TableShard):
            table, words = shard.table, shard.words
        else:
            table = read_rows(shard, self.COLUMNS, dictionary=True)
        out: list[dict] = []
        groups: dict[tuple, tuple] = {}
        codes = None
        for v, names in enumerate(self.views):
            if not table.num_rows:
                out.append({})
                continue
            # the corpus every row is audited under: a view's one name, or the rows' own
            corpus = names[shard.source] if names and names[shard.source] is not None else table["corpus"]
            codes = _Codes(table, corpus, self.label_set, words) if codes is None else codes.renamed(corpus)
            out.append(_tallies(codes, v, None if v in self.derived else groups))
        written = hashsets.write_groups(self.folder, shard.index, groups)
        return out, written


def _tallies(view: _Codes, v: int, groups: dict[tuple, tuple] | None) -> dict[tuple, Tally]:
    """A view's tallies; its hash groups (keyed by the view ``v``) added to ``groups`` (None: none)."""
    combos = view.combos
    for k, (corpus, split_name, lang) in enumerate(combos if groups is not None else ()):
        rows = view.row_combo == k
        groups[("word", v, corpus, split_name, lang)] = view.word_set(k)
        groups[("doc", v, corpus, split_name, lang)] = hashsets.distinct(view.doc_hashes[rows])
        groups[("seg", v, corpus, split_name, lang)] = hashsets.distinct(view.seg_hashes[rows])
    # every summary on exactly its rows (sentences run across the rows of a document); a
    # wider view that holds the same combinations as another is the same tally
    keys_of: dict[tuple, list[int]] = {}
    for k, (corpus, split_name, lang) in enumerate(combos):
        for key in ((corpus, split_name, lang), (corpus, "*", "*"), (corpus, split_name, "*"), (corpus, "*", lang)):
            keys_of.setdefault(key, []).append(k)
    tallies: dict[tuple, Tally] = {}
    for key, members in keys_of.items():
        same = tuple(members)
        if same not in view.tallied:
            view.tallied[same] = view.tally(members)
        tallies[key] = view.tallied[same]
    return tallies


class _Codes:
    """A shard as integer arrays: per row its (corpus, split, lang) combination, document change and
    length; per word its label, case and distinct-word codes."""

    def __init__(self, table: pa.Table, corpus, label_set: LabelSet, words: hashsets.WordCodes | None = None):
        """``corpus``: the corpus every row is audited under (a name for all, or a column), while
        the rows' own corpora and doc ids identify documents; ``label_set``: the labels' set;
        ``words``: the codes of ``table``'s words, if the caller made them."""
        self.label_set = label_set
        self.lengths = pc.list_value_length(table["words"]).to_numpy(zero_copy_only=False).astype(np.int64)
        self.labels, _ = flat_codes(table["labels"], label_set.labels)
        self.case, _ = flat_codes(table["case"], CASE_LABELS)
        self.new_doc = value_changes(table["doc_id"])
        self.doc_number = np.cumsum(self.new_doc)
        # whether each word ends a sentence: a table over the label codes (the last entry: -1, unknown)
        ends = np.zeros(len(label_set.labels) + 1, bool)
        ends[list(label_set.sentence_end_ids)] = True
        self.is_end = ends[self.labels]
        # a document's rows are contiguous: its key is hashed once, at its first row
        first = np.flatnonzero(self.new_doc | value_changes(table["corpus"]))
        starts = table.select(["corpus", "doc_id"]).take(pa.array(first))
        self.doc_hashes = np.repeat(
            hashsets.string_array_hashes(document_keys(starts)), np.diff(np.r_[first, len(self.lengths)])
        )
        self.word_code, values, self.word_hashes = words or hashsets.word_codes(table["words"])
        self.n_words = len(values)
        self.seg_hashes = hashsets.list_hashes(table["words"], self.word_hashes[self.word_code])
        self.split_codes = _first_seen(pc.fill_null(table["split"], NO_SPLIT))
        self.lang_codes = _first_seen(table["lang"])
        self._all_sentences: np.ndarray | None = None  # see _sentences_of_all (whatever the corpus names)
        self._combine(corpus)

    def renamed(self, corpus) -> _Codes:
        """The codes of the same rows under other corpus names (``corpus``: as for the
        constructor): only what depends on the corpus is computed again, and nothing but the names
        when the rows fall into combinations alike (one corpus in the shard: its tallies are the
        same too)."""
        other = copy.copy(self)
        other._combine(corpus, self)
        return other

    def _combine(self, corpus, renaming: _Codes | None = None) -> None:
        """Per row its (corpus, split, lang) combination, numbered in order of first appearance,
        and the label and case counts of each: from each column's codes, not a string per row."""
        n_rows = len(self.lengths)
        corpus_codes = (np.zeros(n_rows, np.int64), [corpus]) if isinstance(corpus, str) else _first_seen(corpus)
        (split, splits), (lang, langs) = self.split_codes, self.lang_codes
        code = (corpus_codes[0] * len(splits) + split) * len(langs) + lang
        if not n_rows or code.min() == code.max():
            self.row_combo, seen = np.zeros(n_rows, np.int64), code[:1].tolist()
        else:
            values, first, inverse = np.unique(code, return_index=True, return_inverse=True)
            by_appearance = np.argsort(first)
            rank = np.empty(len(values), np.int64)
            rank[by_appearance] = np.arange(len(values))
            self.row_combo, seen = rank[inverse.reshape(-1)], values[by_appearance].tolist()
        self.combos = [
            (
                corpus_codes[1][c // (len(splits) * len(langs))],
                splits[c // len(langs) % len(splits)],
                langs[c % len(langs)],
            )
            for c in seen
        ]
        if renaming is not None and np.array_equal(self.row_combo, renaming.row_combo):
            return  # the counts and the tallies (``tallied``, by combinations) copied with the codes
        #: tallies made, by the combinations (numbers) they cover
        self.tallied: dict[tuple, Tally] = {}
        self._by_combo: tuple | None = None  # see _sentences_by_combo
        n = len(self.combos)
        self.word_combo = np.repeat(self.row_combo, self.lengths) if n > 1 else None
        self.label_counts = _per_combo(self.word_combo, self.labels, n, len(self.label_set.labels))
        self.case_counts = _per_combo(self.word_combo, self.case, n, len(CASE_LABELS))

    def word_set(self, combo: int) -> tuple[np.ndarray, np.ndarray]:
        """The distinct words (hashes) of a combination with their token counts."""
        codes = self.word_code if len(self.combos) == 1 else self.word_code[self.word_combo == combo]
        counts = np.bincount(codes, minlength=self.n_words)
        present = np.flatnonzero(counts)
        return self.word_hashes[present], counts[present]

    def tally(self, members: list[int]) -> Tally:
        """The tally of the rows of the combinations ``members``, as over those rows alone."""
        if len(members) == len(self.combos):
            lengths, n_words, sentences = self.lengths, len(self.labels), self._sentences_of_all()
        else:
            rows = np.isin(self.row_combo, members)
            lengths = self.lengths[rows]
            by_combo = self._sentences_by_combo()
            if by_combo is not None:
                sentence_lengths, end_combo = by_combo
                sentences, n_words = sentence_lengths[np.isin(end_combo, members)], int(lengths.sum())
            else:
                words = np.repeat(rows, self.lengths)
                n_words = int(np.count_nonzero(words))
                sentences = self._sentences(rows, self.is_end[words], lengths)
        return Tally(
            words=n_words,
            segments=len(lengths),
            labels=_summed(self.label_counts, members, self.label_set.labels),
            case=_summed(self.case_counts, members, CASE_LABELS),
            sentences=_histogram(sentences),
            segment_lengths=_histogram(lengths),
            label_set=self.label_set,
        )

    def _sentences_by_combo(self) -> tuple[np.ndarray, np.ndarray] | None:
        """The sentence lengths of all the rows, with the combination of the row each ends in;
        None where a document's rows fall into several combinations.  Otherwise the rows of some
        combinations hold whole documents, whose sentences are those found over all the rows: one
        pass serves every combination's tally, where each took a pass over its own words."""
        if self._by_combo is None:  # asked with several combinations only: ``word_combo`` is made
            doc, combo = self.doc_number, self.row_combo
            if not bool(((combo[1:] == combo[:-1]) | (doc[1:] != doc[:-1])).all()):
                self._by_combo = ()
            else:
                self._by_combo = (self._sentences_of_all(), self.word_combo[np.flatnonzero(self.is_end)])
        return self._by_combo or None

    def _sentences_of_all(self) -> np.ndarray:
        """:meth:`_sentences` of all the rows, found once (the whole shard's tally and the
        combinations' tallies share them)."""
        if self._all_sentences is None:
            self._all_sentences = self._sentences(slice(None), self.is_end, self.lengths)
        return self._all_sentences

    def _sentences(self, rows, is_end, lengths) -> np.ndarray:
        """:func:`sentence_lengths` of the selected rows (``is_end``: whether each of their words
        ends a sentence): a document starts where the doc id of the selected rows changes."""
        if not len(is_end):
            return np.zeros(0, np.int64)
        doc = self.doc_number[rows]  # document number of each selected row
        new_doc = np.r_[True, doc[1:] != doc[:-1]]
        row_start = np.r_[0, np.cumsum(lengths)[:-1]]
        doc_start = np.repeat(np.maximum.accumulate(np.where(new_doc, row_start, 0)), lengths)
        ends = np.flatnonzero(is_end)
        if not len(ends):
            return np.zeros(0, np.int64)
        prev_end = np.r_[-1, ends[:-1]]
        starts = np.maximum(prev_end + 1, doc_start[ends])
        return ends - starts + 1


def document_keys(table: pa.Table, corpus=None) -> pa.Array:
    """What identifies each row's document: its corpus and doc id (``corpus``: the rows' own
    corpora, when ``table`` names them otherwise)."""
    corpus = table["corpus"] if corpus is None else corpus
    keys = pc.binary_join_element_wise(corpus.cast(pa.string()), table["doc_id"].cast(pa.string()), "\x1f")
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def _per_combo(combo: np.ndarray | None, codes: np.ndarray, n_combos: int, n_codes: int) -> np.ndarray:
    """Counts of each code per combination: an (n_combos, n_codes) array (codes < 0 not counted;
    ``combo`` None: every word is of the one combination)."""
    # codes are -1 at the least: shifted by one, the uncounted fall in a column of their own, left
    # out after (no mask to build and apply to every word)
    if combo is None:
        return np.bincount(codes + 1, minlength=n_codes + 1)[1:].reshape(1, n_codes)
    flat = np.bincount(combo * (n_codes + 1) + codes + 1, minlength=n_combos * (n_codes + 1))
    return flat.reshape(n_combos, n_codes + 1)[:, 1:]


def _first_seen(column) -> tuple[np.ndarray, list[str]]:
    """Each value's number, in order of first appearance, and the values so numbered."""
    column = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    encoded = pc.dictionary_encode(column.cast(pa.string()))
    return encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64), encoded.dictionary.to_pylist()


def _summed(counts: np.ndarray, members: list[int], names) -> Counter:
    total = counts[members].sum(axis=0)
    return Counter({name: int(n) for name, n in zip(names, total) if n})


# ------------------------------------------------------------------------------ summaries


def _percentile(histogram: Counter, p: float) -> float:
    """numpy's linear-interpolation percentile of the values a histogram counts."""
    values = sorted(histogram)
    counts = np.array([histogram[v] for v in values], np.int64)
    n = int(counts.sum())
    q = p / 100
    position = n * q - q  # numpy's virtual index for the linear method
    below = int(np.floor(position))
    cumulative = np.cumsum(counts)

    def at(rank):
        return values[int(np.searchsorted(cumulative, rank, side="right"))]

    low, high = at(below), at(min(below + 1, n - 1))
    t = position - below
    diff = high - low
    return low + diff * t if t < 0.5 else high - diff * (1 - t)


def _stats(histogram: Counter) -> dict:
    n = sum(histogram.values())
    if not n:
        return {"mean": 0.0, "std": 0.0, **{f"p{p}": 0.0 for p in PERCENTILES}}
    values = np.array(sorted(histogram), np.float64)
    counts = np.array([histogram[int(v)] for v in values], np.float64)
    mean = float((values * counts).sum() / n)
    std = float(np.sqrt(((values - mean) ** 2 * counts).sum() / n))
    out = {"mean": round(mean, 4), "std": round(std, 4)}
    for p in PERCENTILES:
        out[f"p{p}"] = round(float(_percentile(histogram, p)), 2)
    return out


def _summary(t: Tally, documents: int, vocabulary: int | None, languages: list[str]) -> dict:
    n = t.words
    labels = {label: int(t.labels.get(label, 0)) for label in t.label_set.labels}
    case = {label: int(t.case.get(label, 0)) for label in CASE_LABELS}
    summary = {
        "words": n,
        "labels": labels,
        "label_shares": {label: round(100.0 * c / n, 4) if n else 0.0 for label, c in labels.items()},
        "case_labels": case,
        "case_shares": {label: round(100.0 * c / n, 4) if n else 0.0 for label, c in case.items()},
        "sentence_length": _stats(t.sentences),
        "segments": t.segments,
        "segment_length": _stats(t.segment_lengths),
        "documents": documents,
    }
    if not t.label_set.is_papers:
        merged = dict.fromkeys(PAPERS_CLASSES, 0)
        for label, merge in zip(t.label_set.labels, t.label_set.merges):
            merged[merge] += labels[label]
        summary["label_set"] = t.label_set.name
        summary["merged_labels"] = merged
        summary["merged_label_shares"] = {label: round(100.0 * c / n, 4) if n else 0.0 for label, c in merged.items()}
    if vocabulary is not None:
        summary["vocabulary"] = vocabulary
    summary["languages"] = ",".join(languages)
    missing = [label for label, c in labels.items() if c == 0]
    if n and missing:
        summary["missing_labels"] = ",".join(missing)
    return summary


def _brief(summary: dict) -> dict:
    return {key: summary[key] for key in ("words", "labels", "label_shares", "sentence_length", "documents")}


def _split_order(splits) -> list[str]:
    order = {"train": 0, "dev": 1, "valid": 1, "test": 2}
    return sorted(splits, key=lambda s: (order.get(s, 3), s))


@dataclass(frozen=True)
class AuditView:
    """One audit of the shards: ``names`` renames the corpus of every row of input i to
    ``names[i]`` (None: the rows' own corpora), with its drift threshold and expected splits."""

    names: list[str | None] | None = None
    drift_threshold: float = 1.0
    expected_splits: tuple[str, ...] = ()


def aggregate(
    runner: Executor,
    shards: list,
    folder,
    names=None,
    drift_threshold: float = 1.0,
    expected_splits: tuple[str, ...] = (),
    *,
    label_set: LabelSet,
) -> tuple[dict, dict[str, Counter]]:
    """``{dataset: summary}`` over ``shards`` (see the module doc), and each dataset's sentence-length
    histogram; hash groups go through ``folder``."""
    view = AuditView(names, drift_threshold, expected_splits)
    (result,) = aggregate_views(runner, shards, folder, [view], label_set)
    return result


def aggregate_views(runner: Executor, shards: list, folder, views: list[AuditView], label_set: LabelSet) -> list:
    """:func:`aggregate` for several views of the same shards, in one pass over them (one read,
    one set of codes and hashes per shard) and one hash reduce."""
    audit = ViewsAudit(folder, views, label_set)
    for result in runner.each(audit.step, shards, label="audit"):
        audit.add(result)
    return audit.finish(runner, shards)


class ViewsAudit:
    """:func:`aggregate_views` in its three parts, for a stage that reads the shards anyway: run
    ``step`` on each shard's table (an :class:`AuditShard`: give it a :class:`TableShard`), ``add``
    what it returns, in shard order, then ``finish``: the hash reduce and the summaries.

    A view that names every row alike (the sequences report's pooled view) writes no hash groups
    when another view keeps the rows' own corpora: its (split, lang) group is the union of that
    view's (corpus, split, lang) groups, formed in the reduce (half the hashes to write and read,
    the same counts)."""

    def __init__(self, folder, views: list[AuditView], label_set: LabelSet):
        self.folder, self.views = folder, views
        self.base = next((v for v, view in enumerate(views) if view.names is None), None)
        self.derived = frozenset(
            v
            for v, view in enumerate(views)
            if self.base is not None and view.names and None not in view.names and len(set(view.names)) == 1
        )
        self.tallies: list[dict[tuple, Tally]] = [{} for _ in views]
        self.written = 0
        self.step = AuditShard(folder, [v.names for v in views], self.derived, label_set=label_set)

    def add(self, result: tuple[list[dict], int]) -> None:
        parts, n = result
        self.written += n
        for view_tallies, part in zip(self.tallies, parts):
            for key, t in part.items():
                view_tallies.setdefault(key, Tally()).add(t)

    def finish(self, runner: Executor, shards: list) -> list[tuple[dict, dict]]:
        views, base, derived, tallies = self.views, self.base, self.derived, self.tallies
        members, families = [], {}
        for view_tallies in tallies:
            combos = sorted(k for k in view_tallies if "*" not in k)
            corpora = sorted({c for c, _, _ in combos})
            members.append({corpus: [(s, l) for c, s, l in combos if c == corpus] for corpus in corpora})
        for v in range(len(views)):
            for corpus, pairs in members[v].items():
                for kind in ("word", "doc", "seg"):
                    if v in derived:
                        families[(kind, v, corpus)] = [
                            [(kind, base, c, s, l) for c, held in members[base].items() if (s, l) in held]
                            for s, l in pairs
                        ]
                    else:
                        families[(kind, v, corpus)] = [(kind, v, corpus, s, l) for s, l in pairs]
        # a range holds its records once per family they are in: the written ones, and for each
        # derived view the arrays its runs are formed in (from the base view's runs)
        overlaps, _ = hashsets.reduce(
            runner,
            self.folder,
            [s.index for s in shards],
            families,
            self.written * (1 + len(derived)),
            label="audit: distinct words and duplicates",
        )
        out = []
        for v, view in enumerate(views):
            view_overlaps = {(kind, corpus): o for (kind, w, corpus), o in overlaps.items() if w == v}
            out.append(_summaries(tallies[v], members[v], view_overlaps, view.drift_threshold, view.expected_splits))
            leaking = {
                corpus
                for corpus, summary in out[-1][0].items()
                if summary.get("leakage", {}).get("documents_in_several_splits")
            }
            if leaking:
                for corpus, found in leaked_documents(shards, view.names, leaking).items():
                    out[-1][0][corpus]["leakage"]["documents_found"] = found
        return out


def _shard_rows(shard, columns: list[str]) -> pa.Table:
    return shard.table.select(columns) if isinstance(shard, TableShard) else read_rows(shard, columns)


def leaked_documents(shards: list, names, corpora: set[str], per_pair: int = LEAKED_NAMED) -> dict:
    """``{corpus: {"dev+train": [[corpus, doc_id], ...]}}``: the first ``per_pair`` documents (in
    id order) found in each pair of splits, for the (view) ``corpora`` that leak.  Run only where
    the audit found leakage: one pass keeps a hash and a split per document and split, a second
    names the few hashes shown."""
    found = []  # (view corpus code, key hash, split code) per distinct triple of a shard
    view_corpora = sorted(corpora)
    for shard in shards:
        table = _shard_rows(shard, ["corpus", "doc_id", "split"])
        view = _view_corpus(table, names, shard)
        code = _codes_in(view, view_corpora)
        split = _codes_in(table["split"], SPLITS)
        hashes = hashsets.string_hashes(document_keys(table))
        rows = np.flatnonzero((code >= 0) & (split >= 0))
        triple = np.stack([code[rows].astype(np.uint64), hashes[rows], split[rows].astype(np.uint64)])
        found.append(np.unique(triple, axis=1))
    triples = np.unique(np.concatenate(found, axis=1), axis=1) if found else np.zeros((3, 0), np.uint64)
    pairs: dict[int, dict[str, list[int]]] = {}
    wanted: set[int] = set()
    doc = triples[:2]
    starts = np.r_[0, np.flatnonzero((doc[:, 1:] != doc[:, :-1]).any(axis=0)) + 1]
    ends = np.r_[starts[1:], triples.shape[1]]
    for a, b in zip(starts.tolist(), ends.tolist()):
        if b - a < 2:
            continue
        splits = sorted({SPLITS[int(x)] for x in triples[2, a:b]}, key=_split_rank)
        pair = "+".join(splits)
        listed = pairs.setdefault(int(triples[0, a]), {}).setdefault(pair, [])
        listed.append(int(triples[1, a]))
    for per in pairs.values():
        wanted |= {h for listed in per.values() for h in listed}
    named: dict[int, list] = {}
    if wanted:
        want = np.array(sorted(wanted), np.uint64)
        for shard in shards:
            table = _shard_rows(shard, ["corpus", "doc_id"])
            hashes = hashsets.string_hashes(document_keys(table))
            for i in np.flatnonzero(np.isin(hashes, want)).tolist():
                named.setdefault(int(hashes[i]), [table["corpus"][i].as_py(), table["doc_id"][i].as_py()])
    return {
        view_corpora[c]: {pair: sorted(named[h] for h in listed)[:per_pair] for pair, listed in sorted(per.items())}
        for c, per in sorted(pairs.items())
    }


SPLITS = ("train", "dev", "test")


def _codes_in(values, names) -> np.ndarray:
    """The index of each value in ``names``, -1 where it is not there (or null)."""
    values = values.combine_chunks() if isinstance(values, pa.ChunkedArray) else values
    codes = pc.index_in(values.cast(pa.string()), value_set=pa.array(list(names), pa.string()))
    return codes.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)


def _split_rank(name: str) -> int:
    return SPLITS.index(name)


def _view_corpus(table: pa.Table, names, shard) -> pa.Array:
    """The corpus each row is audited under: its own, or the view's name for its input."""
    if names and names[shard.source] is not None:
        return pa.array([names[shard.source]] * table.num_rows, pa.string())
    corpus = table["corpus"]
    corpus = corpus.combine_chunks() if isinstance(corpus, pa.ChunkedArray) else corpus
    return corpus.cast(pa.string())


def _summaries(tallies, members, overlaps, drift_threshold, expected_splits) -> tuple[dict, dict[str, Counter]]:
    """One view's summaries from its tallies and hash overlaps."""
    corpora = sorted(members)

    def distinct(kind, corpus, keep) -> int:
        """Distinct hashes of ``kind`` in the corpus's members that ``keep(split, lang)``."""
        bits = [i for i, (s, l) in enumerate(members[corpus]) if keep(s, l)]
        overlap = overlaps[(kind, corpus)]
        return sum(n for mask, n in overlap.masks.items() if any(mask >> b & 1 for b in bits))

    result = {}
    for corpus in corpora:
        langs = sorted({l for _, l in members[corpus]})
        summary = _summary(
            tallies[(corpus, "*", "*")],
            distinct("doc", corpus, lambda s, l: True),
            distinct("word", corpus, lambda s, l: True),
            langs,
        )
        if len(langs) > 1:
            summary["by_language"] = {
                lang: _brief(
                    _summary(
                        tallies[(corpus, "*", lang)],
                        distinct("doc", corpus, lambda s, l, lang=lang: l == lang),
                        None,
                        [lang],
                    )
                )
                for lang in langs
            }
        present = _split_order({s for s, _ in members[corpus] if s != NO_SPLIT})
        # a split corpus lists every split, an empty one with zero rows: left out, it goes unseen
        expected = expected_splits or (SPLITS if present else ())
        if present or expected:
            summary.update(
                _split_audit(corpus, present, expected, members[corpus], tallies, overlaps, distinct, drift_threshold)
            )
        result[corpus] = summary
    return result, {corpus: tallies[(corpus, "*", "*")].sentences for corpus in corpora}


def _split_audit(corpus, present, expected, pairs, tallies, overlaps, distinct, threshold) -> dict:
    train_bits = [i for i, (s, _) in enumerate(pairs) if s == "train"]
    has_train = bool(train_bits) and tallies[(corpus, "train", "*")].words > 0
    splits = {}
    for name in [*present, *[s for s in expected if s not in present]]:
        t = tallies.get((corpus, name, "*"), Tally(label_set=tallies[(corpus, "*", "*")].label_set))
        langs = sorted({l for s, l in pairs if s == name})
        summary = _summary(
            t,
            distinct("doc", corpus, lambda s, l, name=name: s == name),
            distinct("word", corpus, lambda s, l, name=name: s == name),
            langs,
        )
        if name != "train" and has_train:
            summary["oov_rate"] = _oov(overlaps[("word", corpus)], pairs, name, train_bits, t.words)
        if len(langs) > 1:
            summary["by_language"] = {
                lang: _brief(
                    _summary(
                        tallies[(corpus, name, lang)],
                        distinct("doc", corpus, lambda s, l, n=name, g=lang: s == n and l == g),
                        None,
                        [lang],
                    )
                )
                for lang in langs
            }
        splits[name] = summary
    warnings, drift = [], {}
    if "train" in splits and splits["train"]["words"]:
        for name, summary in splits.items():
            if name == "train" or not summary["words"]:
                continue
            drift[name] = {
                label: round(summary["label_shares"][label] - splits["train"]["label_shares"][label], 4)
                for label in summary["label_shares"]
            }
            for label, diff in drift[name].items():
                if abs(diff) > threshold:
                    warnings.append(f"{name} {label} share differs from train by {diff:+.2f} points")
    for name, summary in splits.items():
        if summary["documents"] == 0:
            warnings.append(f"split {name} has no documents")
    out = {
        "splits": splits,
        "leakage": {
            "documents_in_several_splits": _in_several_splits(overlaps[("doc", corpus)], pairs),
            "segments_in_several_splits": _in_several_splits(overlaps[("seg", corpus)], pairs),
        },
    }
    if drift:
        out["drift"] = drift
    if warnings:
        out["warnings"] = "; ".join(warnings)
    return out


def _oov(overlap: hashsets.Overlap, pairs, name: str, train_bits: list[int], tokens: int) -> float:
    if not tokens:
        return 0.0
    train_mask = sum(1 << b for b in train_bits)
    members = {i for i, (s, _) in enumerate(pairs) if s == name}
    unseen = sum(n for (mask, member), n in overlap.occurrences.items() if member in members and not mask & train_mask)
    return round(100.0 * unseen / tokens, 4)


def _in_several_splits(overlap: hashsets.Overlap, pairs) -> int:
    split_bits = {}
    for i, (s, _) in enumerate(pairs):
        if s != NO_SPLIT:
            split_bits.setdefault(s, 0)
            split_bits[s] |= 1 << i
    return sum(n for mask, n in overlap.masks.items() if sum(1 for bits in split_bits.values() if mask & bits) > 1)


def audit(
    tables: list[pa.Table],
    drift_threshold: float = 1.0,
    expected_splits: tuple[str, ...] = (),
    with_histograms: bool = False,
    *,
    label_set: LabelSet,
):
    """The audit of tables held in memory (the same aggregation as over shards); with the
    sentence-length histograms if ``with_histograms``; ``label_set``: the tables' labels."""
    from pipeline.engine.executor import executor

    shards = [TableShard(t, i) for i, t in enumerate(tables) if t.num_rows]
    with tempfile.TemporaryDirectory(prefix="punct-audit-") as folder, executor("inline") as runner:
        result, histograms = aggregate(
            runner,
            shards,
            folder,
            drift_threshold=drift_threshold,
            expected_splits=expected_splits,
            label_set=label_set,
        )
    if any(t.num_rows == 0 for t in tables):
        result["(empty)"] = empty_summary(label_set)
    return (result, histograms) if with_histograms else result


def empty_summary(label_set: LabelSet) -> dict:
    """The summary of a dataset with no rows of ``label_set``."""
    return _summary(Tally(label_set=label_set), 0, 0, [])


def audit_datasets(
    runner: Executor,
    paths,
    folder,
    shard_rows: int,
    names=None,
    drift_threshold: float = 1.0,
    expected_splits: tuple[str, ...] = (),
) -> tuple[dict, dict[str, Counter]]:
    """The audit of segment datasets (files or folders of parts), streamed, and the sentence-length
    histograms; ``names[i]`` renames the corpus of every row of ``paths[i]`` (a dataset audited as one)."""
    view = AuditView(names, drift_threshold, expected_splits)
    return audit_dataset_views(runner, paths, folder, shard_rows, [view])[0]


def audit_dataset_views(runner: Executor, paths, folder, shard_rows: int, views: list[AuditView]) -> list:
    """:func:`audit_datasets` for several views of the same datasets (of one label set), in one pass
    over them."""
    scan = scan_datasets(paths, shard_rows, runner)
    return aggregate_views(runner, scan.shards, folder, views, scan.labels)


def alignment_summary(report: dict) -> dict:
    """The few numbers of an alignment report worth a line in the audit."""
    marks = report.get("marks", {})
    return {
        "wer": report.get("wer", {}).get("wer"),
        "marks_reference": marks.get("reference", 0),
        "marks_transferred": marks.get("transferred", 0),
        "marks_dropped": sum(marks.get("dropped", {}).values()),
    }
