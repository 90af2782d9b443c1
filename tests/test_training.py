"""Training and evaluation: metrics by hand, a falling loss on real data, exact step arithmetic,
fp32 master weights, strict reloads, long-text punctuation."""

import numpy as np
import pyarrow as pa
import pytest
import torch
from support.training import NO_DROPOUT, TINY, as_documents, dataset, tokenizer_of, with_split

from pipeline.datasets.sequences import build_sequences
from pipeline.errors import InputError
from pipeline.labels import CASE_TO_ID, LABEL_TO_ID, LABELS, PAPERS
from pipeline.training.inference import punctuate_words
from pipeline.training.loop import predict_sequences, train
from pipeline.training.metrics import case_scores, merged_scores, scores
from pipeline.training.model import build_model, load_checkpoint, save_checkpoint

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
    merged = merged_scores(gold, pred, PAPERS)
    # 3 classes: PERIOD->QUESTION becomes correct
    assert merged["3_class"]["per_class"]["PERIOD"]["recall"] == 1.0
    # 2 classes: any mark vs O: tp 4, fp 1, fn 1
    assert merged["2_class"]["overall"] == {"precision": 0.8, "recall": 0.8, "f1": 0.8, "support": 5}
    assert merged["4_class"]["overall"] == result["overall"]


def test_case_metrics_by_hand():
    C = CASE_TO_ID
    gold = np.array([C["O"], C["U"], C["U"], C["A"], C["M"], C["O"]])
    pred = np.array([C["O"], C["U"], C["O"], C["A"], C["U"], C["U"]])
    result = case_scores(gold, pred)
    # U: tp 1, fp 2 (the M->U and the O->U), fn 1; A: tp 1; M: fn 1
    assert result["per_class"]["U"] == {"precision": 0.3333, "recall": 0.5, "f1": 0.4, "support": 2}
    assert result["per_class"]["M"]["recall"] == 0.0
    # micro over U/A/M: tp 2 (U, A), fp 2 (M->U, O->U), fn 2 (U->O, M->U)
    assert result["overall"] == {"precision": 0.5, "recall": 0.5, "f1": 0.5, "support": 4}
    assert "ser" not in result


@pytest.fixture(scope="module")
def sample(iwslt_dev, tmp_path_factory):
    table = as_documents(iwslt_dev.slice(0, 360), 40)
    splits = ["train"] * 300 + ["dev"] * 60
    table = with_split(table, splits)
    tokenizer = tokenizer_of(table)
    # one part of one row group: one window per epoch
    return table, tokenizer, dataset(tmp_path_factory.mktemp("data"), table, tokenizer, parts=1)


# four epochs each: the linear head in `make test`, the others with the slow tests
@pytest.mark.parametrize(
    "head", ["linear", *(pytest.param(h, marks=pytest.mark.slow) for h in ("bilstm", "bilstm_crf", "layer_attention"))]
)
def test_loss_falls_on_real_data(sample, head):
    _, tokenizer, data = sample
    params = {**TINY, "head": head}
    history = train(build_model(params, tokenizer), data, params)
    losses = [s["loss"] for s in history["steps"]]
    assert len(losses) >= 20 and len(history["epochs"]) == 4
    assert np.mean(losses[-5:]) < 0.8 * np.mean(losses[:5])
    assert all("dev_f1" in e for e in history["epochs"])


def test_same_seed_same_model_and_training(sample):
    """The weights a model starts from are drawn from params["seed"], whatever ran before, so a
    training run is repeatable (the default run's metrics once changed from one run to the next)."""
    _, tokenizer, data = sample
    params = {**TINY, "head": "layer_attention", "epochs": 1}
    runs = []
    for noise in (1, 2):
        torch.rand(noise * 7)  # whatever the global generator did before
        model = build_model(params, tokenizer)
        start = {k: v.clone() for k, v in model.state_dict().items()}
        losses = [s["loss"] for s in train(model, data, params)["steps"]]
        runs.append((start, losses, model.state_dict()))
    assert all(torch.equal(runs[0][0][k], runs[1][0][k]) for k in runs[0][0])
    assert runs[0][1] == runs[1][1] and len(runs[0][1]) > 3
    assert all(torch.equal(runs[0][2][k], runs[1][2][k]) for k in runs[0][2])
    other = build_model({**params, "seed": 4}, tokenizer).state_dict()
    assert any(not torch.equal(other[k], runs[0][0][k]) for k in other)  # the seed matters


@pytest.mark.slow  # two trainings of two epochs
def test_accumulation_is_the_combined_batch(sample):
    """Two micro-batches of 4 accumulated make the same steps as batches of 8 (no dropout): the
    loss is normalized over the whole step (the sample is one window, so the groups of 4 + 4 are
    the batches of 8)."""
    _, tokenizer, data = sample
    runs = {}
    for name, extra in {"whole": {"batch_size": 8}, "accumulated": {"batch_size": 4, "grad_accumulation": 2}}.items():
        params = {**NO_DROPOUT, "epochs": 2, **extra}
        model = build_model(params, tokenizer)
        history = train(model, data, params)
        runs[name] = ([(s["loss"], s["grad_norm"]) for s in history["steps"]], model.state_dict())
    (whole, w_state), (acc, a_state) = runs["whole"], runs["accumulated"]
    assert len(whole) == len(acc) > 10
    # the losses and the gradients' norms (Adam would hide a wrong gradient scale in the weights)
    assert np.allclose(whole, acc, rtol=1e-4, atol=1e-5)
    # weights to 1e-4: Adam divides by the gradients' own size, so float noise in gradients that are
    # ~0 (attention key biases, whose true gradient is 0) becomes ~lr-sized; weights are ~0.1
    for key in w_state:
        assert torch.allclose(w_state[key], a_state[key], rtol=1e-4, atol=1e-4), key


def test_a_short_last_group_still_steps(sample):
    """With grad_accumulation 2 and an odd number of micro-batches in an epoch, the last one makes a
    step of its own (it was neither stepped nor zeroed, and leaked into the next epoch)."""
    from pipeline.training.data import index_rows

    _, tokenizer, data = sample
    rows = len(index_rows(data.sequences, "train"))
    assert rows < TINY["batch_size"] * 64  # one window per row group: batches are ceil(rows / batch)
    groups = [len(g) for g in _row_groups(data)]
    batch = next(b for b in range(3, 12) if sum(-(-g // b) for g in groups) % 2 == 1)
    micro = sum(-(-g // batch) for g in groups)
    params = {**TINY, "batch_size": batch, "grad_accumulation": 2, "epochs": 2}
    history = train(build_model(params, tokenizer), data, params)
    per_epoch = [s["epoch"] for s in history["steps"]].count(0)
    assert per_epoch == (micro + 1) // 2 and len(history["steps"]) == 2 * per_epoch


def _row_groups(data):
    from pipeline.training.data import index_rows

    index = index_rows(data.sequences, "train")
    return [index.row[index.group == g] for g in range(len(index.groups))]


def test_frozen_encoder_sits_out_the_first_epoch(sample):
    _, tokenizer, data = sample
    params = {**TINY, "epochs": 1, "freeze_encoder_first_epoch": True}
    model = build_model(params, tokenizer)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    train(model, data, params)
    after = model.state_dict()
    assert all(torch.equal(before[k], after[k]) for k in before if k.startswith("encoder."))
    assert not torch.equal(before["classifier.weight"], after["classifier.weight"])


def test_fp32_master_weights_from_a_bf16_checkpoint(tmp_path, sample):
    """A checkpoint stored in bf16 (many hub checkpoints are) loads as fp32 weights for the optimizer."""
    from transformers import AutoConfig, AutoModel

    _, tokenizer, _ = sample
    config = AutoConfig.for_model(**{**TINY["config"], "vocab_size": len(tokenizer)})
    AutoModel.from_config(config).to(torch.bfloat16).save_pretrained(tmp_path / "bf16")
    model = build_model({"pretrained": str(tmp_path / "bf16"), "seed": 1}, tokenizer)
    assert {p.dtype for p in model.parameters()} == {torch.float32}


def test_checkpoint_reload_predicts_identically(sample, tmp_path):
    table, tokenizer, data = sample
    params = {**TINY, "head": "layer_attention", "epochs": 1}
    model = build_model(params, tokenizer)
    train(model, data, params)
    save_checkpoint(model, tokenizer, params, tmp_path / "ckpt", {"max_len": 64})
    assert not list((tmp_path / "ckpt").glob("*.pt")) and (tmp_path / "ckpt" / "model.safetensors").is_file()
    model.eval()
    sequences, _ = build_sequences(table.slice(0, 40), tokenizer, max_len=64, label_set=PAPERS)
    before = predict_sequences(model, sequences, tokenizer.pad_token_id, "cpu")
    reloaded, tok2, meta = load_checkpoint(tmp_path / "ckpt")
    assert meta["sequence"] == {"max_len": 64} and meta["head"] == "layer_attention"
    after = predict_sequences(reloaded, sequences, tok2.pad_token_id, "cpu")
    assert before == after
    with torch.no_grad():
        ids = torch.tensor([sequences["input_ids"][0].as_py()])
        a = model(ids, torch.ones_like(ids))["logits"]
        b = reloaded(ids, torch.ones_like(ids))["logits"]
    assert torch.allclose(a, b)


def test_loading_is_strict_and_names_the_problem(sample, tmp_path):
    from safetensors.torch import load_file, save_file

    _, tokenizer, _ = sample
    model = build_model({**TINY, "head": "bilstm"}, tokenizer)
    save_checkpoint(model, tokenizer, {**TINY, "head": "bilstm"}, tmp_path / "m")
    weights = load_file(tmp_path / "m" / "model.safetensors")
    dropped = sorted(k for k in weights if k.startswith("lstm."))[0]
    save_file({k: v for k, v in weights.items() if k != dropped}, tmp_path / "m" / "model.safetensors")
    with pytest.raises(InputError, match=rf"missing 1 weight\(s\): {dropped}"):
        load_checkpoint(tmp_path / "m")
    (tmp_path / "m" / "model.safetensors").write_bytes(b"not safetensors")
    with pytest.raises(InputError, match=r"model\.safetensors: cannot load"):
        load_checkpoint(tmp_path / "m")
    with pytest.raises(InputError, match="does not exist"):
        load_checkpoint(tmp_path / "nothing")


def test_punctuate_long_text_has_one_decision_per_word(sample):
    table, tokenizer, _ = sample
    model = build_model({**TINY, "head": "linear"}, tokenizer).eval()
    words = [w for ws in table["words"].to_pylist() for w in ws]
    words = (words * (5000 // len(words) + 1))[:5000]
    labels = punctuate_words(model, tokenizer, words, "cpu", window=60, overlap=15, max_len=128)
    assert len(labels) == 5000
    assert set(labels) <= {"O", "COMMA", "PERIOD", "QUESTION"}
    # batching the windows changes nothing: one window at a time gives the same decisions
    assert labels == punctuate_words(model, tokenizer, words, "cpu", window=60, overlap=15, max_len=128, batch_size=1)
    # away from the seams, a word's decision is the one of a window predicted alone
    alone = punctuate_words(model, tokenizer, words[:60], "cpu", window=60, overlap=15, max_len=128)
    assert labels[:30] == alone[:30]


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device (CI has none)")
def test_bf16_training_on_gpu(sample):
    _, tokenizer, data = sample
    params = {**TINY, "head": "linear", "device": "cuda", "precision": "bf16", "epochs": 2, "loader_workers": 2}
    model = build_model(params, tokenizer)
    history = train(model, data, params)
    assert history["device"].startswith("cuda")
    assert {p.dtype for p in model.parameters()} == {torch.float32}  # master weights stay fp32
    losses = [s["loss"] for s in history["steps"]]
    assert losses and np.isfinite(losses).all() and np.mean(losses[-3:]) < np.mean(losses[:3])


def test_language_mixing_by_temperature():
    from pipeline.schema import segments_table
    from pipeline.training.loop import mix_languages

    table = segments_table(
        "c", "en", [f"d{i}" for i in range(100)], [0] * 100, [["w"]] * 100, [["O"]] * 100, vocabulary=LABELS
    )
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

    from pipeline.training.model import CRF

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

    from pipeline.datasets.pretrained import save_tokenizer

    _table, tokenizer, _ = sample
    save_tokenizer(tokenizer, tmp_path / "source")
    outputs = []
    for offline in ("1", "0"):
        monkeypatch.setenv("HF_HUB_OFFLINE", offline)
        loaded = AutoTokenizer.from_pretrained(str(tmp_path / "source"), local_files_only=offline == "1")
        save_tokenizer(loaded, tmp_path / offline)
        outputs.append((tmp_path / offline / "tokenizer_config.json").read_text())
    assert outputs[0] == outputs[1] and "local_files_only" not in outputs[0]
