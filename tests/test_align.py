"""Transfer of reference punctuation onto ASR hypotheses."""

import numpy as np
import pyarrow.compute as pc
import pytest

from corpora import get_reader
from pipeline.align.document import align_document
from pipeline.align.pairing import AlignmentError
from pipeline.align.tables import align_tables
from pipeline.labels import LABEL_TO_ID, LABELS, PAPERS
from pipeline.schema import segments_table
from pipeline.text.labelling import label_lines, render
from pipeline.text.languages import get_language
from pipeline.text.verbalize import get_verbalizer
from pipeline.training.metrics import scores

EN = get_language("en")

# Guerreiro et al. 2021, Figure 2: REF, ASR and the published RES (lowercased; the
# OCR'd "7" of the fourth RES is its question mark)
FIGURE_2 = [
    (
        "And that’s my cousin and my sister’s dog , Gabby .",
        "and that’s my cousin and my sister’s dog every",
        "and that’s my cousin and my sister’s dog, every.",
    ),
    (
        "As Juan said, it’s the condition that scientists call synesthesia ,"
        " an unusual cross-talk between the senses .",
        "as kwan said it’s a condition that scientists call soonest easier when usual course talk between the fences",
        "as kwan said, it’s a condition that scientists call soonest easier when usual course talk between the fences.",
    ),
    (
        "Well you can’t get much bigger than Pi , the mathematical constant .",
        "well you can’t get much bigger than empowering the mathematical constant",
        "well you can’t get much bigger than empowering, the mathematical constant.",
    ),
    ("is it a happy word , or a sad word ?", "is it a happy word was sad word", "is it a happy word, was sad word?"),
    (
        "Well if 100 , if we think of 100 as being like a square , 75 would look like this .",
        "well it’s a hundred we think of a hundred as of being a like a square seventy five would look like this",
        "well it’s a hundred, we think of a hundred as of being a like a square, seventy five would look like this.",
    ),
]


def transfer(ref_text, hyp_text, policy="guerreiro", verbalizer="en"):
    ref = label_lines([ref_text], EN)
    words = ref.words[0].as_py()
    codes = np.array([LABEL_TO_ID[l] for l in ref.labels[0].as_py()], dtype=np.int8)
    seg_end = np.zeros(len(words), dtype=bool)
    seg_end[-1] = True
    hyp_words = hyp_text.split()
    result = align_document(
        words, codes, seg_end, hyp_words, policy, get_verbalizer(verbalizer) if verbalizer else None
    )
    return render(hyp_words, [LABELS[c] for c in result.hyp_codes], PAPERS), result


@pytest.mark.parametrize("ref, hyp, expected", FIGURE_2)
def test_figure_2_examples(ref, hyp, expected):
    got, _ = transfer(ref, hyp)
    assert got == expected


def test_figure_2_second_mark_not_transferred():
    # "synesthesia , an": both context words misrecognized -> not transferred (guerreiro), but nearest does
    _, result = transfer(*FIGURE_2[1][:2])
    assert result.marks["dropped:context_not_recognized"] == 1
    got, _ = transfer(*FIGURE_2[1][:2], policy="nearest")
    assert got.count(",") == 2


def test_ueffing_needs_both_contexts():
    got, result = transfer(*FIGURE_2[0][:2], policy="ueffing")
    assert got == "and that’s my cousin and my sister’s dog every"
    assert result.marks["dropped:context_not_recognized"] == 2


def test_numbers_to_words_need_the_grammar():
    ref, hyp = "it costs 75 dollars , or 1990 prices .", "it costs seventy five dollars or nineteen ninety prices"
    with_grammar, result = transfer(ref, hyp)
    assert with_grammar == "it costs seventy five dollars, or nineteen ninety prices."
    assert result.substitutions == result.deletions == result.insertions == 0
    _without, result = transfer(ref, hyp, verbalizer=None)
    assert result.substitutions + result.deletions + result.insertions > 0


def test_mark_on_deleted_word_goes_before_recognized_right_word():
    got, result = transfer("we saw it , then left .", "we saw then left")
    assert got == "we saw, then left."
    assert result.marks["moved"] == 1


def _table(corpus, doc_words, labels=None, doc="d"):
    labels = labels or [["O"] * len(w) for w in doc_words]
    return segments_table(
        corpus, "en", [doc] * len(doc_words), list(range(len(doc_words))), doc_words, labels, vocabulary=LABELS
    )


def test_empty_hypothesis_fails_unless_forced():
    ref = _table("ref", [["hello", "world"]], [["COMMA", "PERIOD"]])
    hyp = _table("hyp", [])
    with pytest.raises(AlignmentError, match="the hypothesis is empty"):
        align_tables(ref, hyp)
    out, report = align_tables(ref, hyp, force=True)
    assert out.num_rows == 0
    assert report["warnings"] == ["the hypothesis is empty"]
    assert report["marks"]["transferred"] == 0


def test_punctuated_hypothesis_is_stripped_and_warned():
    ref = _table("ref", [["so", "what", "now"]], [["COMMA", "O", "QUESTION"]])
    hyp = _table("hyp", [["so", "what", "now"]], [["PERIOD", "PERIOD", "O"]])
    out, report = align_tables(ref, hyp)
    assert out["labels"].to_pylist() == [["COMMA", "O", "QUESTION"]]
    assert "carried 2 punctuation labels: ignored" in report["warnings"][0]


def test_different_scripts_are_refused():
    ref = _table("ref", [["আমি", "ভাত", "খাই"]], [["O", "O", "PERIOD"]])
    hyp = _table("hyp", [["ami", "bhat", "khai"]])
    with pytest.raises(AlignmentError, match="reference is in Bengali script but hypothesis in Latin"):
        align_tables(ref, hyp)


def test_mismatched_documents_flagged_by_wer():
    ref = _table("ref", [["the", "cat", "sat", "on", "the", "mat"]], [["O"] * 5 + ["PERIOD"]])
    hyp = _table("hyp", [["stock", "prices", "fell", "sharply", "again", "today"]])
    with pytest.raises(AlignmentError, match=r"1 document pair\(s\) above max_wer 0.5, probably not the same"):
        align_tables(ref, hyp)
    # forced, the pair is left out rather than aligned onto unrelated words, and reported
    out, report = align_tables(ref, hyp, force=True, max_wer=0.5)
    assert out.num_rows == 0
    assert report["over_max_wer"] == [{"reference": "d", "hypothesis": "d", "wer": 1.0, "hypothesis_words": 6}]
    assert report["documents"] == 0


def test_documents_paired_by_id_or_order():
    ref = segments_table(
        "ref",
        "en",
        ["a", "b"],
        [0, 0],
        [["one", "two"], ["three", "four"]],
        [["O", "PERIOD"], ["O", "QUESTION"]],
        vocabulary=LABELS,
    )
    hyp = segments_table(
        "hyp",
        "en",
        ["b", "a"],
        [0, 0],
        [["three", "four"], ["one", "two"]],
        [["O", "O"], ["O", "O"]],
        vocabulary=LABELS,
    )
    out, _ = align_tables(ref, hyp)
    assert out["labels"].to_pylist() == [["O", "QUESTION"], ["O", "PERIOD"]]
    with pytest.raises(AlignmentError, match="no reference document of the same id"):
        align_tables(
            ref,
            segments_table("hyp", "en", ["a", "zzz"], [0, 0], [["one"], ["two"]], [["O"], ["O"]], vocabulary=LABELS),
        )
    by_order = segments_table(
        "hyp",
        "en",
        ["x", "y"],
        [0, 0],
        [["one", "two"], ["three", "four"]],
        [["O", "O"], ["O", "O"]],
        vocabulary=LABELS,
    )
    out, _ = align_tables(ref, by_order, pair_by="order")
    assert out["labels"].to_pylist() == [["O", "PERIOD"], ["O", "QUESTION"]]


def test_hypothesis_segmentation_kept():
    ref = _table(
        "ref", [["i", "came"], ["i", "saw", "i", "conquered"]], [["O", "PERIOD"], ["O", "COMMA", "O", "PERIOD"]]
    )
    hyp = _table("hyp", [["i", "came", "i"], ["saw", "i", "conquered"]])
    out, _ = align_tables(ref, hyp)
    assert out["words"].to_pylist() == [["i", "came", "i"], ["saw", "i", "conquered"]]
    assert out["labels"].to_pylist() == [["O", "PERIOD", "O"], ["COMMA", "O", "PERIOD"]]


def test_workers_give_identical_output(shared):
    import pyarrow as pa

    ref = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="ref").table
    hyp = get_reader("tsv")([shared / "iwslt_en/test2011asr.tsv"], lang="en", corpus="asr").table

    def as_documents(table, n):
        rows = table.num_rows
        return table.set_column(2, "doc_id", pa.array([f"d{i * n // rows}" for i in range(rows)]))

    ref, hyp = as_documents(ref, 4), as_documents(hyp, 4)
    one, report_one = align_tables(ref, hyp, verbalizer=get_verbalizer("en"), workers=1, force=True)
    two, report_two = align_tables(ref, hyp, verbalizer=get_verbalizer("en"), workers=2, force=True)
    assert one.equals(two)
    assert report_one == report_two
    assert report_one["documents"] == 4


@pytest.mark.real_corpora
def test_iwslt_test2011_onto_asr(shared):
    """test2011 (reference) onto the words of test2011asr, compared with test2011asr's own labels."""
    ref = get_reader("tsv")([shared / "iwslt_en/test2011.tsv"], lang="en", corpus="ref").table
    hyp = get_reader("tsv")([shared / "iwslt_en/test2011asr.tsv"], lang="en", corpus="asr").table
    gold = np.array([LABEL_TO_ID[l] for l in pc.list_flatten(hyp["labels"]).to_pylist()])
    f1 = {}
    for policy in ("guerreiro", "ueffing", "nearest"):
        out, report = align_tables(ref, hyp, policy=policy, verbalizer=get_verbalizer("en"))
        assert out["words"].equals(hyp["words"])  # the hypothesis's own words, in order
        pred = np.array([LABEL_TO_ID[l] for l in pc.list_flatten(out["labels"]).to_pylist()])
        result = scores(gold, pred)
        f1[policy] = result["overall"]["f1"]
        print(policy, result["overall"], "WER", report["wer"]["wer"], report["marks"])
        assert 0.10 < report["wer"]["wer"] < 0.16
        assert report["marks"]["reference"] == 807 + 830 + 46
    # measured: guerreiro 0.9600, nearest 0.9587, ueffing 0.9051
    assert f1["guerreiro"] >= 0.96
    assert f1["nearest"] > 0.95
    assert f1["ueffing"] < f1["guerreiro"]
