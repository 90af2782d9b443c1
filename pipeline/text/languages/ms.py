"""Malay: lowercased (Rao 2022 §IV-B); numbers, currency (RM), percentages, URLs, phone
numbers and dates spoken by the pipeline's spoken-form step (``spoken: true``)."""

from pipeline.text.languages import Language

LANGUAGE = Language(code="ms", name="Malay", lowercase=True, scripts=("Latin",))
