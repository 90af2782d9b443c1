"""English: lowercased, as in the papers' IWSLT data (Che et al. 2016, Alam 2020)."""

from pipeline.text.languages import Language

LANGUAGE = Language(code="en", name="English", lowercase=True, scripts=("Latin",))
