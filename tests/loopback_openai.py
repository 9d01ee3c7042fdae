"""A minimal OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It answers with :func:`scripted_provider.scripted_reply` (tests/plugins) after an optional fixed latency, and records
every request body, so a test can check what Inspect's real OpenAI provider sent over HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from scripted_provider import scripted_reply

MODES = ("hang", "drip", "truncated", "empty_choices", "no_json_schema")
HANG_LIMIT = 60.0  # seconds a "hang" request is held at most (every loop here is bounded in count and time)


def _handler(
    requests: list[dict[str, Any]],
    latency: float,
    fail_when: str | None,
    fail_status: int,
    fail_times: list[int],
    mode: str | None,
    usage: list[dict[str, int]],
    stop: threading.Event,
    die: threading.Event,
    die_after: int | None,
) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            requests.append(body)
            if die_after is not None and len(requests) > die_after:  # the server is gone: no answer, no new connection
                die.set()
                self.close_connection = True
                return
            if mode == "hang":  # accept the request and never answer (until the test ends)
                stop.wait(HANG_LIMIT)
                return
            if latency:
                time.sleep(latency)
            prompt = "\n".join(
                m["content"] if isinstance(m["content"], str) else " ".join(p.get("text", "") for p in m["content"])
                for m in body.get("messages", [])
            )
            if mode == "no_json_schema" and (body.get("response_format") or {}).get("type") == "json_schema":
                # what llama-cpp-python's server answers (HTTP 500, its validation message)
                refusal = {"message": "Input should be 'text' or 'json_object'", "type": "server_error"}
                self._send(500, {"error": refusal})
                return
            if fail_when and fail_when in prompt and fail_times[0] != 0:
                fail_times[0] -= 1  # a negative count never reaches 0: every matching request fails
                kind = "invalid_request_error" if fail_status < 500 else "server_error"
                self._send(fail_status, {"error": {"message": "rejected by the test server", "type": kind}})
                return
            text = scripted_reply(prompt, body.get("seed"))
            counts = {
                "prompt_tokens": len(prompt.split()),
                "completion_tokens": len(text.split()),
                "total_tokens": len(prompt.split()) + len(text.split()),
            }
            message = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            payload = {
                "id": f"cmpl-{len(requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "loopback"),
                "choices": [] if mode == "empty_choices" else [message],
                "usage": counts,
            }
            usage.append({"model": body.get("model", "loopback"), **counts})  # type: ignore[dict-item]
            self._send(200, payload)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if mode == "truncated":  # half the body, then hang up
                self.wfile.write(data[: len(data) // 2])
                self.close_connection = True
            elif mode == "drip":  # one byte a second, at most HANG_LIMIT bytes
                for byte in data[: int(HANG_LIMIT)]:
                    if stop.wait(1.0):
                        break
                    self.wfile.write(bytes([byte]))
                    self.wfile.flush()
                self.close_connection = True
            else:
                self.wfile.write(data)

    return Handler


@dataclass
class Loopback:
    """A running server: its base URL, the request bodies it got and the ``usage`` it reported per reply."""

    base_url: str
    requests: list[dict[str, Any]] = field(default_factory=list)
    usage: list[dict[str, Any]] = field(default_factory=list)

    def __iter__(self) -> Iterator[Any]:  # (base_url, requests), as `serve` always yielded
        return iter((self.base_url, self.requests))


@contextmanager
def serve(
    latency: float = 0.0,
    fail_when: str | None = None,
    mode: str | None = None,
    *,
    fail_status: int = 400,
    fail_times: int = -1,
    port: int = 0,
    die_after: int | None = None,
) -> Iterator[Loopback]:
    """Run the server in a thread; yields a :class:`Loopback` (unpacks to base_url ending in /v1, requests).

    ``fail_when``: requests whose prompt contains this text get HTTP ``fail_status`` (400 by default; 500 is what
    a content filter in front of a judge answers) with an OpenAI-style error body. ``port``: listen there (a
    server restarted on the port a run was using); 0 picks a free one. ``fail_times``: only the first N matching
    requests fail (a passing outage), -1 (default) every one. ``die_after``: the server answers that many requests,
    then drops the next one unanswered and stops listening (a server killed mid-run).
    ``mode``: ``hang`` (never answer), ``drip`` (one byte a second), ``truncated`` (half the body, then close),
    ``empty_choices`` (HTTP 200 with ``"choices": []``), ``no_json_schema`` (HTTP 500 for a JSON-schema
    ``response_format``, as llama-cpp-python's server answers).
    """
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}; choose from {MODES}")
    loop = Loopback("")
    stop, die = threading.Event(), threading.Event()
    handler = _handler(
        loop.requests, latency, fail_when, fail_status, [fail_times], mode, loop.usage, stop, die, die_after
    )
    server = ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    loop.base_url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()

    def close() -> None:
        server.shutdown()
        server.server_close()  # the port refuses connections from here

    killer = threading.Thread(target=lambda: die.wait() and not stop.is_set() and close(), daemon=True)
    killer.start()
    try:
        yield loop
    finally:
        stop.set()  # releases held requests
        if not die.is_set():
            die.set()
            close()
        killer.join(timeout=10)
