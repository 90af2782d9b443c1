"""punct-corpora: punctuation-restoration corpora from raw text to labelled, audited datasets and models.

The library: pure functions and steps over Arrow tables (``io`` is the module that touches files,
``executor`` the one that owns parallelism).  The command line is ``punct-corpora`` (``pipeline.cli``).
"""

__version__ = "0.5.0"
