"""Endpoints that went down during this process's run: every later call to one fails at once, and the run stops.

An endpoint whose connection is refused, and a fresh TCP connection too, is marked down: each later call raises
:class:`EndpointDown` (not retried by Inspect), and ``ccpt run`` / ``ccpt rejudge`` end with one line saying how to
resume (docs/methods.md, "Transient failures"). Process-wide on purpose: the model, the judge and every task share
the verdict; :func:`reset` clears it when a command starts.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

from ccpt.errors import ModelError

PROBE_TIMEOUT = 3.0  # seconds a TCP connection to a live server takes at most on this side of the network

_down: dict[str, str] = {}  # endpoint → one line: why it was declared down
_stop_run = False  # stop the running eval set when an endpoint is declared down (ccpt's own commands)


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


def down(endpoint: str) -> str | None:
    """Why ``endpoint`` was declared down in this process, or None while it is not."""
    return _down.get(endpoint)


def mark_down(endpoint: str, reason: str) -> None:
    """Declare ``endpoint`` down (the first reason is kept); stop the eval set when asked to (:func:`reset`)."""
    first = not _down
    _down.setdefault(endpoint, reason)
    # The first endpoint down stops the eval set as Ctrl-C does, through asyncio.Runner's SIGINT handler where it is
    # installed (the main thread), so Inspect writes its logs for the rerun; elsewhere every later call fails at once.
    if first and _stop_run and threading.current_thread() is threading.main_thread():
        handler = signal.getsignal(signal.SIGINT)
        if getattr(getattr(handler, "func", None), "__name__", "") == "_on_sigint":
            signal.raise_signal(signal.SIGINT)


def gone() -> dict[str, str]:
    """Every endpoint declared down in this process, with its reason."""
    return dict(_down)


def reset(*, stop_run: bool = False) -> None:
    """Forget every verdict (a new command); ``stop_run``: stop the eval set at the first endpoint declared down."""
    global _stop_run
    _down.clear()
    _stop_run = stop_run


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
