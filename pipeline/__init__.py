"""punct-corpora: punctuation-restoration corpora from raw text to labelled, audited datasets and models.

The library: pure functions and steps over Arrow tables (``engine`` touches files and owns
parallelism), one function per command in ``operations``.  The command line is ``punct-corpora``
(``pipeline.cli``); importing the package changes nothing in the process (the entry points set
the environment they need: :func:`pipeline.entrypoint.prepare_process`).
"""

__version__ = "0.5.0"
