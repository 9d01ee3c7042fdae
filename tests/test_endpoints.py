"""Hostile OpenAI-compatible endpoints (tests/loopback_openai.py on 127.0.0.1) through Inspect's real provider:
a hung, dripping or truncating server is bounded by --timeout; an empty `choices` list is a counted failure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from loopback_openai import HANG_LIMIT, serve

from ccpt.errors import ModelError
from ccpt.eval.sweep import Sweep, preflight, run_sweep
from ccpt.eval.tasks import type_prediction
from ccpt.results import from_inspect_logs

pytestmark = pytest.mark.shared_data


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOP_API_KEY", "test-key")


@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_hung_endpoint_fails_the_preflight_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        start = time.monotonic()
        with pytest.raises(ModelError, match=r"'openai-api/loop/m' did not answer within 3s"):
            preflight(["openai-api/loop/m"], timeout=3)
        assert time.monotonic() - start < 3 + 5
        assert len(loop.requests) == 1  # one attempt, no retry of a hung request in the preflight


@pytest.mark.parametrize("mode", ["hang", "drip", "truncated"])
@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_stalled_replies_are_bounded_by_timeout_and_counted(
    mode: str, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No preflight: each attempt of each sample is cut at --timeout; the failure is counted, the run ends."""
    with serve(mode=mode) as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep = Sweep(
            models=[f"openai-api/loop/{mode}"],  # a model name of its own: never a cache hit from another test
            judge=None,
            tasks=["type_prediction"],
            seeds=1,
            limit=1,
            timeout=2,
            max_retries=0,
            log_dir=tmp_path / "logs",
            data_dir=str(ccpt_dir),
            display="none",
        )
        start = time.monotonic()
        finished = run_sweep(sweep, check_models=False)
        elapsed = time.monotonic() - start
    # Each attempt is cut at 2 s, where one uncut attempt alone would be held for HANG_LIMIT (60 s); the sweep
    # retries a failed task run twice (Inspect's eval set). The rest of the time is task setup on a busy machine.
    assert loop.requests and elapsed < HANG_LIMIT, elapsed
    assert not finished
    frame = from_inspect_logs(tmp_path / "logs")
    (row,) = frame.itertuples()
    assert not row.parse_ok and row.parse_error.startswith("sample error:") and row.gold_type


def test_empty_choices_is_a_counted_parse_failure(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    with serve(mode="empty_choices") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        (log,) = inspect_eval(
            type_prediction(data_dir=str(ccpt_dir), seeds=1),
            model="openai-api/loop/m",
            limit=2,
            max_retries=0,
            attempt_timeout=20,
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    assert log.status == "success" and all(s.error is None for s in log.samples)
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 2 and not frame["parse_ok"].any() and set(frame["answer_raw"]) == {""}


def test_token_counts_equal_what_the_server_recorded(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Per model and role: calls and input/output tokens are the server's `usage`; a rerun is all cache hits."""
    from ccpt.eval.usage import Price, read_usage

    def sweep(log_dir: Path) -> None:
        run_sweep(
            Sweep(
                models=["openai-api/loop/m"],
                judge="openai-api/loop/j",
                judge_mode="text",
                tasks=["pi_emergent", "type_prediction"],
                methods=["base"],
                seeds=1,
                limit=2,
                log_dir=log_dir,
                data_dir=str(ccpt_dir),
                display="none",
            ),
            check_models=False,
        )

    with serve() as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep(tmp_path / "first")
        served = list(loop.usage)
        sweep(tmp_path / "again")  # same model cache: nothing is asked twice
        assert loop.usage == served
    prices = {"openai-api/loop/j": Price(input=2.5, output=10.0)}
    rows = {(r.model, r.role): r for r in read_usage([tmp_path / "first"], prices)}
    assert set(rows) == {("openai-api/loop/m", "solver"), ("openai-api/loop/j", "judge")}
    for (model, _role), row in rows.items():
        mine = [u for u in served if u["model"] == model.rsplit("/", 1)[-1]]
        assert row.calls == len(mine) > 0 and row.cached_calls == 0
        assert row.input_tokens == sum(u["prompt_tokens"] for u in mine)
        assert row.output_tokens == sum(u["completion_tokens"] for u in mine)
    judge = rows[("openai-api/loop/j", "judge")]
    assert judge.cost == pytest.approx((judge.input_tokens * 2.5 + judge.output_tokens * 10.0) / 1e6)
    assert rows[("openai-api/loop/m", "solver")].cost is None  # no price given: no cost, never a guess
    again = {(r.model, r.role): r for r in read_usage([tmp_path / "again"])}
    assert {k: (r.calls, r.cached_calls) for k, r in again.items()} == {k: (0, r.calls) for k, r in rows.items()}
