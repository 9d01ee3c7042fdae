"""A minimal OpenAI-compatible chat-completions server on 127.0.0.1, for tests and benchmarks.

It answers with :func:`ccpt.eval.scripted.scripted_reply` after an optional fixed latency, and records
every request body, so a test can check what Inspect's real OpenAI provider sent over HTTP.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ccpt.eval.scripted import scripted_reply


def _handler(requests: list[dict[str, Any]], latency: float, fail_when: str | None) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            requests.append(body)
            if latency:
                time.sleep(latency)
            prompt = "\n".join(
                m["content"] if isinstance(m["content"], str) else " ".join(p.get("text", "") for p in m["content"])
                for m in body.get("messages", [])
            )
            if fail_when and fail_when in prompt:
                self._send(400, {"error": {"message": "rejected by the test server", "type": "invalid_request_error"}})
                return
            text = scripted_reply(prompt, body.get("seed"))
            payload = {
                "id": f"cmpl-{len(requests)}",
                "object": "chat.completion",
                "created": int(time.time()),
                "model": body.get("model", "loopback"),
                "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
                "usage": {
                    "prompt_tokens": len(prompt.split()),
                    "completion_tokens": len(text.split()),
                    "total_tokens": len(prompt.split()) + len(text.split()),
                },
            }
            self._send(200, payload)

        def _send(self, status: int, payload: dict[str, Any]) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    return Handler


@contextmanager
def serve(latency: float = 0.0, fail_when: str | None = None) -> Iterator[tuple[str, list[dict[str, Any]]]]:
    """Run the server in a thread; yields (base_url ending in /v1, list of request bodies).

    ``fail_when``: requests whose prompt contains this text get HTTP 400 with an OpenAI-style error body.
    """
    requests: list[dict[str, Any]] = []
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(requests, latency, fail_when))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1", requests
    finally:
        server.shutdown()
        server.server_close()
