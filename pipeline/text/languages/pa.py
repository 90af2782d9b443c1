"""Punjabi: indic-nlp-library's normalizer; danda and "." end sentences; words in another
script than Gurmukhi are removed, the line kept (indic-punct, Gupta 2021 §3)."""

from pipeline.text.languages._indic import indic_language

LANGUAGE = indic_language("pa", "Punjabi", "Gurmukhi")
