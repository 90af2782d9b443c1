"""Unicode clean-up shared by every language.

Works on whole texts (many lines joined by newlines) so the costly steps run once
in C rather than once per line.  Line breaks are never added or removed here, so
callers can split the result back into the same lines.
"""
from __future__ import annotations

import unicodedata

BOM = "\ufeff"

#: characters deleted everywhere: zero-width space, word joiner, BOM, soft hyphen
_DELETE = {0x200B: None, 0x2060: None, 0xFEFF: None, 0x00AD: None, 0x200E: None, 0x200F: None, 0x0D: None}
#: joiners carry meaning in Indic scripts (conjunct shaping); other languages drop them
_JOINERS = {0x200C: None, 0x200D: None}
#: every kind of space becomes an ASCII space (no-break, narrow, figure, em/en, ideographic, tab)
_SPACES = {cp: " " for cp in (0x00A0, 0x202F, 0x2007, 0x3000, 0x09, 0x0B, 0x0C, 0x1680, 0x205F, *range(0x2000, 0x200B))}
#: line separators inside a line would change the line count: make them spaces too
_SPACES.update({0x2028: " ", 0x2029: " ", 0x85: " "})

TABLE_DROP_JOINERS = str.maketrans({**_DELETE, **_JOINERS, **_SPACES})
TABLE_KEEP_JOINERS = str.maketrans({**_DELETE, **_SPACES})


def clean_text(text: str, keep_joiners: bool = False) -> str:
    """NFC, no BOM, no zero-width characters, plain spaces.  Newlines are preserved."""
    text = text.translate(TABLE_KEEP_JOINERS if keep_joiners else TABLE_DROP_JOINERS)
    if not text.isascii():
        text = unicodedata.normalize("NFC", text)
    return text
