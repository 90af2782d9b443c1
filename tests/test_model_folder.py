"""A model folder is read and checked once, for torch and ONNX alike, before the first batch:
tampered copies of a tiny checkpoint and of its export (a tokenizer of another model, case labels
that are not the case head's, a max_len beyond the positions, files that are not JSON) are each
one line naming the file and the key, exit status 2, from ``punctuate`` and ``export-model``."""

import json
import re
import shutil
import subprocess
import sys

import pytest
from support.reliability import call, error_line

from pipeline.training.model_folder import ModelFolderError
from pipeline.training.punctuator import Punctuator


def _json(path, change):
    meta = json.loads(path.read_text(encoding="utf-8"))
    change(meta)
    path.write_text(json.dumps(meta), encoding="utf-8")


def foreign_tokenizer(folder, models):
    shutil.rmtree(folder / "tokenizer")
    shutil.copytree(models / "foreign-tokenizer", folder / "tokenizer")


def fewer_case_labels(folder, models):
    _json(folder / "punctuation.json", lambda m: m.update(case_labels=["O", "U", "A"]))


def long_max_len(folder, models):
    _json(folder / "punctuation.json", lambda m: m["sequence"].update(max_len=1000))


def lexicon_not_json(folder, models):
    (folder / "mixed_case.json").write_text('{"ted": "TED"', encoding="utf-8")


def meta_not_json(folder, models):
    (folder / "punctuation.json").write_text("{labels: O}", encoding="utf-8")


def unknown_special_token(folder, models):
    _json(folder / "tokenizer" / "tokenizer_config.json", lambda m: m.update(cls_token="<nope>"))


#: (tampering, what the one line says, as a regular expression)
TAMPERINGS = [
    (foreign_tokenizer, r"tokenizer/tokenizer\.json: 30522 tokens, but .* has \d+ rows \(a tokenizer of another"),
    (fewer_case_labels, r"punctuation\.json: case_labels: 3 labels, but .*(case_classifier\.weight|case_logits) has 4"),
    (long_max_len, r"punctuation\.json: sequence\.max_len: 1000 tokens, but .* allows 128"),
    (lexicon_not_json, r"mixed_case\.json: not readable JSON"),
    (meta_not_json, r"punctuation\.json: not readable JSON"),
    (unknown_special_token, r"tokenizer/tokenizer_config\.json: cls_token: '<nope>' is not a token of tokenizer\.json"),
]


@pytest.fixture
def text(tmp_path):
    path = tmp_path / "talk.txt"
    path.write_text("so we went to the talk and it was good\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("kind", ["ckpt", "onnx"])
@pytest.mark.parametrize(("tamper", "says"), TAMPERINGS, ids=[t.__name__ for t, _ in TAMPERINGS])
def test_a_tampered_model_folder_is_one_line_naming_file_and_key(tiny_models, tmp_path, text, kind, tamper, says):
    folder = tmp_path / kind
    shutil.copytree(tiny_models / kind, folder)
    tamper(folder, tiny_models)
    line = error_line(*call("pipeline", ["punctuate", "--model", folder, text]))
    assert "internal error" not in line
    assert re.search(says, line), line
    assert str(folder) in line
    with pytest.raises(ModelFolderError):
        Punctuator.load(folder)


def test_the_untampered_folders_load(tiny_models, text):
    for kind in ("ckpt", "onnx"):
        assert call("pipeline", ["punctuate", "-q", "--model", tiny_models / kind, text]) == (0, "")


def test_an_export_keeps_what_loading_checks_against(tiny_models):
    entry = json.loads((tiny_models / "onnx" / "punctuation.json").read_text())["onnx"]
    # the vocabulary is the one trained on the corpora at hand (real or fixtures)
    config = json.loads((tiny_models / "ckpt" / "encoder" / "config.json").read_text())
    assert entry["embeddings"] == {"tokens": config["vocab_size"], "positions": config["max_position_embeddings"]}
    assert set(entry["special_tokens"]) >= {"unk_token", "pad_token"}


def test_the_torch_specific_checks(tiny_models, tmp_path, text):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_models / "ckpt", folder)
    _json(folder / "encoder" / "config.json", lambda c: c.update(pad_token_id=7))
    line = error_line(*call("pipeline", ["punctuate", "--model", folder, text]))
    assert "tokenizer: pad_token: id" in line and "encoder/config.json: pad_token_id is 7" in line
    shutil.rmtree(folder)
    shutil.copytree(tiny_models / "ckpt", folder)
    (folder / "model.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{not json")
    line = error_line(*call("pipeline", ["punctuate", "--model", folder, text]))
    assert "model.safetensors: cannot load (not a safetensors file)" in line


def test_export_model_reads_the_same_checks(tiny_models, tmp_path):
    folder = tmp_path / "ckpt"
    shutil.copytree(tiny_models / "ckpt", folder)
    lexicon_not_json(folder, tiny_models)
    out = tmp_path / "out"
    line = error_line(*call("pipeline", ["export-model", "--model", folder, "--format", "onnx", "--out", out]))
    assert f"{folder / 'mixed_case.json'}: not readable JSON" in line
    assert not out.exists()
    line = error_line(
        *call("pipeline", ["export-model", "--model", tiny_models / "onnx", "--format", "onnx", "--out", out])
    )
    assert "an exported model" in line and not out.exists()


def test_the_loaders_import_no_circle():
    """The runtime-agnostic punctuator does not import the in-memory inference helpers (which import it)."""
    code = (
        "import sys, pipeline.training.punctuator; "
        "print('pipeline.training.inference' in sys.modules, 'torch' in sys.modules, 'onnxruntime' in sys.modules)"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert proc.stdout.split() == ["False", "False", "False"]
