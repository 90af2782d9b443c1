"""What every entry point (the command line, the DVC stages) does the same way: logging, one-line
errors with exit status 2, signals.

:func:`run` wraps a ``main`` so any expected failure (bad params, bad input, an output that cannot
be written, a model that cannot be loaded) is one line on stderr naming the file or key and the
problem, exit 2, and a SIGTERM ends it through the same path (its staging removed).
"""

from __future__ import annotations

import argparse
import atexit
import json
import logging
import os
import sys
import traceback
from collections.abc import Callable

from pipeline.engine.writing import Terminated, exit_cleanly_on_signals
from pipeline.errors import UsageError


def print_error(message: str) -> None:
    """The one form of a refusal on stderr: a single line (a library's message may hold several)."""
    print(f"error: {' '.join(str(message).splitlines())}", file=sys.stderr)


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its errors in the same one line as every other refusal (not usage + message);
    the command line and every stage build their parsers from it (subparsers inherit it)."""

    def error(self, message: str):
        print_error(message)
        sys.exit(2)


def add_logging_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-v", "--verbose", action="count", default=0, help="more progress detail")
    parser.add_argument("-q", "--quiet", action="store_true", help="errors and warnings only")


def setup_logging(args) -> None:
    level = (
        logging.WARNING
        if getattr(args, "quiet", False)
        else logging.DEBUG
        if getattr(args, "verbose", 0)
        else logging.INFO
    )
    logging.basicConfig(level=level, format="%(message)s", stream=sys.stderr, force=True)
    for noisy in ("distributed", "tornado", "asyncio", "urllib3", "filelock", "fsspec"):
        logging.getLogger(noisy).setLevel(logging.WARNING)


def _record_imports() -> None:
    """With PUNCT_RECORD_IMPORTS=FILE, list the project files this process imported (the DVC deps test)."""
    target = os.environ.get("PUNCT_RECORD_IMPORTS")
    if not target:
        return
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the project's root

    def dump():
        files = sorted(
            os.path.relpath(m.__file__, root)
            for m in list(sys.modules.values())
            # an absolute path only: torch.classes is a module object whose __file__ is "_classes.py"
            if isinstance(getattr(m, "__file__", None), str)
            and os.path.isabs(m.__file__)
            and m.__file__.startswith(root + os.sep)
        )
        with open(target, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"argv": sys.argv, "files": files}) + "\n")

    atexit.register(dump)


def run(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> int:
    """``main(argv)`` with the error policy of every entry point."""
    exit_cleanly_on_signals()
    _record_imports()
    try:
        return main(argv) or 0
    except UsageError as exc:
        print_error(str(exc))
        return 2
    except SystemExit:
        raise
    except KeyboardInterrupt:
        print_error("interrupted")
        return 130
    except Terminated as exc:  # SIGTERM/SIGHUP: the outputs' staging is already removed
        print_error(f"terminated by {exc.signal.name}")
        return 128 + exc.signal
    except Exception as exc:  # a bug, not the user's input: say so, and show where with -v
        if _verbose(sys.argv[1:] if argv is None else argv):
            traceback.print_exc()
        first = (str(exc).splitlines() or [""])[0]
        print_error(
            f"internal error: {type(exc).__name__}: {first} (a bug in punct-corpora, not in your input; "
            "rerun with -v for the traceback)"
        )
        return 1


def _verbose(argv) -> bool:
    """Whether ``argv`` asks for ``-v`` (also as ``-vv`` or ``--verbose``), read without parsing it."""
    return any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in argv)
