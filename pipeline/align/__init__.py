"""Alignment: reference punctuation and case carried onto ASR transcripts.

``alignment`` matches words (with numbers expanded to their spoken forms), aligns each pair of
documents, transfers marks and case, reports what it did, and runs as a sharded step over datasets.
"""

from pipeline._lazy import lazy_exports

__all__ = ["AlignReport", "align_datasets", "align_tables", "pair_documents"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "align_datasets": "alignment",
        "align_tables": "alignment",
        "pair_documents": "alignment",
        "AlignReport": "alignment",
    },
)
