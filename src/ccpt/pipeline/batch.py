"""Stage 3's LLM calls as a Ray Data batch job (``ray.data.llm``), for corpora too large for per-call serving.

Backends: ``vllm`` (vLLM engines inside the Ray Data pipeline) or ``http`` (an OpenAI-compatible chat-completions
endpoint, ``max_connections`` requests in flight with bounded retries; Ray's own HTTP processor sends one request
at a time per actor, docs/benchmarks.md). Replies are parsed as on the Inspect path. Resumable: each reply is
appended to ``batch_replies.jsonl`` under its request id as it arrives; failed requests are counted and retried
next run.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import math
import os
import re
from collections import Counter
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from ccpt.errors import CcptError

if TYPE_CHECKING:  # not imported at run time: every Ray actor imports this module, and llm imports spaCy
    from ccpt.pipeline.llm import LLMOptions

BACKENDS = ("vllm", "http")
REPLIES = "batch_replies.jsonl"


@dataclass(frozen=True)
class BatchOptions:
    """Where and how the batch job runs; generation parameters come from the stage's :class:`LLMOptions`."""

    backend: str
    model: str  # vllm: model source (hub id or local directory); http: the payload's "model"
    url: str | None = None  # http: the chat-completions URL
    api_key_env: str | None = None  # http: environment variable holding a bearer token
    batch_size: int = 64
    concurrency: int = 1
    address: str | None = None  # Ray cluster address; None starts a local Ray
    max_retries: int = 3  # http: retries of a request on connection errors, timeouts and 408/429/500/502/503/504
    accelerator_type: str | None = None  # vllm: e.g. "A100"
    engine_kwargs: dict[str, Any] = field(default_factory=dict)  # vllm: passed to the engine
    # vllm: Ray resources per engine; None = one GPU. A CPU build of vLLM needs {"bundles": [{"CPU": 1}]}.
    placement_group_config: dict[str, Any] | None = None
    engine_metrics: bool = False  # vllm: export engine metrics through Ray's Prometheus endpoint

    def __post_init__(self) -> None:
        if self.backend not in BACKENDS:
            raise CcptError(f"unknown batch backend {self.backend!r}", f"choose one of: {', '.join(BACKENDS)}")
        if self.backend == "http" and not self.url:
            raise CcptError("the http batch backend needs a url", "e.g. http://host:8000/v1/chat/completions")
        if self.batch_size < 1 or self.concurrency < 1:
            raise CcptError("batch_size and concurrency must be at least 1")

    def describe(self) -> dict[str, Any]:
        """Parameters recorded in the stage manifest (the key's value, never the key)."""
        return {"backend": self.backend, "model": self.model, "url": self.url, "engine_kwargs": self.engine_kwargs}


def request_id(prompt: str, llm: LLMOptions, batch: BatchOptions) -> str:
    """Identity of one request: what the reply depends on, hashed."""
    key = [batch.backend, batch.model, prompt, llm.temperature, llm.seed, llm.max_tokens]
    return hashlib.sha256(json.dumps(key).encode()).hexdigest()[:32]


def _preprocess(row: dict[str, Any], *, llm: dict[str, Any]) -> dict[str, Any]:
    """A dataset row {id, prompt} → the vLLM processor's input columns."""
    return {"id": row["id"], "messages": [{"role": "user", "content": row["prompt"]}], "sampling_params": dict(llm)}


def _postprocess(row: dict[str, Any]) -> dict[str, Any]:
    """A vLLM processor output row → {id, text, error}."""
    return {"id": row["id"], "text": str(row.get("generated_text") or ""), "error": ""}


def processor_config(batch: BatchOptions) -> Any:
    """``ray.data.llm``'s vLLM processor config, or the http request headers (a missing API key fails here)."""
    if batch.backend == "vllm":
        from ray.data import llm as ray_llm

        return ray_llm.vLLMEngineProcessorConfig(
            model_source=batch.model,
            engine_kwargs=batch.engine_kwargs,
            accelerator_type=batch.accelerator_type,
            placement_group_config=batch.placement_group_config,
            log_engine_metrics=batch.engine_metrics,
            should_continue_on_error=True,  # a failed row is counted, not fatal
            batch_size=batch.batch_size,
            concurrency=batch.concurrency,
        )
    headers = {"Content-Type": "application/json"}
    if batch.api_key_env:
        key = os.environ.get(batch.api_key_env)
        if not key:
            raise CcptError(f"environment variable {batch.api_key_env} is not set", "export the API key first")
        headers["Authorization"] = f"Bearer {key}"
    return headers


RETRY_STATUS = frozenset({408, 429, 500, 502, 503, 504})
RETRY_BACKOFF = 0.5  # seconds before the first retry; doubled for each further one
RETRY_BACKOFF_MAX = 8.0


class EndpointUnavailable(Exception):
    """The endpoint could not be reached (or kept failing) after every retry: the job stops."""


async def _http_requests(
    rows: dict[str, Any],
    batch: BatchOptions,
    headers: dict[str, str],
    generation: dict[str, Any],
    in_flight: int,
    timeout: float,
) -> dict[str, list[str]]:
    """One batch of the http job, at most ``in_flight`` requests at once: per request the reply text, an ``error``
    (counted, retried next run) or ``fatal`` (endpoint unreachable: the driver stops the job)."""
    import httpx
    from tenacity import AsyncRetrying

    from ccpt.io.retry import retry_policy

    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)
    client = httpx.AsyncClient(timeout=timeout, limits=limits)
    semaphore = asyncio.Semaphore(in_flight)
    url = str(batch.url)
    host = urlsplit(url).netloc or url
    policy = retry_policy(
        batch.max_retries + 1,
        RETRY_BACKOFF,
        max_backoff=RETRY_BACKOFF_MAX,
        retry_on=lambda exc: isinstance(exc, httpx.TransportError),  # timeouts, connections dropped mid-reply
        retry_result=lambda response: response.status_code in RETRY_STATUS,
    )

    async def one(prompt: str) -> tuple[str, str, str]:
        """(text, error, fatal) for one prompt, after at most ``max_retries`` retries of a retryable failure."""
        payload = {"model": batch.model, "messages": [{"role": "user", "content": prompt}], **generation}
        try:
            async with semaphore:
                response = await AsyncRetrying(**policy)(client.post, url, content=json.dumps(payload), headers=headers)
        except httpx.ConnectError as exc:
            problem = f"Cannot connect to host {host} ({type(exc).__name__}: {exc})"
        except httpx.TransportError as exc:
            problem = f"{type(exc).__name__} from {host}: {exc}"
        else:
            if response.status_code not in RETRY_STATUS:
                return _reply_text(response)
            problem = f"HTTP {response.status_code} from {host}"
        return "", "", f"{problem} (after {batch.max_retries} retries)"

    results = await asyncio.gather(*(one(str(prompt)) for prompt in rows["prompt"]))
    columns = {key: [r[i] for r in results] for i, key in enumerate(("text", "error", "fatal"))}
    return {"id": [str(i) for i in rows["id"]], **columns}


def _reply_text(response: Any) -> tuple[str, str, str]:
    """(text, error, "") from an HTTP response: the first choice's content, or why there is none (an HTTP error
    body becomes an error, never a reply)."""
    try:
        body = response.json() or {}
    except ValueError:
        return "", f"HTTP {response.status_code}, not JSON: {response.text[:200]}", ""
    try:
        text = body["choices"][0]["message"]["content"]
    except (KeyError, IndexError, TypeError):
        detail = json.dumps(body.get("error", body) if isinstance(body, dict) else body)
        return "", f"no choices in response: {detail[:300]}", ""
    return str(text or ""), f"HTTP {response.status_code}" if response.status_code >= 400 else "", ""


def _preflight(batch: BatchOptions) -> None:
    """Check vLLM and the model on the driver before Ray starts: one line at once, not an actor crash later."""
    if batch.backend != "vllm":
        return
    try:
        import vllm  # noqa: F401
    except ImportError:
        raise CcptError(
            "the vllm batch backend needs vLLM on the workers",
            "pip install 'ccpt[vllm]' (GPU machines), or use --batch http against a `vllm serve` endpoint",
        ) from None
    from transformers import AutoConfig

    try:
        AutoConfig.from_pretrained(batch.model)
    except (OSError, ValueError) as exc:
        raise CcptError(
            f"cannot load the vLLM model {batch.model!r}: {root_cause(exc)}",
            "pass a local checkpoint directory or a reachable hub model id",
        ) from None


def read_replies(path: Path) -> dict[str, str]:
    """Stored replies by request id; a line cut short by a kill is ignored (its request is sent again)."""
    replies: dict[str, str] = {}
    for line in path.read_text(encoding="utf-8").splitlines() if path.is_file() else []:
        with contextlib.suppress(json.JSONDecodeError, KeyError, TypeError):
            obj = json.loads(line)
            replies[str(obj["id"])] = str(obj["text"])
    return replies


_ERROR_LINE = re.compile(r"^([A-Za-z_][\w.]*(?:Error|Exception)): (.+)$")


def root_cause(exc: BaseException) -> str:
    """One readable line for an error raised inside a Ray job: the worker's own exception, without Ray's wrappers."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    errors = [m for m in map(_ERROR_LINE.match, lines) if m and not m.group(1).startswith("ray.")]
    if errors:  # the last one: the worker's own
        name, text = errors[-1].group(1).rsplit(".", 1)[-1], errors[-1].group(2).strip()
    else:
        rest = [line for line in lines if not line.startswith(("ray::", "\x1b"))]
        name, text = type(exc).__name__, rest[0] if rest else ""
    return f"{name}: {text}"[:300]


def run_batch(
    prompts: dict[str, str], llm: LLMOptions, batch: BatchOptions, replies_path: Path
) -> tuple[dict[str, str], Counter[str], int]:
    """Send every prompt (by request id) without a stored reply; returns (replies, failures, requests sent)."""
    from ccpt.pipeline.engine import ray_init

    replies = read_replies(replies_path)
    missing = [{"id": rid, "prompt": p} for rid, p in prompts.items() if rid not in replies]
    failures: Counter[str] = Counter()
    if not missing:
        return replies, failures, 0
    _preflight(batch)
    config = processor_config(batch)  # a missing API key fails here, before Ray starts
    ray = ray_init(batch.address, batch.concurrency)
    ray.data.DataContext.get_current().enable_progress_bars = False
    dataset = ray.data.from_items(missing)
    generation = {"temperature": llm.temperature, "max_tokens": llm.max_tokens, "seed": llm.seed}  # per request
    if batch.backend == "vllm":
        from ray.data import llm as ray_llm

        processor = ray_llm.build_processor(
            config, preprocess=partial(_preprocess, llm=generation), postprocess=_postprocess
        )
        rows = processor(dataset).iter_rows()
    else:
        # At most batch.concurrency Ray tasks (not actors: a job starts sending seconds sooner, docs/benchmarks.md),
        # each with its own event loop and client, keeping its share of max_connections in flight.
        in_flight = max(1, math.ceil(llm.max_connections / batch.concurrency))
        stage = (batch, config, generation, in_flight, float(llm.timeout))
        rows = dataset.map_batches(
            lambda part: asyncio.run(_http_requests(part, *stage)),
            batch_size=batch.batch_size,
            batch_format="numpy",
            concurrency=batch.concurrency,
        ).iter_rows()
    replies_path.parent.mkdir(parents=True, exist_ok=True)
    stored = len(replies)
    with replies_path.open("a", encoding="utf-8") as fh:
        try:
            for row in rows:
                if row.get("fatal"):
                    raise EndpointUnavailable(row["fatal"])
                if row.get("__inference_error__") or row.get("error"):
                    failures[f"call_error:{batch.backend}"] += 1
                    continue
                replies[row["id"]] = row["text"]
                # One line per reply, flushed: a killed or failed job keeps every reply it received.
                fh.write(json.dumps({"id": row["id"], "text": row["text"]}, ensure_ascii=False) + "\n")
                fh.flush()
        except Exception as exc:  # Ray wraps worker errors (e.g. an endpoint down after all retries)
            raise CcptError(
                f"the {batch.backend} batch job failed after {len(replies) - stored} new replies: {root_cause(exc)}",
                f"the replies received are kept in {replies_path}; rerun to send only the rest",
            ) from None
    return replies, failures, len(missing)
