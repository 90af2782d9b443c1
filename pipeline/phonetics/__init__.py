"""Phonetics: offline grapheme-to-phoneme conversion per language (``g2p``) and phoneme confusable
vocabularies by exact phoneme edit distance (``confusables``, the 3R augmentation's neighbours).
"""

from pipeline._lazy import lazy_exports

__all__ = ["confusables_table", "get_g2p", "top_k"]
__getattr__, __dir__ = lazy_exports(
    __name__, {"get_g2p": "g2p", "top_k": "confusables", "confusables_table": "confusables"}
)
