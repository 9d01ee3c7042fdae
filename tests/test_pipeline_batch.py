"""Stage 3 as a Ray Data batch job (ray.data.llm) against a loopback OpenAI-compatible server: the same
properties as the Inspect path, resumption without resending, and failed requests counted and retried."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from loopback_openai import serve

from ccpt.errors import CcptError
from ccpt.pipeline.batch import REPLIES, BatchOptions, _postprocess, _preprocess, processor_config, run_batch
from ccpt.pipeline.llm import LLMOptions
from ccpt.pipeline.mining import COMBINATIONS
from ccpt.pipeline.properties import PROPERTIES, extract_properties

COMBOS = [
    ("caged tiger", "tiger", "cage", "He paced the room like a caged tiger."),
    ("pure crystal", "crystal", "pure", "Her voice was as clear as pure crystal."),
    ("wet dog", "dog", "wet", "The coat smelled like a wet dog."),
    ("old engine", "engine", "old", "He wheezed like an old engine."),
    ("frozen lake", "lake", "frozen", "The silence was like a frozen lake."),
]
LLM = LLMOptions(model="ccpt-scripted/pipeline", max_connections=2, seed=3)
# The tests that start a local Ray are marked ``ray`` (the cpu-heavy group, conftest.py); the others never start
# one (they check options, rows and stored replies, or fail before Ray starts) and run on any worker.
starts_ray = pytest.mark.ray


@pytest.fixture(autouse=True, scope="module")
def _stop_ray() -> Iterator[None]:
    """The jobs start a local Ray sized for them; stop it so later tests can start their own."""
    yield
    import ray

    ray.shutdown()


def _workdir(tmp: Path, name: str) -> Path:
    work = tmp / name
    work.mkdir()
    lines = [json.dumps({"combination": c, "head": h, "modifier": m, "sentence": s}) for c, h, m, s in COMBOS]
    (work / COMBINATIONS).write_text("\n".join(lines) + "\n")
    return work


def _rows(work: Path) -> list[dict]:
    return [json.loads(line) for line in (work / PROPERTIES).read_text().splitlines()]


def _http(url: str) -> BatchOptions:
    return BatchOptions(backend="http", model="loopback", url=f"{url}/chat/completions", batch_size=2)


@starts_ray
def test_http_batch_job_gives_the_inspect_paths_properties_and_resumes(tmp_path: Path) -> None:
    inspect_work = _workdir(tmp_path, "inspect")
    extract_properties(inspect_work, LLM)

    work = _workdir(tmp_path, "batch")
    with serve() as (url, requests):
        result = extract_properties(work, LLM, batch=_http(url))
        assert len(requests) == len(COMBOS)
        assert requests[0]["seed"] == 3 and requests[0]["temperature"] == 0.0
        assert result.counts["batch_requests"] == len(COMBOS) and not result.counts["failures"]
        # The loopback server and the scripted Inspect provider answer alike: identical stage output.
        assert _rows(work) == _rows(inspect_work)

        # A rerun (even forced) sends nothing: every reply is stored.
        extract_properties(work, LLM, batch=_http(url), force=True)
        assert len(requests) == len(COMBOS)

        # A kill mid-job: two replies kept, the last line cut short. Only the missing requests are sent.
        lines = (work / REPLIES).read_text().splitlines()
        (work / REPLIES).write_text("\n".join(lines[:2]) + "\n" + lines[2][:20])
        extract_properties(work, LLM, batch=_http(url), force=True)
        assert len(requests) == 2 * len(COMBOS) - 2
        assert _rows(work) == _rows(inspect_work)


@starts_ray
def test_failed_requests_are_counted_not_stored_and_retried(tmp_path: Path) -> None:
    work = _workdir(tmp_path, "failing")
    with serve(fail_when="wet dog") as (url, requests):
        result = extract_properties(work, LLM, batch=_http(url))
    assert result.counts["failures"] == {"call_error:http": 1}
    assert result.counts["combinations_without_properties"] == 1
    assert "wet dog" not in {r["combination"] for r in _rows(work)}
    assert len((work / REPLIES).read_text().splitlines()) == len(COMBOS) - 1

    with serve() as (url, requests):  # the endpoint recovers: only the failed request is sent again
        result = extract_properties(work, LLM, batch=_http(url), force=True)
    assert len(requests) == 1 and not result.counts["failures"]
    assert "wet dog" in {r["combination"] for r in _rows(work)}


def test_unparsable_replies_are_counted(tmp_path: Path) -> None:
    replies = tmp_path / REPLIES
    batch = BatchOptions(backend="http", model="m", url="http://127.0.0.1:9/v1/chat/completions")
    replies.write_text(json.dumps({"id": "a", "text": "no json here"}) + "\n")
    texts, failures, sent = run_batch({"a": "prompt"}, LLM, batch, replies)
    assert texts == {"a": "no json here"} and sent == 0 and not failures  # stored: nothing is sent


def test_vllm_processor_config_is_accepted_by_ray() -> None:
    batch = BatchOptions(
        backend="vllm",
        model="Qwen/Qwen2.5-7B-Instruct",
        batch_size=32,
        concurrency=4,
        accelerator_type="A100",
        engine_kwargs={"max_model_len": 4096},
    )
    config = processor_config(batch)  # Ray's own pydantic model: an unknown or mistyped field raises
    assert (config.model_source, config.batch_size, config.accelerator_type) == ("Qwen/Qwen2.5-7B-Instruct", 32, "A100")
    assert config.engine_kwargs["max_model_len"] == 4096 and config.should_continue_on_error


def test_vllm_rows_carry_messages_and_sampling_params() -> None:
    generation = {"temperature": 0.0, "max_tokens": 50, "seed": 7}
    row = _preprocess({"id": "x", "prompt": "List properties"}, llm=generation)
    assert row == {
        "id": "x",
        "messages": [{"role": "user", "content": "List properties"}],
        "sampling_params": generation,
    }
    assert _postprocess({"id": "x", "generated_text": '{"properties": []}'})["text"] == '{"properties": []}'


def test_bad_batch_options_are_clear_errors(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(CcptError, match="unknown batch backend"):
        BatchOptions(backend="triton", model="m")
    with pytest.raises(CcptError, match="needs a url"):
        BatchOptions(backend="http", model="m")
    work = _workdir(tmp_path, "novllm")
    # A model that is neither a local checkpoint nor reachable (no hub here; offline elsewhere).
    import huggingface_hub.constants

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    # huggingface_hub reads HF_HUB_OFFLINE once, at import: if an earlier test in this process imported it, the
    # variable alone does nothing, and the lookup went to the hub (5 retries with backoff, ~23 s without a network).
    monkeypatch.setattr(huggingface_hub.constants, "HF_HUB_OFFLINE", True)
    with pytest.raises(CcptError, match="cannot load the vLLM model 'no-such-org/no-such-model'"):
        extract_properties(work, LLM, batch=BatchOptions(backend="vllm", model="no-such-org/no-such-model"))
    monkeypatch.setitem(sys.modules, "vllm", None)  # as if vLLM were not installed
    with pytest.raises(CcptError, match="needs vLLM"):
        extract_properties(work, LLM, batch=BatchOptions(backend="vllm", model="Qwen/Qwen2.5-7B-Instruct"))
    with pytest.raises(CcptError, match="CCPT_TEST_UNSET_KEY is not set"):
        extract_properties(
            work, LLM, batch=BatchOptions(backend="http", model="m", url="http://x/", api_key_env="CCPT_TEST_UNSET_KEY")
        )


@starts_ray
def test_cli_runs_the_batch_job_and_rejects_bad_options(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ccpt.cli import main

    work = _workdir(tmp_path, "cli")
    base = ["pipeline", "properties", "--workdir", str(work), "--model", "ccpt-scripted/pipeline", "--limit", "2"]
    with serve() as (url, requests):
        assert main([*base, "--batch", "http", "--batch-url", f"{url}/chat/completions"]) == 0
    assert len(requests) == 2
    assert '"batch_requests": 2' in capsys.readouterr().out

    for extra, message in (
        (["--batch", "http"], "the http batch backend needs a url"),
        (["--batch", "vllm", "--batch-model", str(tmp_path / "absent"), "--force"], "cannot load the vLLM model"),
        (  # a third, unsent request; nothing listens on the discard port: the worker's own error, one line
            ["--batch", "http", "--batch-url", "http://127.0.0.1:9/v1/chat/completions", "--limit", "3", "--force"],
            "Cannot connect to host 127.0.0.1:9",
        ),
    ):
        assert main([*base, *extra]) != 0
        err = capsys.readouterr().err
        assert message in err and "Traceback" not in err
