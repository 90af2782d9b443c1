"""Ingest: raw corpus files -> a segment dataset, through a reader plugin, on any engine.

Readers are plugins found by name in the entry-point group ``punct_corpora.readers`` (this
project's five are declared in its pyproject; another package can add its own).  A reader
module defines:

* ``Options``: a pydantic model of its options (unknown keys refused; the defaults live there);
* ``read(shard, language, corpus, options) -> StepResult``: one shard to segments and counts;
* optionally ``shards(files, options, lines_per_shard)``: how its files are cut (default: a
  shard per file; line-oriented readers cut byte ranges of lines); with a ``runner`` keyword it
  gets the ingest's executor, to scan the files on its workers;
* optionally ``drops_other_scripts(options) -> bool``: True where its words are the language's
  labelling's with the language's filter of other scripts on (:func:`pipeline.text.labelling.label_lines`),
  so a language that drops words in another script has none left in its segments: the ingest
  then does not look for them again.

The sharded ingest of a corpus entry is :func:`pipeline.operations.ingest.ingest` (the CLI and the
DVC stage call it); the in-memory :func:`ingest_table` runs the same step over the same shards, so
a sharded run and an in-memory reading give the same rows and the same counts.
"""

from __future__ import annotations

import functools
import importlib
import inspect
import logging
import os
from dataclasses import dataclass
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from pydantic import BaseModel, ConfigDict

from pipeline import errors
from pipeline.engine import reading
from pipeline.engine.step import Counts, StepResult
from pipeline.errors import ParamsError, SetupError
from pipeline.labels import DEFAULT_LABEL_SET
from pipeline.schema import as_dictionaries, concat
from pipeline.text.protocols import PAPERS as PAPERS_PROTOCOL

log = logging.getLogger(__name__)
READER_GROUP = "punct_corpora.readers"


@functools.cache
def readers() -> dict[str, str]:
    """Reader name -> module, from the installed entry points."""
    found = {ep.name: ep.value for ep in entry_points(group=READER_GROUP)}
    if not found:
        raise SetupError(
            f"no corpus readers are registered (entry-point group {READER_GROUP}): install the project "
            "(`pip install -e .`, which `make setup` does)"
        )
    return found


def reader_module(name: str) -> ModuleType:
    try:
        module = readers()[name]
    except KeyError:
        raise ParamsError(f"unknown reader {name!r}; available: {', '.join(sorted(readers()))}") from None
    return importlib.import_module(module)


@dataclass(frozen=True)
class FileShard:
    """A whole input file."""

    path: str
    index: int


def file_shards(files) -> list[FileShard]:
    return [FileShard(str(path), i) for i, path in enumerate(files)]


class ReaderOptions(BaseModel):
    """Base of every reader's options: unknown keys and wrong types are errors."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def id_suffixes(files) -> dict[str, str]:
    """``{file: "~k"}`` for the k-th (k >= 2, in the order given: sorted by name) of input files
    that share a stem, in different folders or with different extensions.  Document ids start
    with the file's stem, so without the suffix two files' documents would merge into one id
    (and the corpus's own split and audit would then refuse it)."""
    seen: dict[str, int] = {}
    out = {}
    for path in files:
        name = Path(str(path)).stem
        seen[name] = seen.get(name, 0) + 1
        if seen[name] > 1:
            out[str(path)] = f"~{seen[name]}"
    return out


def _suffixed_ids(table: pa.Table, path: str, suffix: str) -> pa.Table:
    """``table`` with ``suffix`` after each document id formed from the stem of ``path``
    (``stem`` or ``stem#k``); ids a reader took from the data (a TED talk id, an article URL) kept."""
    stem = Path(path).stem
    index = table.schema.get_field_index("doc_id")
    ids = table.column(index)
    ours = pc.or_(pc.equal(ids, stem), pc.starts_with(ids, stem + "#"))
    renamed = pc.if_else(ours, pc.binary_join_element_wise(ids, suffix, ""), ids)
    return table.set_column(index, table.schema.field(index), renamed.cast(table.schema.field(index).type))


class IngestStep:
    """Picklable: one shard through the reader, then (``spoken``) the spoken-form step."""

    def __init__(
        self,
        reader: str,
        lang: str,
        corpus: str,
        options,
        spoken: bool,
        user_dict: str | None,
        suffixes: dict[str, str],
        label_set: str,
        protocol: str,
    ):
        self.reader, self.lang, self.corpus, self.options, self.spoken = reader, lang, corpus, options, spoken
        self.user_dict = user_dict
        self.suffixes = suffixes
        self.label_set = label_set
        self.protocol = protocol

    def __call__(self, shard) -> StepResult:
        from pipeline.text.languages import get_language

        module = reader_module(self.reader)
        language = get_language(self.lang, self.user_dict, self.label_set, self.protocol)
        try:
            result = module.read(shard, language, self.corpus, self.options)
        except RecursionError:  # nested JSON (or markup) deeper than a parser's recursion
            where = getattr(shard, "path", None) or getattr(shard, "files", None) or "an input"
            raise errors.InputError(f"{where}: nested too deeply to read (a record of thousands of levels)") from None
        suffix = self.suffixes.get(str(getattr(shard, "path", "")))
        if suffix and result.table is not None and result.table.num_rows:
            result.table = _suffixed_ids(result.table, str(shard.path), suffix)
        if self.spoken and result.table is not None and result.table.num_rows:
            from pipeline.text.spoken import speak_table

            # the grammars read the words as strings, not as a dictionary (the writer encodes them again)
            index = result.table.schema.get_field_index("words")
            words = result.table.column(index).cast(pa.list_(pa.string()))
            field = result.table.schema.field(index).with_type(words.type)
            result.table = result.table.set_column(index, field, words)
            from pipeline.text.verbalize import get_verbalizer

            result.table, spoken_counts = speak_table(result.table, get_verbalizer(self.lang), language.labels)
            result.counts.stats.update(spoken_counts)
        # the list columns as they are written (the writer leaves them so): the words' dictionary is
        # then the shard's distinct words, and its script is read once per distinct word
        table = result.table = as_dictionaries(result.table)
        if not self._scripts_checked(module, language):
            words = pc.list_flatten(table["words"])
            words = words.combine_chunks() if isinstance(words, pa.ChunkedArray) else words
            _count_other_scripts(words, language.scripts, result.counts)
        result.counts.stats["segments"] += table.num_rows
        result.counts.stats["words"] += int(pc.sum(pc.list_value_length(table["words"])).as_py() or 0)
        result.counts.stats["cased_words"] += _items_other_than(table["case"], "O")
        return result

    def _scripts_checked(self, module: ModuleType, language) -> bool:
        """Can no kept word be in another script than the language's?  So where the language drops
        such words and the reader says its words went through that filter as they are written: not
        relabelled by a paper's protocol (its own rules), not rewritten into spoken forms, not
        lowercased (the filter looked at the words as written)."""
        declared = getattr(module, "drops_other_scripts", None)
        return (
            declared is not None
            and declared(self.options)
            and language.drop_other_scripts
            and bool(language.scripts)
            and not language.lowercase
            and not language.relabelled
            and not self.spoken
        )


def _items_other_than(column, value: str) -> int:
    """How many items of a list column are not ``value`` (nulls not counted); a dictionary column's
    are counted off its indices, each distinct value compared once."""
    flat = pc.list_flatten(column)
    flat = flat.combine_chunks() if isinstance(flat, pa.ChunkedArray) else flat
    if not pa.types.is_dictionary(flat.type) or flat.null_count:
        return int(pc.sum(pc.not_equal(flat, value)).as_py() or 0)
    other = pc.not_equal(flat.dictionary, value).fill_null(False).to_numpy(zero_copy_only=False)
    uses = np.bincount(flat.indices.to_numpy(zero_copy_only=False), minlength=len(other))
    return int(uses[other].sum())


def _count_other_scripts(words: pa.DictionaryArray, scripts: tuple[str, ...], counts: Counts) -> None:
    """The kept words in another script than the language's, by script (those a language drops
    are counted where they are dropped), under ``other_script_words:<Script>``; ``words``
    dictionary-encoded (each distinct word is looked at once)."""
    from pipeline.text.scripts import OTHER_SCRIPT_WORDS, other_script_words, word_script

    distinct = words.dictionary
    other = other_script_words(distinct, scripts)
    if other.any():
        occurrences = np.bincount(words.indices.to_numpy(zero_copy_only=False), minlength=len(distinct))
        for word, n in zip(distinct.filter(pa.array(other)).to_pylist(), occurrences[other].tolist()):
            counts.stats[f"{OTHER_SCRIPT_WORDS}:{word_script(word) or 'none'}"] += n


#: above this share of its words in another script, a corpus is taken for another language
MAX_OTHER_SCRIPT_SHARE = 0.5


def check_scripts(report: dict, lang: str, inputs, allow_other_script: bool) -> None:
    """Refuse a corpus most of whose words are in another script than ``lang``'s (the wrong
    ``lang``, or the wrong file): a language that drops such words would keep a few; one that
    keeps them would label them by rules of another language."""
    from pipeline.text.languages import get_language
    from pipeline.text.scripts import OTHER_SCRIPT_WORDS

    seen = {k.split(":", 1)[1]: v for k, v in report.items() if k.startswith(OTHER_SCRIPT_WORDS + ":")}
    other = sum(seen.values())
    total = report.get("words", 0) + report.get("dropped", {}).get("word_in_other_script", 0)
    if allow_other_script or not other or other <= MAX_OTHER_SCRIPT_SHARE * total:
        return
    script = max(sorted(seen), key=seen.get)
    own = " or ".join(get_language(lang).scripts)
    given = inputs if isinstance(inputs, str | os.PathLike) else ", ".join(map(str, inputs))
    raise errors.InputError(
        f"{given}: {other / total:.0%} of the words ({other} of {total}) are in another script than {own} "
        f"(lang {lang!r}), {'all' if seen[script] == other else 'most'} of them {script}: is lang right? "
        "(allow_other_script: true, --allow-other-script, ingests it as it is)"
    )


def validate_options(reader: str, options: dict | None):
    """The reader's options model from a dict (pydantic errors propagate; the params module words them)."""
    return reader_module(reader).Options.model_validate(options or {})


def plan(
    reader: str,
    inputs,
    lang: str,
    options,
    lines_per_shard: int,
    glob: str,
    user_dict: str | None,
    label_set: str,
    protocol: str,
    runner=None,
) -> tuple[list, list[Path], Counts]:
    """The shards of an ingest, the input files, and the counts of directory entries not read;
    ``runner``: the executor a reader's ``shards`` may scan the files on (if it takes one)."""
    from pipeline.text import protocols
    from pipeline.text.languages import get_language

    # an unknown language (an unreadable dictionary, a bad label set, a protocol that cannot label
    # it) fails here
    get_language(lang, user_dict, label_set, protocol)
    protocols.check(protocol, lang, label_set, reader)
    skipped: dict = {}
    files: list[Path] = []
    for source in [inputs] if isinstance(inputs, str | os.PathLike) else inputs:
        files += reading.input_files(source, glob, skipped)
    module = reader_module(reader)
    if hasattr(module, "shards"):
        takes_runner = "runner" in inspect.signature(module.shards).parameters
        extra = {"runner": runner} if takes_runner and runner is not None else {}
        shards = module.shards(files, options, lines_per_shard, **extra)
    else:
        shards = file_shards(files)
    counts = Counts()
    for reason, n in skipped.items():
        counts.dropped[f"input_entry_skipped:{reason}"] += n
    counts.stats["ids_made_unique"] += len(id_suffixes(files))
    return shards, files, counts


def report_of(reader: str, lang: str, corpus: str, counts: Counts) -> dict:
    if counts.stats["words"] and not counts.stats["cased_words"]:
        counts.notes.add(
            "no word of the source is capitalized (a lowercased source, or a script without case): "
            "every case label is O"
        )
    return {"corpus": corpus, "reader": reader, "lang": lang, **counts.report()}


def ingest_table(
    reader: str,
    inputs,
    lang: str,
    corpus: str,
    options=None,
    spoken: bool = False,
    glob: str = "*",
    user_dict: str | None = None,
    lines_per_shard: int = 100_000,
    label_set: str = DEFAULT_LABEL_SET,
    protocol: str = PAPERS_PROTOCOL,
    allow_other_script: bool = False,
) -> tuple[pa.Table, dict]:
    """The same ingest in memory: the segment table and the report (for small data and tests)."""
    if not hasattr(options, "model_dump"):
        options = validate_options(reader, options)
    shards, files, counts = plan(reader, inputs, lang, options, lines_per_shard, glob, user_dict, label_set, protocol)
    step = IngestStep(reader, lang, corpus, options, spoken, user_dict, id_suffixes(files), label_set, protocol)
    tables = []
    for shard in shards:
        result = step(shard)
        tables.append(result.table)
        counts.add(result.counts)
    report = report_of(reader, lang, corpus, counts)
    check_scripts(report, lang, inputs, allow_other_script)
    return concat(tables), report
