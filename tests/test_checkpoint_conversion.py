"""The Hugging Face checkpoint the vLLM tests load (:func:`conftest.embedded_hf_checkpoint`) is the embedded GGUF
model: the same architecture and sizes, the same tokenizer, every layer's weights, in bf16.

Not marked cpu-heavy, and its module name sorts early on purpose: under pytest-xdist a light worker makes the
conversion (about a minute of CPU, once per cache directory, under a file lock) near the start of the run, so the
one-at-a-time cpu-heavy chain (tests/conftest.py) finds the checkpoint cached when its vLLM tests come, instead of
converting it on the suite's critical path.
"""

from __future__ import annotations

import importlib.util
import json
import os
from pathlib import Path

import pytest

from ccpt.io import weights

_MISSING = None
for _module in ("transformers", "torch", "gguf", "safetensors", "llama_cpp"):
    if importlib.util.find_spec(_module) is None:
        _MISSING = f"{_module} is not installed (bash scripts/setup.sh --test installs it)"
if _MISSING is None and not weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]):
    _MISSING = "the embedded model is not installed"
# CI sets CCPT_REQUIRE_EMBEDDED=1: there a missing part fails the test instead of skipping it.
pytestmark = pytest.mark.skipif(
    _MISSING is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(_MISSING)
)

TEXT = "He paced the room like a caged tiger; her voice was as clear as pure crystal. 42 naïve cafés!"


def test_converted_checkpoint_is_the_embedded_model(embedded_hf_checkpoint: Path) -> None:
    from llama_cpp import Llama
    from safetensors import safe_open
    from transformers import AutoTokenizer

    checkpoint = embedded_hf_checkpoint
    config = json.loads((checkpoint / "config.json").read_text(encoding="utf-8"))
    assert "quantization_config" not in config  # a plain checkpoint, dequantised
    assert config["architectures"] == ["Qwen2ForCausalLM"] and config["dtype"] == "bfloat16"

    # The GGUF itself, vocabulary and metadata only (no weights): the reference for sizes and tokenisation.
    gguf = Llama(model_path=str(weights.resolve_gguf(weights.DEFAULT_SOLVER)), vocab_only=True, verbose=False)
    try:
        meta = gguf.metadata
        layers = int(meta["qwen2.block_count"])
        assert config["num_hidden_layers"] == layers
        assert config["hidden_size"] == int(meta["qwen2.embedding_length"])
        assert config["intermediate_size"] == int(meta["qwen2.feed_forward_length"])
        assert config["num_attention_heads"] == int(meta["qwen2.attention.head_count"])
        assert config["num_key_value_heads"] == int(meta["qwen2.attention.head_count_kv"])
        expected_tokens = gguf.tokenize(TEXT.encode(), add_bos=False, special=False)
        vocab_size = gguf.n_vocab()
    finally:
        gguf.close()

    tokenizer = AutoTokenizer.from_pretrained(checkpoint)
    assert tokenizer.encode(TEXT, add_special_tokens=False) == expected_tokens
    assert tokenizer.decode(expected_tokens) == TEXT

    with safe_open(str(checkpoint / "model.safetensors"), framework="pt") as tensors:
        names = set(tensors.keys())
        for layer in range(layers):
            assert f"model.layers.{layer}.self_attn.q_proj.weight" in names
            assert f"model.layers.{layer}.mlp.down_proj.weight" in names
        embed = tensors.get_tensor("model.embed_tokens.weight")
    assert tuple(embed.shape) == (config["vocab_size"], config["hidden_size"]) and config["vocab_size"] >= vocab_size
    assert str(embed.dtype) == "torch.bfloat16" and bool(embed.abs().sum() > 0)
