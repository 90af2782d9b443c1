"""``python -m pipeline <command>``: a thin shim over the library and the corpus readers."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from . import io


def _ingest_sharded(args) -> dict:
    from .engine import ingest_text_sharded

    if args.reader != "text":
        raise ValueError("--engine runs the text reader (one sentence per line, each line a document)")
    report = ingest_text_sharded(
        args.inputs,
        args.lang,
        args.corpus,
        args.out,
        args.engine,
        args.workers,
        args.shard_lines,
        args.quoting or "none",
    )
    if args.stats:
        io.write_json(report, args.stats)
    print(f"ingest {args.corpus}: {report['shards']} shards, {report['words']} words -> {args.out}/", file=sys.stderr)
    return report


def _ingest(args) -> dict:
    from corpora import get_reader

    if args.engine:
        return _ingest_sharded(args)

    options = {}
    if args.doc_boundary:
        options["doc_boundary"] = args.doc_boundary
    if args.quoting:
        options["quoting"] = args.quoting
    prepared = get_reader(args.reader)(args.inputs, lang=args.lang, corpus=args.corpus, **options)
    if args.spoken:
        prepared.speak(args.lang)
    io.write_parquet(prepared.table, args.out)
    report = {"corpus": args.corpus, "reader": args.reader, "lang": args.lang, **prepared.report()}
    if args.stats:
        io.write_json(report, args.stats)
    print(
        f"ingest {args.corpus}: {report['segments']} segments, {report['words']} words -> {args.out}"
        + (f"; dropped {report['dropped']}" if report["dropped"] else ""),
        file=sys.stderr,
    )
    return report


def _audit(args) -> dict:
    from .reports import write_outputs

    tables = [io.read_segments(path) for path in args.inputs]
    result = write_outputs(
        tables, Path(args.out), Path(args.alignment_dir) if args.alignment_dir else None, args.drift_threshold
    )
    if args.markdown:
        from .audit import table1_markdown

        print(table1_markdown(result), end="")
    print(f"audit: {len(result)} dataset(s) -> {Path(args.out) / 'audit.json'}", file=sys.stderr)
    return result


def _read_with(reader: str, path: str, lang: str):
    from corpora import get_reader

    return get_reader(reader)([path], lang=lang, corpus=f"{Path(path).stem}").table


def _align(args) -> dict:
    from .align import align_tables
    from .verbalize import verbalizer_or_none

    ref = _read_with(args.ref_reader, args.ref, args.lang)
    hyp = _read_with(args.hyp_reader, args.hyp, args.lang)
    out, report = align_tables(
        ref,
        hyp,
        policy=args.policy,
        verbalizer=verbalizer_or_none(args.lang),
        max_wer=args.max_wer,
        force=args.force,
        corpus=args.corpus,
        pair_by=args.pair_by,
        workers=args.workers,
    )
    io.write_parquet(out, args.out)
    io.write_json(report, args.report)
    for warning in report["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    marks = report["marks"]
    print(
        f"align: WER {report['wer']['wer']:.3f}; {marks['transferred']} of {marks['reference']} marks transferred"
        f" ({marks['moved']} moved, dropped {marks['dropped']}) -> {args.out}",
        file=sys.stderr,
    )
    return report


def _read_vocabulary(path: str, min_count: int) -> list[str]:
    if path.endswith(".parquet"):
        from .confusables import vocabulary_from_segments

        return vocabulary_from_segments(io.read_segments(path), min_count)
    return [line.strip() for line in io.read_text(path).splitlines() if line.strip()]


def _confusables(args) -> dict:
    from .confusables import build_confusables
    from .g2p import get_g2p

    g2p = get_g2p(args.lang)
    if args.keep_stress:
        if not hasattr(g2p, "keep_stress") and not hasattr(g2p, "keep_tones"):
            raise ValueError(f"--keep-stress means nothing for language {args.lang!r}")
        g2p = type(g2p)(True)
    words = _read_vocabulary(args.vocab, args.min_count)
    table, report = build_confusables(
        words,
        g2p,
        k=args.k,
        workers=args.workers,
        progress=lambda stage, done, total: print(
            f"confusables: radius {stage}: {done}/{total} words settled", file=sys.stderr
        ),
    )
    io.write_parquet(table, args.out)
    if args.report:
        io.write_json(report, args.report)
    print(
        f"confusables: {report['words']} words, {report['rows']} rows, skipped {report['skipped']} -> {args.out}",
        file=sys.stderr,
    )
    return report


def _punctuate(args) -> None:
    import time

    from .labelling import label_lines, render
    from .languages import get_language
    from .model import load_checkpoint
    from .train import device_of, predict_words, restore_case

    if args.batch_size < 1:
        raise ValueError(f"--batch-size must be at least 1, not {args.batch_size}")
    device = device_of(args.device)
    if device.startswith("cuda"):
        import torch

        if not torch.cuda.is_available():
            raise ValueError(f"--device {args.device}: no CUDA device is available")
    model, tokenizer, meta = load_checkpoint(args.model, device)
    params, sequence = meta.get("params", {}), meta.get("sequence", {})
    language = get_language(args.lang or params.get("lang", "en"))
    texts = [io.read_text(path) for path in args.inputs] if args.inputs else [sys.stdin.read()]
    started, total = time.perf_counter(), 0
    for text in texts:
        # the same normalization as training; marks already in the text are dropped, not trusted
        labelled = label_lines(language.normalize_text(text), language)
        words = [w for line in labelled.words.to_pylist() for w in line]
        labels, cases = predict_words(
            model,
            tokenizer,
            words,
            device,
            window=args.window,
            overlap=args.overlap,
            max_len=int(sequence.get("max_len") or params.get("max_len") or 256),
            batch_size=args.batch_size,
            slot_filling=bool(sequence.get("slot_filling", False)),
            bf16=device.startswith("cuda") and params.get("precision", "bf16") == "bf16",
        )
        if cases is not None:  # a model with a case head restores capitalization too
            words = restore_case(words, cases, meta.get("mixed_case"))
        sys.stdout.write(render(words, labels) + "\n")
        total += len(words)
    seconds = time.perf_counter() - started
    print(
        f"punctuate: {total} words in {seconds:.2f} s ({total / max(seconds, 1e-9):.0f} words/s) on {device}",
        file=sys.stderr,
    )


def build_parser() -> argparse.ArgumentParser:
    from corpora import READERS

    from .languages import available_languages

    parser = argparse.ArgumentParser(prog="python -m pipeline", description="Punctuation-restoration corpus pipeline.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ingest = commands.add_parser(
        "ingest",
        help="read a corpus into the canonical segment Parquet",
        description="Read INPUT files with a reader, normalize and label them, write one segment Parquet.",
    )
    ingest.add_argument("--reader", required=True, choices=sorted(READERS), help="input format")
    ingest.add_argument("--lang", required=True, help=f"language code ({', '.join(available_languages())})")
    ingest.add_argument("--corpus", required=True, help="dataset name stored in every row")
    ingest.add_argument(
        "--doc-boundary",
        choices=["file", "blank_line", "line"],
        help="text readers: what separates documents (default: blank_line for text, file for transcript)",
    )
    ingest.add_argument("--quoting", choices=["none", "csv"], help="text reader: lines written as CSV fields")
    ingest.add_argument("--spoken", action="store_true", help="replace written numbers by their spoken form")
    ingest.add_argument(
        "--engine",
        choices=["local", "dask"],
        help="sharded streaming run (text reader): --out is then a directory of part-NNNNN.parquet",
    )
    ingest.add_argument("--workers", type=int, default=0, help="with --engine: worker processes (0: one per core)")
    ingest.add_argument("--shard-lines", type=int, default=100_000, help="with --engine: input lines per shard")
    ingest.add_argument("inputs", nargs="+", metavar="INPUT", help="input file(s)")
    ingest.add_argument("--out", required=True, help="output .parquet")
    ingest.add_argument("--stats", help="also write read/drop counts as JSON here")
    ingest.set_defaults(func=_ingest)

    audit = commands.add_parser(
        "audit",
        help="label distributions, lengths, drift and leakage",
        description="Write DIR/audit.json (per dataset and split: words, label counts and shares, sentence and "
        "segment lengths, vocabulary, OOV, drift, leakage), label_shares.csv, sentence_lengths.csv, "
        "audit.html and table1.md.",
    )
    audit.add_argument("inputs", nargs="+", metavar="FILE.parquet")
    audit.add_argument("--out", required=True, metavar="DIR")
    audit.add_argument("--markdown", action="store_true", help="also print Table 1 (Alam 2020 layout) as Markdown")
    audit.add_argument("--alignment-dir", help="directory of alignment reports to summarize")
    audit.add_argument("--drift-threshold", type=float, default=1.0, help="warn above this many share points")
    audit.set_defaults(func=_audit)

    align = commands.add_parser(
        "align",
        help="transfer reference punctuation onto ASR hypotheses",
        description="Align reference and hypothesis words per document by edit distance and move each "
        "reference mark to the matching hypothesis gap (Guerreiro et al. 2021).",
    )
    align.add_argument("--ref", required=True, help="reference (punctuated) file")
    align.add_argument("--ref-reader", required=True, choices=sorted(READERS))
    align.add_argument("--hyp", required=True, help="hypothesis (ASR) file; its own labels are ignored")
    align.add_argument("--hyp-reader", required=True, choices=sorted(READERS))
    align.add_argument("--lang", required=True)
    align.add_argument("--policy", default="guerreiro", choices=["guerreiro", "ueffing", "nearest"])
    align.add_argument("--pair-by", default="id", choices=["id", "order"], help="how documents are paired")
    align.add_argument("--max-wer", type=float, default=0.5, help="fail above this WER (default 0.5)")
    align.add_argument("--force", action="store_true", help="align even above --max-wer")
    align.add_argument("--corpus", help="dataset name of the output (default: the hypothesis file's)")
    align.add_argument("--workers", type=int, default=1, help="processes aligning documents (0: one per core)")
    align.add_argument("--out", required=True, help="output .parquet (hypothesis words, transferred labels)")
    align.add_argument("--report", required=True, help="output report .json")
    align.set_defaults(func=_align)

    conf = commands.add_parser(
        "confusables",
        help="top-k phoneme-edit-distance neighbours of a vocabulary",
        description="For every vocabulary word, the k other words closest by Levenshtein distance over "
        "phoneme sequences (exact; ties by distance then word; homophones flagged).",
    )
    conf.add_argument("--lang", required=True, help="en (CMUdict + g2p-en), ms, zh, or an Indic code")
    conf.add_argument("--vocab", required=True, help="one word per line, or a segment .parquet")
    conf.add_argument("--min-count", type=int, default=1, help="with a segment Parquet: keep words seen this often")
    conf.add_argument("--k", type=int, default=3)
    conf.add_argument("--keep-stress", action="store_true", help="keep English stress digits / Mandarin tones")
    conf.add_argument("--workers", type=int, default=0, help="threads for rapidfuzz (0: one per core)")
    conf.add_argument("--out", required=True, help="output .parquet")
    conf.add_argument("--report", help="also write what was skipped and search statistics as JSON")
    conf.set_defaults(func=_confusables)

    punct = commands.add_parser(
        "punctuate",
        help="punctuate raw text with a trained model",
        description="Read text (files or stdin), normalize it as in training, predict one mark per word (and "
        "its case, for a model with a capitalization head) with overlapping windows batched together, write "
        "punctuated text.",
    )
    punct.add_argument("--model", required=True, help="checkpoint folder written by the train stage")
    punct.add_argument("--lang", help="language of the text (default: the model's)")
    punct.add_argument("--window", type=int, default=200, help="words per window")
    punct.add_argument("--overlap", type=int, default=50, help="words shared by consecutive windows")
    punct.add_argument("--device", default="auto", help="auto (CUDA when available), cpu, cuda or cuda:N")
    punct.add_argument("--batch-size", type=int, default=32, help="windows predicted together")
    punct.add_argument("inputs", nargs="*", metavar="FILE")
    punct.set_defaults(func=_punctuate)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        args.func(args)
    except (io.InputError, ValueError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0
