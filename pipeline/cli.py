"""``punct-corpora <command>`` (also ``python -m pipeline``): parses options and forwards them.

Each command calls the function of :mod:`pipeline.operations` that its DVC stage calls too; options
are checked by the same schemas as the params file (an option a reader does not take is an error,
not ignored) and an option not given takes the schema's default, shown in ``--help``.  Nothing
heavier than the params schema is imported before a command runs.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.entrypoint import (
    ArgumentParser,
    add_logging_options,
    run,
    setup_logging,
    shows_default,
)
from pipeline.errors import ParamsError

if TYPE_CHECKING:
    from pipeline.params import EngineParams

#: corpus-entry keys that have a flag of their own (others: --option KEY=VALUE)
_FLAGS = {
    "doc_boundary": "--doc-boundary",
    "quoting": "--quoting",
    "glob": "--glob",
    "spoken": "--spoken",
    "user_dict": "--user-dict",
    "label_set": "--label-set",
    "protocol": "--protocol",
    "allow_other_script": "--allow-other-script",
}


def _flag(key: str) -> str:
    return _FLAGS.get(key, f"--option {key}")


def _checked(model, options: dict[str, tuple[str, object]], **fixed):
    """``model`` (a params schema) from the options given on the command line (``{key: (flag,
    value)}``, None: not given, so the schema's default holds) and ``fixed`` values; a problem is
    worded as in a params file, naming the flag instead of the key."""
    from pipeline import params as P

    data = {**fixed, **{key: value for key, (_, value) in options.items() if value is not None}}
    try:
        return P.validate(model, data, None)
    except P.ParamsError as exc:
        key, _, problem = str(exc).partition(": ")
        if key == "(top level)":  # a rule over several keys: named by the flag of the first it names
            named = next((options[w][0] for w in re.findall(r"[a-z_]+", problem) if w in options), "options")
            raise P.ParamsError(f"{named}: {problem}") from None
        head, dot, rest = key.partition(".")  # a mapping option's key (ratios.train) keeps its path
        flag = options[head][0] if head in options else head
        raise P.ParamsError(f"{flag}{dot}{rest}: {problem}") from None


def _engine(args, **flags) -> EngineParams:
    """The engine options (``--engine``, ``--workers``, ...) over the engine section's defaults."""
    from pipeline import params as P

    given = {key: (flag, getattr(args, key)) for key, flag in flags.items()}
    return _checked(P.EngineOverride, given).over(P.EngineParams())


def _reader_options(args):
    """The corpus entry the flags describe, checked by the reader's schema (as a params entry is)."""
    import yaml

    from pipeline import params as P

    if problem := P.reader_problem(args.reader):
        raise P.ParamsError(f"--reader: {problem}")
    entry: dict = {"reader": args.reader, "lang": args.lang, "input": "-"}
    for key in _FLAGS:
        if getattr(args, key) is not None:
            entry[key] = getattr(args, key)
    for item in args.option or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise P.ParamsError(f"--option {item!r}: expected KEY=VALUE")
        if key in entry:  # a flag's key, or the same key twice: a params file refuses both
            raise P.ParamsError(f"--option {item!r}: {key!r} is given twice")
        entry[key] = yaml.safe_load(value)
    try:
        return P.validate(P.corpus_model(args.reader), entry, None)
    except P.ParamsError as exc:
        key, _, problem = str(exc).partition(": ")
        head, dot, rest = key.partition(".")  # a nested key (news_json's fields.text) keeps its path
        if problem.startswith("unknown key") and not dot:
            hint = problem.removeprefix("unknown key")  # a did-you-mean helps; the list of all keys does not
            problem = f"not an option of reader {args.reader!r}{hint if hint.startswith('; did you mean') else ''}"
        raise P.ParamsError(f"{_flag(head)}{dot}{rest}: {problem}") from None


def _default(model, key: str):
    """The params schema's default of ``key`` (what an option not given takes)."""
    return model.model_fields[key].default


def _option(parser, flag: str, model, key: str, **kwargs) -> None:
    """An option whose value, when not given, is ``model``'s default for ``key`` (shown in --help)."""
    shows_default(parser.add_argument(flag, dest=key, **kwargs), _default(model, key))


def _switch(parser, flag: str, model, key: str, help: str) -> None:
    """An on/off option; not given, ``model``'s default for ``key`` holds (a params file's value too)."""
    _option(parser, flag, model, key, action="store_true", default=None, help=help)


def _engine_options(parser, *keys: str) -> None:
    from pipeline import params as P
    from pipeline.engine.executor import ENGINES

    helps = {
        "engine": "local worker processes, or dask.distributed ($PUNCT_DASK_SCHEDULER for a cluster)",
        "workers": "worker processes (0: one per core)",
        "shard_lines": "input lines per shard (line readers)",
    }
    for key in keys:
        kind = {"choices": ENGINES} if key == "engine" else {"type": int}
        _option(parser, f"--{key.replace('_', '-')}", P.EngineParams, key, help=helps[key], **kind)


def _key_values(items, flag: str) -> dict:
    """``KEY=VALUE`` items as a mapping, each value read as YAML (``0.8`` a number)."""
    import yaml

    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParamsError(f"{flag} {item!r}: expected KEY=VALUE")
        if key in out:  # a params file refuses a key given twice; the last one must not win silently
            raise ParamsError(f"{flag} {item!r}: {key!r} is given twice")
        out[key] = yaml.safe_load(value)
    return out


def _name(value, flag: str):
    """``value`` (a name given on the command line: None, not given) checked as a params name is."""
    from pipeline import params as P

    if value is not None and (problem := P.name_problem(value)):
        raise ParamsError(f"{flag}: {problem}")
    return value


def _ingest(args) -> dict:
    from pipeline.operations.ingest import ingest

    engine = _engine(args, engine="--engine", workers="--workers", shard_lines="--shard-lines")
    return ingest(_reader_options(args), args.inputs, _name(args.corpus, "--corpus"), args.out, args.stats, engine)


def _audit(args) -> dict:
    from pipeline.audit.html import table1_markdown
    from pipeline.operations.audit import audit

    engine = _engine(args, engine="--engine", workers="--workers")
    result = audit(args.inputs, args.out, engine, drift_threshold=args.drift_threshold)
    if args.markdown:
        from pipeline.entrypoint import stdout_after

        with stdout_after(f"the audit's files in {args.out} are in place"):  # printed after them: say so
            print(table1_markdown(result), end="")
    return result


#: align options that are keys of an alignments entry
_ALIGN_OPTIONS = ("lang", "policy", "pair_by", "pairs", "max_wer", "force")


def _align_side(args, side: str):
    """One side of ``align`` from its flags: the reader (none: a segment dataset), ``--doc-boundary``
    where that reader takes it, and ``--SIDE-option KEY=VALUE`` (the value in YAML)."""
    from pipeline import params as P
    from pipeline.operations.align import SEGMENTS, Side

    reader, flag = getattr(args, f"{side}_reader"), f"--{side}"
    options = _key_values(getattr(args, f"{side}_option"), f"{flag}-option")
    takes = reader not in (None, *SEGMENTS) and not P.reader_problem(reader)
    if args.doc_boundary is not None and takes and "doc_boundary" in P.corpus_model(reader).model_fields:
        options.setdefault("doc_boundary", args.doc_boundary)
    return Side(str(getattr(args, side)), reader, options, flag)


def _align(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.align import align_sides

    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _ALIGN_OPTIONS}
    entry = _checked(P.AlignmentParams, options, ref=str(args.ref), hyp=str(args.hyp))
    sides = [_align_side(args, "ref"), _align_side(args, "hyp")]
    engine = _engine(args, workers="--workers")
    return align_sides(entry, sides, args.out, args.report, corpus=_name(args.corpus, "--corpus"), engine=engine)


#: confusables options that are keys of a confusables entry
_CONFUSABLES_OPTIONS = ("lang", "min_count", "k", "keep_stress", "threads")


def _confusables(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.confusables import confusables

    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _CONFUSABLES_OPTIONS}
    entry = _checked(P.ConfusablesParams, options, word_list=args.vocab)
    segments = args.vocab.endswith(".parquet") or Path(args.vocab).is_dir()
    return confusables(entry, args.vocab, args.out, args.report, segments=segments, keep_stress_key="--keep-stress")


#: split options that are keys of a dataset's split section
_SPLIT_OPTIONS = (
    "ratios",
    "counts",
    "strict",
    "seed",
    "stratify",
    "min_sentences",
    "min_marks",
    "drop_train_duplicates",
)


def _dataset_name(path: str) -> str:
    return Path(str(path).rstrip("/")).name.removesuffix(".parquet")


def _split(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.split import split, split_entry

    given = [f"--{k.replace('_', '-')}" for k in (*_SPLIT_OPTIONS, "fixed") if getattr(args, k) is not None]
    if args.params is not None:
        if args.dataset is None:
            raise ParamsError("--params: name the dataset entry with --dataset")
        if given or args.inputs:
            what = given[0] if given else "SEGMENTS"
            raise ParamsError(f"{what}: not with --params (the params file's datasets.{args.dataset} holds them)")
        return split_entry(args.params, args.dataset, args.segments_dir, args.out, args.report)
    if args.dataset is not None:
        raise ParamsError("--dataset: names an entry of --params; without it, give the segment datasets")
    if not args.inputs and not args.fixed:
        raise ParamsError("SEGMENTS: give the segment datasets to split (or --params FILE --dataset NAME)")
    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _SPLIT_OPTIONS}
    for key in ("ratios", "counts"):
        if getattr(args, key) is not None:
            options[key] = (options[key][0], _key_values(getattr(args, key), options[key][0]))
    params = _checked(P.SplitParams, options)
    inputs, fixed = {}, {}
    for path, split_name in [(p, None) for p in args.inputs] + list(_key_values(args.fixed, "--fixed").items()):
        name = _dataset_name(path)
        if name in inputs or name in fixed:
            raise ParamsError(
                f"{path}: a second segment dataset named {name!r} (datasets are named by their file name)"
            )
        if split_name is None:
            inputs[name] = path
        elif split_name not in P.SPLIT_NAMES:
            raise ParamsError(f"--fixed {path}={split_name}: not a split ({', '.join(P.SPLIT_NAMES)})")
        else:
            fixed[name] = (path, split_name)
    engine = _engine(args, engine="--engine", workers="--workers")
    return split(inputs, params, args.out, args.report, engine, fixed=fixed, name="split")


def _export(args) -> dict:
    from pipeline.operations.export import export

    # the card says how the export was made: the command, as the options were given
    command = ["punct-corpora export --format", args.format, *(["--case-column"] if args.case_column else [])]
    command += ["--split-name", args.split_name, *map(str, args.inputs), "--out", str(args.out)]
    return export(
        args.inputs,
        args.format,
        args.out,
        case_column=args.case_column,
        split_name=args.split_name,
        card={"command": " ".join(command)},
    )


#: train options that are keys of a dataset's sequences section (how its sequences were built)
_SEQUENCE_OPTIONS = ("max_len", "mode", "stride", "slot_filling")


def _train(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.train import train_config

    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _SEQUENCE_OPTIONS}
    checked = _checked(P.SequencesParams, options)
    # only the options given: the others are the dataset's, which training reads from it
    given = {key: (flag, getattr(checked, key)) for key, (flag, value) in options.items() if value is not None}
    return train_config(
        args.config,
        args.dataset,
        args.out,
        given,
        name=_name(args.name, "--name"),
        metrics=args.metrics,
        plots_dir=args.plots_dir,
        confusables=args.confusables,
        checkpoint_dir=args.checkpoint_dir,
        resume=args.resume,
    )


def _punctuate(args) -> None:
    from pipeline.operations.punctuate import punctuate, pyarrow_without_pandas

    pyarrow_without_pandas()  # this process is the command alone: start-up without pandas
    punctuate(
        args.model,
        args.inputs,
        lang=args.lang,
        window=args.window,
        overlap=args.overlap,
        device=args.device,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens,
        format=args.format,
        join=args.join,
    )


def _export_model(args) -> None:
    from pipeline.operations.punctuate import export_model

    export_model(args.model, args.out, args.format, int8=args.int8)


def _ingest_options(ingest) -> None:
    from pipeline import params as P
    from pipeline.ingest import readers
    from pipeline.text.languages import available_languages

    ingest.add_argument("--reader", required=True, help=f"input format ({', '.join(sorted(readers()))})")
    ingest.add_argument("--lang", required=True, help=f"language code ({', '.join(available_languages())})")
    ingest.add_argument("--corpus", required=True, help="dataset name stored in every row")
    ingest.add_argument(
        "--doc-boundary",
        choices=["file", "blank_line", "line"],
        help="text readers: what separates documents (default: blank_line for text, file for transcript)",
    )
    ingest.add_argument(
        "--quoting", choices=["none", "csv"], help="text reader: lines written as CSV fields (default: none)"
    )
    ingest.add_argument(
        "--option",
        action="append",
        metavar="KEY=VALUE",
        help="any other reader option, the value in YAML (news_json: fields={text: article})",
    )
    # no defaults here: an option not given takes the params schema's default
    ingest.add_argument(
        "--spoken", action="store_true", default=None, help="replace written numbers by their spoken form"
    )
    ingest.add_argument("--user-dict", help="a jieba user dictionary (Mandarin)")
    _option(
        ingest,
        "--label-set",
        P.CorpusBase,
        "label_set",
        help="the labels marks map to: papers, extended, extended_danda, or a label-set table's path",
    )
    _option(
        ingest,
        "--protocol",
        P.CorpusBase,
        "protocol",
        help="a paper's preprocessing, labelling and table counting (lexicons/protocols): papers, alam2020, rao2022",
    )
    ingest.add_argument("--glob", help="with folder inputs: which files to read (default: all)")
    _switch(
        ingest,
        "--allow-other-script",
        P.CorpusBase,
        "allow_other_script",
        "ingest a corpus most of whose words are in another script than --lang's (refused otherwise)",
    )
    _engine_options(ingest, "engine", "workers", "shard_lines")
    ingest.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s) or folder(s)")
    ingest.add_argument("--out", required=True, help="output segment dataset (a folder of parts)")
    ingest.add_argument("--stats", help="also write read/drop counts as JSON here")
    ingest.set_defaults(func=_ingest)


def _audit_options(audit) -> None:
    from pipeline.operations.audit import DRIFT_THRESHOLD

    audit.add_argument("inputs", nargs="+", metavar="DATASET", help="segment datasets (folders or .parquet files)")
    audit.add_argument("--out", required=True, metavar="DIR", help="output folder of the audit's files")
    audit.add_argument("--markdown", action="store_true", help="also print Table 1 (Alam 2020 layout) as Markdown")
    audit.add_argument(
        "--drift-threshold", type=float, default=DRIFT_THRESHOLD, help="warn above this many share points"
    )
    _engine_options(audit, "engine", "workers")
    audit.set_defaults(func=_audit)


def _align_options(align) -> None:
    from pipeline import params as P

    align.add_argument("--ref", required=True, help="reference (punctuated) file(s), or a segment dataset")
    align.add_argument(
        "--ref-reader", help="reader of the reference (default: none, --ref is a segment dataset: .parquet or folder)"
    )
    align.add_argument(
        "--ref-option", action="append", metavar="KEY=VALUE", help="a reader option of the reference (YAML value)"
    )
    align.add_argument(
        "--hyp", required=True, help="hypothesis (ASR) file, or a segment dataset; its labels are ignored"
    )
    align.add_argument("--hyp-reader", help="reader of the hypothesis (default: none, --hyp is a segment dataset)")
    align.add_argument(
        "--hyp-option", action="append", metavar="KEY=VALUE", help="a reader option of the hypothesis (YAML value)"
    )
    align.add_argument(
        "--doc-boundary",
        choices=["file", "blank_line", "line"],
        help="for each side whose reader takes it (text, transcript): what separates documents",
    )
    A = P.AlignmentParams
    align.add_argument("--lang", required=True, help="language of the number grammars")
    _option(align, "--policy", A, "policy", choices=P.POLICIES, help="where a reference mark goes")
    _option(
        align,
        "--pair-by",
        A,
        "pair_by",
        choices=["id", "order", "file"],
        help="how documents are paired: same id, position, or the --pairs file",
    )
    align.add_argument("--pairs", metavar="FILE", help="lines of: reference id, hypothesis id (implies --pair-by file)")
    _option(align, "--max-wer", A, "max_wer", type=float, help="fail when a document pair's word error rate is above")
    _switch(
        align,
        "--force",
        A,
        "force",
        "leave out the document pairs above --max-wer and unpaired hypothesis documents (reported), not fail",
    )
    align.add_argument(
        "--corpus", help="dataset name of the output (default: the hypothesis file's name, or its dataset's)"
    )
    _engine_options(align, "workers")
    align.add_argument("--out", required=True, help="output segment dataset (hypothesis words, transferred labels)")
    align.add_argument("--report", required=True, help="output report .json")
    align.set_defaults(func=_align)


def _confusables_options(conf) -> None:
    from pipeline import params as P

    C = P.ConfusablesParams
    conf.add_argument("--lang", required=True, help="en (CMUdict + g2p-en), ms, zh, or an Indic code")
    conf.add_argument("--vocab", required=True, help="one word per line, or a segment dataset")
    _option(conf, "--min-count", C, "min_count", type=int, help="with a segment dataset: keep words seen this often")
    _option(conf, "--k", C, "k", type=int, help="neighbours per word")
    _switch(conf, "--keep-stress", C, "keep_stress", "keep English stress digits / Mandarin tones")
    _option(conf, "--threads", C, "threads", type=int, help="threads of the neighbour search (0: one per core)")
    conf.add_argument("--out", required=True, help="output .parquet")
    conf.add_argument("--report", help="also write what was skipped and search statistics as JSON")
    conf.set_defaults(func=_confusables)


def _split_options(split) -> None:
    from pipeline import params as P

    S = P.SplitParams
    split.add_argument("inputs", nargs="*", metavar="SEGMENTS", help="segment datasets to split")
    split.add_argument("--params", help="take the split rule and the corpora from this params file")
    split.add_argument("--dataset", help="with --params: the name of the dataset entry")
    split.add_argument(
        "--segments-dir", default="data/segments", help="with --params: where the corpora's segment datasets are"
    )
    split.add_argument("--ratios", nargs="+", metavar="SPLIT=SHARE", help="shares of documents (train=0.8 ...)")
    split.add_argument("--counts", nargs="+", metavar="SPLIT=DOCS", help="numbers of documents (dev=100 ...)")
    _switch(split, "--strict", S, "strict", "with --counts: refuse counts the corpora cannot fill (else a warning)")
    _option(split, "--seed", S, "seed", type=int, help="seed of the document hash")
    _switch(split, "--stratify", S, "stratify", "split each stratum (the marks a document has) by the ratios")
    _option(split, "--min-sentences", S, "min_sentences", type=int, help="keep documents with more sentences")
    _option(split, "--min-marks", S, "min_marks", type=int, help="keep segments with at least this many marks")
    _switch(
        split,
        "--drop-train-duplicates",
        S,
        "drop_train_duplicates",
        "remove train segments whose words also occur in dev or test",
    )
    split.add_argument(
        "--fixed", nargs="+", metavar="SEGMENTS=SPLIT", help="segment datasets kept whole in one split (a benchmark's)"
    )
    _engine_options(split, "engine", "workers")
    split.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    split.add_argument("--report", required=True, help="output report (JSON)")
    split.set_defaults(func=_split)


def _export_options(export) -> None:
    export.add_argument("--format", required=True, choices=["tsv", "nemo", "hf"], help="the other tool's format")
    export.add_argument("--case-column", action="store_true", help="tsv: a third column with the case label")
    export.add_argument(
        "--split-name",
        default="train",
        metavar="NAME",
        help="the split of rows that have none (letters, digits, _; not 'all')",
    )
    export.add_argument("inputs", nargs="+", metavar="SEGMENTS", help="segment datasets")
    export.add_argument("--out", required=True, metavar="DIR", help="output folder (replaced if it exists)")
    export.set_defaults(func=_export)


def _train_options(train) -> None:
    train.add_argument("--dataset", required=True, metavar="DIR", help="dataset folder (data/datasets/NAME)")
    train.add_argument("--config", required=True, metavar="FILE", help="YAML file of train keys")
    train.add_argument("--out", required=True, metavar="DIR", help="model output folder")
    train.add_argument("--name", help="name in the CSVs' file names (default: the --out folder's name)")
    train.add_argument("--metrics", help="metrics JSON (default: OUT/metrics.json)")
    train.add_argument("--plots-dir", help="folder of the steps and confusion CSVs (default: the metrics' folder)")
    train.add_argument("--confusables", help="confusables Parquet of augmentation.confusables (3R)")
    train.add_argument("--checkpoint-dir", help="resumable checkpoints (default: OUT/checkpoints)")
    train.add_argument("--resume", action="store_true", help="continue from the newest checkpoint")
    # the dataset records how its sequences were built: these only restate it (a different value is refused)
    train.add_argument("--max-len", type=int, help="tokens per sequence of the dataset (default: the dataset's)")
    train.add_argument(
        "--mode", choices=["chunk", "segment"], help="how the dataset's sequences were cut (default: the dataset's)"
    )
    train.add_argument("--stride", type=int, help="words shared by consecutive chunks (default: the dataset's)")
    train.add_argument(
        "--slot-filling",
        action="store_true",
        default=None,
        help="labels at <mask> positions (Rao 2022) (default: the dataset's)",
    )
    train.set_defaults(func=_train)


def _punctuate_options(punct) -> None:
    punct.add_argument(
        "--model", required=True, help="checkpoint folder written by the train stage, or one by export-model"
    )
    punct.add_argument("--lang", help="language of the text (default: the model's)")
    punct.add_argument("--window", type=int, default=200, help="words per window")
    punct.add_argument("--overlap", type=int, default=50, help="words shared by consecutive windows")
    punct.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N")
    punct.add_argument("--batch-size", type=int, default=32, help="at most this many windows predicted together")
    punct.add_argument(
        "--batch-tokens", type=int, default=8192, help="at most this many (padded) tokens predicted together"
    )
    punct.add_argument(
        "--format",
        choices=["text", "jsonl"],
        default="text",
        help="text: one punctuated line per line (per input with --join); jsonl: per line its input, line "
        "number and text and, per word, the label, its confidence and the probability of every label (and "
        "the case label)",
    )
    punct.add_argument(
        "--join",
        action="store_true",
        help="each input is one running text, punctuated as one line (default: each line is a segment of its own)",
    )
    punct.add_argument("inputs", nargs="*", metavar="FILE", help="text files, - for stdin (default: stdin)")
    punct.set_defaults(func=_punctuate)


def _export_model_options(exported) -> None:
    exported.add_argument("--model", required=True, help="checkpoint folder written by the train stage")
    exported.add_argument("--format", required=True, choices=["onnx"], help="the runtime's format")
    exported.add_argument(
        "--int8",
        action="store_true",
        help="int8 matrix products, smoothed where a layer norm feeds them (ONNX Runtime 1.22 or later)",
    )
    exported.add_argument("--out", required=True, metavar="DIR", help="output folder")
    exported.set_defaults(func=_export_model)


def _oversample(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.oversample import oversample

    augment = _key_values(args.augment, "--augment") if args.augment is not None else None
    if augment is not None and args.confusables and "confusables" not in augment:
        augment["confusables"] = Path(args.confusables).stem  # the entry a params file would name
    given = {"question_share": ("--question-share", args.question_share), "augment": ("--augment", augment)}
    params = _checked(P.OversampleParams, given)
    seed = _checked(P.SplitParams, {"seed": ("--seed", args.seed)}).seed
    engine = _engine(args, engine="--engine", workers="--workers")
    outputs = (args.out, args.augmented, args.report)
    return oversample(args.input, params, seed, *outputs, args.confusables, engine, "oversample")


#: sequences options that are keys of a dataset's sequences section
_SEQUENCES_OPTIONS = ("tokenizer", "vocab_size", "lowercase", "max_len", "mode", "stride", "slot_filling")


def _sequences(args) -> dict:
    from pipeline import params as P
    from pipeline.operations.sequences import sequences

    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _SEQUENCES_OPTIONS}
    params = _checked(P.SequencesParams, options)
    engine = _engine(args, engine="--engine", workers="--workers")
    name = args.name or Path(str(args.out).rstrip("/")).parent.name
    outputs = (args.out, args.tokenizer_out, args.report)
    return sequences(args.input, params, *outputs, name, args.reports, engine)


def _oversample_options(over) -> None:
    from pipeline import params as P

    over.add_argument("input", metavar="SPLIT", help="a split dataset (what split writes)")
    _option(
        over,
        "--question-share",
        P.OversampleParams,
        "question_share",
        type=float,
        help="copy train question sentences into train documents up to this QUESTION share (Rao 2022)",
    )
    over.add_argument(
        "--augment",
        nargs="+",
        metavar="KEY=VALUE",
        help="ASR-error augmentation copies of train: kind=alam|3r and its keys (the params' oversample.augment)",
    )
    over.add_argument("--confusables", help="3r: a confusables Parquet (what confusables writes) for phoneme edition")
    _option(over, "--seed", P.SplitParams, "seed", type=int, help="the split's seed, which augmentation draws from")
    _engine_options(over, "engine", "workers")
    over.add_argument("--out", required=True, help="output dataset (a folder of parts)")
    over.add_argument("--augmented", required=True, help="output: augmentation copies of train (a folder of parts)")
    over.add_argument("--report", required=True, help="output report (JSON)")
    over.set_defaults(func=_oversample)


def _sequences_options(seq) -> None:
    from pipeline import params as P

    Q = P.SequencesParams
    seq.add_argument("input", metavar="SEGMENTS", help="a split (or oversampled) dataset")
    _option(seq, "--tokenizer", Q, "tokenizer", help="train: a BPE tokenizer trained on train; else a pretrained one")
    _option(seq, "--vocab-size", Q, "vocab_size", type=int, help="vocabulary of a trained tokenizer")
    _switch(seq, "--lowercase", Q, "lowercase", "a trained tokenizer lowercases")
    _option(seq, "--max-len", Q, "max_len", type=int, help="tokens per sequence, specials included")
    _option(seq, "--mode", Q, "mode", choices=["chunk", "segment"], help="documents cut into chunks, or per segment")
    _option(seq, "--stride", Q, "stride", type=int, help="words shared by consecutive chunks")
    _switch(seq, "--slot-filling", Q, "slot_filling", "a mask token after every word carries its label (Rao 2022)")
    _engine_options(seq, "engine", "workers")
    seq.add_argument("--name", help="the dataset's name in the report (default: the name of the folder holding --out)")
    seq.add_argument("--reports", nargs="+", default=[], metavar="JSON", help="earlier steps' reports, merged in")
    seq.add_argument("--out", required=True, help="output sequences (a folder of parts)")
    seq.add_argument("--tokenizer-out", required=True, metavar="DIR", help="output: the tokenizer folder")
    seq.add_argument("--report", required=True, help="output report (JSON)")
    seq.set_defaults(func=_sequences)


#: each command: (its add_parser keywords, the function that adds its options)
COMMANDS = {
    "ingest": (
        {
            "help": "read a corpus into a segment dataset",
            "description": "Read INPUT files (or the files of INPUT folders) with a reader, normalize and label them, "
            "write a segment dataset (a folder of Parquet parts) and, with --stats, its counts.",
        },
        _ingest_options,
    ),
    "audit": (
        {
            "help": "label distributions, lengths, drift and leakage",
            "description": "Write DIR/audit.json (per dataset and split: words, label and case counts and shares, "
            "sentence and segment lengths, vocabulary, OOV, drift, leakage), label_shares.csv, case_shares.csv, "
            "sentence_lengths.csv, audit.html, table1.md and paper_tables.json (the published tables of the "
            "paper protocols the datasets were made under, counted the paper's way).",
        },
        _audit_options,
    ),
    "align": (
        {
            "help": "transfer reference punctuation onto ASR hypotheses",
            "description": "Align reference and hypothesis words per document by edit distance and move each "
            "reference mark to the matching hypothesis gap (Guerreiro et al. 2021).  Each side is a file read "
            "by a reader (ingested first) or a segment dataset; documents pair by id, by order or by a pairs "
            "file, and every document left unpaired is reported.  The same sharded code as the align stage.",
        },
        _align_options,
    ),
    "confusables": (
        {
            "help": "top-k phoneme-edit-distance neighbours of a vocabulary",
            "description": "For every vocabulary word, the k other words closest by Levenshtein distance over "
            "phoneme sequences (exact; ties by distance then word; homophones flagged).",
        },
        _confusables_options,
    ),
    "split": (
        {
            "help": "document-level train/dev/test splits of segment datasets",
            "description": "Split SEGMENTS (segment datasets, each named by its file name) into train, dev and "
            "test by a seeded hash of the document id, as the split stage does; the split rule from the options, "
            "or from a params file's datasets.NAME (--params FILE --dataset NAME).  Writes one dataset and its "
            "report.",
        },
        _split_options,
    ),
    "oversample": (
        {
            "help": "oversample train questions, materialize augmentation copies",
            "description": "Copy train question sentences into train documents up to --question-share (Rao 2022) "
            "and write augmentation copies of train (--augment, for the audit), as the oversample stage does.",
        },
        _oversample_options,
    ),
    "sequences": (
        {
            "help": "model-ready token sequences and the tokenizer",
            "description": "Cut a dataset's documents (or segments) into token sequences with a label on each word's "
            "last token, training a BPE tokenizer on train (or loading a pretrained one), as the sequences stage "
            "does; writes the sequences, the tokenizer folder and the dataset's report.  train --dataset reads "
            "their folder.",
        },
        _sequences_options,
    ),
    "export": (
        {
            "help": "write segment datasets in another tool's format",
            "description": "tsv: xashru's word<TAB>LABEL (with --case-column a third column, the case label); "
            "nemo: NeMo's punctuation-capitalization text.txt + labels.txt per split; hf: a Hugging Face "
            "datasets folder (load_dataset(DIR)) with a dataset card, one split per split name.",
        },
        _export_options,
    ),
    "train": (
        {
            "help": "train and score a punctuation model on a dataset folder",
            "description": "Train the model a YAML file of train keys describes (a train.NAME entry of params.yaml "
            "written alone) on a dataset folder the dataset stages wrote (sequences.parquet, tokenizer/, "
            "oversampled.parquet), as the train stage does; save the best model to --out, score it on test and dev, "
            "write the metrics JSON and the steps and confusion CSVs.  The sequence options and the tokenizer "
            "are those the dataset's sequences record; an option given must restate them.",
        },
        _train_options,
    ),
    "punctuate": (
        {
            "help": "punctuate raw text with a trained model",
            "description": "Read text (files or stdin), normalize it as in training, predict one mark per word (and "
            "its case, for a model with a capitalization head) with overlapping windows batched together, write "
            "punctuated text: one output line per input line (each line a segment of its own), or one per input "
            "with --join.  The summary line (words/s) goes to stderr; -q silences it.",
        },
        _punctuate_options,
    ),
    "export-model": (
        {
            "help": "export a trained model for ONNX Runtime",
            "description": "Export a checkpoint folder (with its case head) to ONNX with dynamic batch and sequence "
            "axes, fused by ONNX Runtime's transformer optimizer, optionally with int8 matrix products; the "
            "tokenizer and the labels travel with it.  punctuate --model OUT then runs it without torch.",
        },
        _export_model_options,
    ),
}


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command; with ``command``, only that command's options are built (each
    command is still listed): a command's start-up then pays for no other command's schemas."""
    parser = ArgumentParser(prog="punct-corpora", description="Punctuation-restoration corpus pipeline.")
    add_logging_options(parser)  # -v before the command, too
    common = argparse.ArgumentParser(add_help=False)
    add_logging_options(common, default=argparse.SUPPRESS)  # every command takes -v/-q
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for name, (keywords, add_options) in COMMANDS.items():
        subparser = subparsers.add_parser(name, parents=[common], **keywords)
        if command in (None, name):
            add_options(subparser)
    return parser


def _command_of(argv: list[str]) -> str | None:
    """The command ``argv`` names (the top-level options take no value), if it names one."""
    name = next((arg for arg in argv if not arg.startswith("-")), None)
    return name if name in COMMANDS else None


def main(argv: list[str] | None = None) -> int:
    def inner(argv):
        argv = sys.argv[1:] if argv is None else argv
        args = build_parser(_command_of(argv)).parse_args(argv)
        setup_logging(args)
        args.func(args)

    return run(inner, argv)
