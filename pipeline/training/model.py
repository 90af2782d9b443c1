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

An optional capitalization head (``capitalization`` in params) puts a linear layer
beside any of them: one of O/U/A/M per word (``pipeline.text.case``), trained jointly.

The encoder comes from ``AutoModel.from_pretrained(name_or_path, dtype=torch.float32)``
— the same call users make with hub access (``xlm-roberta-large``) or on a local
folder; fp32 whatever dtype the checkpoint is stored in, so the optimizer always
updates fp32 master weights (bf16 is autocast) — or, for a model from scratch, from
a config (``AutoModel.from_config``).

A saved model is a folder: ``model.safetensors`` (encoder and heads, loaded
strictly), ``encoder/config.json``, ``tokenizer/``, ``punctuation.json`` (labels,
head, params, the dataset's sequence options) and ``mixed_case.json`` (the
surface forms of mixed-case words seen in train, which no classifier can spell).
"""

from __future__ import annotations

import json
import logging
import os
from pathlib import Path

import torch
from torch import nn

from pipeline.datasets.pretrained import pretrained_path, save_tokenizer
from pipeline.errors import ParamsError
from pipeline.labels import CASE_LABELS, PAPERS, LabelSet
from pipeline.training import model_folder
from pipeline.training.model_folder import FORMAT, HEADS

logger = logging.getLogger(__name__)

__all__ = ["FORMAT", "HEADS", "PunctuationModel", "build_model", "load_checkpoint", "save_checkpoint"]


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

    def nll(self, emissions, tags, mask, reduction: str = "mean"):
        """Negative log-likelihood of ``tags`` (mean or sum over the rows that have a labelled position);
        emissions (B, T, L), tags (B, T), mask (B, T) bool, left-aligned."""
        b = torch.arange(emissions.size(0), device=emissions.device)
        score = self.start[tags[:, 0]] + emissions[b, 0, tags[:, 0]]
        alpha = self.start + emissions[:, 0]
        for t in range(1, emissions.size(1)):
            step = mask[:, t]
            score = score + step * (self.transitions[tags[:, t - 1], tags[:, t]] + emissions[b, t, tags[:, t]])
            nxt = torch.logsumexp(alpha.unsqueeze(2) + self.transitions + emissions[:, t].unsqueeze(1), dim=1)
            alpha = torch.where(step.unsqueeze(1), nxt, alpha)
        last = tags[b, (mask.sum(1) - 1).clamp(min=0)]
        score = score + self.end[last]
        log_z = torch.logsumexp(alpha + self.end, dim=1)
        nll = (log_z - score) * mask[:, 0]  # a row without labels (padding a process's share) counts nothing
        return nll.sum() if reduction == "sum" else nll.sum() / mask[:, 0].sum().clamp(min=1)

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
        n_labels: int | None = None,
        dropout: float = 0.1,
        layer_dropout: float = 0.1,
        capitalization: bool = False,
        *,
        label_set: LabelSet,
    ):
        super().__init__()
        #: the labels the head predicts (its size unless ``n_labels`` says otherwise)
        self.label_set = label_set
        n_labels = len(label_set.labels) if n_labels is None else n_labels
        if head not in HEADS:
            raise ParamsError(f"unknown head {head!r}; choose one of {', '.join(HEADS)}")
        self.encoder = encoder
        pooler = getattr(encoder, "pooler", None)
        if pooler is not None:  # its output is no head's input: a parameter DDP would wait for in vain
            pooler.requires_grad_(False)
        self.head_name = head
        #: True while the encoder is frozen (its forward then runs without autograd)
        self.frozen_encoder = False
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
        self.case_classifier = nn.Linear(size, len(CASE_LABELS)) if capitalization else None

    @property
    def capitalization(self) -> bool:
        return self.case_classifier is not None

    def forward(self, input_ids, attention_mask, labels=None, case_labels=None) -> dict:
        """Logits, and with labels the *summed* losses (``loss_sum``: cross-entropy over the labelled
        tokens, or the CRF's negative log-likelihood over the rows; ``case_loss_sum``), so that the
        caller normalizes over a whole step, whatever its micro-batches and processes."""
        needs_layers = self.head_name == "layer_attention"
        with torch.set_grad_enabled(torch.is_grad_enabled() and not self.frozen_encoder):
            out = self.encoder(input_ids=input_ids, attention_mask=attention_mask, output_hidden_states=needs_layers)
        if needs_layers:
            base = self.mix(out.hidden_states)
            following = torch.cat([base[:, 1:], torch.zeros_like(base[:, :1])], dim=1)
            states = torch.cat([base, following], dim=-1)  # a token and the next: the gap after it
        else:
            base = states = out.last_hidden_state
        states = self.dropout(states)
        if self.head_name in ("bilstm", "bilstm_crf"):
            states, _ = self.lstm(states)
        result = {"logits": self.classifier(states)}
        if self.case_classifier is not None:
            result["case_logits"] = self.case_classifier(self.dropout(base))
        if labels is not None:
            logits = result["logits"]
            if self.head_name == "bilstm_crf":
                emissions, mask = gather_words(logits.float(), labels != -100)
                tags, _ = gather_words(labels.clamp(min=0), labels != -100)
                result["loss_sum"] = self.crf.nll(emissions, tags, mask, reduction="sum")
            else:
                result["loss_sum"] = nn.functional.cross_entropy(
                    logits.reshape(-1, logits.size(-1)).float(), labels.reshape(-1), ignore_index=-100, reduction="sum"
                )
        if case_labels is not None and self.case_classifier is not None:
            case_logits = result["case_logits"]
            result["case_loss_sum"] = nn.functional.cross_entropy(
                case_logits.reshape(-1, case_logits.size(-1)).float(),
                case_labels.reshape(-1),
                ignore_index=-100,
                reduction="sum",
            )
        return result

    @torch.no_grad()
    def decode(self, input_ids, attention_mask, label_mask) -> tuple[list[list[int]], list[list[int]] | None]:
        """Label ids at the labelled positions (Viterbi with the CRF head, argmax otherwise), and the
        case label ids at the same positions when the model has a case head."""
        out = self(input_ids, attention_mask)
        logits = out["logits"]
        if self.head_name == "bilstm_crf":
            emissions, mask = gather_words(logits.float(), label_mask)
            marks = self.crf.decode(emissions, mask)
        else:
            marks = _rows_at(logits.argmax(-1), label_mask)
        cases = _rows_at(out["case_logits"].argmax(-1), label_mask) if "case_logits" in out else None
        return marks, cases

    def parameter_groups(self, encoder_lr: float, head_lr: float, weight_decay: float = 0.01):
        encoder = [p for p in self.encoder.parameters() if p.requires_grad]
        head = [p for n, p in self.named_parameters() if not n.startswith("encoder.") and p.requires_grad]
        return [
            {"params": encoder, "lr": encoder_lr, "weight_decay": weight_decay},
            {"params": head, "lr": head_lr, "weight_decay": 0.0},
        ]


def _rows_at(values, mask) -> list[list[int]]:
    """Per row, the values where ``mask`` is set (one device-to-host copy for the batch)."""
    counts = mask.sum(1).tolist()
    flat = values[mask].tolist()
    out, start = [], 0
    for n in counts:
        out.append(flat[start : start + n])
        start += n
    return out


def build_model(params, tokenizer=None, label_set: LabelSet = PAPERS) -> PunctuationModel:
    """``params`` (``TrainParams``, or a dict validated into one): ``pretrained`` (name or folder) or
    ``config`` (dict for a model from scratch), ``head``, ``dropout``, ``layer_dropout``, ``capitalization``;
    ``label_set``: the dataset's labels, which size the head.

    Seeded with ``params.seed``: the weights drawn here (a new head; a whole model from a config) are
    the same every run.  Weights are fp32 whatever the checkpoint's dtype."""
    from transformers import AutoConfig, AutoModel

    from pipeline.params import validate_train_params

    if isinstance(params, dict):
        params = validate_train_params(params)
    torch.manual_seed(params.seed)
    if params.pretrained:
        # the same call as with hub access; dtype: fp32 master weights even from a bf16/fp16 checkpoint
        encoder = AutoModel.from_pretrained(pretrained_path(params.pretrained), dtype=torch.float32)
    else:
        config = dict(params.config)
        model_type = config.pop("model_type", "bert")
        if tokenizer is not None:
            config.setdefault("vocab_size", len(tokenizer))
            config.setdefault("pad_token_id", tokenizer.pad_token_id)
        encoder = AutoModel.from_config(AutoConfig.for_model(model_type, **config), dtype=torch.float32)
    return PunctuationModel(
        encoder,
        head=params.head,
        dropout=params.dropout,
        layer_dropout=params.layer_dropout,
        capitalization=params.capitalization is not None,
        label_set=label_set,
    )


def save_checkpoint(
    model: PunctuationModel,
    tokenizer,
    params,
    out: str | os.PathLike,
    sequence: dict | None = None,
    mixed_case: dict[str, str] | None = None,
) -> None:
    """The model folder (see the module doc), written through the output transaction: every file is
    staged beside its final path and all are put in place together (``punctuation.json`` last), under
    locks, with the modes the umask gives.  ``out`` may hold other entries (a ``checkpoints/``
    folder): only the model's own files are replaced."""
    from safetensors.torch import save_model

    from pipeline.engine import writing

    out = Path(out)
    if hasattr(params, "model_dump"):
        params = params.model_dump(mode="json")  # in full: loading needs no defaults
    meta = {
        "format": FORMAT,
        "labels": list(model.label_set.labels),
        **({} if model.label_set.is_papers else {"label_set": model.label_set.record()}),
        "case_labels": list(CASE_LABELS) if model.capitalization else None,
        "head": model.head_name,
        "params": params,
        "sequence": sequence or {},
    }
    with writing.Outputs() as outputs:
        # the libraries write whole folders: into scratch, whose files are then staged one by one (a
        # folder of the model is no dataset with a manifest: its files are the outputs).  The scratch is
        # named after punctuation.json, staged last, whose staging removes a killed run's scratch too.
        scratch = outputs.scratch(out / "punctuation.json")
        save_model(model, str(scratch / "model.safetensors"))
        model.encoder.config.save_pretrained(scratch / "encoder")
        save_tokenizer(tokenizer, scratch / "tokenizer")
        for name in ("model.safetensors", "encoder", "tokenizer"):
            entry = scratch / name
            for path in sorted(entry.rglob("*")) if entry.is_dir() else [entry]:
                if path.is_file():
                    os.replace(path, outputs.file(out / path.relative_to(scratch)))
        lexicon = dict(sorted((mixed_case or {}).items()))
        writing.write_text_in_place(
            json.dumps(lexicon, indent=0, ensure_ascii=False) + "\n", outputs.file(out / "mixed_case.json")
        )
        writing.write_json_in_place(meta, outputs.file(out / "punctuation.json"))


#: the entries of a saved model; ``punctuation.json`` last, so a folder with it is complete
MODEL_FILES = ("model.safetensors", "encoder", "tokenizer", "mixed_case.json", "punctuation.json")


def load_checkpoint(folder, device: str = "cpu"):
    """(model, tokenizer, meta) from a model folder (a path, or one :func:`model_folder.read` already
    read); InputError naming the file for anything missing, unreadable or not matching (missing or
    unexpected weights are listed)."""
    from safetensors import SafetensorError
    from safetensors.torch import load_model
    from transformers import AutoConfig, AutoModel, AutoTokenizer

    from pipeline.errors import InputError

    checked = folder if isinstance(folder, model_folder.ModelFolder) else model_folder.read(folder, checkpoint=True)
    folder, meta = checked.folder, dict(checked.meta)
    try:
        config = AutoConfig.from_pretrained(folder / "encoder")
    except (OSError, ValueError) as exc:
        raise InputError(f"{folder / 'encoder'}: no readable encoder config ({exc})") from None
    # dropout rates do not matter here: the model is returned in eval mode
    model = PunctuationModel(
        AutoModel.from_config(config, dtype=torch.float32),
        head=meta["head"],
        capitalization=bool(meta.get("case_labels")),
        label_set=checked.label_set,
    )
    weights = folder / "model.safetensors"
    try:
        missing, unexpected = load_model(model, str(weights), strict=False)
    except (SafetensorError, OSError, RuntimeError) as exc:
        raise InputError(f"{weights}: cannot load ({str(exc).splitlines()[0]})") from None
    if missing or unexpected:
        parts = []
        if missing:
            parts.append(f"missing {len(missing)} weight(s): {', '.join(sorted(missing)[:5])}")
        if unexpected:
            parts.append(f"unexpected {len(unexpected)}: {', '.join(sorted(unexpected)[:5])}")
        raise InputError(f"{weights}: does not match the model in punctuation.json ({'; '.join(parts)})")
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder / "tokenizer")
    except (OSError, ValueError) as exc:
        raise InputError(f"{folder / 'tokenizer'}: no readable tokenizer ({exc})") from None
    meta["mixed_case"] = checked.mixed_case
    model.to(device).eval()
    return model, tokenizer, meta
