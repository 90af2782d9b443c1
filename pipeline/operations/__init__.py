"""One function per command, called by both the command line (``pipeline.cli``) and the DVC stage
(``stages.<command>``): the checks of an option and the defaults (the params schema's) live here
once, so the two ways of running a command cannot drift.  A module per command: ``ingest``,
``audit``, ``align``, ``confusables``, ``split``, ``oversample``, ``sequences``, ``export``,
``train``, ``punctuate`` (with ``export-model``); ``entries`` finds a named entry of the params file.

The modules import their libraries when called, so importing an entry point stays cheap (and
pyarrow is not loaded before the entry point has chosen its allocator).
"""
