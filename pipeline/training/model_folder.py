"""One reading of a model folder, for both runtimes: a trained checkpoint (run by torch) or an
exported one (``export-model``, run by ONNX Runtime).  :func:`read` reads every file the loaders
need and checks that they agree before the first batch: the files are readable (JSON where JSON),
the labels and case labels are as many as the heads' outputs, the tokenizer's ids fit the
embeddings and its special tokens are the model's, and ``sequence.max_len`` fits the position
embeddings.  A mismatch is one :class:`ModelFolderError` naming the file and the key.

The widths are read without running anything: a checkpoint's from the header of
``model.safetensors`` (its tensors' shapes), an exported graph's heads from its outputs (ONNX
Runtime's session, :meth:`ModelFolder.check_outputs`) and its embeddings from what the export
recorded in ``punctuation.json`` (``onnx.embeddings``, ``onnx.special_tokens``).  Importing this
module imports neither torch nor onnxruntime.
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import ModelFolderError
from pipeline.labels import CASE_LABELS, LabelSet, model_labels

__all__ = ["META", "ONNX_FILE", "ModelFolder", "ModelFolderError", "read", "read_tokenizer"]

#: the model's description in a checkpoint or exported folder
META = "punctuation.json"
#: the ONNX graph in an exported folder
ONNX_FILE = "model.onnx"
#: version of the saved-model layout (1 was encoder/ + a pickled head.pt)
FORMAT = 2
HEADS = ("linear", "bilstm", "bilstm_crf", "layer_attention", "slot_filling")
#: the special tokens a model's inputs hold, by the names of the tokenizer's config files
SPECIAL_TOKENS = ("cls_token", "sep_token", "mask_token", "unk_token", "pad_token")
#: encoders whose positions start after the padding index (RoBERTa's scheme): that many fewer usable
PADDING_OFFSET_POSITIONS = frozenset({"roberta", "xlm-roberta", "xlm-roberta-xl", "camembert", "data2vec-text"})
#: the tokens per window of a model that records none (fewer where its positions are fewer)
DEFAULT_MAX_LEN = 256
#: the largest safetensors header read (the format allows 100 MB; a model's is a few kB per tensor)
_HEADER_LIMIT = 100_000_000


@dataclass
class Tokenizer:
    """The folder's ``tokenizer.json`` (a ``tokenizers`` Tokenizer) and the ids of its special tokens."""

    backend: object
    specials: dict[str, int | None]
    size: int


@dataclass
class ModelFolder:
    """What a model folder holds, read and checked (see the module doc)."""

    folder: Path
    meta: dict
    label_set: LabelSet
    mixed_case: dict[str, str]
    tokenizer: Tokenizer | None
    exported: bool
    #: tokens per window: the model's ``sequence.max_len`` (else ``params.max_len``), else
    #: :data:`DEFAULT_MAX_LEN` within the positions
    max_len: int
    max_len_given: bool = True
    #: a checkpoint's encoder config (encoder/config.json)
    encoder_config: dict = field(default_factory=dict)
    #: a checkpoint's tensor shapes (the header of model.safetensors)
    shapes: dict[str, list[int]] = field(default_factory=dict)

    @property
    def meta_path(self) -> Path:
        return self.folder / META

    @property
    def graph(self) -> Path:
        return self.folder / self.meta["onnx"]["file"]

    @property
    def case_labels(self) -> list[str] | None:
        return list(self.meta["case_labels"]) if self.meta.get("case_labels") else None

    def check_outputs(self, widths: dict[str, object]) -> None:
        """An exported graph's outputs (name: last dimension, a number or a symbolic name) against
        the labels and case labels of punctuation.json."""
        if "logits" not in widths:
            raise ModelFolderError(f"{self.graph}: the graph has no output 'logits' (its outputs: {sorted(widths)})")
        _same_width(self.meta_path, "labels", len(self.label_set.labels), widths["logits"], f"{self.graph}: logits")
        case = self.case_labels
        if case is None and "case_logits" in widths:
            raise ModelFolderError(f"{self.meta_path}: case_labels: none, but {self.graph} has a case head")
        if case is not None:
            if "case_logits" not in widths:
                raise ModelFolderError(f"{self.meta_path}: case_labels: {self.graph} has no case head")
            _same_width(self.meta_path, "case_labels", len(case), widths["case_logits"], f"{self.graph}: case_logits")


def read(folder, *, checkpoint: bool = False) -> ModelFolder:
    """The model folder ``folder`` read and checked (see the module doc); ``checkpoint`` refuses an
    exported folder (what only a trained checkpoint can give: export, resume)."""
    folder = Path(folder)
    meta_path = folder / META
    if not meta_path.is_file():
        what = "does not exist" if not folder.exists() else f"is not a model folder (no {META})"
        raise ModelFolderError(f"{folder}: {what}")
    meta = read_json(meta_path, dict)
    exported = "onnx" in meta
    if exported and checkpoint:
        raise ModelFolderError(f"{folder}: an exported model (its {META} has an onnx entry): give the checkpoint")
    if exported:
        missing = [k for k in ("labels", "params", "sequence") if k not in meta]
        if missing or not isinstance(meta["onnx"], dict) or "file" not in meta["onnx"]:
            what = f"no {', '.join(missing)}" if missing else "its onnx entry names no file"
            raise ModelFolderError(f"{meta_path}: not an exported model's description ({what})")
    else:
        if meta.get("format") != FORMAT:
            raise ModelFolderError(f"{folder}: saved-model format {meta.get('format', 1)}, expected {FORMAT}: retrain")
        if meta.get("head") not in HEADS:
            raise ModelFolderError(f"{meta_path}: head: {meta.get('head')!r} is not one of {', '.join(HEADS)}")
    for key in ("params", "sequence"):
        if not isinstance(meta.get(key) or {}, dict):
            raise ModelFolderError(f"{meta_path}: {key}: expected a mapping, got {meta[key]!r}")
    label_set = model_labels(meta, meta_path)
    case = meta.get("case_labels")
    if case is not None and (not isinstance(case, list) or not set(case) <= set(CASE_LABELS) or not case):
        raise ModelFolderError(f"{meta_path}: case_labels: {case!r} is not a list of {', '.join(CASE_LABELS)}")
    params, sequence = meta.get("params") or {}, meta.get("sequence") or {}
    max_len = sequence.get("max_len") or params.get("max_len")
    if max_len is not None and (isinstance(max_len, bool) or not isinstance(max_len, int) or max_len < 3):
        raise ModelFolderError(f"{meta_path}: sequence.max_len: {max_len!r} is not a whole number of at least 3")
    lexicon = folder / "mixed_case.json"
    mixed_case = read_json(lexicon, dict) if lexicon.is_file() else {}
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in mixed_case.items()):
        raise ModelFolderError(f"{lexicon}: expected an object of words to their surface forms")
    model = ModelFolder(folder, meta, label_set, mixed_case, None, exported, max_len or DEFAULT_MAX_LEN)
    model.max_len_given = max_len is not None
    if exported:
        model.tokenizer = read_tokenizer(folder / "tokenizer")
        _check_exported(model)
    else:
        tokenizer = folder / "tokenizer"
        model.tokenizer = read_tokenizer(tokenizer) if (tokenizer / "tokenizer.json").is_file() else None
        _check_checkpoint(model)
    return model


def read_json(path: Path, kind: type | None = None):
    """The JSON in ``path``; ModelFolderError naming it when unreadable, not JSON or not a ``kind``."""
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        raise ModelFolderError(f"{path}: not readable JSON ({exc})") from None
    if kind is not None and not isinstance(value, kind):
        raise ModelFolderError(f"{path}: expected a JSON {'object' if kind is dict else kind.__name__}")
    return value


def read_tokenizer(folder: Path) -> Tokenizer:
    """A tokenizer folder by ``tokenizers`` alone: ``tokenizer.json`` and the special tokens its
    config files name, each checked to be a token of its vocabulary."""
    from tokenizers import Tokenizer as Backend

    path = folder / "tokenizer.json"
    try:
        backend = Backend.from_file(str(path))
    except Exception as exc:  # tokenizers raises a bare Exception for a missing or unreadable file
        reason = (str(exc).splitlines() or [type(exc).__name__])[0]
        raise ModelFolderError(f"{path}: not a readable tokenizer ({reason})") from None
    specials: dict[str, int | None] = {}
    for name in ("special_tokens_map.json", "tokenizer_config.json"):
        if not (folder / name).is_file():
            continue
        config = read_json(folder / name, dict)
        for key in SPECIAL_TOKENS:
            token = config.get(key)
            if isinstance(token, dict):
                token = token.get("content")
            if token is None:
                continue
            token_id = backend.token_to_id(token) if isinstance(token, str) else None
            if token_id is None:
                raise ModelFolderError(f"{folder / name}: {key}: {token!r} is not a token of {path.name}")
            specials[key] = token_id
    return Tokenizer(backend, {key: specials.get(key) for key in SPECIAL_TOKENS}, backend.get_vocab_size(True))


def read_safetensors_header(path: Path) -> dict[str, list[int]]:
    """The shape of each tensor in a safetensors file, from its header alone."""
    try:
        with open(path, "rb") as f:
            head = f.read(8)
            length = struct.unpack("<Q", head)[0] if len(head) == 8 else -1
            if not 0 < length <= _HEADER_LIMIT:
                raise ValueError("no safetensors header")
            header = json.loads(f.read(length))
        return {name: list(entry["shape"]) for name, entry in header.items() if name != "__metadata__"}
    except FileNotFoundError:
        raise ModelFolderError(f"{path}: missing") from None
    except (OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else "not a safetensors file"
        raise ModelFolderError(f"{path}: cannot load ({reason})") from None


def _same_width(meta_path: Path, key: str, count: int, width, where: str) -> None:
    if isinstance(width, int) and width != count:
        raise ModelFolderError(f"{meta_path}: {key}: {count} labels, but {where} has {width} outputs")


def _first(shapes: dict[str, list[int]], pattern: str) -> tuple[str, list[int]] | None:
    for name in sorted(shapes):
        if re.fullmatch(pattern, name):
            return name, shapes[name]
    return None


def _check_checkpoint(model: ModelFolder) -> None:
    folder, meta_path = model.folder, model.meta_path
    config_path = folder / "encoder" / "config.json"
    if not config_path.is_file():
        raise ModelFolderError(f"{folder / 'encoder'}: no readable encoder config (config.json is missing)")
    model.encoder_config = config = read_json(config_path, dict)
    weights = folder / "model.safetensors"
    model.shapes = shapes = read_safetensors_header(weights)
    for key, tensor, count in (
        ("labels", "classifier.weight", len(model.label_set.labels)),
        ("case_labels", "case_classifier.weight", len(model.case_labels or [])),
    ):
        shape = shapes.get(tensor)
        if key == "case_labels" and (shape is None) != (model.case_labels is None):
            has = "no case head" if shape is None else "a case head"
            raise ModelFolderError(f"{meta_path}: case_labels: {model.case_labels}, but {weights} has {has}")
        if shape is not None:
            _same_width(meta_path, key, count, shape[0], f"{weights}: {tensor}")
    rows, where, usable, pos_where = _embeddings(model)
    _check_inputs(model, rows, where, usable, pos_where)
    pad = config.get("pad_token_id")
    ours = model.tokenizer.specials.get("pad_token") if model.tokenizer else None
    if isinstance(pad, int) and ours is not None and ours != pad:
        raise ModelFolderError(
            f"{folder / 'tokenizer'}: pad_token: id {ours}, but {config_path}: pad_token_id is {pad} "
            "(a tokenizer of another model?)"
        )


def _embeddings(model: ModelFolder) -> tuple[int | None, str, int | None, str]:
    """A checkpoint's embedding rows and usable positions, each with where it was read."""
    shapes, config = model.shapes, model.encoder_config
    weights, config_path = model.folder / "model.safetensors", model.folder / "encoder" / "config.json"
    words = _first(shapes, r"encoder\.(.*\.)?word_embeddings\.weight")
    rows = words[1][0] if words else config.get("vocab_size")
    where = f"{weights}: {words[0]}" if words else f"{config_path}: vocab_size"
    positions = _first(shapes, r"encoder\.(.*\.)?position_embeddings\.weight")
    usable = positions[1][0] if positions else config.get("max_position_embeddings")
    if isinstance(usable, int) and config.get("model_type") in PADDING_OFFSET_POSITIONS:
        usable -= int(config.get("pad_token_id") or 0) + 1
    pos_where = f"{weights}: {positions[0]}" if positions else f"{config_path}: max_position_embeddings"
    return rows, where, usable, pos_where


def _check_exported(model: ModelFolder) -> None:
    meta_path, entry = model.meta_path, model.meta["onnx"]
    if not model.graph.is_file():
        raise ModelFolderError(f"{model.graph}: cannot load the ONNX model (missing)")
    crf = model.meta.get("crf")
    if crf is not None:
        n = len(model.label_set.labels)
        try:
            shapes = {k: _shape(crf[k]) for k in ("transitions", "start", "end")}
        except (KeyError, TypeError):
            raise ModelFolderError(f"{meta_path}: crf: expected transitions, start and end scores") from None
        if shapes != {"transitions": (n, n), "start": (n,), "end": (n,)}:
            raise ModelFolderError(f"{meta_path}: crf: scores of shapes {shapes}, for {n} labels")
    embeddings = entry.get("embeddings") or {}
    where = f"{meta_path}: onnx.embeddings"
    _check_inputs(model, embeddings.get("tokens"), f"{where}.tokens", embeddings.get("positions"), f"{where}.positions")
    recorded = entry.get("special_tokens") or {}
    tokenizer = model.tokenizer
    for key, token_id in recorded.items():
        if tokenizer.specials.get(key) != token_id:
            raise ModelFolderError(
                f"{model.folder / 'tokenizer'}: {key}: id {tokenizer.specials.get(key)}, but the model was "
                f"exported with {token_id} ({meta_path}: onnx.special_tokens; a tokenizer of another model?)"
            )


def _shape(value) -> tuple[int, ...]:
    if isinstance(value, list):
        inner = {_shape(v) for v in value}
        if len(inner) > 1:
            raise TypeError("ragged")
        return (len(value), *(inner.pop() if inner else ()))
    if isinstance(value, int | float) and not isinstance(value, bool):
        return ()
    raise TypeError("not a number")


def _check_inputs(model: ModelFolder, rows, rows_where: str, positions, positions_where: str) -> None:
    """The tokenizer's ids within ``rows`` embeddings, ``max_len`` within ``positions``."""
    tokenizer = model.tokenizer
    if tokenizer is not None and isinstance(rows, int):
        path = model.folder / "tokenizer" / "tokenizer.json"
        if tokenizer.size > rows:
            raise ModelFolderError(
                f"{path}: {tokenizer.size} tokens, but {rows_where} has {rows} rows (a tokenizer of another model?)"
            )
        for key, token_id in tokenizer.specials.items():
            if token_id is not None and token_id >= rows:
                raise ModelFolderError(f"{path}: {key}: id {token_id} is beyond {rows_where} ({rows} rows)")
    if isinstance(positions, int) and model.max_len > positions and not model.max_len_given:
        model.max_len = positions
    if isinstance(positions, int) and model.max_len > positions:
        raise ModelFolderError(
            f"{model.meta_path}: sequence.max_len: {model.max_len} tokens, but {positions_where} allows {positions}"
        )


def export_record(model: ModelFolder) -> dict:
    """What an exported folder records of its checkpoint for :func:`read` to check it against: the
    embeddings' rows and usable positions, and the ids of the tokenizer's special tokens."""
    rows, _, usable, _ = _embeddings(model)
    record = {
        "embeddings": {"tokens": rows, "positions": usable},
    }
    if model.tokenizer is not None:
        record["special_tokens"] = {k: v for k, v in model.tokenizer.specials.items() if v is not None}
    return record
