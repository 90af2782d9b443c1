"""Model-ready sequences from labelled segments, and exports.

* ``chunk`` (Guerreiro 2021): consecutive segments of a document packed up to
  ``max_len`` subword tokens (special tokens included); chunk ends fall wherever
  the budget runs out, not at sentence ends, so a model cannot learn "the end
  of the input is a PERIOD".  ``stride`` > 0 makes consecutive chunks share that
  many words.
* ``segment``: each segment on its own (split into chunks if it is too long).
* ``slot_filling`` (Rao 2022): a mask token after every word; the labels sit on
  the masks.

Labels: each word's label on its *last* subword (the mark follows the word, so the
token nearest the gap decides it); -100 on every other token.  ``word_index`` gives,
for every token, the position of its word in the document (-1 for special and
mask tokens), so predictions map back to words.  A word the tokenizer turns into
no token (an empty word) becomes the unknown token, so no label is lost.
"""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from .labels import LABEL_TO_ID, LABELS, RENDERED_MARK

IGNORE = -100

SEQUENCE_SCHEMA = pa.schema(
    [
        pa.field("corpus", pa.string()),
        pa.field("lang", pa.string()),
        pa.field("split", pa.string()),
        pa.field("doc_id", pa.string()),
        pa.field("chunk_id", pa.int32()),
        pa.field("input_ids", pa.list_(pa.int32())),
        pa.field("attention_mask", pa.list_(pa.int8())),
        pa.field("labels", pa.list_(pa.int16())),
        pa.field("word_index", pa.list_(pa.int32())),
    ]
)


def word_pieces(tokenizer, words: list[str]) -> list[list[int]]:
    """Subword ids of each word (never empty: an untokenizable word is the unknown token)."""
    if not words:
        return []
    encoded = tokenizer(words, add_special_tokens=False, is_split_into_words=False)["input_ids"]
    unk = tokenizer.unk_token_id
    return [ids if ids else [unk] for ids in encoded]


def _chunks_of(pieces: list[list[int]], budget: int, stride: int) -> list[tuple[int, int]]:
    """Word ranges [start, end) whose tokens fit ``budget``; consecutive ranges overlap by ``stride`` words."""
    ranges, start, n = [], 0, len(pieces)
    while start < n:
        used, end = 0, start
        while end < n and used + len(pieces[end]) <= budget:
            used += len(pieces[end])
            end += 1
        if end == start:
            raise ValueError(f"a word of {len(pieces[start])} tokens does not fit max_len")
        ranges.append((start, end))
        if end >= n:
            break
        start = max(end - stride, start + 1)
    return ranges


def build_sequences(
    table: pa.Table, tokenizer, max_len: int = 256, mode: str = "chunk", stride: int = 0, slot_filling: bool = False
) -> tuple[pa.Table, Counter]:
    if mode not in ("chunk", "segment"):
        raise ValueError(f"mode must be chunk or segment, not {mode!r}")
    cls, sep = tokenizer.cls_token_id, tokenizer.sep_token_id
    specials = [t for t in (cls, sep) if t is not None]
    mask = tokenizer.mask_token_id
    if slot_filling and mask is None:
        raise ValueError("slot filling needs a tokenizer with a mask token")
    budget = max_len - len(specials)
    counts: Counter = Counter()
    rows = {name: [] for name in SEQUENCE_SCHEMA.names}
    groups: dict[tuple, list[int]] = {}
    for i, (doc, split) in enumerate(zip(table["doc_id"].to_pylist(), table["split"].to_pylist())):
        key = (doc, split) if mode == "chunk" else (doc, split, i)
        groups.setdefault(key, []).append(i)
    all_words, all_labels = table["words"].to_pylist(), table["labels"].to_pylist()
    corpora, langs = table["corpus"].to_pylist(), table["lang"].to_pylist()
    # position of each row's first word inside its document
    row_offset, seen_words = [], Counter()
    for doc, split, words in zip(table["doc_id"].to_pylist(), table["split"].to_pylist(), all_words):
        row_offset.append(seen_words[(doc, split)])
        seen_words[(doc, split)] += len(words)
    for key, row_ids in groups.items():
        words = [w for r in row_ids for w in all_words[r]]
        labels = [l for r in row_ids for l in all_labels[r]]
        first = row_ids[0]
        base = row_offset[first]  # word positions count from the start of the document
        pieces = word_pieces(tokenizer, words)
        if slot_filling:
            pieces = [[*p, mask] for p in pieces]
        for chunk_no, (start, end) in enumerate(_chunks_of(pieces, budget, stride) if words else []):
            ids, labs, index = (
                ([cls] if cls is not None else []),
                ([IGNORE] if cls is not None else []),
                ([-1] if cls is not None else []),
            )
            for w in range(start, end):
                p = pieces[w]
                ids += p
                if slot_filling:
                    labs += [IGNORE] * (len(p) - 1) + [LABEL_TO_ID[labels[w]]]
                    index += [base + w] * (len(p) - 1) + [-1]
                else:
                    labs += [IGNORE] * (len(p) - 1) + [LABEL_TO_ID[labels[w]]]
                    index += [base + w] * len(p)
            if sep is not None:
                ids.append(sep)
                labs.append(IGNORE)
                index.append(-1)
            rows["corpus"].append(corpora[first])
            rows["lang"].append(langs[first])
            rows["split"].append(key[1])
            rows["doc_id"].append(key[0])
            rows["chunk_id"].append(chunk_no if mode == "chunk" else first * 1000 + chunk_no)
            rows["input_ids"].append(ids)
            rows["attention_mask"].append([1] * len(ids))
            rows["labels"].append(labs)
            rows["word_index"].append(index)
            counts["chunks"] += 1
            counts["tokens"] += len(ids)
        counts["words"] += len(words)
    return pa.table(rows, schema=SEQUENCE_SCHEMA), counts


def words_from_sequences(sequences: pa.Table, tokenizer) -> dict[tuple[str, str], list[tuple[int, str]]]:
    """(doc, split) -> [(word position, label)] recovered from the sequences (first chunk wins)."""
    out: dict[tuple[str, str], dict[int, str]] = {}
    for doc, split, labels, index in zip(
        sequences["doc_id"].to_pylist(),
        sequences["split"].to_pylist(),
        sequences["labels"].to_pylist(),
        sequences["word_index"].to_pylist(),
    ):
        seen = out.setdefault((doc, split), {})
        last_word = None
        for label, word in zip(labels, index):
            if label != IGNORE:
                w = word if word >= 0 else last_word
                seen.setdefault(w, LABELS[label])
            if word >= 0:
                last_word = word
    return {k: sorted(v.items()) for k, v in out.items()}


def export_tsv(table: pa.Table) -> str:
    """xashru/punctuation-restoration format: ``word<TAB>LABEL`` per line."""
    return "".join(
        f"{w}\t{l}\n"
        for words, labels in zip(table["words"].to_pylist(), table["labels"].to_pylist())
        for w, l in zip(words, labels)
    )


def export_nemo(table: pa.Table) -> tuple[str, str]:
    """NeMo punctuation-capitalization format: text.txt and labels.txt (punctuation + case per word;
    the text is lowercased, so case is O)."""
    text, labels = [], []
    for words, labs in zip(table["words"].to_pylist(), table["labels"].to_pylist()):
        if not words:
            continue
        text.append(" ".join(words))
        labels.append(" ".join((RENDERED_MARK[l] or "O") + "O" for l in labs))
    return "\n".join(text) + "\n", "\n".join(labels) + "\n"


def train_tokenizer(words, vocab_size: int = 2000, lowercase: bool = False):
    """A BPE tokenizer trained on the corpus (offline default), as a transformers fast tokenizer.

    BPE, not WordPiece: the WordPiece trainer of ``tokenizers`` numbers its ``##``
    pieces in hash-map order, so the same words give a different vocabulary on
    every run (huggingface/tokenizers#1794); plain BPE numbers pieces from the
    sorted alphabet and its merges, and is the same every run (tested)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    tok = Tokenizer(models.BPE(unk_token="[UNK]"))
    tok.normalizer = normalizers.Sequence([normalizers.NFC()] + ([normalizers.Lowercase()] if lowercase else []))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=specials, min_frequency=1, show_progress=False)
    tok.train_from_iterator(words, trainer=trainer)
    return PreTrainedTokenizerFast(
        tokenizer_object=tok,
        unk_token="[UNK]",
        pad_token="[PAD]",
        cls_token="[CLS]",
        sep_token="[SEP]",
        mask_token="[MASK]",
    )
