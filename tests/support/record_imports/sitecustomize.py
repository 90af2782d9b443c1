"""Test machinery, not part of the tool: with this folder on PYTHONPATH and PUNCT_RECORD_IMPORTS=FILE,
every Python process lists the project files it imported (``tests/test_dvc_pipeline.py`` checks
that each stage's deps in dvc.yaml cover them).  The project is the working directory (DVC runs a
stage's command from the repository's root)."""

import atexit
import json
import os
import sys


def _record(target: str, root: str) -> None:
    if not os.path.abspath(sys.argv[0] if sys.argv else "").startswith(os.path.join(root, "stages") + os.sep):
        return  # not a stage (DVC itself, a worker process)
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


if os.environ.get("PUNCT_RECORD_IMPORTS"):
    atexit.register(_record, os.environ["PUNCT_RECORD_IMPORTS"], os.getcwd())
