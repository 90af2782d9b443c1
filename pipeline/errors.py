"""The errors that mean bad input, bad params or an output that cannot be written.

Every entry point (the command line, the DVC stages) shows a :class:`UsageError` as one line on
stderr and exits with status 2.  Anything else raised inside the library is a bug: the entry
point says "internal error" and shows the traceback under ``-v``.  Raise these where the input is
checked, with a message that names the file, line, record or key and what is wrong.
"""

from __future__ import annotations


class UsageError(Exception):
    """Something the user gave is wrong or cannot be done: one line, exit status 2."""


class InputError(UsageError):
    """Bad input: the message names the file and the line, record or byte offset."""


class OutputError(UsageError):
    """An output cannot be written: the message names the path and why."""


class ParamsError(UsageError):
    """Bad params or options: the message names the file or option, the key and what is wrong."""


class SetupError(UsageError):
    """The installation lacks something a command needs (the project not installed, so no reader
    registered): the message says what to install."""


class SchemaError(InputError):
    """A table that does not follow the segment schema."""


class ModelFolderError(InputError):
    """A model folder whose files are missing, unreadable or disagree (labels and heads, tokenizer
    and embeddings, max_len and positions): the message names the file and the key."""
