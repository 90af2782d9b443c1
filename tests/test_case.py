"""Case labels from the sources to the exports: round trips on the real cased corpora, caseless
scripts and lowercase sources, the transfer by alignment, the audit's counts, and the NeMo and
Hugging Face exports (NeMo's data preparation re-stated from its source, below)."""

import dataclasses
import functools
import json
import unicodedata
from collections import Counter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from support.corpora import has_real_corpora
from support.datasets import write_dataset

from corpora import get_reader
from pipeline.align.document import align_document
from pipeline.align.tables import align_tables
from pipeline.audit.stats import audit
from pipeline.datasets.export import export_datasets
from pipeline.ingest import plan, reader_module
from pipeline.labels import CASE_LABELS, CASE_TO_ID, LABEL_TO_ID, LABELS, PAPERS, RENDERED_MARK
from pipeline.schema import concat, segments_table, with_column
from pipeline.text.case import apply_case
from pipeline.text.labelling import label_lines
from pipeline.text.languages import get_language
from pipeline.text.normalize import ascii_apostrophes
from pipeline.text.verbalize import get_verbalizer
from pipeline.training.metrics import scores

EN = get_language("en")

# reader, folder under the shared corpora, files, language, reader options
CASED_SOURCES = {
    "ted_xml": ("ted_xml", "iwslt_en_raw", "*.xml", "en", {}),
    "flores_ms": ("text", "malay_news", "flores_zsm_Latn.devtest", "ms", {"doc_boundary": "line"}),
    "malay_news": ("news_json", "malay_news", "isu_*.json", "ms", {}),
}


def read_with(reader: str, paths, language, **options) -> pa.Table:
    """A corpus read by ``reader`` shard by shard with ``language`` (a Language, possibly altered)."""
    module = reader_module(reader)
    opts = module.Options.model_validate(options)
    shards, _files, _counts = plan(reader, paths, language.code, opts, 100_000, "*", None, "papers", "papers")
    return concat([module.read(shard, language, "c", opts).table for shard in shards])


def as_written(reader: str, paths, lang: str, **options) -> tuple[pa.Table, pa.Table]:
    """The corpus read as usual, and read again keeping every word as written (``lowercase=False``)."""
    language = get_language(lang)
    usual = read_with(reader, paths, language, **options)
    return usual, read_with(reader, paths, dataclasses.replace(language, lowercase=False), **options)


def flat(table: pa.Table, column: str) -> list:
    return pc.list_flatten(table[column]).to_pylist()


@functools.cache
def cased_corpus(shared, name: str) -> tuple[list, pa.Table, pa.Table]:
    """A cased source's files, and the corpus read as usual and as written (read once per session)."""
    reader, folder, glob, lang, options = CASED_SOURCES[name]
    paths = sorted((shared / folder).glob(glob))
    return (paths, *as_written(reader, paths, lang, **options))


@pytest.fixture(scope="module")
def ted(shared):
    """The TED XML talks read as usual and as written."""
    return cased_corpus(shared, "ted_xml")[1:]


#: the cased sources, the Malay news (12 s) among the slow tests
BY_SOURCE = pytest.mark.parametrize(
    "name", ["flores_ms", pytest.param("malay_news", marks=pytest.mark.slow), "ted_xml"]
)


# ---------------------------------------------------------------------------- round trips


def source_text(paths) -> str:
    """The text of the source files (a JSON file's strings decoded) as the normalizer leaves it: NFC,
    without the format characters (soft hyphens: ``Anto\u00adnio``)."""
    texts = []
    for path in paths:
        raw = path.read_text(encoding="utf-8")
        if path.suffix == ".json":
            articles = json.loads(raw)
            raw = "\n".join(str(v) for article in articles for v in article.values() if isinstance(v, str))
        texts.append(raw)
    text = unicodedata.normalize("NFC", "\n".join(texts))
    return text.translate({ord(ch): None for ch in set(text) if unicodedata.category(ch) == "Cf"})


@BY_SOURCE
def test_case_labels_give_back_every_word_as_written(shared, name):
    paths, usual, written = cased_corpus(shared, name)
    assert usual.num_rows == written.num_rows > 100
    assert usual["labels"].equals(written["labels"])
    words, case, surface = flat(usual, "words"), flat(usual, "case"), flat(usual, "surface")
    expected = flat(written, "words")
    assert len(words) == len(expected)
    wrong = [(w, c, s, e) for w, c, s, e in zip(words, case, surface, expected) if apply_case(w, c, s) != e]
    assert not wrong, wrong[:5]
    # the labels carry something: every kind occurs, and the forms kept are exactly the M words
    counts = Counter(case)
    assert counts["U"] > 0.03 * len(words) and counts["A"] > 0 and counts["M"] > 0, counts
    assert sum(s is not None for s in surface) == counts["M"]
    # the words as written are the source's: (a sample of) the capitalized ones occur in it as they are
    capitalized = sorted({w for w, c in zip(expected, case) if c != "O"})
    sample = capitalized[:: max(1, len(capitalized) // 500)]
    # (apostrophes inside words as normalization writes them: Peter’s is Peter's)
    raw = ascii_apostrophes(pa.array([source_text(paths)]))[0].as_py()
    missing = [w for w in sample if w not in raw]
    assert not missing, missing[:5]


def test_caseless_scripts_are_all_O(shared):
    bangla = get_reader("news_json")(
        [shared / "bangla_news/articles_2025-12-29.json"],
        lang="bn",
        corpus="bn",
        fields={"title": "headline", "text": "article", "source": "paper_name", "id": "url"},
    ).table
    hindi = get_reader("text")(
        [shared / "indic/flores/hin_Deva.devtest"], lang="hi", corpus="hi", doc_boundary="line", quoting="csv"
    ).table
    for table, script in ((bangla, "\u0980-\u09ff"), (hindi, "\u0900-\u097f")):
        words, case = flat(table, "words"), flat(table, "case")
        assert len(words) > (10_000 if has_real_corpora() else 1_000)  # else the committed cuts
        has_case = [any(ch.lower() != ch.upper() for ch in w) for w in words]
        # a word without a cased letter is O; only words with one (a Latin name inside) may be else
        assert all(c == "O" for c, cased in zip(case, has_case) if not cased)
        assert sum(c != "O" for c in case) <= sum(has_case) < 0.01 * len(words)
        in_script = [w for w in words if any(script[0] <= ch <= script[-1] for ch in w)]
        assert len(in_script) > 0.9 * len(words)


def test_tsv_reader_fills_O_and_says_so(shared, tmp_path):
    prepared = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="ref")
    assert set(flat(prepared.table, "case")) == {"O"}
    assert any("no word of the source is capitalized" in note for note in prepared.report()["notes"])
    cased = tmp_path / "cased.tsv"
    cased.write_text("Paris\tO\nis\tO\nNASA\tCOMMA\niPhone\tPERIOD\n", encoding="utf-8")
    prepared = get_reader("tsv")([cased], lang="en", corpus="cased")
    assert flat(prepared.table, "case") == ["U", "O", "A", "M"]
    assert flat(prepared.table, "surface")[3] == "iPhone"
    assert not prepared.report().get("notes")


# ---------------------------------------------------------------------------- audit and exports


def with_splits(table: pa.Table) -> pa.Table:
    """The talks in turn to test, dev and train."""
    talks = list(dict.fromkeys(table["doc_id"].to_pylist()))
    names = {d: ("test", "dev", "train")[k % 3] for k, d in enumerate(talks)}
    return with_column(table, "split", pa.array([names[d] for d in table["doc_id"].to_pylist()]))


def test_audit_case_counts_equal_a_direct_count(ted):
    table = with_splits(ted[0])
    summary = audit([table], label_set=PAPERS)["c"]
    assert summary["case_labels"] == {c: Counter(flat(table, "case"))[c] for c in CASE_LABELS}
    for split in ("train", "dev", "test"):
        part = table.filter(pc.equal(table["split"], split))
        direct = Counter(flat(part, "case"))
        assert summary["splits"][split]["case_labels"] == {c: direct[c] for c in CASE_LABELS}
        assert sum(summary["splits"][split]["case_shares"].values()) == pytest.approx(100, abs=0.01)


def test_hf_export_loads_with_one_split_per_split_name(ted, tmp_path):
    datasets = pytest.importorskip("datasets")
    table = with_splits(ted[0])
    write_dataset(table, tmp_path / "segments", parts=3)
    splits = export_datasets([tmp_path / "segments"], "hf", tmp_path / "hf")["splits"]
    loaded = datasets.load_dataset(str(tmp_path / "hf"), cache_dir=str(tmp_path / "cache"))
    assert sorted(loaded) == sorted(splits) == ["dev", "test", "train"]
    case_feature = loaded["train"].features["case"].feature
    assert case_feature.names == list(CASE_LABELS)
    for split in splits:
        part = table.filter(pc.equal(table["split"], split))
        assert loaded[split].num_rows == part.num_rows
        assert [[case_feature.int2str(c) for c in row] for row in loaded[split]["case"]] == part["case"].to_pylist()
        assert loaded[split]["surface"] == part["surface"].to_pylist()


def exported_nemo(table: pa.Table, folder) -> tuple[list[str], list[str]]:
    write_dataset(table, folder / "segments")
    export_datasets([folder / "segments"], "nemo", folder / "nemo")
    read = (folder / "nemo/train/text.txt", folder / "nemo/train/labels.txt")
    return tuple(p.read_text(encoding="utf-8").splitlines() for p in read)


@BY_SOURCE
def test_nemo_export_carries_the_project_words_labels_and_capitals(shared, name, tmp_path):
    _paths, usual, written = cased_corpus(shared, name)
    text, labels = exported_nemo(usual, tmp_path)
    kept = [i for i, words in enumerate(usual["words"].to_pylist()) if words]
    assert text == [" ".join(w.lower() for w in usual["words"][i].as_py()) for i in kept]
    # the capital of NeMo's label is the written word's first letter: the corpus read as written
    expected = [
        " ".join(
            (RENDERED_MARK[label] or "O") + ("U" if w[:1].isupper() else "O")
            for w, label in zip(written["words"][i].as_py(), written["labels"][i].as_py())
        )
        for i in kept
    ]
    assert labels == expected
    tags = Counter(label for line in labels for label in line.split())
    assert tags["OU"] > 500 and tags[".O"] > 500 and tags[",O"] > 500 and tags["?O"] + tags["?U"] > 0


# ---------------------------------------------------------------------------- alignment


class Spell:
    """A verbalizer reading two cased words aloud, one word at a time."""

    max_words = 1
    spoken = {"4th": [["fourth"]], "3d": [["three", "d"]]}

    def analyse(self, words, stops=(), candidates=None):
        from pipeline.text.verbalize import Group

        return [Group(i, i + 1, "spell", True, [self.spoken[w]]) for i, w in enumerate(words) if w in self.spoken]


def case_transfer(ref_text: str, hyp_text: str, policy: str = "guerreiro", verbalizer=None):
    """The hypothesis restored with the reference's case, and the alignment."""
    ref = label_lines([ref_text], EN)
    words = ref.words[0].as_py()
    codes = np.array([LABEL_TO_ID[label] for label in ref.labels[0].as_py()], dtype=np.int8)
    seg_end = np.zeros(len(words), dtype=bool)
    seg_end[-1] = True
    case = np.array([CASE_TO_ID[c] for c in ref.case[0].as_py()], dtype=np.int8)
    hyp = hyp_text.split()
    result = align_document(words, codes, seg_end, hyp, policy, verbalizer, case, ref.surface[0].as_py())
    restored = [
        apply_case(w, CASE_LABELS[c], result.hyp_surface.get(i)) for i, (w, c) in enumerate(zip(hyp, result.hyp_case))
    ]
    return " ".join(restored), result


def test_case_moves_onto_the_recognized_words():
    ref = "Yesterday Tim Cook showed NASA the new iPhone and an iPhone at McDonald's in Paris."
    hyp = "yesterday tim cook showed nasa the new iphone and an iphones at mcdonalds in paris"
    restored, result = case_transfer(ref, hyp)
    # the exact form where the word is the same; a near-identical form by its first cased letter
    assert restored == "Yesterday Tim Cook showed NASA the new iPhone and an iphones at Mcdonalds in Paris"
    assert result.case == Counter(reference=8, transferred=8, approximated=2)


def test_case_of_words_not_recognized_or_deleted_is_dropped_with_its_reason():
    ref = "Anna met Boris in Vienna and Oslo."
    hyp = "uh anna met maurice in vienna and"
    restored, result = case_transfer(ref, hyp)
    assert restored == "uh Anna met maurice in Vienna and"  # the inserted "uh" stays as it is
    assert result.case == Counter(
        {"reference": 4, "transferred": 2, "dropped:word_not_recognized": 1, "dropped:word_deleted": 1}
    )
    # nearest also capitalizes the misheard name
    restored, result = case_transfer(ref, hyp, policy="nearest")
    assert restored == "uh Anna met Maurice in Vienna and"
    assert result.case["onto_substituted"] == 1 and result.case["transferred"] == 3
    assert result.case["reference"] == result.case["transferred"] + result.case["dropped:word_deleted"]


def test_case_of_a_number_spoken_as_words_is_dropped():
    restored, result = case_transfer("The 4TH film was in 3D.", "the fourth film was in three d", verbalizer=Spell())
    assert restored == "The fourth film was in three d"
    assert result.case == Counter({"reference": 3, "transferred": 1, "dropped:number_spoken": 2})
    assert list(result.hyp_codes)[-1] == LABEL_TO_ID["PERIOD"]  # the mark still moves


def test_hypothesis_case_is_replaced_and_said():
    ref = segments_table(
        "r",
        "en",
        ["d"],
        [0],
        [["anna", "met", "nasa"]],
        [["O", "O", "PERIOD"]],
        case=[["U", "O", "A"]],
        vocabulary=LABELS,
    )
    hyp = segments_table(
        "h", "en", ["d"], [0], [["anna", "met", "nasa"]], [["O"] * 3], case=[["O", "U", "O"]], vocabulary=LABELS
    )
    out, report = align_tables(ref, hyp)
    assert flat(out, "case") == ["U", "O", "A"]
    assert report["ignored_hypothesis_case"] == 1
    assert any("capitalized words" in w for w in report["warnings"])
    assert report["case"]["labels_before"] == {"O": 1, "U": 1, "A": 1, "M": 0}
    assert report["case"]["labels_after"] == {"O": 1, "U": 1, "A": 1, "M": 0}


def asr_like(ref: pa.Table, verbalizer, seed: int = 0) -> tuple[pa.Table, list[str], list[str], list]:
    """A lowercase transcript of the reference's talks in segments of 25 words, numbers spoken, with
    ASR-like errors: 4 % of the words lost, 4 % heard as another word of the talk, 3 % with a final s
    added or lost, a filler after 2 %.  Returns it, and per hypothesis word what it is (copy, near,
    other, filler, number), the case it should take and the form (where it is M)."""
    rng = np.random.default_rng(seed)
    doc_ids, seg_ids, segments, kinds, truth, forms = [], [], [], [], [], []
    for doc in dict.fromkeys(ref["doc_id"].to_pylist()):
        part = ref.filter(pc.equal(ref["doc_id"], doc))
        words, case, surface = flat(part, "words"), flat(part, "case"), flat(part, "surface")
        vocabulary = sorted(set(words))
        out = []
        for word, label, form in zip(words, case, surface):
            spoken = verbalizer.readings(word) if any(ch.isdigit() for ch in word) else []
            draw = rng.random()
            if spoken:
                out += [(w, "number", "O", None) for w in spoken[0].split()]
            elif draw < 0.04:
                continue
            elif draw < 0.08:
                out.append((vocabulary[rng.integers(len(vocabulary))], "other", label, None))
            elif draw < 0.11:
                near = word[:-1] if word.endswith("s") and len(word) > 3 else word + "s"
                if label == "M":  # another form keeps only a capital first letter (McDonald, not iPhone)
                    first = next(ch for ch in form if ch.lower() != ch.upper())
                    label = "U" if first.isupper() else "O"
                out.append((near, "near", label, None))
            else:
                out.append((word, "copy", label, form))
            if rng.random() < 0.02:
                out.append(("uh", "filler", "O", None))
        for k in range(0, len(out), 25):
            chunk = out[k : k + 25]
            doc_ids.append(doc)
            seg_ids.append(k // 25)
            segments.append([w for w, *_ in chunk])
            kinds += [kind for _, kind, _, _ in chunk]
            truth += [label for _, _, label, _ in chunk]
            forms += [form for *_, form in chunk]
    labels = pa.array([["O"] * len(s) for s in segments], pa.list_(pa.string()))
    return segments_table("asr", "en", doc_ids, seg_ids, segments, labels, vocabulary=LABELS), kinds, truth, forms


def test_ted_talks_onto_an_asr_like_transcript(ted):
    ref = ted[0]
    verbalizer = get_verbalizer("en")
    hyp, kinds, truth, forms = asr_like(ref, verbalizer)
    caseless = with_column(ref, "case", pa.array([["O"] * len(w) for w in ref["words"].to_pylist()]))
    plain, _ = align_tables(caseless, hyp, verbalizer=verbalizer, max_wer=0.3)
    for policy in ("guerreiro", "ueffing", "nearest"):
        out, report = align_tables(ref, hyp, policy=policy, verbalizer=verbalizer, max_wer=0.3)
        if policy == "guerreiro":  # case changes no punctuation label
            assert out["labels"].equals(plain["labels"])
        case = report["case"]
        assert case["reference"] == sum(v for k, v in case["labels_before"].items() if k != "O")
        assert case["reference"] == case["transferred"] + sum(case["dropped"].values())
        assert sum(case["labels_after"].values()) == len(kinds)
        pred, surface = flat(out, "case"), flat(out, "surface")
        gold_ids = np.array([CASE_TO_ID[c] for c in truth])
        pred_ids = np.array([CASE_TO_ID[c] for c in pred])
        heard = np.array([k in ("copy", "near") for k in kinds])
        overall = scores(gold_ids, pred_ids, CASE_LABELS)["overall"]
        on_heard = scores(gold_ids[heard], pred_ids[heard], CASE_LABELS)["overall"]
        print(policy, "case F1", overall, "on words heard", on_heard, case)
        assert on_heard["precision"] > 0.98 and on_heard["recall"] > 0.9
        if policy != "nearest":  # (nearest capitalizes a filler heard in place of a name)
            assert all(pred[i] == "O" for i, k in enumerate(kinds) if k in ("filler", "number"))
        exact = [i for i, (k, t) in enumerate(zip(kinds, truth)) if k == "copy" and t == "M"]
        assert exact and sum(surface[i] == forms[i] for i in exact) >= 0.9 * len(exact)


def test_lowercase_pair_has_no_case_to_move(shared):
    """IWSLT test2011 onto test2011asr: both lowercase, every case label stays O."""
    ref = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="ref").table
    hyp = get_reader("tsv")([shared / "iwslt_en/test2011asr.tsv"], lang="en", corpus="asr").table
    out, report = align_tables(ref, hyp, verbalizer=get_verbalizer("en"))
    assert set(flat(out, "case")) == {"O"} and set(flat(out, "surface")) == {None}
    assert report["case"]["reference"] == report["case"]["transferred"] == 0
    assert report["case"]["labels_after"]["O"] == report["hypothesis_words"]
    assert not any("capitalized" in w for w in report["warnings"])
