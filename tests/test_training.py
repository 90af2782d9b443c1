"""Training and evaluation: metrics by hand, a falling loss on real data, reloads, long-text punctuation."""

import numpy as np
import pyarrow as pa
import pytest
import torch

from corpora import get_reader
from pipeline.labels import LABEL_TO_ID
from pipeline.metrics import merged_scores, scores
from pipeline.model import build_model, load_checkpoint, save_checkpoint
from pipeline.sequences import build_sequences, train_tokenizer
from pipeline.train import predict_sequences, punctuate_words, train

L = LABEL_TO_ID


def test_metrics_by_hand():
    gold = np.array([L["O"], L["COMMA"], L["PERIOD"], L["QUESTION"], L["COMMA"], L["O"], L["PERIOD"], L["O"]])
    pred = np.array([L["O"], L["COMMA"], L["QUESTION"], L["QUESTION"], L["O"], L["PERIOD"], L["PERIOD"], L["O"]])
    result = scores(gold, pred)
    # COMMA: tp 1, fp 0, fn 1 -> P 1, R .5; PERIOD: tp 1, fp 1 (the O->PERIOD), fn 1 (PERIOD->QUESTION)
    assert result["per_class"]["COMMA"] == {"precision": 1.0, "recall": 0.5, "f1": 0.6667, "support": 2}
    assert result["per_class"]["PERIOD"]["precision"] == 0.5 and result["per_class"]["PERIOD"]["recall"] == 0.5
    assert result["per_class"]["QUESTION"] == {"precision": 0.5, "recall": 1.0, "f1": 0.6667, "support": 1}
    # overall over the marks: tp 3 (COMMA, QUESTION, PERIOD), fp 2, fn 2
    assert result["overall"] == {"precision": 0.6, "recall": 0.6, "f1": 0.6, "support": 5}
    # slot errors: 1 substitution (PERIOD->QUESTION), 1 deletion (COMMA->O), 1 insertion (O->PERIOD) over 5 marks
    assert result["slot_errors"] == {"substitutions": 1, "deletions": 1, "insertions": 1, "gold_marks": 5}
    assert result["ser"] == 0.6
    assert result["confusion"]["percent"][L["COMMA"]] == [50.0, 50.0, 0.0, 0.0]
    merged = merged_scores(gold, pred)
    # 3 classes: PERIOD->QUESTION becomes correct
    assert merged["3_class"]["per_class"]["PERIOD"]["recall"] == 1.0
    # 2 classes: any mark vs O: tp 4, fp 1, fn 1
    assert merged["2_class"]["overall"] == {"precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 5}
    assert merged["4_class"]["overall"] == result["overall"]


TINY = {
    "config": {
        "model_type": "bert",
        "hidden_size": 32,
        "num_hidden_layers": 2,
        "num_attention_heads": 2,
        "intermediate_size": 64,
        "max_position_embeddings": 128,
    },
    "epochs": 4,
    "batch_size": 8,
    "encoder_lr": 3e-3,
    "head_lr": 3e-3,
    "warmup": 0.0,
    "max_len": 64,
    "seed": 3,
    "progress": False,
    "device": "cpu",
}


@pytest.fixture(scope="module")
def sample(shared):
    table = get_reader("tsv")([shared / "iwslt_en/dev2012.tsv"], lang="en", corpus="dev").table.slice(0, 300)
    table = table.set_column(table.schema.get_field_index("split"), "split", pa.array(["train"] * table.num_rows))
    tokenizer = train_tokenizer((w for ws in table["words"].to_pylist() for w in ws), vocab_size=1500)
    return table, tokenizer


@pytest.mark.parametrize("head", ["linear", "bilstm", "bilstm_crf", "layer_attention"])
def test_loss_falls_on_real_data(sample, head):
    table, tokenizer = sample
    torch.manual_seed(0)
    model = build_model({**TINY, "head": head}, tokenizer)
    history = train(model, tokenizer, table, None, {**TINY, "head": head}, log=lambda m: None)
    losses = [s["loss"] for s in history["steps"]]
    assert len(losses) >= 20
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])


def test_same_seed_same_model_and_training(sample):
    """The weights a model starts from are drawn from params["seed"], whatever ran before, so a
    training run is repeatable (the default run's metrics once changed from one run to the next)."""
    table, tokenizer = sample
    params = {**TINY, "head": "layer_attention", "epochs": 1}
    runs = []
    for noise in (1, 2):
        torch.rand(noise * 7)  # whatever the global generator did before
        model = build_model(params, tokenizer)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        losses = [s["loss"] for s in train(model, tokenizer, table, None, params, log=lambda m: None)["steps"]]
        runs.append((start, losses))
    assert all(torch.equal(runs[0][0][k], runs[1][0][k]) for k in runs[0][0])
    assert runs[0][1] == runs[1][1] and len(runs[0][1]) > 3
    other = build_model({**params, "seed": 4}, tokenizer).state_dict()
    assert any(not torch.equal(other[k], runs[0][0][k]) for k in other)  # the seed matters


def test_checkpoint_reload_predicts_identically(sample, tmp_path):
    table, tokenizer = sample
    model = build_model({**TINY, "head": "layer_attention", "epochs": 1}, tokenizer)
    train(model, tokenizer, table, None, {**TINY, "epochs": 1}, log=lambda m: None)
    save_checkpoint(model, tokenizer, {**TINY, "head": "layer_attention"}, tmp_path / "ckpt")
    model.eval()
    sequences, _ = build_sequences(table.slice(0, 40), tokenizer, max_len=64)
    before = predict_sequences(model, sequences, tokenizer.pad_token_id, "cpu")
    reloaded, tok2, _ = load_checkpoint(tmp_path / "ckpt")
    after = predict_sequences(reloaded, sequences, tok2.pad_token_id, "cpu")
    assert before == after
    with torch.no_grad():
        ids = torch.tensor([sequences["input_ids"][0].as_py()])
        a = model(ids, torch.ones_like(ids))[1]
        b = reloaded(ids, torch.ones_like(ids))[1]
    assert torch.allclose(a, b)


def test_punctuate_long_text_has_one_decision_per_word(sample):
    table, tokenizer = sample
    model = build_model({**TINY, "head": "linear"}, tokenizer).eval()
    words = [w for ws in table["words"].to_pylist() for w in ws]
    words = (words * (5000 // len(words) + 1))[:5000]
    labels = punctuate_words(model, tokenizer, words, "cpu", window=60, overlap=15, max_len=128)
    assert len(labels) == 5000
    # the same words in one window each, predicted directly, agree with the windowed decisions away from seams
    from pipeline.train import punctuate_words as again

    assert labels == again(model, tokenizer, words, "cpu", window=60, overlap=15, max_len=128)  # deterministic
    assert set(labels) <= {"O", "COMMA", "PERIOD", "QUESTION"}


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (CI has none)")
def test_bf16_training_on_gpu(sample):
    table, tokenizer = sample
    model = build_model({**TINY, "head": "linear"}, tokenizer)
    history = train(
        model, tokenizer, table, None, {**TINY, "device": "cuda", "precision": "bf16", "epochs": 2}, log=lambda m: None
    )
    assert history["steps"] and np.isfinite(history["steps"][-1]["loss"])


def test_language_mixing_by_temperature():
    from pipeline.schema import segments_table
    from pipeline.train import mix_languages

    table = segments_table("c", "en", [f"d{i}" for i in range(100)], [0] * 100, [["w"]] * 100, [["O"]] * 100)
    table = table.set_column(1, "lang", pa.array(["en"] * 90 + ["ms"] * 10))
    same = mix_languages(table, {"temperature": 1.0}, 0, 1)
    assert same["lang"].to_pylist().count("ms") == 10
    flat = mix_languages(table, {"temperature": 100.0}, 0, 1)
    assert 45 <= flat["lang"].to_pylist().count("ms") <= 55  # nearly uniform over the two languages
    explicit = mix_languages(table, {"ratios": {"en": 1, "ms": 3}}, 0, 1)
    assert explicit["lang"].to_pylist().count("ms") == 75
    assert mix_languages(table, {"temperature": 5.0}, 0, 1).equals(mix_languages(table, {"temperature": 5.0}, 0, 1))


def test_crf_matches_brute_force():
    """The CRF's likelihood normalizer and Viterbi path agree with enumerating every tag sequence."""
    import itertools

    from pipeline.model import CRF

    torch.manual_seed(0)
    crf = CRF(3)
    with torch.no_grad():
        crf.transitions.normal_()
        crf.start.normal_()
        crf.end.normal_()
    emissions = torch.randn(1, 4, 3)
    mask = torch.tensor([[True, True, True, False]])

    def score(path):
        s = crf.start[path[0]] + emissions[0, 0, path[0]]
        for t in range(1, len(path)):
            s = s + crf.transitions[path[t - 1], path[t]] + emissions[0, t, path[t]]
        return s + crf.end[path[-1]]

    paths = list(itertools.product(range(3), repeat=3))
    scores = torch.stack([score(p) for p in paths])
    best = list(paths[int(scores.argmax())])
    assert crf.decode(emissions, mask) == [best]
    tags = torch.tensor([[2, 0, 1, 0]])
    expected = torch.logsumexp(scores, 0) - score([2, 0, 1])
    assert torch.allclose(crf.nll(emissions, tags, mask), expected, atol=1e-5)


def test_saved_tokenizer_does_not_depend_on_offline_mode(sample, tmp_path, monkeypatch):
    """A checkpoint's tokenizer files are the same with and without HF_HUB_OFFLINE (transformers
    records local_files_only in tokenizer_config.json otherwise)."""
    from transformers import AutoTokenizer

    from pipeline.model import save_tokenizer

    _table, tokenizer = sample
    save_tokenizer(tokenizer, tmp_path / "source")
    outputs = []
    for offline in ("1", "0"):
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
        loaded = AutoTokenizer.from_pretrained(str(tmp_path / "source"), local_files_only=offline == "1")
        save_tokenizer(loaded, tmp_path / offline)
        outputs.append((tmp_path / offline / "tokenizer_config.json").read_text())
    assert outputs[0] == outputs[1] and "local_files_only" not in outputs[0]
