"""The installed llama.cpp was compiled for the pinned instruction set (x86-64-v3), not for this machine's CPU.

A native build would report this CPU's extra kernels (AVX-512, VNNI, …) and make the offline table depend on
the CPU (scripts/install_llama.sh). The check reads llama.cpp's own compile-time system-info line.
"""

from __future__ import annotations

import importlib.util
import json
import os
import platform
from pathlib import Path

import pytest

from ccpt.eval.llama_isa import PINNED_FEATURES, PINNED_ISA, build_features, build_isa, parse_system_info

needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1",
    reason="llama-cpp-python is not installed (bash scripts/setup.sh)",
)


def _host_cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((line for line in text.splitlines() if line.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def test_system_info_is_parsed() -> None:
    line = "CPU : SSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | LLAMAFILE = 1 | OPENMP = 1 | REPACK = 1 | "
    assert parse_system_info(line) == {
        "SSE3": 1,
        "AVX": 1,
        "AVX2": 1,
        "AVX512": 0,
        "LLAMAFILE": 1,
        "OPENMP": 1,
        "REPACK": 1,
    }
    native_avx512 = dict(PINNED_FEATURES, AVX512=1, AVX512_VNNI=1)
    assert build_isa(native_avx512) == "other (AVX512=1, AVX512_VNNI=1)"
    assert build_isa(dict(PINNED_FEATURES)) == PINNED_ISA


@needs_llama
@pytest.mark.skipif(platform.machine() != "x86_64", reason="the pinned build is for x86-64 CPUs")
def test_llama_build_targets_the_pinned_isa_not_the_native_one() -> None:
    import llama_cpp

    features = build_features()
    assert {k: features.get(k, 0) for k in PINNED_FEATURES} == dict(PINNED_FEATURES), features
    host = _host_cpu_flags()
    if "avx512f" in host:  # here a native build would have reported AVX512 = 1
        assert features.get("AVX512", 0) == 0  # llama.cpp lists only the kernels it was compiled with
    marker = Path(llama_cpp.__file__).parent / ".ccpt-llama-build.json"
    record = json.loads(marker.read_text())
    assert record["isa"] == PINNED_ISA and "-DGGML_NATIVE=OFF" in record["cmake_args"]
