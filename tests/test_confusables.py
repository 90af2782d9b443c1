"""Offline g2p and exact phoneme-edit-distance confusables."""

import json
import random
import subprocess
import sys

import numpy as np
import pyarrow.parquet as pq
import pytest

from pipeline.errors import InputError
from pipeline.phonetics.confusables import brute_force_top_k, build_confusables, encode, top_k
from pipeline.phonetics.g2p import NoG2pError, get_g2p


@pytest.fixture(scope="module")
def en():
    return get_g2p("en")


@pytest.mark.slow
def test_import_is_offline_and_silent(root):
    """g2p-en is importable with no network: sockets are cut off in the child process."""
    code = (
        "import socket\n"
        "def refuse(*a, **k): raise OSError('network used')\n"
        "socket.socket.connect = refuse\n"
        "socket.create_connection = refuse\n"
        "from pipeline.phonetics.g2p import get_g2p\n"
        "g = get_g2p('en')\n"
        "print(g.phonemize(['zyxquorp'])[0][0])\n"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    assert proc.stdout.strip().startswith("(")


@pytest.mark.slow
def test_batched_prediction_identical_to_g2p_en(en):
    random.seed(7)
    words = [w for w in random.sample(sorted(en.cmu), 4000) if w.isalpha()][:1000]
    assert len(words) == 1000
    assert en.predictor.predict(words) == [en.reference.predict(w) for w in words]


def test_stress_digits(en):
    assert en.phonemize(["like"])[0] == [("L", "AY", "K")]
    with_stress = type(en)(keep_stress=True)
    assert with_stress.phonemize(["like"])[0] == [("L", "AY1", "K")]


def test_bad_words_are_counted(en):
    phones, skipped = en.phonemize(["hello", "42nd", "rock'n'roll", "c++", "আমি", "naïve"])
    assert phones[0] == ("HH", "AH", "L", "OW")
    assert phones[1] is None and phones[3] is None and phones[4] is None
    assert skipped["has_digits"] == 1 and skipped["not_latin_script"] == 1 and skipped["not_letters"] >= 1


@pytest.mark.slow
def test_exact_against_brute_force_on_random_cmudict_words(en):
    random.seed(3)
    vocabulary = sorted(random.sample(sorted(w for w in en.cmu if w.isalpha()), 30000))
    sequences, _ = en.phonemize(vocabulary)
    neighbours = top_k(sequences, 3)
    strings, _ = encode(sequences)
    queries = random.sample(range(len(vocabulary)), 1000)
    index, distance = brute_force_top_k(strings, queries, 3)
    assert (neighbours.index[queries] == index).all()
    assert (neighbours.distance[queries] == distance).all()
    assert neighbours.stats["brute_force_words"] > 0  # every stage was exercised


@pytest.mark.slow
def test_exact_on_every_word_of_a_sparse_vocabulary():
    """Random sequences of 1 to 40 symbols: most words settle only in the brute-force tail, many
    after its probe window fails (k-th distance > PROBE), some with fewer than k words in a window."""
    from pipeline.phonetics import confusables

    rng = random.Random(11)
    symbols = [f"P{i}" for i in range(40)]
    sequences = [
        tuple(rng.choice(symbols[: rng.choice((3, 40))]) for _ in range(rng.randint(1, 40))) for _ in range(2500)
    ]
    neighbours = top_k(sequences, 3)
    strings, _ = encode(sequences)
    index, distance = brute_force_top_k(strings, list(range(len(strings))), 3)
    assert (neighbours.index == index).all() and (neighbours.distance == distance).all()
    assert neighbours.stats["brute_force_words"] > 1000
    assert (distance[:, 2] > confusables.PROBE).sum() > 100  # the second pass was needed


def test_table_iv_like(en):
    """Zheng 2022 Table IV: like (L AY K) -> alike, liker, eyelike at distance 1."""
    table, _report = build_confusables(["like", "alike", "liker", "eyelike", "dislike", "lichen", "lock"], en)
    rows = table.to_pandas()
    like = rows[rows.word == "like"]
    assert list(like.neighbor) == ["alike", "eyelike", "liker"]  # ties at distance 1 broken by word
    assert set(like.distance) == {1}
    assert like.phonemes.iloc[0] == "L AY K"


def test_homophones_kept_and_flagged(en):
    table, report = build_confusables(["know", "no", "now"], en, k=2)
    rows = table.to_pandas()
    no = rows[rows.word == "no"].iloc[0]
    assert no.neighbor == "know" and no.distance == 0 and no.homophone
    assert report["homophone_rows"] == 2


def test_other_languages():
    hi = get_g2p("hi")
    assert hi.phonemize(["कमल"])[0] == [("क", "अ", "म", "अ", "ल")]
    # Bengali and Devanagari spellings of the same word give the same phonemes
    assert get_g2p("bn").phonemize(["কমল"])[0] == hi.phonemize(["कमल"])[0]
    assert get_g2p("zh").phonemize(["北京"])[0] == [("b", "ei", "j", "ing")]
    assert get_g2p("ms").phonemize(["nyanyi"])[0] == [("ɲ", "a", "ɲ", "i")]
    table, _ = build_confusables(["कमल", "कमर", "कलम", "नमक", "abc"], hi, k=1)
    assert table.to_pandas().set_index("word").loc["कमल", "neighbor"] == "कमर"
    with pytest.raises(NoG2pError, match="no grapheme-to-phoneme conversion for language 'xx'"):
        get_g2p("xx")


def test_bad_vocabularies(en):
    with pytest.raises(InputError, match="vocabulary is empty"):
        build_confusables(["", "  "], en)
    with pytest.raises(InputError, match="no word of the vocabulary could be converted"):
        build_confusables(["123", "4th"], en)


def test_cli(tmp_path, root):
    vocab = tmp_path / "v.txt"
    vocab.write_text("like\nalike\nbike\nBike\n\n123\n")
    from pipeline.cli import main

    assert (
        main(
            [
                "confusables",
                "--lang",
                "en",
                "--vocab",
                str(vocab),
                "--k",
                "2",
                "--out",
                str(tmp_path / "c.parquet"),
                "--report",
                str(tmp_path / "c.json"),
            ]
        )
        == 0
    )
    table = pq.read_table(tmp_path / "c.parquet")
    assert table.column_names == ["word", "phonemes", "neighbor", "neighbor_phonemes", "distance", "rank", "homophone"]
    assert table.num_rows == 6
    report = json.loads((tmp_path / "c.json").read_text())
    # the entries as given (Zheng 2022's dictionary size is web2's) and the case-folded vocabulary
    assert (report["entries"], report["vocabulary"]) == (5, 4)
    assert (
        main(
            [
                "confusables",
                "--lang",
                "en",
                "--vocab",
                str(tmp_path / "missing.txt"),
                "--out",
                str(tmp_path / "x.parquet"),
            ]
        )
        == 2
    )


@pytest.mark.slow
def test_web2_sample(shared, en):
    """The 3R paper's dictionary: a slice of web2 goes through g2p and the search."""
    words = (shared / "lexicons" / "web2.txt").read_text().split()[:3000]
    table, report = build_confusables(words, en)
    assert report["words"] >= 2900
    assert table.num_rows == 3 * report["words"]
    assert (np.asarray(table["distance"]) >= 0).all()
