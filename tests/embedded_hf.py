"""The embedded Qwen2.5-Coder-0.5B as a Hugging Face checkpoint (bf16) that vLLM loads, converted once and cached.

Shared by the tests that run vLLM (its CPU build): the pipeline's batch job and the OpenAI-compatible server.
"""

from __future__ import annotations

from pathlib import Path

from ccpt import weights


def embedded_hf_checkpoint() -> Path:
    """The checkpoint directory (converted from the GGUF on first use; the conversion is atomic)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]
    target = weights.model_cache_dir() / f"hf-{model.sha256[:16]}"
    if (target / "model.safetensors").is_file():
        return target
    gguf = weights.resolve_gguf(weights.DEFAULT_SOLVER)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    config = loaded.config
    del config.quantization_config  # dequantised on load: save a plain checkpoint
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    plain.load_state_dict(loaded.state_dict())
    partial = target.with_name(target.name + ".partial")
    tokenizer.save_pretrained(partial)
    plain.save_pretrained(partial)
    partial.rename(target)
    return target
