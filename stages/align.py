"""DVC stage: transfer a reference corpus's punctuation onto its ASR corpus (``alignments.<name>``)."""

from __future__ import annotations

import logging
import sys

from pipeline import params as P
from pipeline.align.alignment import align_datasets
from stages.common import ArgumentParser, add_logging_options, run, setup_logging

log = logging.getLogger("stages.align")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the alignment in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--ref", required=True, help="reference segment dataset")
    parser.add_argument("--hyp", required=True, help="hypothesis segment dataset")
    parser.add_argument("--out", required=True, help="output segment dataset (hypothesis words, transferred labels)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params = P.load(args.params, [("alignments", args.name)])
    if args.name not in params.alignments:
        raise P.ParamsError(f"{args.params}: alignments.{args.name}: no such alignment")
    entry = params.alignments[args.name]
    report = align_datasets(
        args.ref,
        args.hyp,
        args.out,
        args.report,
        policy=entry.policy,
        lang=entry.lang,
        corpus=args.name,
        pair_by=entry.pair_by,
        max_wer=entry.max_wer,
        force=entry.force,
        engine=params.engine_for(entry.engine),
        pairs_file=entry.pairs,
    )
    for warning in report["warnings"]:
        log.warning("warning: %s", warning)
    log.info(
        "align %s: WER %.3f, %d of %d marks transferred",
        args.name,
        report["wer"]["wer"],
        report["marks"]["transferred"],
        report["marks"]["reference"],
    )
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
