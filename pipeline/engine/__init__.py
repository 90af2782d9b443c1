"""The engine: how work is cut into shards and run, and how files are read and written.

It knows nothing of text or training, and of labels only the label set a dataset's manifest
records.  ``executor`` is the one place that owns parallelism (inline, a local process pool,
Dask); ``step`` is the contract of a step (what it keeps, what it drops and why); ``dataset``
checks a dataset's parts against its manifest, refuses datasets of two label sets together and
cuts a segment dataset into shards of whole documents; ``textfiles``
cuts text files into shards of lines; ``hashsets`` counts hashes across shards; ``location``,
``reading`` and ``writing`` are the only modules that touch files (paths and URLs, strict
inputs, the atomic output transaction).
"""

from pipeline._lazy import lazy_exports

__all__ = ["Counts", "Outputs", "StepResult", "executor", "is_url", "join", "read_segments", "row_shards"]
__getattr__, __dir__ = lazy_exports(
    __name__,
    {
        "executor": "executor",
        "Counts": "step",
        "StepResult": "step",
        "row_shards": "dataset",
        "Outputs": "writing",
        "read_segments": "reading",
        "join": "location",
        "is_url": "location",
    },
)
