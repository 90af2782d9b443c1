"""A named entry of a params section, refused in one line (with a did-you-mean) when it is missing."""

from __future__ import annotations

import difflib

from pipeline.errors import ParamsError

#: what an entry of each section is called in the message
_WHAT = {
    "corpora": "corpus in the registry",
    "corpus_entries": "corpus in the registry",
    "alignments": "alignment",
    "confusables": "entry",
    "datasets": "dataset",
    "train": "train entry",
    "train_entries": "train entry",
    "export_model": "model export",
}
#: the section a checked mapping of :class:`pipeline.params.Params` stands for
_SECTION = {"corpus_entries": "corpora", "train_entries": "train"}


def entry(params, attribute: str, name: str, where) -> object:
    """``getattr(params, attribute)[name]``; a ParamsError naming ``where`` (the params file) and
    ``section.name`` otherwise, with the closest existing name."""
    known = getattr(params, attribute)
    if name in known:
        return known[name]
    close = difflib.get_close_matches(str(name), sorted(known), n=1)
    hint = f"; did you mean {close[0]!r}?" if close else ""
    section = _SECTION.get(attribute, attribute)
    raise ParamsError(f"{where}: {section}.{name}: no such {_WHAT[attribute]}{hint}")


def load_entry(path, attribute: str, name: str):
    """The params file at ``path`` (checking only the entry a command uses) and that entry."""
    from pipeline import params as P

    section = _SECTION.get(attribute, attribute)
    params = P.load(path, [(section, name)])
    return params, entry(params, attribute, name, path)
