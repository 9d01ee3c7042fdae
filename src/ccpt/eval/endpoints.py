"""Endpoints: where a model is served (:func:`configured`, whatever route names it), and the endpoints that went
down during this process's run: every later call to one fails at once, and the run stops.

An endpoint whose connection is refused, and a fresh TCP connection too, is marked down: each later call raises
:class:`EndpointDown` (not retried by Inspect), and ``ccpt run`` / ``ccpt rejudge`` end with one line saying how to
resume (docs/methods.md, "Transient failures"). Process-wide on purpose: the model, the judge and every task share
the verdict; :func:`reset` clears it when a command starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import socket
import threading
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from ccpt.errors import ModelError

PROBE_TIMEOUT = 3.0  # seconds a TCP connection to a live server takes at most on this side of the network

_down: dict[str, str] = {}  # endpoint → one line: why it was declared down
_faults: list[str] = []  # failures every rerun repeats (a plug-in's bad result), one line each
_stop_run = False  # stop the running eval set when an endpoint is declared down (ccpt's own commands)
_stopping = False  # the running eval set was asked to stop
_quiet_before: bool | None = None  # rich's console.quiet before an outage quieted it (None: not quieted)


class EndpointDown(ModelError):
    """A model's endpoint stopped answering during the run: a transient failure, never a result."""

    def __init__(self, model: str, endpoint: str, reason: str) -> None:
        super().__init__(
            f"endpoint unreachable: {model!r} at {endpoint} ({reason})",
            "the samples it failed are retried when the same command is rerun",
        )


def endpoint_of(model: Any) -> str:
    """Where ``model`` is served: its API's base URL, else its name (an in-process or hosted model)."""
    api = getattr(model, "api", None)
    return str(getattr(api, "base_url", None) or model)


# Where Inspect's providers (0.3.x) read a server's base URL when none is given: ``<SERVICE>_BASE_URL`` (the provider's
# name, or the service of ``openai-api/<service>/<model>``, upper-cased, ``-`` → ``_``), then Inspect's own fallback
# variable; a few providers read others. In-process providers read none (their base URL, if any, is their own).
FALLBACK_VARIABLE = "INSPECT_EVAL_MODEL_BASE_URL"
_SERVICE_IN_NAME = frozenset({"openai-api", "openai-api-completions"})
_VARIABLES: Mapping[str, tuple[str, ...]] = {
    "vllm": ("VLLM_BASE_URL",),  # vLLM reads its variable itself, not through Inspect's fallback
    "vllm-completions": ("VLLM_BASE_URL",),
    "grok": ("XAI_BASE_URL", "GROK_BASE_URL", FALLBACK_VARIABLE),
    "litellm-proxy": ("LITELLM_PROXY_BASE_URL", "LITELLM_PROXY_API_BASE", "LITELLM_BASE_URL", FALLBACK_VARIABLE),
}
_IN_PROCESS = frozenset({"gguf", "ccpt-distilled", "hf", "mockllm", "none", "transformer_lens", "nnterp"})


@dataclass(frozen=True)
class Server:
    """The base URL a model is sent to, as configured before it is built, and what named it."""

    url: str | None  # None: nothing names one (the provider's default, or an in-process model)
    named_by: str  # the option or environment variable, for a message

    def __str__(self) -> str:
        return f"{self.url} ({self.named_by})" if self.url else f"its provider's default URL ({self.named_by})"


def base_url_variables(model: str) -> tuple[str, ...]:
    """The environment variables ``model``'s provider reads its base URL from, first one first."""
    provider, _, rest = model.partition("/")
    if provider in _IN_PROCESS:
        return ()
    if provider in _VARIABLES:
        return _VARIABLES[provider]
    service = rest.split("/", 1)[0] if provider in _SERVICE_IN_NAME else provider
    return (f"{service.upper().replace('-', '_')}_BASE_URL", FALLBACK_VARIABLE)


def configured(model: str, given: str | None = None, option: str = "--model-base-url") -> Server:
    """The server ``model`` is sent to: ``given`` (named by ``option``), else the first of its provider's variables
    that is set; passed to the provider as its base URL, the log records it whatever route named it."""
    if given:
        return Server(str(given), option)
    variables = base_url_variables(model)
    for variable in variables:
        if value := os.environ.get(variable):
            return Server(value, variable)
    return Server(None, f"no {variables[0]} set" if variables else "an in-process model")


def same_url(a: str | None, b: str | None) -> bool:
    """Whether two base URLs name one server (a trailing slash aside; None, no URL, only equals None)."""
    return str(a or "").rstrip("/") == str(b or "").rstrip("/")


def down(endpoint: str) -> str | None:
    """Why ``endpoint`` was declared down in this process, or None while it is not."""
    return _down.get(endpoint)


def mark_down(endpoint: str, reason: str) -> None:
    """Declare ``endpoint`` down (the first reason is kept); stop the eval set when asked (:func:`stop_on_outage`)."""
    _down.setdefault(endpoint, reason)
    _stop_eval_set()


def mark_fault(reason: str) -> None:
    """Record a failure every rerun would repeat (a plug-in's bad result, one line); it stops the eval set as an
    outage does (:func:`stop_on_outage`): the samples after it would only fail the same way."""
    _faults.append(reason)
    _stop_eval_set()


def fault() -> str | None:
    """The first failure recorded by :func:`mark_fault` in this process since the last :func:`reset`, else None."""
    return _faults[0] if _faults else None


def stopped() -> bool:
    """Whether an endpoint was declared down or a failure every rerun would repeat was recorded (since the last
    :func:`reset`): the eval set was stopped, or would have been."""
    return bool(_down or _faults)


def _stop_eval_set() -> None:
    """Stop the running eval set, once, when asked (:func:`stop_on_outage`)."""
    global _quiet_before, _stopping
    if _stopping or not _stop_run:
        return
    _stopping = True
    # What Inspect would print from here (sample errors, task panels with their tracebacks, its final status) is
    # about calls that fail at once: kept in the logs, not shown; ccpt's one line says what happened.
    import rich

    console = rich.get_console()
    _quiet_before, console.quiet = console.quiet, True
    # The eval set stops as Ctrl-C stops it, through asyncio.Runner's SIGINT handler where it is installed (the main
    # thread), so Inspect writes its logs for the rerun; elsewhere every later call fails at once.
    if threading.current_thread() is threading.main_thread():
        handler = signal.getsignal(signal.SIGINT)
        if getattr(getattr(handler, "func", None), "__name__", "") == "_on_sigint":
            signal.raise_signal(signal.SIGINT)


@contextlib.contextmanager
def stop_on_outage() -> Iterator[None]:
    """Within the block (an eval set), the first endpoint declared down (or the first failure every rerun would
    repeat, :func:`mark_fault`) stops the run and quiets Inspect's display.
    asyncio installs the SIGINT handler that stops it only over Python's own, so that one is put back for the block
    where it is not (a process started with SIGINT ignored, as a shell starts a background job).

    Only the outage's quieting is undone, to what the console was just before it: Inspect's display "none" quiets
    the console once, when its display is first built in the process, and never again (the display is kept), so
    putting back the value from before the block would show its task panels in every later eval set (on stdout,
    before ``--format json``'s report)."""
    import rich

    global _stop_run, _quiet_before, _stopping
    restore = None
    _quiet_before = None
    reset(stop_run=True)
    in_main = threading.current_thread() is threading.main_thread()
    if in_main and signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        restore = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        if restore is not None:
            signal.signal(signal.SIGINT, restore)
        if _quiet_before is not None:
            rich.get_console().quiet = _quiet_before
        _quiet_before, _stop_run, _stopping = None, False, False


def gone() -> dict[str, str]:
    """Every endpoint declared down in this process, with its reason."""
    return dict(_down)


def reset(*, stop_run: bool = False) -> None:
    """Forget every verdict (a new command); ``stop_run``: stop the eval set at the first endpoint declared down
    (:func:`stop_on_outage` sets it for an eval set)."""
    global _stop_run, _stopping
    _down.clear()
    _faults.clear()
    _stop_run, _stopping = stop_run, False


async def refuses_connections(endpoint: str, timeout: float = PROBE_TIMEOUT) -> bool:
    """Whether a fresh TCP connection to ``endpoint`` fails: a slow server that accepts connections is *up*."""
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:  # an in-process model: nothing to probe
        return False
    address = parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)
    try:
        _reader, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout=timeout)
    except (OSError, TimeoutError, socket.gaierror):
        return True
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()
    return False
