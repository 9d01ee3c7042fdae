"""ccpt.io.retry: the one retry policy of ccpt's own network calls (downloads, the pipeline's HTTP batch job)."""

from __future__ import annotations

import asyncio

import pytest
from tenacity import AsyncRetrying, Retrying

from ccpt.io.retry import retry_policy


def _flaky(outcomes: list[object]):
    calls: list[int] = []

    def call() -> object:
        calls.append(1)
        outcome = outcomes[min(len(calls), len(outcomes)) - 1]
        if isinstance(outcome, BaseException):
            raise outcome
        return outcome

    return call, calls


def test_transient_errors_are_retried_with_doubling_waits_then_the_last_one_is_raised() -> None:
    call, calls = _flaky([ConnectionError("a"), ConnectionError("b"), ConnectionError("c"), ConnectionError("d")])
    waits: list[float] = []
    policy = retry_policy(4, 0.5, max_backoff=1.5, retry_on=lambda e: isinstance(e, ConnectionError))
    with pytest.raises(ConnectionError, match="d"):  # the last failure as it was, not tenacity's RetryError
        Retrying(**policy, sleep=waits.append)(call)
    assert len(calls) == 4 and waits == [0.5, 1.0, 1.5]  # doubled, capped, and no wait after the last attempt


def test_a_permanent_error_is_raised_at_once_and_a_success_ends_the_retries() -> None:
    call, calls = _flaky([ValueError("permanent")])
    with pytest.raises(ValueError):
        Retrying(**retry_policy(5, 0, retry_on=lambda e: isinstance(e, ConnectionError)))(call)
    assert len(calls) == 1
    call, calls = _flaky([ConnectionError(), "ok"])
    assert Retrying(**retry_policy(5, 0, retry_on=lambda e: isinstance(e, ConnectionError)))(call) == "ok"
    assert len(calls) == 2


def test_an_unwanted_result_is_retried_and_the_last_one_handed_back() -> None:
    """An HTTP 503 is a result, not an exception: retried, and when attempts run out the caller gets it to word."""
    statuses = iter([503, 503, 503])

    async def post() -> int:
        return next(statuses)

    policy = retry_policy(3, 0, retry_on=lambda e: False, retry_result=lambda status: status == 503)
    assert asyncio.run(AsyncRetrying(**policy)(post)) == 503
    assert next(statuses, None) is None  # all three attempts were made
