"""The stages' shared entry-point behaviour: :mod:`pipeline.entrypoint` (one place for the command
line and the stages).  A stage parses its arguments and calls its function in
:mod:`pipeline.operations`, imported when it runs (after the entry point has set up the process)."""

from pipeline.entrypoint import ArgumentParser, add_logging_options, run, setup_logging

__all__ = ["PARAMS_HELP", "ArgumentParser", "add_logging_options", "run", "setup_logging"]

#: help of every stage's ``--params``
PARAMS_HELP = "the params file"
