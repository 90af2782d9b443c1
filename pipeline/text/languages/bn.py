"""Bangla: indic-nlp-library's normalizer; danda ends sentences; words in another script
than Bengali are removed, the line kept (indic-punct)."""

from pipeline.text.languages._indic import indic_language

LANGUAGE = indic_language("bn", "Bangla", "Bengali")
