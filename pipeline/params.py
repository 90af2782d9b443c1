"""The params schema: one pydantic model per section of ``params.yaml``, the only place defaults live.

Unknown keys are refused with a did-you-mean, types are strict (``"0.8"`` is not a number,
``yes`` is not a count), ranges are checked, and names that refer to other sections (a
dataset's corpora, an alignment's reference) must exist.  Any problem is one line naming the
file, the key path and what is wrong (:class:`ParamsError`); the stages print it and exit 2.

Sections: ``corpora`` (one entry per corpus; the keys a reader takes are its ``Options``),
``alignments``, ``confusables``, ``datasets`` (``split``, ``oversample``, ``sequences``,
``export``), ``train``, and ``engine`` (how stages run: it changes no output, so no stage
depends on it).
"""

from __future__ import annotations

import difflib
import functools
import os
import types
import typing
from typing import Annotated, Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model, model_validator

from pipeline.errors import ParamsError

SPLIT_NAMES = ("train", "dev", "test")
SplitName = Literal["train", "dev", "test"]
POLICIES = ("guerreiro", "ueffing", "nearest")


class Section(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)


class EngineParams(Section):
    """How sharded stages run.  Outputs are byte-identical whatever is set here."""

    #: ``local``: worker processes on this machine; ``dask``: dask.distributed (a LocalCluster,
    #: or the scheduler at ``scheduler`` / $PUNCT_DASK_SCHEDULER)
    engine: Literal["local", "dask"] = "local"
    #: worker processes; 0: one per core
    workers: int = Field(0, ge=0)
    scheduler: str | None = None
    #: input lines per shard (line-oriented readers)
    shard_lines: int = Field(100_000, ge=1)
    #: segments per shard (stages over segment datasets); a shard never cuts a document
    shard_rows: int = Field(50_000, ge=1)


class EngineOverride(Section):
    engine: Literal["local", "dask"] | None = None
    workers: int | None = Field(None, ge=0)
    scheduler: str | None = None
    shard_lines: int | None = Field(None, ge=1)
    shard_rows: int | None = Field(None, ge=1)

    def over(self, base: EngineParams) -> EngineParams:
        return base.model_copy(update={k: v for k, v in self.model_dump().items() if v is not None})


class CorpusBase(Section):
    """Keys every corpus entry has; the reader's own keys come from its ``Options``."""

    reader: str
    lang: str
    #: a file, or a directory whose files (sorted by name, matching ``glob``) are read
    input: str
    glob: str = "*"
    #: written numbers, money, dates... replaced by their spoken form (reference text like ASR output)
    spoken: bool = False
    #: a jieba user dictionary (Mandarin): a param and a dependency of the stage
    user_dict: str | None = None
    engine: EngineOverride | None = None

    def options(self) -> dict:
        base = set(CorpusBase.model_fields)
        return {k: v for k, v in self.model_dump().items() if k not in base}

    def reader_options(self):
        from pipeline.ingest import get_reader

        return get_reader(self.reader).Options.model_validate(self.options())


@functools.cache
def corpus_model(reader: str) -> type[BaseModel]:
    """The model of a corpus entry for ``reader``: the base keys plus the reader's options."""
    from pipeline.ingest import get_reader

    options = get_reader(reader).Options
    fields = {name: (info.annotation, info) for name, info in options.model_fields.items()}
    return create_model(f"{reader}_corpus", __base__=CorpusBase, **fields)


class AlignmentParams(Section):
    """A reference corpus's punctuation (and case) moved onto an ASR corpus's words."""

    ref: str
    hyp: str
    #: language of the number grammars (default: the hypothesis's)
    lang: str | None = None
    policy: Literal["guerreiro", "ueffing", "nearest"] = "guerreiro"
    #: how documents are paired: by id, by order, or by the pairs file (pair_by file)
    pair_by: Literal["id", "order", "file"] = "id"
    #: with pair_by file: a two-column file (reference id, hypothesis id per line)
    pairs: str | None = None
    #: fail above this word error rate (the two sides are probably not the same documents)
    max_wer: float = Field(0.5, ge=0)
    #: align anyway: above max_wer, and with unpaired hypothesis documents (left out, reported)
    force: bool = False
    workers: int = Field(1, ge=0)
    engine: EngineOverride | None = None

    @model_validator(mode="after")
    def _pairs_with_file(self):
        if self.pair_by == "file" and not self.pairs:
            raise ValueError("pair_by file needs pairs (a file of reference id, hypothesis id per line)")
        if self.pairs and self.pair_by != "file":
            raise ValueError(f"pairs is read with pair_by file only (pair_by is {self.pair_by})")
        return self


class ConfusablesParams(Section):
    """For every word, the ``k`` words closest by phoneme edit distance (3R's phoneme edition)."""

    lang: str
    #: the vocabulary: a corpus of the registry (words seen ``min_count`` times) or a word-list file
    corpus: str | None = None
    word_list: str | None = None
    min_count: int = Field(1, ge=1)
    k: int = Field(3, ge=1, le=100)
    keep_stress: bool = False
    workers: int = Field(0, ge=0)

    @model_validator(mode="after")
    def _one_vocabulary(self):
        if (self.corpus is None) == (self.word_list is None):
            raise ValueError("give exactly one of corpus and word_list")
        return self


class SplitParams(Section):
    """Document-level splits by a seeded hash of the document id (a document keeps its split when
    others are added)."""

    ratios: dict[SplitName, Annotated[float, Field(ge=0)]] | None = None
    counts: dict[SplitName, Annotated[int, Field(ge=0)]] | None = None
    seed: int = 0
    #: each stratum (the set of marks a document has) split by the same ratios (Gupta 2021)
    stratify: bool = False
    #: keep documents with more than this many sentences
    min_sentences: int = Field(0, ge=0)
    #: keep segments with at least this many marks (indic-punct keeps lines with a mark)
    min_marks: int = Field(0, ge=0)
    #: corpora that keep a split of their own (the given files of a benchmark)
    fixed: dict[str, SplitName] = {}
    test_corpora: list[str] = []
    #: remove train segments whose exact words also occur in dev or test
    drop_train_duplicates: bool = False

    @model_validator(mode="after")
    def _one_rule(self):
        if self.ratios is not None and self.counts is not None:
            raise ValueError("give split ratios or split counts, not both")
        if self.ratios is not None and not sum(self.ratios.values()) > 0:
            raise ValueError("split ratios must have a positive sum")
        if self.stratify and self.ratios is None:
            raise ValueError("stratify takes split ratios")
        return self


class AugmentParams(Section):
    """ASR-error augmentation (Alam 2020; 3R, Zheng 2022), drawn per (seed, epoch or copy, segment)."""

    kind: Literal["alam", "3r"]
    alpha: float = Field(0.15, ge=0, le=1)
    alpha_sub: float = Field(0.4, ge=0, le=1)
    alpha_del: float = Field(0.4, ge=0, le=1)
    p_delete: float = Field(0.05, ge=0, le=1)
    p_substitute: float = Field(0.05, ge=0, le=1)
    p_phoneme: float = Field(0.05, ge=0, le=1)
    #: 3r: the confusables entry whose vocabulary feeds phoneme edition
    confusables: str | None = None
    #: materialized copies of train in augmented.parquet (for audit; training draws anew)
    copies: int = Field(1, ge=1)

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
    #: copies of train question sentences inserted into train documents up to this QUESTION share (Rao 2022)
    question_share: float | None = Field(None, gt=0, lt=1)
    augment: AugmentParams | None = None


class SequencesParams(Section):
    #: ``train``: a BPE tokenizer trained on the train split; else a pretrained name or folder
    tokenizer: str = "train"
    vocab_size: int = Field(2000, ge=100)
    lowercase: bool = False
    max_len: int = Field(256, ge=8)
    mode: Literal["chunk", "segment"] = "chunk"
    stride: int = Field(0, ge=0)
    slot_filling: bool = False
    engine: EngineOverride | None = None


class ExportParams(Section):
    formats: list[Literal["tsv", "nemo", "hf"]] = []
    #: tsv: a third column with the case label
    case_column: bool = False


class DatasetParams(Section):
    corpora: list[str] = []
    split: SplitParams = SplitParams()
    oversample: OversampleParams = OversampleParams()
    sequences: SequencesParams = SequencesParams()
    export: ExportParams = ExportParams()
    engine: EngineOverride | None = None

    @model_validator(mode="after")
    def _has_rule(self):
        if self.corpora and self.split.ratios is None and self.split.counts is None:
            raise ValueError("split: corpora to split need split ratios or split counts")
        return self


def _train_model():
    """TrainParams, imported by name only when a train entry is checked: the other stages neither run
    nor depend on (in dvc.yaml) the training schema."""
    import importlib

    return importlib.import_module("pipeline.training.config").TrainParams


class Params(Section):
    corpora: dict[str, dict] = {}
    alignments: dict[str, AlignmentParams] = {}
    confusables: dict[str, ConfusablesParams] = {}
    datasets: dict[str, DatasetParams] = {}
    train: dict[str, dict] = {}
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
        update = {}
        if os.environ.get("PUNCT_ENGINE"):
            update["engine"] = os.environ["PUNCT_ENGINE"]
        if os.environ.get("PUNCT_WORKERS"):
            update["workers"] = int(os.environ["PUNCT_WORKERS"])
        return EngineParams.model_validate({**engine.model_dump(), **update}) if update else engine

    def segment_names(self) -> list[str]:
        """Names with a segment dataset under data/segments: corpora, then alignments."""
        return [*self.corpora, *self.alignments]


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


def reader_problem(reader) -> str | None:
    """Why ``reader`` names no reader (with a did-you-mean), or None: for a params entry and ``--reader``."""
    from pipeline.ingest import readers

    if reader in readers():
        return None
    close = difflib.get_close_matches(str(reader), list(readers()), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else f"; readers: {', '.join(sorted(readers()))}"
    return f"{reader!r} is not a reader{hint}"


def _check_name(name, where: str, section: str) -> None:
    if not isinstance(name, str) or not name or "/" in name or name.startswith(".") or name != name.strip():
        raise ParamsError(f"{where}: {section}.{name}: a name must be a non-empty string without '/'")


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
    try:
        data = yaml.safe_load(text) or {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        line = f":{mark.line + 1}" if mark else ""
        raise ParamsError(f"{where}{line}: not valid YAML ({getattr(exc, 'problem', exc)})") from None
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
            validate(_train_model(), entry, where, ("train", name)) if wanted("train", name) else entry
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
