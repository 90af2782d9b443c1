"""The params schema: one pydantic model per section of ``params.yaml``, the only place defaults live.

Unknown keys are refused with a did-you-mean, types are strict (``"0.8"`` is not a number,
``yes`` is not a count), ranges are checked, and names that refer to other sections (a
dataset's corpora, an alignment's reference) must exist.  Any problem is one line naming the
file, the key path and what is wrong (:class:`ParamsError`); the stages print it and exit 2.

Sections: ``corpora`` (one entry per corpus; the keys a reader takes are its ``Options``),
``alignments``, ``confusables``, ``datasets`` (``split``, ``oversample``, ``sequences``,
``export``), ``train``, ``export_model`` (deployable copies of trained models), and ``engine``
(how stages run: it changes no output, so no stage depends on it).
"""

from __future__ import annotations

import difflib
import functools
import os
import re
import types
import typing
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, field_validator, model_validator

from pipeline.errors import ParamsError

SPLIT_NAMES = ("train", "dev", "test")
SplitName = Literal["train", "dev", "test"]
POLICIES = ("guerreiro", "ueffing", "nearest")

#: what ``split: {}`` means: these ratios, with the ``seed`` field's default
DEFAULT_RATIOS = {"train": 0.8, "dev": 0.1, "test": 0.1}
# Upper bounds on sizes: a value past them is a typo (an extra digit), and some would abort a
# library underneath (the tokenizers trainer on a huge vocab_size) instead of failing in one line.
MAX_WORKERS = 1024
MAX_SHARD_LINES = 1 << 30
MAX_SHARD_ROWS = 1 << 30
MAX_VOCAB_SIZE = 1_000_000
MAX_LEN = 1 << 16
#: a corpus, alignment, confusables, dataset or model name: it becomes a file name and a word of
#: the generated dvc.yaml commands, so only what both take as is
NAME_PATTERN = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


def _field(default, description: str, **bounds):
    """A params key: its default, its range and the description the reference shows."""
    return Field(default, description=description, **bounds)


class EngineParams(Section):
    """How sharded stages run.  Outputs are byte-identical whatever is set here."""

    engine: Literal["local", "dask"] = _field(
        "local",
        "local: worker processes on this machine; dask: dask.distributed (a LocalCluster, or the "
        "scheduler at `scheduler` / $PUNCT_DASK_SCHEDULER)",
    )
    workers: int = _field(
        0, "worker processes; 0: one per core (never more than the shards to run)", ge=0, le=MAX_WORKERS
    )
    scheduler: str | None = _field(None, "address of a dask scheduler (engine: dask)")
    shard_lines: int = _field(100_000, "input lines per shard (line-oriented readers)", ge=1, le=MAX_SHARD_LINES)
    shard_rows: int = _field(
        50_000,
        "segments per shard (stages over segment datasets); a shard never cuts a document",
        ge=1,
        le=MAX_SHARD_ROWS,
    )


class EngineOverride(Section):
    """Keys of the engine section set for one entry; the others keep the engine section's value."""

    engine: Literal["local", "dask"] | None = _field(None, "overrides engine.engine")
    workers: int | None = _field(None, "overrides engine.workers", ge=0, le=MAX_WORKERS)
    scheduler: str | None = _field(None, "overrides engine.scheduler")
    shard_lines: int | None = _field(None, "overrides engine.shard_lines", ge=1, le=MAX_SHARD_LINES)
    shard_rows: int | None = _field(None, "overrides engine.shard_rows", ge=1, le=MAX_SHARD_ROWS)

    def over(self, base: EngineParams) -> EngineParams:
        return base.model_copy(update={k: v for k, v in self.model_dump().items() if v is not None})


class CorpusBase(Section):
    """Keys every corpus entry has; the reader's own keys come from its ``Options``."""

    reader: str = _field(..., "the reader of the corpus's format (`punct-corpora ingest --help` lists them)")
    lang: str = _field(..., "the language code (a module of pipeline/text/languages or a plugin's)")
    input: str = _field(..., "a file, or a directory whose files (sorted by name, matching `glob`) are read")
    glob: str = _field("*", "which files of an input directory are read")
    spoken: bool = _field(
        False, "written numbers, money, dates... replaced by their spoken form (reference text like ASR output)"
    )
    user_dict: str | None = _field(None, "a jieba user dictionary (Mandarin): a param and a dependency of the stage")
    label_set: str = _field(
        "papers",
        "the labels marks map to: a built-in set (papers, extended, extended_danda) or a label-set table's path "
        "(a dependency of the stage); recorded in the dataset",
    )
    protocol: str = _field(
        "papers",
        "a paper's preprocessing (rewrites, labelling, table counting) from lexicons/protocols: papers (the "
        "project's rules), alam2020, rao2022; recorded in the dataset",
    )
    allow_other_script: bool = _field(
        False, "ingest a corpus most of whose words are in another script than lang's (refused otherwise)"
    )
    engine: EngineOverride | None = _field(None, "engine keys for this corpus's ingest")

    @field_validator("protocol")
    @classmethod
    def _known_protocol(cls, value: str) -> str:
        from pipeline.text.protocols import ProtocolError, load

        try:
            load(value)
        except ProtocolError as exc:
            raise ValueError(str(exc).removeprefix("protocol: ")) from None
        return value

    @field_validator("label_set")
    @classmethod
    def _known_label_set(cls, value: str) -> str:
        """A built-in set or a readable table (a malformed one: its own error, naming file and line)."""
        from pipeline.labels import LabelSetError, label_set

        try:
            label_set(value)
        except LabelSetError:
            raise
        except ParamsError as exc:
            raise ValueError(str(exc).removeprefix("label_set: ")) from None
        return value

    def options(self) -> dict:
        base = set(CorpusBase.model_fields)
        return {k: v for k, v in self.model_dump().items() if k not in base}

    def reader_options(self):
        from pipeline.ingest import reader_module

        return reader_module(self.reader).Options.model_validate(self.options())


@functools.cache
def corpus_model(reader: str) -> type[BaseModel]:
    """The model of a corpus entry for ``reader``: the base keys plus the reader's options."""
    from pipeline.ingest import reader_module

    options = reader_module(reader).Options
    fields = {name: (info.annotation, info) for name, info in options.model_fields.items()}
    return create_model(f"{reader}_corpus", __base__=CorpusBase, **fields)


class AlignmentParams(Section):
    """A reference corpus's punctuation (and case) moved onto an ASR corpus's words."""

    ref: str = _field(..., "the reference corpus (punctuated text), a corpus of the registry")
    hyp: str = _field(..., "the hypothesis corpus (ASR words), a corpus of the registry")
    lang: str | None = _field(None, "language of the number grammars (default: the hypothesis's)")
    policy: Literal["guerreiro", "ueffing", "nearest"] = _field(
        "guerreiro", "where a mark goes when its word was deleted or substituted"
    )
    pair_by: Literal["id", "order", "file"] = _field(
        "id", "documents paired by document id, in order, or by the pairs file (file: the default with pairs)"
    )
    pairs: str | None = _field(None, "a two-column file (reference id, hypothesis id per line); implies pair_by file")
    max_wer: float = _field(
        0.5, "fail when a document pair's word error rate is above this (probably not the same document)", ge=0
    )
    force: bool = _field(
        False, "leave out document pairs above max_wer and unpaired hypothesis documents (reported), not fail"
    )
    engine: EngineOverride | None = _field(
        None, "engine keys for this alignment (its worker processes: engine.workers)"
    )

    @model_validator(mode="before")
    @classmethod
    def _pairs_imply_file(cls, data):
        # a pairs file says how to pair: the params file and the command line alike
        if isinstance(data, dict) and data.get("pairs") is not None and data.get("pair_by") is None:
            data = {**data, "pair_by": "file"}
        return data

    @model_validator(mode="after")
    def _pairs_with_file(self):
        if self.pair_by == "file" and not self.pairs:
            raise ValueError("pair_by file needs pairs (a file of reference id, hypothesis id per line)")
        if self.pairs and self.pair_by != "file":
            raise ValueError(f"pairs is read with pair_by file only (pair_by is {self.pair_by})")
        return self


class ConfusablesParams(Section):
    """For every word, the ``k`` words closest by phoneme edit distance (3R's phoneme edition)."""

    lang: str = _field(..., "the language of the g2p")
    corpus: str | None = _field(
        None, "the vocabulary: a corpus or alignment of the registry (words seen min_count times)"
    )
    word_list: str | None = _field(None, "the vocabulary: a word-list file (one word a line)")
    min_count: int = _field(1, "a corpus word's least number of occurrences to be in the vocabulary", ge=1)
    k: int = _field(3, "confusable words kept per word", ge=1, le=100)
    keep_stress: bool = _field(False, "compare phonemes with their stress marks (languages with stress)")
    threads: int = _field(0, "threads of the neighbour search (0: one per core)", ge=0, le=MAX_WORKERS)

    @model_validator(mode="after")
    def _one_vocabulary(self):
        if (self.corpus is None) == (self.word_list is None):
            raise ValueError("give exactly one of corpus and word_list")
        return self


class SplitParams(Section):
    """Document-level splits by a seeded hash of the document id (a document keeps its split when
    others are added).  Neither ratios nor counts: :data:`DEFAULT_RATIOS` (``split: {}``)."""

    ratios: dict[SplitName, Annotated[float, Field(ge=0)]] | None = _field(
        None, "share of the documents per split {train, dev, test} (default 0.8/0.1/0.1 when no counts)"
    )
    counts: dict[SplitName, Annotated[int, Field(ge=0)]] | None = _field(
        None, "documents per split {train, dev, test}, taken in hash order"
    )
    strict: bool = _field(False, "refuse counts the corpora cannot fill (else a warning and the report's asked/got)")
    seed: int = _field(1, "seed of the document hash")
    stratify: bool = _field(
        False, "each stratum (the set of marks a document has) split by the same ratios (Gupta 2021)"
    )
    min_sentences: int = _field(0, "keep documents with more than this many sentences", ge=0)
    min_marks: int = _field(
        0, "keep segments with at least this many marks (indic-punct keeps lines with a mark)", ge=0
    )
    fixed: dict[str, SplitName] = _field({}, "corpora that keep a split of their own (the given files of a benchmark)")
    test_corpora: list[str] = _field([], "corpora that are all test (fixed to test)")
    drop_train_duplicates: bool = _field(False, "remove train segments whose exact words also occur in dev or test")

    @model_validator(mode="after")
    def _one_rule(self):
        if self.ratios is not None and self.counts is not None:
            raise ValueError("give split ratios or split counts, not both")
        if self.ratios is not None and not sum(self.ratios.values()) > 0:
            raise ValueError("split ratios must have a positive sum")
        if self.ratios is None and self.counts is None:
            self.ratios = dict(DEFAULT_RATIOS)
        if self.stratify and self.ratios is None:
            raise ValueError("stratify takes split ratios")
        if self.strict and self.counts is None:
            raise ValueError("strict checks split counts: give counts")
        return self


class AugmentParams(Section):
    """ASR-error augmentation (Alam 2020; 3R, Zheng 2022), drawn per (seed, epoch or copy, segment)."""

    kind: Literal["alam", "3r"] = _field(..., "alam: Alam 2020's word edits; 3r: Zheng 2022's 3R")
    alpha: float = _field(0.15, "alam: share of the words edited", ge=0, le=1)
    alpha_sub: float = _field(0.4, "alam: share of the edits that substitute a word", ge=0, le=1)
    alpha_del: float = _field(0.4, "alam: share of the edits that delete a word", ge=0, le=1)
    p_delete: float = _field(0.05, "3r: probability of deleting a word", ge=0, le=1)
    p_substitute: float = _field(0.05, "3r: probability of substituting a random word", ge=0, le=1)
    p_phoneme: float = _field(0.05, "3r: probability of substituting a confusable word", ge=0, le=1)
    confusables: str | None = _field(None, "3r: the confusables entry whose vocabulary feeds phoneme edition")
    copies: int = _field(
        1, "materialized copies of train in augmented.parquet (for audit; training draws anew)", ge=1, le=1000
    )

    @model_validator(mode="after")
    def _check(self):
        if self.kind == "alam" and self.alpha_sub + self.alpha_del > 1:
            raise ValueError("alpha_sub + alpha_del must not exceed 1")
        if self.kind == "3r":
            if self.p_delete + self.p_substitute + self.p_phoneme > 1:
                raise ValueError("p_delete + p_substitute + p_phoneme must not exceed 1")
            if self.p_phoneme > 0 and not self.confusables:
                raise ValueError(
                    "confusables: 3R phoneme edition needs the name of a confusables entry (or p_phoneme: 0)"
                )
        return self


class OversampleParams(Section):
    """Train-only oversampling of questions, and materialized augmentation for the audit."""

    question_share: float | None = _field(
        None,
        "copies of train question sentences inserted into train documents up to this QUESTION share (Rao 2022)",
        gt=0,
        lt=1,
    )
    augment: AugmentParams | None = _field(None, "ASR-error augmentation of train")


#: [CLS] and [SEP] around each sequence: what a chunk of ``max_len`` tokens spends on specials
SPECIAL_TOKENS = 2


class SequencesParams(Section):
    """Model-ready token sequences with a label on each word's last token."""

    tokenizer: str = _field(
        "train", "train: a BPE tokenizer trained on the train split; else a pretrained name or folder"
    )
    vocab_size: int = _field(2000, "vocabulary of a trained tokenizer", ge=100, le=MAX_VOCAB_SIZE)
    lowercase: bool = _field(False, "a trained tokenizer lowercases")
    train_words: int = _field(
        200_000,
        "a trained tokenizer learns from at most this many distinct train words, the most frequent (ties: by the word)",
        ge=1,
    )
    train_occurrences: int = _field(
        10_000_000,
        "and from at most about this many of their occurrences: above it, counted in a seeded sample of the rows"
        " (blocks of 1,024) that holds about this many, then scaled down in proportion (at least 1) if still above",
        ge=1,
    )
    max_len: int = _field(256, "tokens per sequence, specials included", ge=8, le=MAX_LEN)
    mode: Literal["chunk", "segment"] = _field(
        "chunk", "chunk: documents cut into max_len sequences; segment: a sequence per segment"
    )
    stride: int = _field(
        0, "words shared by consecutive chunks of a long document (less than max_len - 2)", ge=0, le=MAX_LEN
    )
    slot_filling: bool = _field(False, "a mask token after every word carries its label")
    engine: EngineOverride | None = _field(None, "engine keys for this stage")

    @model_validator(mode="after")
    def _stride_fits(self):
        # a chunk holds at most max_len - 2 words (a token each): a stride as long never advances
        if self.stride and self.stride >= self.max_len - SPECIAL_TOKENS:
            raise ValueError(
                f"stride: {self.stride} words must be fewer than the {self.max_len - SPECIAL_TOKENS} "
                f"a chunk holds at most (max_len {self.max_len} minus [CLS] and [SEP])"
            )
        return self


class ExportParams(Section):
    """Exports of the oversampled dataset for other toolkits."""

    formats: list[Literal["tsv", "nemo", "hf"]] = _field([], "export formats (data/datasets/<name>/export/<format>/)")
    case_column: bool = _field(False, "tsv: a third column with the case label")


class DatasetParams(Section):
    """A model-ready dataset: split, oversample, sequences and export of some corpora."""

    corpora: list[str] = _field([], "corpora and alignments split together")
    split: SplitParams = _field(SplitParams(), "how documents are split")
    oversample: OversampleParams = _field(OversampleParams(), "oversampling and augmentation of train")
    sequences: SequencesParams = _field(SequencesParams(), "the token sequences")
    export: ExportParams = _field(ExportParams(), "exports for other toolkits")
    engine: EngineOverride | None = _field(None, "engine keys for this dataset's stages")


class ModelExportParams(Section):
    """A trained model exported for a runtime (``export_model.<train entry>``)."""

    format: Literal["onnx"] = _field("onnx", "the runtime's format (models/<name>-onnx/)")
    int8: bool = _field(False, "int8 matrix products (see export-model --int8)")


HEAD_NAMES = ("linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling")
# upper bounds: a value past them is a typo, not a batch a device holds
MAX_BATCH = 1 << 16
MAX_TOKENS = 1 << 24


class MixingParams(Section):
    """Languages drawn per epoch by n^(1/temperature), or by explicit ``ratios`` {lang: weight}."""

    temperature: float = _field(1.0, "languages drawn by n^(1/temperature) (1: as they come)", gt=0)
    ratios: dict[str, float] | None = _field(None, "explicit weights {lang: weight} instead")

    @model_validator(mode="after")
    def _check(self):
        if self.ratios is not None and (any(v < 0 for v in self.ratios.values()) or sum(self.ratios.values()) <= 0):
            raise ValueError("ratios must be >= 0 and not all zero")
        return self


class CapitalizationParams(Section):
    """A case head (O/U/A/M per word) beside the punctuation head; loss = punctuation + weight * case."""

    weight: float = _field(0.5, "weight of the case loss beside the punctuation loss", gt=0)


class TrainParams(Section):
    """What trains one model (``train.<name>``): its dataset, the model and its heads, the optimizer
    and the schedule.  The sequence options (``max_len``, ``mode``, ``stride``, ``slot_filling``) and
    the tokenizer are the dataset's, read from its sequences' manifest."""

    dataset: str | None = _field(None, "dataset name (data/datasets/<dataset>: its sequences, tokenizer and segments)")
    lang: str = _field("en", "language of the model's text (what `punctuate` normalizes it as by default)")

    # model: a pretrained name or folder, or a config for a model from scratch (exactly one)
    pretrained: str | None = _field(
        None, "a pretrained model name or folder (or give config); the dataset's sequences.tokenizer must be its"
    )
    config: dict[str, Any] | None = _field(None, "a transformers config of a model built from scratch (or pretrained)")
    head: Literal["linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling"] = _field(
        "linear", "the classification head over the encoder"
    )
    dropout: float = _field(0.1, "dropout before the head", ge=0, lt=1)
    layer_dropout: float = _field(0.1, "layer_attention: dropout of whole layers", ge=0, lt=1)
    capitalization: CapitalizationParams | None = _field(None, "a case head beside the punctuation head")

    # optimization
    epochs: int = _field(3, "passes over train", ge=1, le=100_000)
    max_steps: int = _field(0, "stop after this many optimizer steps (0: no limit)", ge=0)
    batch_size: int = _field(16, "sequences per device and micro-batch (when max_tokens is 0)", ge=1, le=MAX_BATCH)
    max_tokens: int = _field(0, "padded tokens per device and micro-batch; replaces batch_size", ge=0, le=MAX_TOKENS)
    grad_accumulation: int = _field(1, "micro-batches per optimizer step", ge=1, le=MAX_BATCH)
    encoder_lr: float = _field(5e-5, "learning rate of the encoder", gt=0)
    head_lr: float = _field(1e-3, "learning rate of the head", gt=0)
    weight_decay: float = _field(0.01, "AdamW weight decay", ge=0)
    warmup: float = _field(0.1, "share of the steps with a linear warm-up", ge=0, le=1)
    max_grad_norm: float = _field(1.0, "gradient clipping (0: none)", ge=0)
    precision: Literal["bf16", "fp32"] = _field(
        "bf16", "bf16: autocast on CUDA with fp32 master weights (CPU runs fp32)"
    )
    freeze_encoder_first_epoch: bool = _field(False, "train only the head in the first epoch")
    patience: int = _field(2, "epochs without a better dev F1 before stopping", ge=1)
    seed: int = _field(0, "seed of the weights drawn, the order and the augmentation", ge=0)
    device: Literal["auto", "cpu", "cuda"] = _field("auto", "auto: CUDA when there is one")

    # data path
    loader_workers: int = _field(
        2, "DataLoader worker processes per device (0: batches made in the training process)", ge=0, le=256
    )
    window: int = _field(
        4096, "rows shuffled and length-grouped together (one loader worker's unit)", ge=1, le=MAX_TOKENS
    )
    pad_to_multiple_of: int = _field(8, "batches padded to a multiple of this length", ge=1, le=1024)
    eval_batch_size: int = _field(64, "sequences per batch in evaluation", ge=1, le=MAX_BATCH)
    augmentation: AugmentParams | None = _field(None, "ASR-error augmentation drawn per epoch")
    mixing: MixingParams | None = _field(None, "how languages are drawn per epoch")

    # checkpoints and logs
    checkpoint_every: int = _field(0, "optimizer steps between resumable checkpoints (0: none)", ge=0)
    keep_checkpoints: int = _field(1, "resumable checkpoints kept", ge=1)
    log_every: int = _field(50, "steps between loss read-backs from the device", ge=1)
    progress: bool = _field(True, "a progress bar on a terminal")

    max_len: int | None = _field(None, "the dataset's max_len is used; when given it must equal it", ge=8, le=MAX_LEN)

    @model_validator(mode="after")
    def _one_model(self):
        if bool(self.pretrained) == bool(self.config):
            raise ValueError("give exactly one of pretrained (a name or folder) and config (a model from scratch)")
        if self.augmentation is not None and "copies" in self.augmentation.model_fields_set:
            # a key nothing would read: training draws its augmentation anew every epoch
            raise ValueError(
                "augmentation.copies: training draws augmentation anew each epoch (copies is oversample's)"
            )
        return self


def validate_train_params(section, where: str = "train") -> TrainParams:
    """``TrainParams`` from a train entry, or ParamsError with one line naming the key under ``where``."""
    return validate(TrainParams, section, None, tuple(where.split(".")))


class Params(Section):
    corpora: dict[str, dict] = {}
    alignments: dict[str, AlignmentParams] = {}
    confusables: dict[str, ConfusablesParams] = {}
    datasets: dict[str, DatasetParams] = {}
    train: dict[str, dict] = {}
    export_model: dict[str, ModelExportParams] = {}
    engine: EngineParams = EngineParams()

    # validated in load(): each corpus entry by its reader's model, each train entry by TrainParams
    corpus_entries: dict[str, CorpusBase] = Field(default_factory=dict, exclude=True)
    train_entries: dict[str, Any] = Field(default_factory=dict, exclude=True)

    def engine_for(self, override: EngineOverride | None = None, *more: EngineOverride | None) -> EngineParams:
        """The engine section with a stage's overrides applied, then the environment's
        (``PUNCT_ENGINE``, ``PUNCT_WORKERS``: run a whole pipeline elsewhere without editing params)."""
        engine = self.engine
        for item in (override, *more):
            if item is not None:
                engine = item.over(engine)
        update = environment_overrides()
        return EngineParams.model_validate({**engine.model_dump(), **update}) if update else engine

    def segment_names(self) -> list[str]:
        """Names with a segment dataset under data/segments: corpora, then alignments."""
        return [*self.corpora, *self.alignments]


def environment_overrides(environ=None) -> dict:
    """The engine keys set by ``PUNCT_ENGINE`` and ``PUNCT_WORKERS`` (empty or unset: none), each
    checked here so that a bad value is one line naming the variable, not a validation dump."""
    environ = os.environ if environ is None else environ
    update: dict = {}
    engine = environ.get("PUNCT_ENGINE", "").strip()
    if engine:
        allowed = typing.get_args(EngineParams.model_fields["engine"].annotation)
        if engine not in allowed:
            raise ParamsError(f"PUNCT_ENGINE: expected one of {', '.join(allowed)}, got {engine!r}")
        update["engine"] = engine
    workers = environ.get("PUNCT_WORKERS", "").strip()
    if workers:
        if not (workers.isascii() and workers.isdigit()):
            raise ParamsError(f"PUNCT_WORKERS: expected a whole number >= 0, got {workers!r}")
        if int(workers) > MAX_WORKERS:
            raise ParamsError(f"PUNCT_WORKERS: expected at most {MAX_WORKERS}, got {workers!r}")
        update["workers"] = int(workers)
    return update


# ------------------------------------------------------------------------------- error wording


def _unwrap(annotation):
    """The model class (or mapping value type) an annotation leads to."""
    origin = typing.get_origin(annotation)
    if origin is Annotated:
        return _unwrap(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        for arg in typing.get_args(annotation):
            if arg is not type(None):
                return _unwrap(arg)
    return annotation


def _fields_at(model, loc: tuple) -> list[str]:
    """The keys allowed at ``loc`` (the path to a mapping) under ``model``."""
    current = model
    for part in loc:
        current = _unwrap(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            info = current.model_fields.get(part)
            if info is None:
                return []
            current = info.annotation
        elif typing.get_origin(current) is dict:
            current = typing.get_args(current)[1]
        else:
            return []
    current = _unwrap(current)
    if isinstance(current, type) and issubclass(current, BaseModel):
        return [name for name, info in current.model_fields.items() if not info.exclude]
    return []


def _wording(error: dict, model, prefix: tuple) -> str:
    loc = tuple(str(p) for p in error["loc"] if p != "[key]")
    if error["loc"][-1:] == ("[key]",) and isinstance(error.get("input"), bool):
        # YAML reads true/false (yes/no/on/off) as a boolean, which the error's path shows as 1/0
        loc = (*loc[:-1], str(error["input"]).lower())
        return f"{'.'.join((*prefix, *loc))}: a key YAML reads as a boolean: quote it ('{loc[-1]}') or rename it"
    path = ".".join((*prefix, *loc))
    kind = error["type"]
    if kind == "extra_forbidden":
        known = _fields_at(model, error["loc"][:-1])
        close = difflib.get_close_matches(loc[-1], known, n=1, cutoff=0.6)
        hint = f"; did you mean {close[0]!r}?" if close else (f"; known keys: {', '.join(known)}" if known else "")
        return f"{path}: unknown key{hint}"
    if kind == "missing":
        return f"{path}: required key is missing"
    if kind == "literal_error":
        expected = error.get("ctx", {}).get("expected", "")
        what = "the key " if error["loc"][-1] == "[key]" else ""
        return f"{path}: {what}{error['input']!r} is not one of {expected}"
    message = error["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, ") :]
    got = error.get("input")
    shown = "" if isinstance(got, dict | list) or kind.startswith("value_error") else f" (got {got!r})"
    return f"{path or '(top level)'}: {message[0].lower() + message[1:]}{shown}"


def validate(model, data, where: str | None, prefix: tuple = ()):
    """``model`` from ``data``, or ParamsError naming ``where`` (a file) and the key path of the first problem."""
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        errors = exc.errors()
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        file = f"{where}: " if where else ""
        raise ParamsError(f"{file}{_wording(errors[0], model, prefix)}{more}") from None


def corpus_entry(reader: str, lang: str, options: dict, input: str = "-"):
    """The corpus entry of ``reader`` in ``lang`` with the reader ``options`` (and other entry keys),
    checked by the reader's schema as a params file's entry is: ParamsError naming the key."""
    return validate(corpus_model(reader), {"reader": reader, "lang": lang, "input": input, **options}, None)


def reader_problem(reader) -> str | None:
    """Why ``reader`` names no reader (with a did-you-mean), or None: for a params entry and ``--reader``."""
    from pipeline.ingest import readers

    if reader in readers():
        return None
    close = difflib.get_close_matches(str(reader), list(readers()), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; readers: {', '.join(sorted(readers()))}"
    return f"{reader!r} is not a reader{hint}"


def name_problem(name) -> str | None:
    """Why ``name`` cannot name a corpus, alignment, dataset... (see :data:`NAME_PATTERN`), or None."""
    if isinstance(name, str) and NAME_PATTERN.fullmatch(name):
        return None
    return (
        f"{name!r} is not a usable name: letters, digits, '_', '-' and '.' only, "
        "not starting with '.' or '-' (it becomes a file name and a word of a shell command)"
    )


def _check_name(name, where: str, section: str) -> None:
    if problem := name_problem(name):
        raise ParamsError(f"{where}: {section}.{name}: {problem}")


class _DuplicateKey(yaml.constructor.ConstructorError):
    pass


class _UniqueKeyLoader(yaml.SafeLoader):
    """A YAML loader that refuses a key given twice in one mapping: YAML keeps the last one
    silently, which drops a whole corpus entry written twice."""


def _mapping_without_duplicates(loader: _UniqueKeyLoader, node: yaml.MappingNode, deep: bool = False):
    seen: dict = {}
    for key_node, _ in node.value:
        if key_node.tag == "tag:yaml.org,2002:merge":  # a merged key may be overridden: not a repeat
            continue
        key = loader.construct_object(key_node, deep=True)
        try:
            first = seen.get(key)
        except TypeError:  # an unhashable key: the constructor below says so
            continue
        if first is not None:
            raise _DuplicateKey(
                None,
                None,
                f"key {key!r} given twice (lines {first.start_mark.line + 1} and {key_node.start_mark.line + 1})",
                key_node.start_mark,
            )
        seen[key] = key_node
    return loader.construct_mapping(node, deep=deep)


_UniqueKeyLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _mapping_without_duplicates)


def load_yaml(text: str, where: str):
    """A params file's YAML, or ParamsError naming the file and line (a key given twice included)."""
    try:
        return yaml.load(text, Loader=_UniqueKeyLoader)  # a SafeLoader subclass: no arbitrary objects
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        if isinstance(exc, _DuplicateKey):
            raise ParamsError(f"{where}{line}: {exc.problem}") from None
        raise ParamsError(f"{where}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None


def load(path: str | os.PathLike, entries: list[tuple[str, str]] | None = None) -> Params:
    """The params file, validated (see the module doc).

    Every section's structure, names and references are checked; the entries whose checking runs
    plugin code (a corpus's reader options and language, a train entry, a confusables language)
    are checked all, or, given ``entries`` (``[("corpora", "en_talks")]``), only those: a stage
    checks what it uses, so it runs (and depends on) only that code."""
    from pipeline.engine.reading import read_text
    from pipeline.errors import InputError
    from pipeline.text.languages import UnknownLanguageError, get_language

    def wanted(section: str, name: str) -> bool:
        return entries is None or (section, name) in entries

    where = str(path)
    try:
        text = read_text(path)  # names the file on a missing file or invalid UTF-8
    except InputError as exc:
        raise ParamsError(str(exc)) from None
    data = load_yaml(text, where) or {}
    if not isinstance(data, dict):
        raise ParamsError(f"{where}: expected a mapping of sections at the top level")
    for key in ("corpus_entries", "train_entries"):
        data.pop(key, None)
    params = validate(Params, data, where)
    for section in ("corpora", "alignments", "confusables", "datasets", "train"):
        for name in getattr(params, section):
            _check_name(name, where, section)
    for name, entry in params.corpora.items():
        if not wanted("corpora", name):
            continue
        prefix = ("corpora", name)
        reader = entry.get("reader") if isinstance(entry, dict) else None
        if problem := reader_problem(reader):
            raise ParamsError(f"{where}: corpora.{name}.reader: {problem}")
        params.corpus_entries[name] = validate(corpus_model(reader), entry, where, prefix)
    for name, entry in params.train.items():
        params.train_entries[name] = (
            validate(TrainParams, entry, where, ("train", name)) if wanted("train", name) else entry
        )
    _check_references(params, where)
    for section, checked in (("corpora", params.corpus_entries), ("confusables", params.confusables)):
        for name, entry in checked.items():
            if not wanted(section, name):
                continue
            try:
                get_language(entry.lang)
            except UnknownLanguageError as exc:
                raise ParamsError(f"{where}: {section}.{name}.lang: {exc}") from None
            if section == "corpora":  # the label set labels every mark of the language's table
                get_language(entry.lang, entry.user_dict, entry.label_set)
    return params


def _check_references(params: Params, where: str) -> None:
    segments = set(params.segment_names())

    def need(name, known, path, what):
        if name not in known:
            close = difflib.get_close_matches(str(name), sorted(known), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise ParamsError(f"{where}: {path}: {name!r} is not {what}{hint}")

    for name, entry in params.alignments.items():
        need(entry.ref, params.corpora, f"alignments.{name}.ref", "a corpus of the registry")
        need(entry.hyp, params.corpora, f"alignments.{name}.hyp", "a corpus of the registry")
        if name in params.corpora:
            raise ParamsError(f"{where}: alignments.{name}: the name is already a corpus's")
    for name, entry in params.confusables.items():
        if entry.corpus is not None:
            need(entry.corpus, segments, f"confusables.{name}.corpus", "a corpus or alignment")
    for name, entry in params.datasets.items():
        for corpus in entry.corpora:
            need(corpus, segments, f"datasets.{name}.corpora", "a corpus or alignment")
        fixed = {**dict.fromkeys(entry.split.test_corpora, "test"), **entry.split.fixed}
        for corpus in fixed:
            need(corpus, segments, f"datasets.{name}.split.fixed", "a corpus or alignment")
            if corpus in entry.corpora:
                raise ParamsError(
                    f"{where}: datasets.{name}.split.fixed: {corpus!r} is also in datasets.{name}.corpora"
                )
        augment = entry.oversample.augment
        if augment is not None and augment.confusables is not None:
            need(
                augment.confusables,
                params.confusables,
                f"datasets.{name}.oversample.augment.confusables",
                "a confusables entry",
            )
    for name, entry in params.train.items():
        need(
            entry.get("dataset") if isinstance(entry, dict) else None,
            params.datasets,
            f"train.{name}.dataset",
            "a dataset",
        )
    for name in params.export_model:
        need(name, params.train, f"export_model.{name}", "a train entry")
