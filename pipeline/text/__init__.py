"""Text handling: from punctuated text to words, punctuation labels and case labels.

``labelling`` labels text (``label_lines``) and renders it back; ``case`` is the case labels;
``normalize`` and ``scripts`` clean lines and tell scripts apart; ``lexicon`` reads the data in
``lexicons/``; ``languages`` holds one small module per language (normalizer and segmenter),
``verbalize`` the spoken-form grammars and ``spoken`` the step that applies them.
"""

from pipeline._lazy import lazy_exports

__all__ = ["get_language", "get_verbalizer", "label_lines", "render"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {"label_lines": "labelling", "render": "labelling", "get_language": "languages", "get_verbalizer": "verbalize"},
)
