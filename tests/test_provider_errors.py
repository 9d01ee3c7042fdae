"""The two readers of text-only errors, checked against the installed Inspect and OpenAI SDK.

ccpt tells provider errors apart by their types and HTTP statuses (ccpt.io.provider_errors); two things reach it
as text only, each read by one adapter:

- Inspect names a missing API key only in its PrerequisiteError's message (``inspect_compat.missing_api_key``);
- a sample error read back from an Inspect log is its message and traceback (``provider_errors.recorded_error``).

Checked against inspect_ai 0.3.285 and openai 3.54.0, through their real code paths. A failure here means the
installed library now says it otherwise: update the adapter, then ``CHECKED``.
"""

from __future__ import annotations

import asyncio
from importlib.metadata import version
from pathlib import Path

import pytest
from inspect_ai import Task, eval
from inspect_ai.dataset import Sample
from inspect_ai.model import GenerateConfig, get_model
from inspect_ai.solver import Generate, TaskState, generate, solver
from loopback_openai import serve

from ccpt.errors import PluginError
from ccpt.eval.inspect_compat import missing_api_key
from ccpt.eval.judge import JudgeUnusable
from ccpt.eval.sweep import _transient_error, deterministic_failure
from ccpt.io.provider_errors import recorded_error, server_message

CHECKED = {"inspect_ai": "0.3.285", "openai": "3.54.0"}


def _changed(what: str) -> str:
    installed = {name: version(name) for name in CHECKED}
    return f"{what} changed: the adapter was checked against {CHECKED}, {installed} is installed; update it"


def test_a_missing_key_is_read_from_inspects_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NOKEYSVC_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("NOKEYSVC_API_KEY", raising=False)
    with pytest.raises(Exception) as raised:
        get_model("openai-api/nokeysvc/x")
    assert missing_api_key(raised.value) == "NOKEYSVC_API_KEY", _changed(
        f"Inspect's missing-key error {raised.value!r}"
    )
    # Only Inspect's own error type is read: the same words in another exception are not a missing key.
    assert missing_api_key(RuntimeError("No X_API_KEY defined in the environment.")) is None


@solver
def _unusable_judge():  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        raise JudgeUnusable("judge 'j' refused every request (plain: HTTP 400: no)", "check the server's log")

    return solve


def test_recorded_errors_are_read_from_inspects_log(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A request the server rejects (HTTP 400) and ccpt's own typed error, recorded by a real Inspect eval."""
    with serve(fail_when="refuse me") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        monkeypatch.setenv("LOOP_API_KEY", "test-key")
        with pytest.raises(Exception) as raised:  # the same request, live: read by its status and the SDK's body
            asyncio.run(get_model("openai-api/loop/m").generate("refuse me", config=GenerateConfig(max_retries=0)))
        assert server_message(raised.value) == "HTTP 400: rejected by the test server"
        rejected, unusable = (
            eval(
                Task(dataset=[Sample(input="refuse me")], solver=generate()),
                model="openai-api/loop/m",
                log_dir=str(tmp_path / "rejected"),
                max_retries=0,
                display="none",
            )[0],
            eval(
                Task(dataset=[Sample(input="a pair")], solver=_unusable_judge()),
                model="openai-api/loop/m",
                log_dir=str(tmp_path / "unusable"),
                display="none",
            )[0],
        )
    error = rejected.samples[0].error  # type: ignore[index]
    kinds, status, said = recorded_error(error)
    # The chain's types, not the request Inspect dumps after them ("Request:", "BadRequestError('Error code…").
    assert {"BadRequestError", "ModelGenerateError"} <= kinds and "Request" not in kinds, _changed(repr(error))
    assert (status, said) == (400, "rejected by the test server"), _changed(f"Inspect's log error {error!r}")
    assert not _transient_error(error)
    error = unusable.samples[0].error  # type: ignore[index]
    assert recorded_error(error) == ({"JudgeUnusable"}, None, ""), _changed(f"Inspect's log error {error!r}")
    assert deterministic_failure([rejected]) == (
        "1 sample(s) failed deterministically (model 'openai-api/loop/m': HTTP 400: rejected by the test server)"
    )
    assert deterministic_failure([unusable]) == (
        "1 sample(s) failed deterministically (model 'openai-api/loop/m': judge 'j' refused every "
        "request (plain: HTTP 400: no))"
    )
    # A plug-in's bad result (a method's reduction out of range) is deterministic too: its line, no resume advice.
    bad = PluginError("method 'vote3': its reduction returned Cell(r_hmp=5.0)")
    plugin = eval(Task(dataset=[Sample(input="x")], solver=_raises(bad)), model="mockllm/model", display="none",
                  log_dir=str(tmp_path / "plugin"))[0]  # fmt: skip
    assert deterministic_failure([plugin]) == (
        "1 sample(s) failed deterministically (model 'mockllm/model': method 'vote3': its reduction returned "
        "Cell(r_hmp=5.0))"
    )


@solver
def _raises(exc: BaseException):  # type: ignore[no-untyped-def]
    async def solve(state: TaskState, generate: Generate) -> TaskState:
        raise exc

    return solve


def test_an_outage_recorded_in_a_log_is_transient(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing listens: Inspect records tenacity's RetryError around the SDK's APIConnectionError; a builtin
    ConnectionError() has no message (its traceback line is the bare name). Both are read as transient (never a
    result), a 400 is not (above)."""
    monkeypatch.setenv("LOOP_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    refused = eval(
        Task(dataset=[Sample(input="x")], solver=generate()),
        model="openai-api/loop/m",
        log_dir=str(tmp_path / "refused"),
        max_retries=0,
        display="none",
    )[0]
    error = refused.samples[0].error  # type: ignore[index]
    kinds, status, _ = recorded_error(error)
    assert {"APIConnectionError", "RetryError"} <= kinds and status is None, _changed(f"Inspect's log error {error!r}")
    assert _transient_error(error)
    dropped = eval(
        Task(dataset=[Sample(input="x")], solver=_raises(ConnectionError())),
        model="openai-api/loop/m",
        log_dir=str(tmp_path / "dropped"),
        display="none",
    )[0]
    error = dropped.samples[0].error  # type: ignore[index]
    assert "ConnectionError" in recorded_error(error)[0] and _transient_error(error), _changed(repr(error))
