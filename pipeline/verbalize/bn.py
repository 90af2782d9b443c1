"""Bangla cardinals in the Indian numbering system (lakh, crore), ASCII or native digits."""

from __future__ import annotations

from .builders_indian import indian_cardinal

GRAMMARS = ("cardinal",)


def build(folder):
    return {"cardinal": indian_cardinal(folder)}
