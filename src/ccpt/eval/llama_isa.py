"""Which instruction set the installed llama.cpp was compiled for (scripts/install_llama.sh pins x86-64-v3): a build
for its own CPU runs other kernels on other CPUs, so the embedded model's sampled tokens change with the CPU.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

PINNED_ISA = "x86-64-v3"
# Compile-time kernels a pinned build must report: on, and off (AVX-512 and AMX would make results CPU-specific).
PINNED_FEATURES: Mapping[str, int] = {
    **dict.fromkeys(("SSE3", "SSSE3", "AVX", "AVX2", "F16C", "FMA", "BMI2"), 1),
    **dict.fromkeys(("AVX_VNNI", "AVX512", "AVX512_VBMI", "AVX512_VNNI", "AVX512_BF16", "AMX_INT8"), 0),
}


def parse_system_info(text: str) -> dict[str, int]:
    """``"CPU : SSE3 = 1 | AVX = 1 | …"`` → {"SSE3": 1, "AVX": 1, …} (flags llama.cpp reports)."""
    return {name: int(value) for name, value in re.findall(r"([A-Z][A-Z0-9_]*) = (\d+)", text)}


def build_features() -> dict[str, int]:
    """The compile-time CPU kernels of the installed llama.cpp (ImportError if llama_cpp is missing)."""
    import llama_cpp

    return parse_system_info(llama_cpp.llama_print_system_info().decode("utf-8", "replace"))


def build_isa(features: Mapping[str, int] | None = None) -> str:
    """``x86-64-v3`` when the build reports exactly the pinned kernels, else ``other (…)`` naming the extras."""
    features = build_features() if features is None else features
    differing = [f"{k}={features.get(k, 0)}" for k, v in PINNED_FEATURES.items() if features.get(k, 0) != v]
    return PINNED_ISA if not differing else f"other ({', '.join(differing)})"
