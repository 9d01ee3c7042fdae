"""The one retry policy of ccpt's own network calls, on tenacity (Inspect retries model calls itself), decided from
exception types and status codes, never message text. When the attempts run out, the last outcome is handed back
as it was (the last exception or unwanted result), for the caller to word its one-line error.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tenacity import RetryCallState, retry_if_exception, retry_if_result, stop_after_attempt, wait_exponential


def _last_outcome(state: RetryCallState) -> Any:
    assert state.outcome is not None
    return state.outcome.result()  # raises the last exception, or returns the last (unwanted) result


def retry_policy(
    attempts: int,
    backoff: float,
    *,
    retry_on: Callable[[BaseException], bool],
    retry_result: Callable[[Any], bool] | None = None,
    max_backoff: float | None = None,
) -> dict[str, Any]:
    """tenacity arguments: at most ``attempts`` calls (at least one), waiting ``backoff`` seconds, doubling (capped at
    ``max_backoff``). ``retry_on(exc)``: whether an exception is transient (any other is raised at once);
    ``retry_result(value)``: whether a returned value (e.g. an HTTP 503 response) is worth another attempt."""
    wait = wait_exponential(multiplier=backoff) if max_backoff is None else wait_exponential(backoff, max_backoff)
    return {
        "stop": stop_after_attempt(max(1, attempts)),
        "wait": wait,
        "retry": retry_if_exception(retry_on) | retry_if_result(retry_result or (lambda _: False)),
        "retry_error_callback": _last_outcome,
    }
