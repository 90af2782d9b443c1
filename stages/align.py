"""DVC stage: transfer a reference corpus's punctuation onto its ASR corpus (``alignments.<name>``)."""

from __future__ import annotations

import argparse
import sys

from pipeline import io
from pipeline.align import AlignmentError, align_tables
from pipeline.verbalize import verbalizer_or_none
from stages.common import load_params


def _sharded(args, entry) -> int:
    """The output is then a directory of part-NNNNN.parquet shards (readers accept either)."""
    from pipeline.engine import align_sharded

    if entry.get("pair_by", "id") != "id":
        print(f"error: alignment {args.name}: a sharded alignment pairs documents by id, not by order", file=sys.stderr)
        return 2
    try:
        report = align_sharded(
            f"{args.data_dir}/segments/{entry['ref']}.parquet",
            f"{args.data_dir}/segments/{entry['hyp']}.parquet",
            f"{args.data_dir}/segments/{args.name}.parquet",
            policy=entry.get("policy", "guerreiro"),
            lang=entry.get("lang"),
            corpus=args.name,
            max_wer=float(entry.get("max_wer", 0.5)),
            force=bool(entry.get("force", False)),
            engine=entry["engine"],
            workers=int(entry.get("workers", 0)),
            shard_rows=int(entry.get("shard_rows", 20_000)),
        )
    except (AlignmentError, io.InputError, ValueError) as exc:
        print(f"error: alignment {args.name}: {exc}", file=sys.stderr)
        return 2
    io.write_json({"ref": entry["ref"], "hyp": entry["hyp"], **report}, f"{args.data_dir}/alignment/{args.name}.json")
    print(
        f"align {args.name}: {report['shards']} shards on {report['engine']}, WER {report['wer']['wer']:.3f}",
        file=sys.stderr,
    )
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("name", help="name of the alignment in the params file")
    parser.add_argument("--params", default="params.yaml")
    parser.add_argument("--data-dir", default="data")
    args = parser.parse_args(argv)
    entry = load_params(args.params, "alignments", args.name)
    if entry.get("engine"):  # a corpus bigger than memory: sharded, streaming, on a process pool or Dask
        return _sharded(args, entry)
    ref = io.read_segments(f"{args.data_dir}/segments/{entry['ref']}.parquet")
    hyp = io.read_segments(f"{args.data_dir}/segments/{entry['hyp']}.parquet")
    lang = hyp["lang"][0].as_py() if hyp.num_rows else ref["lang"][0].as_py()
    verbalizer = verbalizer_or_none(lang)
    try:
        out, report = align_tables(
            ref,
            hyp,
            policy=entry.get("policy", "guerreiro"),
            verbalizer=verbalizer,
            max_wer=float(entry.get("max_wer", 0.5)),
            force=bool(entry.get("force", False)),
            corpus=args.name,
            pair_by=entry.get("pair_by", "id"),
            workers=int(entry.get("workers", 1)),
        )
    except (AlignmentError, ValueError) as exc:
        print(f"error: alignment {args.name}: {exc}", file=sys.stderr)
        return 2
    io.write_parquet(out, f"{args.data_dir}/segments/{args.name}.parquet")
    io.write_json({"ref": entry["ref"], "hyp": entry["hyp"], **report}, f"{args.data_dir}/alignment/{args.name}.json")
    print(
        f"align {args.name}: WER {report['wer']['wer']:.3f}, {report['marks']['transferred']} of "
        f"{report['marks']['reference']} marks transferred",
        file=sys.stderr,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
