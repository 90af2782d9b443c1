"""Reference implementations the streaming, vectorized code is tested against: the plain,
in-memory versions of the same rules (test oracles, not used by the pipeline)."""

from __future__ import annotations

from collections import Counter

import pyarrow as pa

from pipeline.datasets.sequences import IGNORE, SEQUENCE_SCHEMA
from pipeline.labels import CASE_TO_ID, LABEL_TO_ID


def word_pieces(tokenizer, words: list[str]) -> list[list[int]]:
    """Subword ids of each word through the tokenizer's own call (never empty: unknown token)."""
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


def build_sequences_reference(
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
    all_case = table["case"].to_pylist()
    seg_ids = table["seg_id"].to_pylist()
    corpora, langs = table["corpus"].to_pylist(), table["lang"].to_pylist()
    # position of each row's first word inside its document
    row_offset, seen_words = [], Counter()
    for doc, split, words in zip(table["doc_id"].to_pylist(), table["split"].to_pylist(), all_words):
        row_offset.append(seen_words[(doc, split)])
        seen_words[(doc, split)] += len(words)
    for key, row_ids in groups.items():
        words = [w for r in row_ids for w in all_words[r]]
        labels = [l for r in row_ids for l in all_labels[r]]
        cases = [c for r in row_ids for c in all_case[r]]
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
            case_labs = [IGNORE] if cls is not None else []
            for w in range(start, end):
                p = pieces[w]
                ids += p
                case_labs += [IGNORE] * (len(p) - 1) + [CASE_TO_ID[cases[w]]]
                if slot_filling:
                    labs += [IGNORE] * (len(p) - 1) + [LABEL_TO_ID[labels[w]]]
                    index += [base + w] * (len(p) - 1) + [-1]
                else:
                    labs += [IGNORE] * (len(p) - 1) + [LABEL_TO_ID[labels[w]]]
                    index += [base + w] * len(p)
            if sep is not None:
                ids.append(sep)
                labs.append(IGNORE)
                case_labs.append(IGNORE)
                index.append(-1)
            rows["corpus"].append(corpora[first])
            rows["lang"].append(langs[first])
            rows["split"].append(key[1])
            rows["doc_id"].append(key[0])
            rows["chunk_id"].append(chunk_no if mode == "chunk" else seg_ids[first] * 1000 + chunk_no)
            rows["input_ids"].append(ids)
            rows["labels"].append(labs)
            rows["case_labels"].append(case_labs)
            rows["word_index"].append(index)
            counts["chunks"] += 1
            counts["tokens"] += len(ids)
        counts["words"] += len(words)
    return pa.table(rows, schema=SEQUENCE_SCHEMA), counts
