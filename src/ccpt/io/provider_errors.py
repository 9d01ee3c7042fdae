"""What a provider's exception says, in one line, and whether it is a server's refusal or a passing failure.

Providers raise many exception types (the OpenAI SDK's ``APIStatusError``, httpx errors, Inspect's retry
wrappers); ccpt reads them by their types and attributes only, so no provider SDK is imported here.
"""

from __future__ import annotations

import re
from typing import Any

# Statuses that say "try again later", not "this request is wrong": never read as a refusal.
TRANSIENT_STATUSES = frozenset({408, 409, 425, 429})
# Exception classes (matched by name along the MRO: no SDK is imported) that say the endpoint could not be
# reached or did not answer in time: the OpenAI SDK's, httpx's, Inspect's attempt timeouts, Python's own.
UNREACHABLE_ERRORS = frozenset({"APIConnectionError", "ConnectError", "ConnectTimeout", "ConnectionError"})
TIMEOUT_ERRORS = frozenset(
    {"APITimeoutError", "TimeoutException", "AttemptTimeoutError", "StreamIdleTimeoutError", "TimeoutError"}
)
DROPPED_ERRORS = frozenset({"RemoteProtocolError", "ReadError", "WriteError", "NetworkError", "TransportError"})


def unwrap(exc: BaseException) -> BaseException:
    """The provider's own exception under a retry wrapper (tenacity's ``RetryError``) or an empty re-raise."""
    last = getattr(exc, "last_attempt", None)  # tenacity.RetryError hides the real error here
    if last is not None and last.exception() is not None:
        return last.exception()
    return exc.__cause__ if exc.__cause__ is not None and not str(exc).strip() else exc


def error_text(exc: BaseException) -> str:
    """One plain line from a provider exception (unwraps retry wrappers, drops Rich markup)."""
    exc = unwrap(exc)
    text = re.sub(r"\[/?[a-z ]+\]", "", str(exc)).replace("ERROR: ", "")
    text = " ".join(text.split()) or type(exc).__name__
    url = getattr(getattr(exc, "request", None), "url", None)
    return f"{type(exc).__name__}: {text}" + (f" ({url})" if url else "")


def http_status(exc: BaseException) -> int | None:
    """The HTTP status a server answered with, when the exception carries one."""
    exc = unwrap(exc)
    status = getattr(exc, "status_code", None)
    if status is None:
        status = getattr(getattr(exc, "response", None), "status_code", None)
    return status if isinstance(status, int) else None


def type_names(exc: BaseException) -> set[str]:
    """The class names along the MRO of the provider's exception (:func:`unwrap`; matched by name: no SDK imported)."""
    return {cls.__name__ for cls in type(unwrap(exc)).__mro__}


def is_unreachable(exc: BaseException) -> bool:
    """Whether the request never reached a server (connection refused, no route, DNS): the endpoint is down."""
    names = type_names(exc)
    return bool(names & UNREACHABLE_ERRORS) and not names & TIMEOUT_ERRORS


def is_timeout(exc: BaseException) -> bool:
    """Whether a call failed because it was not answered in time (an attempt timeout, a read timeout)."""
    return bool(type_names(exc) & TIMEOUT_ERRORS)  # a TimeoutError (or subclass) has "TimeoutError" in its MRO


def is_transient(exc: BaseException) -> bool:
    """Whether a failed call says nothing about the request itself (unreachable, timed out, dropped, "busy" or
    5xx): the rerun asks again. Any other 4xx is the server judging the request (final)."""
    if type_names(exc) & (UNREACHABLE_ERRORS | TIMEOUT_ERRORS | DROPPED_ERRORS):
        return True
    status = http_status(unwrap(exc))
    return status is not None and (status in TRANSIENT_STATUSES or 500 <= status <= 599)


def is_refusal(exc: BaseException) -> bool:
    """Whether the server answered and rejected the request (4xx/5xx other than "busy, retry")."""
    status = http_status(exc)
    return status is not None and 400 <= status <= 599 and status not in TRANSIENT_STATUSES


def server_message(exc: BaseException, limit: int = 200) -> str:
    """``HTTP <status>: <the server's message>``, shortened, for a one-line error."""
    exc = unwrap(exc)
    # Inspect raises a rejected request as its ModelGenerateError (the request dumped in its text) from the SDK's
    # exception, whose ``body`` is the server's answer.
    sdk = exc
    while getattr(sdk, "body", None) is None and sdk.__cause__ is not None:
        sdk = sdk.__cause__
    body = getattr(sdk, "body", None)
    inner = (body.get("error") or body) if isinstance(body, dict) else body
    # OpenAI's {"error": {"message": …}}; FastAPI servers' (llama-cpp-python's) {"detail": …}; a plain-text body
    said = (inner.get("message") or inner.get("detail")) if isinstance(inner, dict) else inner
    text = " ".join(str(said).split()) if isinstance(said, str | int | float) else ""
    text = text or " ".join(str(getattr(exc, "provider_message", None) or exc).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    status = http_status(exc)
    return f"HTTP {status}: {text}" if status is not None else text


# An error read back from an Inspect log is text (EvalError: message and traceback). Python's traceback names every
# exception of the chain on a line of its own at column 0 ("module.Class: message", a builtin bare); the OpenAI SDK
# spells a server's answer "Error code: N - message".
_SDK_STATUS = re.compile(r"Error code: (\d{3}) - ([^'\"\\\\]*)")
_EXCEPTION_LINE = re.compile(r"^([A-Za-z_]\w*(?:\.\w+)*)(?::|$)")


def recorded_error(error: Any) -> tuple[frozenset[str], int | None, str]:
    """(class names of the exception chain, HTTP status, server's message) of an error recorded in an Inspect log.
    A name counts when module-qualified or a builtin exception (a dumped ``Request:`` line is neither); the last
    ``Error code`` is the server's (Inspect dumps the request before it)."""
    import builtins

    kinds = set()
    for found in filter(None, map(_EXCEPTION_LINE.match, str(getattr(error, "traceback", "") or "").splitlines())):
        name = found.group(1)
        builtin = getattr(builtins, name, None)
        if "." in name or (isinstance(builtin, type) and issubclass(builtin, BaseException)):
            kinds.add(name.rsplit(".", 1)[-1])
    said = _SDK_STATUS.findall(str(getattr(error, "message", "") or ""))
    status, text = (int(said[-1][0]), " ".join(said[-1][1].split())) if said else (None, "")
    return frozenset(kinds), status, text


def recorded_timeout(error: Any) -> bool:
    """Whether an error recorded in an Inspect log was a timeout, by the exception classes of its traceback."""
    return bool(recorded_error(error)[0] & TIMEOUT_ERRORS)
