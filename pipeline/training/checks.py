"""What training refuses, in one line and before its first step: every check of the inputs against
each other and against the model lives here, for the command line, the stage and library callers.

* :func:`sequence_options`: the options a dataset's sequences were built with, read from their
  manifest; a value stated elsewhere (a command-line option, a params key) that differs is refused.
* :func:`load_confusables`: the confusables Parquet that 3R phoneme edition names.
* :func:`check_inputs`: the dataset against the model and the train params (positions, vocabulary,
  the tokenizer a pretrained model needs, labels, case labels, batch budget, heads, augmentation).
"""

from __future__ import annotations

import logging
from pathlib import Path

from pipeline.errors import InputError, ParamsError

log = logging.getLogger("punct-corpora.train")

#: model types whose position ids start after the padding id (RoBERTa's family): ``max_position_embeddings``
#: counts those offsets too
_OFFSET_POSITIONS = ("roberta", "xlm-roberta", "camembert", "longformer", "bart", "mbart", "xlm-roberta-xl")

#: the keys of a sequences manifest's ``sequences`` record (see ``pipeline.datasets.sequences``)
SEQUENCE_KEYS = ("tokenizer", "max_len", "mode", "stride", "slot_filling")


def recorded_sequences(folder) -> dict | None:
    """The sequence options the dataset folder's ``sequences.parquet`` records in its manifest, or
    None for a dataset that records none (written by another tool, or before they were recorded)."""
    from pipeline.engine import location, reading

    manifest = reading.read_manifest(location.join(folder, "sequences.parquet"))
    record = manifest.get("sequences") if isinstance(manifest, dict) else None
    return record if isinstance(record, dict) else None


def sequence_options(folder, stated=()):
    """The dataset folder's ``SequenceOptions`` and the tokenizer its sequences were built with (None
    where the dataset does not record it): the dataset's own record, which every value of
    ``stated`` (``(key, what, value)``: ``what`` names the option or params key, ``value`` None
    when not stated) must equal.  A dataset without a record takes the stated values (the first
    of a key: the others must equal it), the defaults for the rest."""
    from pipeline.engine import location
    from pipeline.training.data import SequenceOptions

    record = recorded_sequences(folder)
    manifest = location.join(location.join(folder, "sequences.parquet"), location.MANIFEST)
    values = dict(record or {})
    source = {key: f"the dataset's {key} {value!r} ({manifest})" for key, value in values.items()}
    for key, what, value in stated:
        if value is None:
            continue
        if key not in values:
            values[key], source[key] = value, f"{what} {value!r}"
        elif value != values[key]:
            fix = "leave it out: training reads the dataset's" if record is not None else "give one value"
            raise ParamsError(f"{what}: {value!r} differs from {source[key]}: {fix}")
    return SequenceOptions.from_params(values), values.get("tokenizer")


def load_confusables(params, path, what: str, entry: bool):
    """The confusable words of 3R's phoneme edition from the Parquet ``path``, or None when
    ``params`` (``TrainParams``) asks for none.  ``entry``: ``path`` must be the file of the
    confusables entry the params name (the stage's layout)."""
    from pipeline.datasets.augment import load_confusables as read

    aug = params.augmentation
    if aug is None or aug.kind != "3r" or not aug.confusables:
        return None
    if not path:
        raise ParamsError(f"{what}.augmentation.confusables is {aug.confusables!r}: pass its Parquet (--confusables)")
    if entry and Path(path).stem != aug.confusables:
        raise ParamsError(f"--confusables {path} is not the confusables entry {aug.confusables!r}")
    words = read(path)
    if not words:
        raise ParamsError(f"{path}: no confusable words")
    return words


def usable_positions(config) -> int | None:
    """The longest sequence (in tokens) the encoder's position embeddings can take, or None when
    the encoder has no absolute positions."""
    positions = getattr(config, "max_position_embeddings", None)
    if not isinstance(positions, int):
        return None
    if getattr(config, "model_type", None) in _OFFSET_POSITIONS:
        positions -= (getattr(config, "pad_token_id", None) or 0) + 1
    return positions


def _max_of(files, column: str) -> int | None:
    """The largest value of a list column over the sequences' files: from the row groups'
    statistics where the files have them, else from the column itself (read alone)."""
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    best = None
    for file in files:
        handle = pq.ParquetFile(file)
        leaf = [i for i in range(handle.metadata.num_columns) if handle.schema.column(i).path.split(".")[0] == column]
        groups = [handle.metadata.row_group(g) for g in range(handle.metadata.num_row_groups)]
        stats = [g.column(leaf[0]).statistics for g in groups] if len(leaf) == 1 else [None]
        if all(s is not None and s.has_min_max for s in stats):
            tops = [s.max for s in stats]
        else:
            values = pc.list_flatten(handle.read(columns=[column])[column])
            tops = [pc.max(values).as_py()] if len(values) else []
        for top in tops:
            if top is not None and (best is None or top > best):
                best = top
    return best


def _check_tokenizer(data, params, where: str) -> None:
    """A pretrained encoder learnt its embeddings for its own tokenizer's ids: the dataset's sequences
    must have been built with that tokenizer (by name, or one of the same vocabulary)."""
    from pipeline.datasets.pretrained import load_tokenizer

    if not params.pretrained or data.tokenizer_source == params.pretrained:
        return
    theirs = load_tokenizer(params.pretrained)
    if theirs.get_vocab() == data.tokenizer.get_vocab():
        return
    dataset = data.folder.name if data.folder is not None else "<dataset>"
    built = f"tokenizer {data.tokenizer_source!r}" if data.tokenizer_source else "another tokenizer"
    raise ParamsError(
        f"{where}: pretrained {params.pretrained!r} reads its own {len(theirs)}-entry vocabulary, but the "
        f"dataset's sequences were built with {built} ({len(data.tokenizer)} entries): set "
        f"datasets.{dataset}.sequences.tokenizer: {params.pretrained} and rebuild the dataset"
    )


def _check_model(model, data, where: str) -> None:
    """The dataset against the model: positions, vocabulary, token ids, labels and case labels."""
    from pipeline.labels import CASE_LABELS

    config = model.encoder.config
    positions = usable_positions(config)
    if positions is not None and data.options.max_len > positions:
        raise ParamsError(
            f"{where}: the dataset's sequences are up to max_len {data.options.max_len} tokens, but the model "
            f"({config.model_type}) takes at most {positions} positions (max_position_embeddings "
            f"{config.max_position_embeddings}): rebuild the dataset with a smaller max_len or use another model"
        )
    vocab = getattr(config, "vocab_size", None)
    if vocab is not None and len(data.tokenizer) > vocab:
        raise InputError(
            f"{where}: the dataset's tokenizer has {len(data.tokenizer)} tokens, the model's embeddings "
            f"{vocab}: the tokenizer is not the model's (rebuild the dataset with the model's tokenizer)"
        )
    top = _max_of(data.sequences, "input_ids")
    if vocab is not None and top is not None and top >= vocab:
        raise InputError(
            f"{where}: the dataset's sequences hold token id {top}, the model's embeddings only "
            f"{vocab} ids: the sequences were not made with this model's tokenizer"
        )
    head = model.classifier.out_features
    top = _max_of(data.sequences, "labels")
    if top is not None and top >= head:
        raise InputError(f"{where}: the dataset's labels go up to id {top}, the model's head predicts {head} labels")
    if model.capitalization:
        if not data.has_case_labels():
            raise InputError(
                f"{where}: capitalization: {data.sequences[0]} has no case_labels column (no cased dataset)"
            )
        top = _max_of(data.sequences, "case_labels")
        if top is not None and top >= len(CASE_LABELS):
            raise InputError(
                f"{where}: the dataset's case labels go up to id {top}, the case head predicts {len(CASE_LABELS)}"
            )


def _check_params(model, data, params, where: str) -> None:
    """The dataset against the train params: the batch budget, the head, augmentation's inputs."""
    from pipeline.training.data import has_column, round_up

    if params.max_tokens and params.max_tokens < round_up(data.options.max_len, params.pad_to_multiple_of):
        raise ParamsError(
            f"{where}: max_tokens: {params.max_tokens} is less than the dataset's max_len {data.options.max_len} "
            f"(padded to {params.pad_to_multiple_of}): the longest sequence would not fit"
        )
    if params.head == "slot_filling" and not data.options.slot_filling:
        raise ParamsError(f"{where}: head: slot_filling needs a dataset built with sequences.slot_filling: true")
    aug = params.augmentation
    if aug is None:
        return
    if not data.segments:
        raise InputError(
            f"{where}: augmentation: needs the dataset's segments (oversampled.parquet), which are missing"
        )
    if model.capitalization and not has_column(data.segments, "case"):
        raise InputError(f"{where}: capitalization: {data.segments[0]} has no case column to augment with")
    if aug.kind == "3r" and aug.p_phoneme > 0 and not data.confusables:
        raise ParamsError(
            f"{where}: augmentation.confusables: 3R phoneme edition needs the confusables of {aug.confusables!r} "
            "(the stage's --confusables)"
        )


def check_inputs(model, data, params, where: str = "training") -> None:
    """Refuse, before any step and in one line, what would fail (or silently mislearn) in training:
    a tokenizer that is not the pretrained model's, a dataset built for longer sequences than the
    encoder's positions, ids the embeddings do not have, labels the heads cannot predict, a batch
    budget, head or augmentation the dataset cannot feed."""
    _check_tokenizer(data, params, where)
    _check_model(model, data, where)
    _check_params(model, data, params, where)


def scored_splits(data, dataset, where: str) -> list[str]:
    """The splits the model is scored on (test, dev): an empty one is named in a warning line; none
    at all is refused before any step, since the run would end without a score."""
    from pipeline.training.data import split_tables

    scored = [s for s in ("test", "dev") if next(split_tables(data.sequences, s, ["split"]), None) is not None]
    for split in [s for s in ("test", "dev") if s not in scored] if scored else []:
        log.warning("%s: split %s of %s has no sequences: not scored", where, split, dataset)
    if not scored:
        raise InputError(
            f"{where}: {dataset}: the test and dev splits have no sequences, so the model cannot be scored "
            "(the split report names the empty splits: give them documents)"
        )
    return scored
