"""Punctuation for applications: ``Punctuator.load(folder)`` on a trained checkpoint (the train
stage's folder, run by torch) or on an exported one (``punct-corpora export-model``, run by ONNX
Runtime without importing torch or transformers).

>>> p = Punctuator.load("models/minilm-onnx")
>>> p.punctuate(["so how are you today i am fine"])
['so how are you today? i am fine.']
>>> stream = p.stream()
>>> stream.feed("so how are you") + stream.feed(" today i am fine") + stream.flush()

Both runtimes share everything but the forward pass: words are tokenized by ``tokenizers`` from the
model's ``tokenizer.json``; text longer than a window is cut into overlapping windows of at most
``window`` words and ``max_len`` tokens; windows of all texts are batched by tokens (rows sorted
by length, a batch holding at most ``batch_tokens`` padded tokens); a word seen by several windows
takes the average of their label probabilities weighted by its distance from each window's cut
edges, so the seams get the decision of the windows that saw the most context on both sides.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from pipeline.errors import InputError, ParamsError
from pipeline.labels import LabelSet, model_labels
from pipeline.text.case import restore_case
from pipeline.training import model_folder
from pipeline.training.model_folder import META, ONNX_FILE

__all__ = [
    "META",
    "ONNX_FILE",
    "OnnxRunner",
    "Prediction",
    "Punctuator",
    "Stream",
    "TorchRunner",
    "WordPieces",
    "segments_of",
]


@dataclass
class Prediction:
    """One text's words and, per word, the label, its probability (``confidence``) and the whole
    distribution over ``label_names`` (rows of ``probabilities``); the same for case with a case head."""

    words: list[str]
    labels: list[str]
    confidence: np.ndarray
    probabilities: np.ndarray
    label_names: list[str]
    label_set: LabelSet
    cases: list[str] | None = None
    case_confidence: np.ndarray | None = None
    case_probabilities: np.ndarray | None = None
    case_names: list[str] | None = None
    cased_words: list[str] = field(default_factory=list)
    script: str | None = None  # the script whose marks the label set renders (None: its plain ones)

    @property
    def text(self) -> str:
        from pipeline.text.labelling import render

        return render(self.cased_words or self.words, self.labels, self.label_set, self.script)

    def records(self, digits: int = 4) -> list[dict]:
        """Per word: the word (cased, with a case head), its label, confidence and distribution."""
        out = []
        words = self.cased_words or self.words
        for i, word in enumerate(words):
            record = {
                "word": word,
                "label": self.labels[i],
                "confidence": round(float(self.confidence[i]), digits),
                "probabilities": {
                    name: round(float(p), digits) for name, p in zip(self.label_names, self.probabilities[i])
                },
            }
            if self.cases is not None:
                record["case"] = self.cases[i]
                record["case_confidence"] = round(float(self.case_confidence[i]), digits)
            out.append(record)
        return out


class WordPieces:
    """A model's subword ids per word, by ``tokenizers`` alone from its tokenizer folder (the same ids
    the sequences stage packs: each word encoded on its own without special tokens; a word with no
    pieces is the unknown token)."""

    def __init__(self, backend, cls: int | None, sep: int | None, mask: int | None, unk: int | None, pad: int | None):
        self.backend = backend
        # sentence-transformers' tokenizer.json pads every encoding to 128 and truncates: not per word
        self.backend.no_padding()
        self.backend.no_truncation()
        self.cls, self.sep, self.mask, self.unk, self.pad = cls, sep, mask, unk, pad or 0
        self.cache: dict[str, list[int]] = {}

    @classmethod
    def from_tokenizer(cls, tokenizer) -> WordPieces:
        """From a transformers fast tokenizer (a copy of its backend: its padding stays as it was)."""
        from tokenizers import Tokenizer

        fast = getattr(tokenizer, "backend_tokenizer", None)
        backend = Tokenizer.from_str(fast.to_str()) if fast is not None else _SlowBackend(tokenizer)
        t = tokenizer
        return cls(backend, t.cls_token_id, t.sep_token_id, t.mask_token_id, t.unk_token_id, t.pad_token_id)

    @classmethod
    def from_folder(cls, folder: Path) -> WordPieces:
        """From a tokenizer folder: ``tokenizer.json`` and the special tokens its config files name."""
        return cls.from_files(model_folder.read_tokenizer(Path(folder)))

    @classmethod
    def from_files(cls, tokenizer: model_folder.Tokenizer) -> WordPieces:
        """From a model folder's tokenizer, as :mod:`pipeline.training.model_folder` read it."""
        names = model_folder.SPECIAL_TOKENS  # cls, sep, mask, unk, pad: this class's order
        return cls(tokenizer.backend, *(tokenizer.specials.get(name) for name in names))

    def __call__(self, words: list[str]) -> list[list[int]]:
        missing = [w for w in dict.fromkeys(words) if w not in self.cache]
        if missing:
            if len(self.cache) > 1_000_000:  # bounded: a stream that runs for days
                self.cache.clear()
            unk = [self.unk] if self.unk is not None else []
            for word, encoding in zip(missing, self.backend.encode_batch(missing, add_special_tokens=False)):
                self.cache[word] = encoding.ids or unk
        return [self.cache[w] for w in words]


class _SlowBackend:
    """A Python tokenizer (no tokenizer.json) behind the few calls WordPieces makes of a backend."""

    def __init__(self, tokenizer):
        self.tokenizer = tokenizer

    def no_padding(self) -> None:
        pass

    def no_truncation(self) -> None:
        pass

    def encode_batch(self, words: list[str], add_special_tokens: bool = False):
        from types import SimpleNamespace

        ids = self.tokenizer(words, add_special_tokens=add_special_tokens)["input_ids"]
        return [SimpleNamespace(ids=row) for row in ids]


class OnnxRunner:
    """The exported graph through ONNX Runtime on the CPU: logits (and case logits) as numpy arrays.
    Its outputs' widths are checked against the folder's labels when it is loaded."""

    def __init__(self, model: model_folder.ModelFolder, threads: int = 0):
        import onnxruntime as ort

        path = model.graph
        # ONNX Runtime's own log lines (warnings about unused initializers, a failing node's error,
        # which the exception says again) only under -v: errors reach the user as one line
        severity = 2 if logging.getLogger().isEnabledFor(logging.DEBUG) else 4
        ort.set_default_logger_severity(severity)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.log_severity_level = severity
        try:
            self.session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # onnxruntime's own exception types: a missing or broken graph file
            raise InputError(f"{path}: cannot load the ONNX model ({str(exc).splitlines()[0]})") from None
        outputs = self.session.get_outputs()
        model.check_outputs({o.name: (o.shape[-1] if o.shape else None) for o in outputs})
        self.names = [o.name for o in outputs]
        self.device = "cpu (onnxruntime)"

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray):
        out = dict(zip(self.names, self.session.run(None, {"input_ids": input_ids, "attention_mask": attention_mask})))
        return out["logits"], out.get("case_logits")


class TorchRunner:
    """A checkpoint's model through torch (bf16 autocast on CUDA when it was trained so)."""

    def __init__(self, model, device: str, bf16: bool):
        self.model, self.device, self.bf16 = model, device, bf16

    def __call__(self, input_ids: np.ndarray, attention_mask: np.ndarray):
        import torch

        from pipeline.training.loop import _autocast

        with torch.no_grad(), _autocast(self.device, self.bf16):
            out = self.model(
                torch.from_numpy(input_ids).to(self.device), torch.from_numpy(attention_mask).to(self.device)
            )
        case = out.get("case_logits")
        return out["logits"].float().cpu().numpy(), (case.float().cpu().numpy() if case is not None else None)


def _softmax(x: np.ndarray) -> np.ndarray:
    x = x - x.max(axis=-1, keepdims=True)
    e = np.exp(x)
    return e / e.sum(axis=-1, keepdims=True)


def viterbi(log_probs: np.ndarray, transitions: np.ndarray, start: np.ndarray, end: np.ndarray) -> list[int]:
    """The best label path of a linear-chain CRF over per-word scores (n, L)."""
    n = len(log_probs)
    if n == 0:
        return []
    score = start + log_probs[0]
    back = []
    for t in range(1, n):
        total = score[:, None] + transitions + log_probs[t][None, :]
        back.append(total.argmax(0))
        score = total.max(0)
    best = [int((score + end).argmax())]
    for idx in reversed(back):
        best.append(int(idx[best[-1]]))
    return best[::-1]


class Punctuator:
    """Punctuation (and case, with a case head) for lists of texts and for streams; see the module doc."""

    def __init__(
        self,
        runner,
        pieces: WordPieces,
        meta: dict,
        lang: str | None = None,
        window: int = 200,
        overlap: int = 50,
        batch_tokens: int = 8192,
        batch_size: int = 64,
    ):
        if window < 1 or not 0 <= overlap < window:
            raise ParamsError(f"overlap ({overlap}) must be at least 0 and smaller than the window ({window})")
        if batch_tokens < 1 or batch_size < 1:
            raise ParamsError(f"batch_tokens ({batch_tokens}) and batch_size ({batch_size}) must be at least 1")
        self.runner, self.pieces, self.meta = runner, pieces, meta
        params, sequence = meta.get("params") or {}, meta.get("sequence") or {}
        self.lang = lang or params.get("lang") or "en"
        self.max_len = int(sequence.get("max_len") or params.get("max_len") or 256)
        self.slot_filling = bool(sequence.get("slot_filling", False))
        if self.slot_filling and pieces.mask is None:
            raise InputError("slot filling needs a tokenizer with a mask token (tokenizer_config.json names none)")
        self.label_set = model_labels(meta, META)  # the model's labels, and the marks they render
        self.label_names = list(self.label_set.labels)
        self.case_names = list(meta["case_labels"]) if meta.get("case_labels") else None
        self.crf = {k: np.asarray(v, np.float64) for k, v in meta["crf"].items()} if meta.get("crf") else None
        self.mixed_case = meta.get("mixed_case") or {}
        self.window, self.overlap = window, overlap
        self.batch_tokens, self.batch_size = batch_tokens, batch_size
        self._language = None

    @property
    def device(self) -> str:
        return self.runner.device

    @property
    def script(self) -> str | None:
        """The script of the language, where the model's label set has marks of its own for it."""
        if not self.label_set.script_marks:
            return None
        from pipeline.text.languages import get_language

        scripts = get_language(self.lang).scripts
        return scripts[0] if scripts else None

    @classmethod
    def load(cls, folder, device: str = "cpu", threads: int = 0, **options) -> Punctuator:
        """A checkpoint folder (torch) or an exported one (ONNX Runtime; ``device`` must be the CPU),
        its files read and checked first (:func:`pipeline.training.model_folder.read`)."""
        model = model_folder.read(folder)
        if model.tokenizer is None:  # a checkpoint with a Python tokenizer only
            raise InputError(f"{model.folder / 'tokenizer' / 'tokenizer.json'}: missing")
        if model.exported:
            if device not in ("cpu", "auto"):
                raise ParamsError(f"--device {device}: an exported ONNX model runs on the CPU here")
            meta = {**model.meta, "mixed_case": model.mixed_case}
            runner = OnnxRunner(model, threads)
        else:
            runner, meta = cls._torch_runner(model, device)
        meta["sequence"] = {**(meta.get("sequence") or {}), "max_len": model.max_len}  # as checked
        return cls(runner, WordPieces.from_files(model.tokenizer), meta, **options)

    @staticmethod
    def _torch_runner(model: model_folder.ModelFolder, device: str):
        import torch

        from pipeline.training.loop import device_of
        from pipeline.training.model import load_checkpoint

        device = device_of(device)
        if device.startswith("cuda") and not torch.cuda.is_available():
            raise ParamsError(f"--device {device}: no CUDA device is available")
        network, _, meta = load_checkpoint(model, device)
        bf16 = device.startswith("cuda") and (meta.get("params") or {}).get("precision", "bf16") == "bf16"
        if getattr(network, "crf", None) is not None:
            meta["crf"] = crf_arrays(network.crf)
        return TorchRunner(network, device, bf16), meta

    # -- text in, text out --------------------------------------------------------------------

    def words_of(self, text: str) -> list[str]:
        """The words of raw text as training saw them: normalized, marks already in it dropped."""
        from pipeline.text.labelling import label_lines
        from pipeline.text.languages import get_language

        if self._language is None:
            self._language = get_language(self.lang)
        labelled = label_lines(self._language.normalize_text(text), self._language)
        return [w for line in labelled.words.to_pylist() for w in line]

    def punctuate(self, texts: list[str], join: bool = False) -> list[str]:
        """Each text punctuated (and cased, with a case head): each of its lines a segment of its
        own, punctuated as one line (so the text keeps its lines); with ``join`` the whole text is one
        running text, given back as one line."""
        if isinstance(texts, str):
            raise TypeError("punctuate takes a list of texts")
        segments = [segments_of(text, join) for text in texts]
        predictions = iter(self.predict_many([self.words_of(s) for lines in segments for s in lines]))
        return ["\n".join(next(predictions).text for _ in lines) for lines in segments]

    def stream(self, right_context: int = 16, left_context: int | None = None) -> Stream:
        """A stream of partial transcripts: see :class:`Stream`."""
        return Stream(self, right_context, self.overlap if left_context is None else left_context)

    # -- words in, labels out ------------------------------------------------------------------

    def predict(self, words: list[str]) -> Prediction:
        return self.predict_many([words])[0]

    def _windows(self, costs: np.ndarray) -> list[tuple[int, int]]:
        """(start, end) word ranges: at most ``window`` words and the token budget, consecutive ones
        sharing ``overlap`` words (fewer where the tokens made a window short, so that each advances)."""
        n = len(costs)
        budget = self.max_len - (self.pieces.cls is not None) - (self.pieces.sep is not None)
        big = np.flatnonzero(costs > budget)
        if len(big):
            raise InputError(f"word {int(big[0]) + 1} has {int(costs[big[0]])} tokens: it does not fit max_len")
        prefix = np.r_[0, np.cumsum(costs)]
        windows, start = [], 0
        while True:
            end = min(start + self.window, n, int(np.searchsorted(prefix, prefix[start] + budget, side="right")) - 1)
            windows.append((start, end))
            if end >= n:
                return windows
            start = max(end - min(self.overlap, (end - start) // 2), start + 1)

    def predict_many(self, texts: list[list[str]]) -> list[Prediction]:
        """Labels of each word list; the windows of all texts batched together."""
        rows = []  # (text, start, end, ids, label positions)
        for t, words in enumerate(texts):
            if not words:
                continue
            pieces = self.pieces(words)
            costs = np.fromiter((len(p) + self.slot_filling for p in pieces), np.int64, len(pieces))
            for start, end in self._windows(costs):
                ids = [self.pieces.cls] if self.pieces.cls is not None else []
                positions = []
                for piece in pieces[start:end]:
                    ids += piece
                    if self.slot_filling:
                        ids.append(self.pieces.mask)
                    positions.append(len(ids) - 1)  # a word's label sits on its last token (or its mask)
                if self.pieces.sep is not None:
                    ids.append(self.pieces.sep)
                rows.append((t, start, end, ids, positions))
        n_labels, n_cases = len(self.label_names), len(self.case_names or [])
        probs = [np.zeros((len(w), n_labels)) for w in texts]
        case_probs = [np.zeros((len(w), n_cases)) for w in texts]
        weights = [np.zeros(len(w)) for w in texts]
        order = sorted(range(len(rows)), key=lambda r: -len(rows[r][3]))
        k = 0
        while k < len(order):
            longest = len(rows[order[k]][3])
            take = max(1, min(self.batch_size, self.batch_tokens // longest))
            batch = [rows[r] for r in order[k : k + take]]
            k += take
            ids = np.full((len(batch), longest), self.pieces.pad, np.int64)
            mask = np.zeros((len(batch), longest), np.int64)
            for b, row in enumerate(batch):
                ids[b, : len(row[3])] = row[3]
                mask[b, : len(row[3])] = 1
            logits, case_logits = self.runner(ids, mask)
            for b, (t, start, end, _, positions) in enumerate(batch):
                n = len(texts[t])
                at = np.arange(start, end)
                # weight: 1 + distance to the nearer cut edge (the text's own ends are no cut)
                left = np.where(start > 0, at - start, n)
                right = np.where(end < n, end - 1 - at, n)
                weight = 1.0 + np.minimum(left, right).astype(np.float64)
                probs[t][at] += weight[:, None] * _softmax(logits[b, positions].astype(np.float64))
                if case_logits is not None and n_cases:
                    case_probs[t][at] += weight[:, None] * _softmax(case_logits[b, positions].astype(np.float64))
                weights[t][at] += weight
        return [self._decide(words, p, c, w) for words, p, c, w in zip(texts, probs, case_probs, weights)]

    def _decide(self, words, probs, case_probs, weights) -> Prediction:
        if len(words):
            probs = probs / weights[:, None]
        if self.crf is not None:
            ids = viterbi(np.log(np.maximum(probs, 1e-12)), self.crf["transitions"], self.crf["start"], self.crf["end"])
            ids = np.asarray(ids, np.int64)
        else:
            ids = probs.argmax(-1) if len(words) else np.zeros(0, np.int64)
        labels = [self.label_names[i] for i in ids.tolist()]
        result = Prediction(
            words=list(words),
            labels=labels,
            confidence=probs[np.arange(len(ids)), ids] if len(words) else np.zeros(0),
            probabilities=probs,
            label_names=self.label_names,
            label_set=self.label_set,
            script=self.script,
        )
        if self.case_names:
            if len(words):
                case_probs = case_probs / weights[:, None]
            case_ids = case_probs.argmax(-1) if len(words) else np.zeros(0, np.int64)
            result.cases = [self.case_names[i] for i in case_ids.tolist()]
            result.case_confidence = case_probs[np.arange(len(case_ids)), case_ids] if len(words) else np.zeros(0)
            result.case_probabilities = case_probs
            result.case_names = self.case_names
            result.cased_words = restore_case(list(words), result.cases, self.mixed_case)
        return result


def segments_of(text: str, join: bool = False) -> list[str]:
    """The segments of a text: its lines (``\\n`` or ``\\r\\n`` ended; the last may end without one),
    or with ``join`` the whole text as one."""
    if join:
        return [text]
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()  # the newline that ends the last line starts no line of its own
    return [line[:-1] if line.endswith("\r") else line for line in lines]


def crf_arrays(crf) -> dict[str, list]:
    """A CRF module's transition, start and end scores as lists (saved beside an exported graph)."""
    return {
        "transitions": crf.transitions.detach().cpu().double().tolist(),
        "start": crf.start.detach().cpu().double().tolist(),
        "end": crf.end.detach().cpu().double().tolist(),
    }


class Stream:
    """Partial transcripts in, final punctuated text out.

    ``feed(chunk)`` takes the next words of the transcript as they arrive (a chunk ends at a word
    boundary) and returns the text that became final: the words followed by at least
    ``right_context`` words, decided with up to ``left_context`` words already given out before
    them; ``flush()`` decides and returns the rest at the end of the stream.  The pieces returned
    concatenate into the whole text (each but the first starts with a space)."""

    def __init__(self, punctuator: Punctuator, right_context: int = 16, left_context: int = 50):
        if right_context < 0 or left_context < 0:
            raise ParamsError("right_context and left_context must be at least 0")
        self.punctuator, self.right_context, self.left_context = punctuator, right_context, left_context
        self.context: list[str] = []  # words already given out, the left context of the next ones
        self.pending: list[str] = []
        self.started = False

    def feed(self, chunk: str) -> str:
        self.pending += self.punctuator.words_of(chunk)
        return self._emit(len(self.pending) - self.right_context)

    def flush(self) -> str:
        return self._emit(len(self.pending))

    def _emit(self, count: int) -> str:
        if count <= 0:
            return ""
        words = self.context + self.pending
        prediction = self.punctuator.predict(words)
        first = len(self.context)
        from pipeline.text.labelling import render

        shown = (prediction.cased_words or prediction.words)[first : first + count]
        text = render(shown, prediction.labels[first : first + count], prediction.label_set, prediction.script)
        if self.started:
            text = " " + text
        self.started = True
        done, self.pending = self.pending[:count], self.pending[count:]
        self.context = (self.context + done)[-self.left_context :] if self.left_context else []
        return text
