"""Alignment: reference punctuation and case carried onto ASR transcripts.

``alignment`` matches words (with numbers expanded to their spoken forms), aligns each pair of
documents, transfers marks and case, reports what it did, and runs as a sharded step over datasets;
``pairing`` decides which documents are aligned together (by id, by order, or a pairs file).
"""

from pipeline._lazy import lazy_exports

__all__ = ["AlignReport", "Pairing", "align_datasets", "align_tables", "pair", "read_pairs"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "align_datasets": "alignment",
        "align_tables": "alignment",
        "AlignReport": "alignment",
        "Pairing": "pairing",
        "pair": "pairing",
        "read_pairs": "pairing",
    },
)
