"""The two sides of an alignment as a user gives them: a segment dataset already ingested
(a ``.parquet`` file or a folder of parts), or files read by a reader with that reader's options,
ingested into a scratch folder first.  Either way the alignment then runs on two segment
datasets, by the same code as the align stage (:func:`pipeline.align.datasets.align_datasets`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from pipeline.errors import ParamsError

#: reader names that mean "this side is a segment dataset already"
SEGMENTS = ("segments", "parquet")


@dataclass
class Side:
    """One side of an alignment: ``path``, read by ``reader`` with ``options`` (reader options,
    as a corpus entry of the params file holds them); reader None or ``segments``: a segment
    dataset.  ``flag`` names the side in messages (``--ref``)."""

    path: str
    reader: str | None = None
    options: dict = field(default_factory=dict)
    flag: str = "--ref"


def is_segment_dataset(path) -> bool:
    path = Path(path)
    return path.suffix == ".parquet" or (path.is_dir() and any(path.glob("*.parquet")))


def side_dataset(side: Side, lang: str, scratch: Path, engine=None) -> str:
    """The segment dataset of ``side``: its own path, or the files ingested into ``scratch``
    (their corpus named after the file, so document ids are the reader's usual ones)."""
    from pipeline import params as P
    from pipeline.operations.ingest import ingest

    if side.reader is None or side.reader in SEGMENTS:
        if side.reader is None and not is_segment_dataset(side.path):
            raise ParamsError(
                f"{side.flag}-reader: {side.path} is not a segment dataset (.parquet file or folder of parts): "
                f"name the reader of the file ({side.flag}-reader text, transcript, tsv, ...)"
            )
        if side.options:
            raise ParamsError(
                f"{side.flag}-option: a segment dataset is read as it is: no reader options "
                f"(given: {', '.join(sorted(side.options))})"
            )
        return str(side.path)
    if problem := P.reader_problem(side.reader):
        raise ParamsError(f"{side.flag}-reader: {problem}")
    entry = {"reader": side.reader, "lang": lang, "input": str(side.path), **side.options}
    try:
        checked = P.validate(P.corpus_model(side.reader), entry, None)
    except ParamsError as exc:
        key, _, problem = str(exc).partition(": ")
        if problem.startswith("unknown key"):
            problem = f"not an option of reader {side.reader!r}"
        raise ParamsError(f"{side.flag}-option {key}: {problem}") from None
    out = Path(scratch) / f"{side.flag.strip('-')}.parquet"
    ingest(checked, [side.path], Path(side.path).stem, out, None, engine or P.EngineParams(workers=1))
    return str(out)
