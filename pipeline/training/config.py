"""The ``train.<name>`` params section: one pydantic model, every default and range in one place.

``TrainParams.model_validate(section)`` rejects unknown keys and out-of-range values;
:func:`validate_train_params` turns the first error into one line naming the key.
The sequence options (``max_len``, ``mode``, ``stride``, ``slot_filling``) are the
dataset's (``datasets.<dataset>.sequences``), not the model's: training reads the
dataset's sequences and builds augmented ones with the same options.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

# one schema of ASR-error augmentation: the dataset stages' (materialized copies) and training's (per epoch)
from pipeline.params import AugmentParams as AugmentationParams
from pipeline.params import validate

HEAD_NAMES = ("linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling")


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class MixingParams(_Strict):
    """Languages drawn per epoch by n^(1/temperature), or by explicit ``ratios`` {lang: weight}."""

    temperature: float = Field(1.0, gt=0, description="languages drawn by n^(1/temperature) (1: as they come)")
    ratios: dict[str, float] | None = Field(None, description="explicit weights {lang: weight} instead")

    @model_validator(mode="after")
    def _check(self):
        if self.ratios is not None and (any(v < 0 for v in self.ratios.values()) or sum(self.ratios.values()) <= 0):
            raise ValueError("ratios must be >= 0 and not all zero")
        return self


class CapitalizationParams(_Strict):
    """A case head (O/U/A/M per word) beside the punctuation head; loss = punctuation + weight * case."""

    weight: float = Field(0.5, gt=0, description="weight of the case loss beside the punctuation loss")


# upper bounds: a value past them is a typo, not a batch a device holds
MAX_BATCH = 1 << 16
MAX_TOKENS = 1 << 24


class TrainParams(_Strict):
    """What trains one model: its dataset, the model and its heads, the optimizer and the schedule."""

    dataset: str | None = Field(
        None,
        description="dataset name (data/datasets/<dataset>; its datasets.<dataset>.sequences give max_len etc.)",
    )
    lang: str = Field("en", description="language of the dataset (for augmentation's confusables)")

    # model: a pretrained name or folder, or a config for a model from scratch (exactly one)
    pretrained: str | None = Field(None, description="a pretrained model name or folder (or give config)")
    config: dict[str, Any] | None = Field(
        None, description="a transformers config of a model built from scratch (or give pretrained)"
    )
    head: Literal["linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling"] = Field(
        "linear", description="the classification head over the encoder"
    )
    dropout: float = Field(0.1, ge=0, lt=1, description="dropout before the head")
    layer_dropout: float = Field(0.1, ge=0, lt=1, description="layer_attention: dropout of whole layers")
    capitalization: CapitalizationParams | None = Field(None, description="a case head beside the punctuation head")

    # optimization
    epochs: int = Field(3, ge=1, le=100_000, description="passes over train")
    max_steps: int = Field(0, ge=0, description="stop after this many optimizer steps (0: no limit)")
    batch_size: int = Field(
        16, ge=1, le=MAX_BATCH, description="sequences per device and micro-batch (when max_tokens is 0)"
    )
    max_tokens: int = Field(
        0, ge=0, le=MAX_TOKENS, description="padded tokens per device and micro-batch; replaces batch_size"
    )
    grad_accumulation: int = Field(1, ge=1, le=MAX_BATCH, description="micro-batches per optimizer step")
    encoder_lr: float = Field(5e-5, gt=0, description="learning rate of the encoder")
    head_lr: float = Field(1e-3, gt=0, description="learning rate of the head")
    weight_decay: float = Field(0.01, ge=0, description="AdamW weight decay")
    warmup: float = Field(0.1, ge=0, le=1, description="share of the steps with a linear warm-up")
    max_grad_norm: float = Field(1.0, ge=0, description="gradient clipping (0: none)")
    precision: Literal["bf16", "fp32"] = Field(
        "bf16", description="bf16: autocast on CUDA with fp32 master weights (CPU runs fp32)"
    )
    freeze_encoder_first_epoch: bool = Field(False, description="train only the head in the first epoch")
    patience: int = Field(2, ge=1, description="epochs without a better dev F1 before stopping")
    seed: int = Field(0, ge=0, description="seed of the weights drawn, the order and the augmentation")
    device: Literal["auto", "cpu", "cuda"] = Field("auto", description="auto: CUDA when there is one")

    # data path
    workers: int = Field(2, ge=0, le=256, description="DataLoader worker processes per device")
    window: int = Field(
        4096, ge=1, le=MAX_TOKENS, description="rows shuffled and length-grouped together (one worker's unit)"
    )
    pad_to_multiple_of: int = Field(8, ge=1, le=1024, description="batches padded to a multiple of this length")
    eval_batch_size: int = Field(64, ge=1, le=MAX_BATCH, description="sequences per batch in evaluation")
    augmentation: AugmentationParams | None = Field(None, description="ASR-error augmentation drawn per epoch")
    mixing: MixingParams | None = Field(None, description="how languages are drawn per epoch")

    # checkpoints and logs
    checkpoint_every: int = Field(0, ge=0, description="optimizer steps between resumable checkpoints (0: none)")
    keep_checkpoints: int = Field(1, ge=1, description="resumable checkpoints kept")
    log_every: int = Field(50, ge=1, description="steps between loss read-backs from the device")
    progress: bool = Field(True, description="a progress bar on a terminal")

    max_len: int | None = Field(
        None, ge=8, le=1 << 16, description="deprecated: the dataset's max_len is used; when given it must equal it"
    )

    @model_validator(mode="after")
    def _check(self):
        if bool(self.pretrained) == bool(self.config):
            raise ValueError("give exactly one of pretrained (a name or folder) and config (a model from scratch)")
        return self


def validate_train_params(section, where: str = "train") -> TrainParams:
    """``TrainParams`` from a params section, or ValueError (ParamsError) with one line naming the key."""
    return validate(TrainParams, section, None, tuple(where.split(".")))
