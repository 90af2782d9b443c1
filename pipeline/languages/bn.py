"""Bangla: indic-nlp-library's normalizer (nukta forms, vowel signs, chandrabindu), joiners kept."""
from . import Language
from ._indic import indic_normalizer

LANGUAGE = Language(
    code="bn",
    name="Bangla",
    keep_joiners=True,
    normalize_lines=indic_normalizer("bn"),
    scripts=("Bengali",),
)
