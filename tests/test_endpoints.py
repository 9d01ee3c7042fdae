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


def test_hung_endpoint_fails_the_preflight_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        start = time.monotonic()
        with pytest.raises(ModelError, match=r"'openai-api/loop/m' did not answer within 3s"):
            preflight(["openai-api/loop/m"], timeout=3)
        assert time.monotonic() - start < 3 + 5
        assert len(loop.requests) == 1  # one attempt, no retry of a hung request in the preflight


@pytest.mark.parametrize("mode", ["hang", "drip", "truncated"])
def test_stalled_replies_are_bounded_by_timeout_and_counted(
    mode: str, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No preflight: each attempt of each sample is cut at --timeout; the failure is counted, the run ends."""
    with serve(mode=mode) as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep = Sweep(
            models=["openai-api/loop/m"],
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
    # The sweep retries a failed task run twice (Inspect's eval set, ≥ 3 requests; the OpenAI client may also
    # retry a dropped connection), each attempt cut at 2 s, where one uncut attempt alone would be held for
    # HANG_LIMIT (60 s). The rest of the time is task setup on a busy machine.
    assert len(loop.requests) >= 3 and elapsed < HANG_LIMIT, elapsed
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
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    assert log.status == "success" and all(s.error is None for s in log.samples)
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 2 and not frame["parse_ok"].any() and set(frame["answer_raw"]) == {""}
