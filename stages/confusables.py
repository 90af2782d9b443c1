"""DVC stage: a confusable vocabulary (``confusables.<name>`` in the params file).

The vocabulary is a corpus of the registry (its words seen ``min_count`` times, counted in one
streaming pass) or a word-list file; outputs the confusables Parquet and a report.
"""

from __future__ import annotations

import logging
import sys

from pipeline import params as P
from pipeline.engine import reading, writing
from pipeline.phonetics.confusables import build_confusables, vocabulary_from_segments
from pipeline.phonetics.g2p import get_g2p
from stages.common import ArgumentParser, add_logging_options, run, setup_logging

log = logging.getLogger("stages.confusables")


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("name")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--vocab", required=True, help="the segment dataset of entry.corpus, or entry.word_list")
    parser.add_argument("--out", required=True, help="output confusables (Parquet)")
    parser.add_argument("--report", required=True, help="output report (JSON)")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params = P.load(args.params, [("confusables", args.name)])
    if args.name not in params.confusables:
        raise P.ParamsError(f"{args.params}: confusables.{args.name}: no such entry")
    entry = params.confusables[args.name]
    if entry.corpus is not None:
        words = vocabulary_from_segments(args.vocab, entry.min_count)
    else:
        words = [w.strip() for w in reading.read_text(args.vocab).splitlines() if w.strip()]
    g2p = get_g2p(entry.lang)
    if entry.keep_stress:
        g2p = type(g2p)(True)
    table, report = build_confusables(
        words,
        g2p,
        k=entry.k,
        workers=entry.workers,
        progress=lambda stage, done, total: log.info(
            "confusables %s: radius %s: %d/%d settled", args.name, stage, done, total
        ),
    )
    with writing.Outputs(inputs=[args.vocab]) as outputs:
        out = outputs.file(args.out)
        writing.write_parquet(table, out)
        writing.write_json_in_place(report, outputs.file(args.report))
    log.info("confusables %s: %d words, %d rows", args.name, report["words"], report["rows"])
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
