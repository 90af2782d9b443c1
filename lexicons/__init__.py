"""Per-language data (punctuation tables, abbreviations, grammar word lists): found with importlib.resources."""
