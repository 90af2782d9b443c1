"""DVC stage: ingest one corpus of the registry (``corpora.<name>`` in the params file)."""

from __future__ import annotations

import sys

from pipeline import params as P
from pipeline.ingest import ingest_corpus
from stages.common import ArgumentParser, add_logging_options, run, setup_logging


def _main(argv=None) -> int:
    parser = ArgumentParser(description=__doc__)
    parser.add_argument("corpus", help="name of the corpus in the registry")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--out", required=True, help="output segment dataset (a folder of parts)")
    parser.add_argument("--stats", required=True, help="output counts (JSON)")
    add_logging_options(parser)
    args = parser.parse_args(argv)
    setup_logging(args)
    params = P.load(args.params, [("corpora", args.corpus)])
    if args.corpus not in params.corpus_entries:
        raise P.ParamsError(f"{args.params}: corpora.{args.corpus}: no such corpus in the registry")
    entry = params.corpus_entries[args.corpus]
    ingest_corpus(entry, entry.input, args.corpus, args.out, args.stats, params.engine_for(entry.engine))
    return 0


def main(argv=None) -> int:
    """The stage with the error policy of every entry point: one line and exit 2 on bad input."""
    return run(_main, argv)


if __name__ == "__main__":
    sys.exit(main())
