"""``punct-corpora <command>`` (also ``python -m pipeline``): a thin shim over the library.

Commands forward to the same functions the DVC stages call; options are checked by the same
schemas as the params file, so an option a reader does not take is an error, not ignored.
"""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

import yaml

from pipeline import params as P
from pipeline.engine import location, reading, writing
from pipeline.engine.executor import ENGINES
from pipeline.entrypoint import ArgumentParser, add_logging_options, run, setup_logging
from pipeline.errors import ParamsError

log = logging.getLogger("punct-corpora")

#: corpus-entry keys that have a flag of their own (others: --option KEY=VALUE)
_FLAGS = {
    "doc_boundary": "--doc-boundary",
    "quoting": "--quoting",
    "glob": "--glob",
    "spoken": "--spoken",
    "user_dict": "--user-dict",
}


def _flag(key: str) -> str:
    return _FLAGS.get(key, f"--option {key}")


def _checked(model, options: dict[str, tuple[str, object]], **fixed):
    """``model`` (a params schema) from the options given on the command line (``{key: (flag,
    value)}``, None: not given, so the schema's default holds) and ``fixed`` values; a problem is
    worded as in a params file, naming the flag instead of the key."""
    data = {**fixed, **{key: value for key, (_, value) in options.items() if value is not None}}
    try:
        return P.validate(model, data, None)
    except P.ParamsError as exc:
        key, _, problem = str(exc).partition(": ")
        flag = options[key][0] if key in options else key
        raise P.ParamsError(f"{flag}: {problem}") from None


def _engine(args, **flags) -> P.EngineParams:
    """The engine options (``--engine``, ``--workers``, ...) over the engine section's defaults."""
    given = {key: (flag, getattr(args, key)) for key, flag in flags.items()}
    return _checked(P.EngineOverride, given).over(P.EngineParams())


def _reader_options(args):
    """The corpus entry the flags describe, checked by the reader's schema (as a params entry is)."""
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


def _ingest(args) -> dict:
    from pipeline.ingest import ingest_corpus

    engine = _engine(args, engine="--engine", workers="--workers", shard_lines="--shard-lines")
    return ingest_corpus(_reader_options(args), args.inputs, args.corpus, args.out, args.stats, engine)


def _audit(args) -> dict:
    from pipeline.audit.html import table1_markdown
    from pipeline.audit.reports import write_outputs
    from pipeline.audit.stats import audit_datasets
    from pipeline.engine.executor import executor

    engine = _engine(args, engine="--engine", workers="--workers")
    with writing.Outputs(inputs=args.inputs) as outputs, executor(engine.engine, engine.workers) as runner:
        result, histograms = audit_datasets(
            runner,
            args.inputs,
            outputs.scratch(location.join(args.out, "audit.json")),
            50_000,
            drift_threshold=args.drift_threshold,
        )
    write_outputs(result, histograms, args.out, inputs=args.inputs)
    if args.markdown:
        print(table1_markdown(result), end="")
    log.info("audit: %d dataset(s) -> %s", len(result), location.join(args.out, "audit.json"))
    return result


def _align(args) -> dict:
    from pipeline.align.alignment import align_datasets
    from pipeline.align.inputs import SEGMENTS, side_dataset

    if args.pairs is not None and args.pair_by is None:
        args.pair_by = "file"  # a pairs file says how to pair
    if (args.pairs is None) != (args.pair_by != "file"):
        raise ParamsError(
            "--pair-by file needs --pairs FILE"
            if args.pairs is None
            else f"--pairs: goes with --pair-by file, not {args.pair_by}"
        )
    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _ALIGN_OPTIONS}
    entry = _checked(P.AlignmentParams, options, ref=str(args.ref), hyp=str(args.hyp))
    sides = [_align_side(args, "ref"), _align_side(args, "hyp")]
    # the outputs are checked against the user's inputs here: the alignment reads ingested copies.
    # Sides read by a reader are ingested into a scratch folder beside the output (on its disk),
    # under a name of its own (a stale staging folder of the output itself is cleaned), removed
    # at the end; the alignment itself is the stage's
    writing.check_not_input([args.out, args.report], [args.ref, args.hyp])
    with writing.Outputs(inputs=[args.ref, args.hyp]) as outputs:
        scratch = outputs.scratch(f"{str(args.out).rstrip('/')}-inputs")
        ref, hyp = (side_dataset(side, entry.lang, Path(scratch)) for side in sides)
        report = align_datasets(
            ref,
            hyp,
            args.out,
            args.report,
            policy=entry.policy,
            lang=entry.lang,
            # default: the hypothesis file's name, or the hypothesis dataset's own corpus
            corpus=args.corpus or (Path(args.hyp).stem if sides[1].reader not in (None, *SEGMENTS) else None),
            pair_by=entry.pair_by,
            max_wer=entry.max_wer,
            force=entry.force,
            engine=P.EngineParams(workers=entry.workers),
            pairs_file=entry.pairs,
        )
    for warning in report["warnings"]:
        log.warning("warning: %s", warning)
    marks = report["marks"]
    log.info(
        "align: WER %.3f; %d documents; %d of %d marks transferred (%d moved, dropped %s) -> %s",
        report["wer"]["wer"],
        report["documents"],
        marks["transferred"],
        marks["reference"],
        marks["moved"],
        marks["dropped"],
        args.out,
    )
    return report


def _align_side(args, side: str):
    """One side of ``align`` from its flags: the reader, ``--doc-boundary`` where that reader takes
    it, and ``--SIDE-option KEY=VALUE`` (the value in YAML)."""
    from pipeline.align.inputs import SEGMENTS, Side

    reader, flag = getattr(args, f"{side}_reader"), f"--{side}"
    options = {}
    for item in getattr(args, f"{side}_option") or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ParamsError(f"{flag}-option {item!r}: expected KEY=VALUE")
        options[key] = yaml.safe_load(value)
    takes = reader not in (None, *SEGMENTS) and not P.reader_problem(reader)
    if args.doc_boundary is not None and takes and "doc_boundary" in P.corpus_model(reader).model_fields:
        options.setdefault("doc_boundary", args.doc_boundary)
    return Side(getattr(args, side), reader, options, flag)


#: align options that are keys of an alignments entry
_ALIGN_OPTIONS = ("lang", "policy", "pair_by", "pairs", "max_wer", "force", "workers")


def _confusables(args) -> dict:
    from pipeline.phonetics.confusables import build_confusables, vocabulary_from_segments
    from pipeline.phonetics.g2p import get_g2p

    options = {key: (f"--{key.replace('_', '-')}", getattr(args, key)) for key in _CONFUSABLES_OPTIONS}
    entry = _checked(P.ConfusablesParams, options, word_list=args.vocab)
    g2p = get_g2p(entry.lang)
    if entry.keep_stress:
        if not hasattr(g2p, "keep_stress") and not hasattr(g2p, "keep_tones"):
            raise ParamsError(f"--keep-stress means nothing for language {entry.lang!r}")
        g2p = type(g2p)(True)
    if args.vocab.endswith(".parquet") or Path(args.vocab).is_dir():
        words = vocabulary_from_segments(args.vocab, entry.min_count)
    else:
        words = [line.strip() for line in reading.read_text(args.vocab).splitlines() if line.strip()]
    table, report = build_confusables(
        words,
        g2p,
        k=entry.k,
        workers=entry.workers,
        progress=lambda stage, done, total: log.info("confusables: radius %s: %d/%d words settled", stage, done, total),
    )
    with writing.Outputs(inputs=[args.vocab]) as outputs:
        writing.write_parquet(table, outputs.file(args.out))
        if args.report:
            writing.write_json_in_place(report, outputs.file(args.report))
    log.info(
        "confusables: %d words, %d rows, skipped %s -> %s", report["words"], report["rows"], report["skipped"], args.out
    )
    return report


#: confusables options that are keys of a confusables entry
_CONFUSABLES_OPTIONS = ("lang", "min_count", "k", "keep_stress", "workers")


def _export(args) -> dict:
    from pipeline.datasets.export import export_datasets, export_warnings, split_name_problem

    if problem := split_name_problem(args.split_name):
        raise ParamsError(f"--split-name: {problem}")
    # the card says how the export was made: the command, as the options were given
    command = ["punct-corpora export --format", args.format, *(["--case-column"] if args.case_column else [])]
    command += ["--split-name", args.split_name, *map(str, args.inputs), "--out", str(args.out)]
    report = export_datasets(
        args.inputs,
        args.format,
        args.out,
        case_column=args.case_column,
        split_name=args.split_name,
        card={"command": " ".join(command)},
    )
    for warning in export_warnings(report):
        log.warning("warning: %s", warning)
    log.info("export %s: %s -> %s", args.format, ", ".join(report["splits"]), args.out)
    return report


def _punctuate(args) -> None:
    import json
    import time

    from pipeline.punctuator import Punctuator

    # an exported folder runs through onnxruntime: nothing here may import torch or transformers
    punctuator = Punctuator.load(
        args.model,
        device=args.device,
        lang=args.lang,
        window=args.window,
        overlap=args.overlap,
        batch_size=args.batch_size,
        batch_tokens=args.batch_tokens,
    )
    texts = [reading.read_text(path) for path in args.inputs] if args.inputs else [reading.read_stdin()]
    started, total = time.perf_counter(), 0
    # the same normalization as training; marks already in the text are dropped, not trusted
    predictions = punctuator.predict_many([punctuator.words_of(text) for text in texts])
    for k, prediction in enumerate(predictions):
        if args.format == "jsonl":
            source = args.inputs[k] if args.inputs else "-"
            record = {"input": str(source), "text": prediction.text, "words": prediction.records()}
            sys.stdout.write(json.dumps(record, ensure_ascii=False) + "\n")
        else:
            sys.stdout.write(prediction.text + "\n")
        total += len(prediction.words)
    seconds = time.perf_counter() - started
    print(
        f"punctuate: {total} words in {seconds:.2f} s ({total / max(seconds, 1e-9):.0f} words/s) "
        f"on {punctuator.device}",
        file=sys.stderr,
    )


def _export_model(args) -> None:
    from pipeline.training.onnx import export_model

    export_model(args.model, args.out, args.format, int8=args.int8)


def build_parser() -> argparse.ArgumentParser:
    from pipeline.ingest import readers
    from pipeline.text.languages import available_languages

    parser = ArgumentParser(prog="punct-corpora", description="Punctuation-restoration corpus pipeline.")
    common = argparse.ArgumentParser(add_help=False)
    add_logging_options(common)
    subparsers = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    class _Commands:
        """Every command takes -v/-q."""

        def add_parser(self, name, **kwargs):
            return subparsers.add_parser(name, parents=[common], **kwargs)

    commands = _Commands()

    ingest = commands.add_parser(
        "ingest",
        help="read a corpus into a segment dataset",
        description="Read INPUT files (or the files of INPUT folders) with a reader, normalize and label them, "
        "write a segment dataset (a folder of Parquet parts) and, with --stats, its counts.",
    )
    ingest.add_argument("--reader", required=True, help=f"input format ({', '.join(sorted(readers()))})")
    ingest.add_argument("--lang", required=True, help=f"language code ({', '.join(available_languages())})")
    ingest.add_argument("--corpus", required=True, help="dataset name stored in every row")
    ingest.add_argument(
        "--doc-boundary",
        choices=["file", "blank_line", "line"],
        help="text readers: what separates documents (default: blank_line for text, file for transcript)",
    )
    ingest.add_argument("--quoting", choices=["none", "csv"], help="text reader: lines written as CSV fields")
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
    ingest.add_argument("--glob", help="with folder inputs: which files to read (default: all)")
    ingest.add_argument(
        "--engine",
        choices=ENGINES,
        help="local worker processes (default), or dask.distributed ($PUNCT_DASK_SCHEDULER for a cluster)",
    )
    ingest.add_argument("--workers", type=int, help="worker processes (default 0: one per core)")
    ingest.add_argument("--shard-lines", type=int, help="input lines per shard (line readers; default 100000)")
    ingest.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s) or folder(s)")
    ingest.add_argument("--out", required=True, help="output segment dataset (a folder of parts)")
    ingest.add_argument("--stats", help="also write read/drop counts as JSON here")
    ingest.set_defaults(func=_ingest)

    audit = commands.add_parser(
        "audit",
        help="label distributions, lengths, drift and leakage",
        description="Write DIR/audit.json (per dataset and split: words, label and case counts and shares, "
        "sentence and segment lengths, vocabulary, OOV, drift, leakage), label_shares.csv, case_shares.csv, "
        "sentence_lengths.csv, audit.html and table1.md.",
    )
    audit.add_argument("inputs", nargs="+", metavar="DATASET", help="segment datasets (folders or .parquet files)")
    audit.add_argument("--out", required=True, metavar="DIR")
    audit.add_argument("--markdown", action="store_true", help="also print Table 1 (Alam 2020 layout) as Markdown")
    audit.add_argument("--drift-threshold", type=float, default=1.0, help="warn above this many share points")
    audit.add_argument("--engine", choices=ENGINES, help="default: local")
    audit.add_argument("--workers", type=int, help="worker processes (default 0: one per core)")
    audit.set_defaults(func=_audit)

    align = commands.add_parser(
        "align",
        help="transfer reference punctuation onto ASR hypotheses",
        description="Align reference and hypothesis words per document by edit distance and move each "
        "reference mark to the matching hypothesis gap (Guerreiro et al. 2021).  Each side is a file read "
        "by a reader (ingested first) or a segment dataset; documents pair by id, by order or by a pairs "
        "file, and every document left unpaired is reported.  The same sharded code as the align stage.",
    )
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
    align.add_argument("--lang", required=True)
    align.add_argument("--policy", choices=P.POLICIES, help="default: guerreiro")
    align.add_argument(
        "--pair-by",
        choices=["id", "order", "file"],
        help="how documents are paired: same id (default), position, or the --pairs file",
    )
    align.add_argument("--pairs", metavar="FILE", help="lines of: reference id, hypothesis id (implies --pair-by file)")
    align.add_argument("--max-wer", type=float, help="fail above this WER (default 0.5)")
    align.add_argument(
        "--force",
        action="store_true",
        default=None,
        help="align even above --max-wer or with unpaired hypothesis documents (left out, reported)",
    )
    align.add_argument(
        "--corpus", help="dataset name of the output (default: the hypothesis file's name, or its dataset's)"
    )
    align.add_argument("--workers", type=int, help="processes aligning documents (default 1; 0: one per core)")
    align.add_argument("--out", required=True, help="output segment dataset (hypothesis words, transferred labels)")
    align.add_argument("--report", required=True, help="output report .json")
    align.set_defaults(func=_align)

    conf = commands.add_parser(
        "confusables",
        help="top-k phoneme-edit-distance neighbours of a vocabulary",
        description="For every vocabulary word, the k other words closest by Levenshtein distance over "
        "phoneme sequences (exact; ties by distance then word; homophones flagged).",
    )
    conf.add_argument("--lang", required=True, help="en (CMUdict + g2p-en), ms, zh, or an Indic code")
    conf.add_argument("--vocab", required=True, help="one word per line, or a segment dataset")
    conf.add_argument("--min-count", type=int, help="with a segment dataset: keep words seen this often (default 1)")
    conf.add_argument("--k", type=int, help="neighbours per word (default 3)")
    conf.add_argument(
        "--keep-stress", action="store_true", default=None, help="keep English stress digits / Mandarin tones"
    )
    conf.add_argument("--workers", type=int, help="threads for rapidfuzz (default 0: one per core)")
    conf.add_argument("--out", required=True, help="output .parquet")
    conf.add_argument("--report", help="also write what was skipped and search statistics as JSON")
    conf.set_defaults(func=_confusables)

    export = commands.add_parser(
        "export",
        help="write segment datasets in another tool's format",
        description="tsv: xashru's word<TAB>LABEL (with --case-column a third column, the case label); "
        "nemo: NeMo's punctuation-capitalization text.txt + labels.txt per split; hf: a Hugging Face "
        "datasets folder (load_dataset(DIR)) with a dataset card, one split per split name.",
    )
    export.add_argument("--format", required=True, choices=["tsv", "nemo", "hf"])
    export.add_argument("--case-column", action="store_true", help="tsv: a third column with the case label")
    export.add_argument(
        "--split-name",
        default="train",
        metavar="NAME",
        help="the split of rows that have none (letters, digits, _; not 'all'; default: train)",
    )
    export.add_argument("inputs", nargs="+", metavar="SEGMENTS", help="segment datasets")
    export.add_argument("--out", required=True, metavar="DIR", help="output folder (replaced if it exists)")
    export.set_defaults(func=_export)

    punct = commands.add_parser(
        "punctuate",
        help="punctuate raw text with a trained model",
        description="Read text (files or stdin), normalize it as in training, predict one mark per word (and "
        "its case, for a model with a capitalization head) with overlapping windows batched together, write "
        "punctuated text.",
    )
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
        help="text: one punctuated line per input; jsonl: per input its text and, per word, the label, its "
        "confidence and the probability of every label (and the case label)",
    )
    punct.add_argument("inputs", nargs="*", metavar="FILE")
    punct.set_defaults(func=_punctuate)

    exported = commands.add_parser(
        "export-model",
        help="export a trained model for ONNX Runtime",
        description="Export a checkpoint folder (with its case head) to ONNX with dynamic batch and sequence "
        "axes, optionally with int8 weights (ONNX Runtime dynamic quantization); the tokenizer and the labels "
        "travel with it.  punctuate --model OUT then runs it without torch.",
    )
    exported.add_argument("--model", required=True, help="checkpoint folder written by the train stage")
    exported.add_argument("--format", required=True, choices=["onnx"])
    exported.add_argument("--int8", action="store_true", help="int8 weights (dynamic quantization)")
    exported.add_argument("--out", required=True, metavar="DIR", help="output folder")
    exported.set_defaults(func=_export_model)
    return parser


def main(argv: list[str] | None = None) -> int:
    def inner(argv):
        args = build_parser().parse_args(argv)
        setup_logging(args)
        args.func(args)

    return run(inner, argv)
