"""Alignment: reference punctuation and case carried onto ASR transcripts.

``matching`` pairs the words of a document (with numbers expanded to their spoken forms),
``transfer`` moves marks and case across the pairs, ``document`` aligns one document pair,
``tables`` aligns the paired documents of tables in memory, ``report`` sums and checks what an
alignment did, and ``datasets`` runs it as a sharded step over segment datasets; ``pairing``
decides which documents are aligned together (by id, by order, or a pairs file).
"""

from pipeline._lazy import lazy_exports

__all__ = ["AlignReport", "Pairing", "align_datasets", "align_tables", "pair", "read_pairs"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "align_datasets": "datasets",
        "align_tables": "tables",
        "AlignReport": "report",
        "Pairing": "pairing",
        "pair": "pairing",
        "read_pairs": "pairing",
    },
)
