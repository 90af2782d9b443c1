"""What every entry point (the command line, the DVC stages) does the same way: logging, one-line
errors with exit status 2, signals.

:func:`run` wraps a ``main`` so any expected failure (bad params, bad input, an output that cannot
be written, a model that cannot be loaded) is one line on stderr naming the file or key and the
problem, exit 2, and a SIGTERM ends it through the same path (its staging removed).
"""

from __future__ import annotations

import argparse
import errno
import logging
import os
import signal
import sys
import traceback
from collections.abc import Callable
from contextlib import contextmanager

from pipeline.errors import OutputError, UsageError


def print_error(message: str) -> None:
    """The one form of a refusal on stderr: a single line (a library's message may hold several)."""
    print(f"error: {' '.join(str(message).splitlines())}", file=sys.stderr)


class HelpFormatter(argparse.HelpFormatter):
    """Help that shows each option's default: ``(default: X)`` appended from the action's
    ``shown_default`` (an option whose value, when not given, comes from the params schema keeps
    ``None`` as its argparse default and names the schema's value there) or its argparse default."""

    def _get_help_string(self, action) -> str:
        text = action.help or ""
        default = getattr(action, "shown_default", action.default)
        if default is None or default is argparse.SUPPRESS or default is False or "(default" in text:
            return text
        if isinstance(action, argparse._CountAction | argparse._HelpAction | argparse._VersionAction):
            return text
        if action.nargs in (argparse.ZERO_OR_MORE, argparse.ONE_OR_MORE) and not default:
            return text
        shown = ", ".join(map(str, default)) if isinstance(default, list | tuple) else str(default)
        return f"{text} (default: {shown.replace('%', '%%')})"


class RawDescriptionHelpFormatter(HelpFormatter, argparse.RawDescriptionHelpFormatter):
    """:class:`HelpFormatter` that keeps the description's line breaks (a usage example)."""


def shows_default(action: argparse.Action, value) -> argparse.Action:
    """``action`` with ``value`` (the params schema's default) shown in its help."""
    action.shown_default = value
    return action


class ArgumentParser(argparse.ArgumentParser):
    """argparse with its errors in the same one line as every other refusal (not usage + message),
    and every option's default in its help; the command line and every stage build their parsers
    from it (subparsers inherit it)."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str):
        print_error(message)
        sys.exit(2)


def add_logging_options(parser: argparse.ArgumentParser, default=0) -> None:
    """``-v`` (more detail, and the traceback of an internal error) and ``-q``.  ``default``:
    argparse.SUPPRESS for a subcommand's copy, so that ``-v`` before the subcommand holds."""
    parser.add_argument(
        "-v",
        "--verbose",
        action="count",
        default=default,
        help="more progress detail, and the traceback of an internal error",
    )
    parser.add_argument(
        "-q",
        "--quiet",
        action="store_true",
        default=False if default == 0 else default,
        help="errors and warnings only",
    )


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


#: freed memory that glibc's malloc keeps at the top of a process's heap (``M_TOP_PAD``) rather
#: than give back to the kernel: a step allocates and frees about the same arrays for every shard,
#: and each page given back was faulted in and zeroed again for the next shard (the stages' system
#: time, which bench_scale records with their CPU seconds).  A fixed amount, not a share of the
#: shard: at most this much more stays resident in a process.
HEAP_TOP_PAD = 64 << 20


#: numpy's dispatch targets above AVX2, as numpy 2.4 names them (a name it does not know is
#: ignored; a test checks that a prepared process runs none of them)
NUMPY_AVX512 = "X86_V4 AVX512_ICL AVX512_SPR"


def prepare_process() -> None:
    """The environment a run of this tool wants, set by the entry point (never by importing the
    library), on Linux, each unless the user's environment sets it already:

    * Arrow allocations from jemalloc ($ARROW_DEFAULT_MEMORY_POOL), because Arrow's default there,
      mimalloc, keeps what a finished shard freed, so a worker's resident memory crept up with
      the number of shards it ran.  Arrow reads the variable when pyarrow is imported: the entry
      points import it only after this (forked and Dask LocalCluster workers inherit it).
    * glibc's malloc keeping :data:`HEAP_TOP_PAD` of freed heap ($MALLOC_TOP_PAD_): set in this
      process (forked workers inherit it) and in the environment, for the processes it starts
      (Dask's workers), which glibc reads when they start.
    * on an x86 CPU with AVX2 and FMA, numpy's OpenBLAS kernels for Haswell
      ($OPENBLAS_CORETYPE), whatever newer instructions the CPU has: its AVX-512 kernels add a
      matrix product's terms in another order, and g2p's network (numpy) then spelled some words
      with other phonemes, so a vocabulary's confusables differed with the machine.  OpenBLAS
      reads the variable when numpy is first imported, after this.
    * on the same CPUs, numpy's own loops for AVX2, not those for AVX-512 ($NPY_DISABLE_CPU_FEATURES
      names them, :data:`NUMPY_AVX512`): its AVX-512 loops compute powers and other functions to
      other last bits (an int8 export's smoothing factors differed, before they were rounded),
      and on AMD's Zen 4 its AVX-512 sort of 64-bit words took four times as long as its AVX2
      one (the hash reduces of the audits sort).  numpy reads the variable when first imported."""
    if not sys.platform.startswith("linux"):
        return
    os.environ.setdefault("ARROW_DEFAULT_MEMORY_POOL", "jemalloc")
    if "MALLOC_TOP_PAD_" not in os.environ and set_heap_top_pad(HEAP_TOP_PAD):
        os.environ["MALLOC_TOP_PAD_"] = str(HEAP_TOP_PAD)
    same_kernels = ("OPENBLAS_CORETYPE", "Haswell"), ("NPY_DISABLE_CPU_FEATURES", NUMPY_AVX512)
    if any(name not in os.environ for name, _ in same_kernels) and {"avx2", "fma"} <= cpu_flags():
        for name, value in same_kernels:
            os.environ.setdefault(name, value)


def cpu_flags(cpuinfo: str | None = None) -> set[str]:
    """The CPU's feature flags as Linux lists them (``/proc/cpuinfo``, or the text ``cpuinfo``);
    empty where none are listed."""
    if cpuinfo is None:
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as info:
                cpuinfo = info.read()
        except OSError:
            return set()
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.partition(":")[2].split())
    return set()


def set_heap_top_pad(size: int) -> bool:
    """glibc's ``mallopt(M_TOP_PAD, size)`` in this process; False where the C library is not
    glibc (musl has no such option)."""
    import ctypes

    try:
        libc = ctypes.CDLL(None)
        libc.gnu_get_libc_version  # noqa: B018 (glibc's alone: the check that M_TOP_PAD means this)
        return bool(libc.mallopt(-2, size))  # -2: M_TOP_PAD in glibc's malloc.h
    except (OSError, AttributeError):
        return False


class Terminated(BaseException):
    """The run was ended by a signal; a BaseException, so no ``except Exception`` swallows it."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signal = signal.Signals(signum)


def exit_cleanly_on_signals() -> None:
    """SIGTERM and SIGHUP end the run through the normal error path, so staging is removed and
    locks released (SIGKILL cannot be caught: the next run removes what it left)."""

    def handler(signum, _frame):
        raise Terminated(signum)

    for signum in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(signum, handler)


class StdoutFailed(OutputError):
    """Standard output could not be written (a closed pipe, a full disk): a fault of where it goes,
    not of the command.  ``done`` says what the command had finished before (files put in place)."""

    def __init__(self, exc: OSError, done: str | None = None):
        self.error, self.errno, self.done = exc, exc.errno, done
        reason = exc.strerror or str(exc)
        super().__init__(f"<stdout>: cannot write ({reason})" + (f"; {done}" if done else ""))


class _GuardedStdout:
    """``sys.stdout`` while a command runs: a failed write or flush raises :class:`StdoutFailed`, so
    it is told apart from a failed write of a file (which names its path)."""

    def __init__(self, stream):
        self._stream = stream

    def _guard(self, method, *args):
        try:
            return method(*args)
        except OSError as exc:
            raise StdoutFailed(exc) from None

    def write(self, data):
        return self._guard(self._stream.write, data)

    def writelines(self, lines):
        return self._guard(self._stream.writelines, lines)

    def flush(self):
        return self._guard(self._stream.flush)

    @property
    def buffer(self):
        return _GuardedStdout(self._stream.buffer)

    def __getattr__(self, name):
        return getattr(self._stream, name)


@contextmanager
def stdout_after(done: str):
    """What the block prints, flushed at its end; where standard output fails, the error says
    ``done`` too (a command that prints after its files are in place says that they are)."""
    try:
        yield
        sys.stdout.flush()
    except StdoutFailed as exc:
        raise StdoutFailed(exc.error, done) from None


#: errors of the environment (the disk, the file system's limits), not of the program: one line
#: naming the path, exit 2
ENVIRONMENT_ERRNOS = frozenset(
    {errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.ENAMETOOLONG, errno.EROFS, errno.EACCES, errno.EMFILE}
)

#: the optional extras, by the top-level module that needs them
EXTRAS = {
    "torch": "train",
    "accelerate": "train",
    "safetensors": "train",
    "transformers": "train",
    "onnx": "onnx",
    "onnxruntime": "onnx",
    "dask": "dask",
    "distributed": "dask",
}


def _stdout_gone(stream) -> None:
    """``stream`` (the failed standard output) pointed at /dev/null: what is still buffered for it
    goes nowhere, so the interpreter's last flush does not fail again (and print a traceback)."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        try:
            os.dup2(devnull, stream.fileno())
        finally:
            os.close(devnull)
    except (OSError, AttributeError, ValueError):  # no file descriptor (an embedding program's stream)
        pass


def run(main: Callable[[list[str] | None], int | None], argv: list[str] | None = None) -> int:
    """``main(argv)`` with the error policy of every entry point.

    Standard output is flushed before the exit status is decided.  A closed pipe on it (``| head``)
    ends the command quietly with status 141 (128 + SIGPIPE), what a shell shows for ``cat`` in
    the same place; any other failure of it (a full disk) is one ``error: <stdout>: ...`` line,
    exit 2.  An environment fault on a file (a full disk, a name too long) names the file, exit 2;
    a missing optional extra names the extra to install, exit 2."""
    prepare_process()
    exit_cleanly_on_signals()
    saved = sys.stdout
    try:
        if saved is not None:
            sys.stdout = _GuardedStdout(saved)
        try:
            status = main(argv) or 0
            if sys.stdout is not None:
                sys.stdout.flush()  # here, not at exit: a failure is this command's to report
        finally:
            sys.stdout = saved
        return status
    except StdoutFailed as exc:
        _stdout_gone(saved)
        if exc.errno == errno.EPIPE:  # the reader has gone: nothing to say, as coreutils
            return 128 + signal.SIGPIPE
        print_error(str(exc))
        return 2
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
    except ModuleNotFoundError as exc:
        extra = EXTRAS.get((exc.name or "").partition(".")[0])
        if extra is None:
            return _internal_error(exc, argv)
        print_error(f"this needs {exc.name}, which is not installed: pip install 'punct-corpora[{extra}]'")
        return 2
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS or not exc.filename:
            return _internal_error(exc, argv)
        print_error(f"{exc.filename}: {exc.strerror}")
        return 2
    except Exception as exc:  # a bug, not the user's input: say so, and show where with -v
        return _internal_error(exc, argv)


def _internal_error(exc: Exception, argv) -> int:
    if _verbose(sys.argv[1:] if argv is None else argv):
        traceback.print_exception(exc)
    first = (str(exc).splitlines() or [""])[0]
    print_error(
        f"internal error: {type(exc).__name__}: {first} (a bug in punct-corpora, not in your input; "
        "rerun with -v for the traceback)"
    )
    return 1


def _verbose(argv) -> bool:
    """Whether ``argv`` asks for ``-v`` (also as ``-vv`` or ``--verbose``), read without parsing it."""
    return any(a == "--verbose" or (a.startswith("-v") and set(a[1:]) == {"v"}) for a in argv)
