"""The embedded offline model: an Inspect model provider running llama-cpp-python in-process.

``--model gguf/qwen2.5-0.5b`` (see :mod:`ccpt.io.weights`), ``gguf//abs/path/model.gguf`` or ``gguf/org/repo:file.gguf``
(Hugging Face Hub). Model args: ``-M n_ctx=4096 -M n_threads=<physical cores> -M n_batch=64 -M prefix_cache=aligned
-M verbose=false``. ``prefix_cache``: ``aligned`` (default) re-uses the prompt prefix shared with the previous call
in whole ``n_batch`` blocks (bitwise reproducible); ``off`` evaluates every prompt from scratch; ``any`` is
llama-cpp-python's own reuse (fastest, but results then depend on the previous call).
"""

from __future__ import annotations

import importlib.metadata
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import anyio
import psutil
from inspect_ai.model import (
    ChatCompletionChoice,
    ChatMessage,
    ChatMessageAssistant,
    GenerateConfig,
    Logprob,
    Logprobs,
    ModelAPI,
    ModelCall,
    ModelOutput,
    ModelUsage,
    StopReason,
    TopLogprob,
    modelapi,
)
from inspect_ai.tool import ToolChoice, ToolInfo

from ccpt.errors import ModelError
from ccpt.eval.llama_isa import build_isa
from ccpt.io.weights import install_hint, resolve_gguf, verified_sha256

if TYPE_CHECKING:
    from ccpt.eval.llama_backend import ChatRequest, ChatResult, LoadedModel, LoadSpec, TokenLogprob

DEFAULT_N_CTX = 4096
DEFAULT_N_BATCH = 64  # the block size of aligned prefix reuse (see llama_backend.RecordingLlama)
# CCPT answers (even with reasoning) are far shorter; this bounds a small model that starts repeating.
DEFAULT_MAX_TOKENS = 1024
# GenerateConfig's sampling fields that ChatRequest takes as they are (None: llama-cpp-python's default).
SAMPLING_FIELDS = ("temperature", "top_p", "top_k", "max_tokens", "frequency_penalty", "presence_penalty")
MODEL_ARGS = ("n_ctx", "n_threads", "n_batch", "prefix_cache", "verbose")
# Upper bounds of the integer -M values: n_ctx and n_batch at the largest context a shipped model was trained for
# (Qwen2.5: 131,072 tokens; llama.cpp sizes its KV cache by n_ctx up front, so n_ctx=1e11 asked for terabytes),
# n_threads at the pipeline's --workers bound (each is an OS thread).
ARG_BOUNDS = {"n_ctx": 131_072, "n_threads": 1_024, "n_batch": 131_072}


def physical_cores() -> int:
    """Physical cores available to this process (llama.cpp gains nothing from hyper-threads)."""
    physical = psutil.cpu_count(logical=False) or os.cpu_count() or 1
    try:
        allowed = len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        allowed = physical
    return max(1, min(physical, allowed))


def answers_fingerprint(path: Path, spec: LoadSpec, prefix_cache: str) -> str:
    """A local model's identity for Inspect's cache key: the file's sha256, the llama.cpp build, the settings."""
    try:
        version = importlib.metadata.version("llama-cpp-python")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    return (
        f"gguf:sha256={verified_sha256(path)};llama-cpp-python={version},{build_isa()};"
        f"n_ctx={spec.n_ctx},n_batch={spec.n_batch},n_threads={spec.n_threads},prefix_cache={prefix_cache}"
    )


def _check_model_args(model_name: str, model_args: dict[str, Any]) -> str:
    """``-M`` values checked where they enter (before the slow load): one line each; returns the prefix-cache mode."""
    unknown = sorted(set(model_args) - set(MODEL_ARGS))
    if unknown:
        raise ModelError(
            f"unknown model arg(s) for gguf/{model_name}: {', '.join(unknown)}",
            f"supported: {', '.join(MODEL_ARGS)}",
        )
    for name, most in ARG_BOUNDS.items():
        value = model_args.get(name)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= most):
            raise ModelError(f"gguf/{model_name}: -M {name}={value!r}: must be an integer in [1, {most:,}]")
    if "verbose" in model_args and not isinstance(model_args["verbose"], bool):
        raise ModelError(f"gguf/{model_name}: -M verbose={model_args['verbose']!r}: must be true or false")
    value = model_args.get("prefix_cache", "aligned")
    mode = {"true": "any", "false": "off"}.get(str(value).lower(), str(value).lower())
    if mode not in ("aligned", "off", "any"):
        raise ModelError(f"prefix_cache must be aligned, off or any, not {value!r}")
    return mode


@modelapi(name="gguf")
class GGUFModelAPI(ModelAPI):
    """A GGUF model run by llama-cpp-python inside the Inspect process."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's provider signature
        **model_args: Any,
    ) -> None:
        super().__init__(model_name=model_name, base_url=base_url, api_key=api_key, config=config)
        # Inspect's adaptive concurrency ignores max_connections() and lets calls queue on the model's lock inside
        # the attempt timeout, where they time out: opted out (unless the caller chose), Inspect queues them outside.
        if config.max_connections is None and config.adaptive_connections is None:
            config.adaptive_connections = False
        self._prefix_cache = _check_model_args(model_name, model_args)
        try:
            from ccpt.eval import llama_backend
        except ImportError as exc:
            raise ModelError(
                f"cannot run gguf/{model_name}: llama-cpp-python is not installed ({exc.name})", install_hint()
            ) from exc
        path = resolve_gguf(model_name)
        spec = llama_backend.LoadSpec(
            path=str(path.resolve()),
            n_ctx=int(model_args.get("n_ctx", DEFAULT_N_CTX)),
            n_threads=int(model_args.get("n_threads", physical_cores())),
            n_batch=int(model_args.get("n_batch", DEFAULT_N_BATCH)),
            verbose=bool(model_args.get("verbose", False)),
        )
        # Loading here (on the caller's thread) fails before an eval starts, and out of the concurrent generate calls.
        try:
            self._model: LoadedModel = llama_backend.load_model(spec)
        except ValueError as exc:
            raise ModelError(
                f"llama.cpp could not load {path}: {exc}".splitlines()[0],
                "the file may be truncated or corrupt, or need a newer llama-cpp-python",
            ) from exc
        self._backend = llama_backend
        if base_url is None:  # Inspect's cache key holds the base_url: name what decides the answers
            self.base_url = answers_fingerprint(path, spec, self._prefix_cache)

    def max_tokens(self) -> int | None:
        return DEFAULT_MAX_TOKENS

    def max_connections(self) -> int:
        # One call at a time (calls are serialised anyway, the CPU is the bottleneck), in one pool for every gguf
        # model (the default connection_key()), so a solver and a judge model do not compete for the cores either.
        return 1

    def should_retry(self, ex: Exception) -> bool:
        return False  # local failures are not transient

    async def generate(
        self,
        input: list[ChatMessage],
        tools: list[ToolInfo],
        tool_choice: ToolChoice,
        config: GenerateConfig,
    ) -> tuple[ModelOutput | Exception, ModelCall]:
        if tools:
            raise ModelError(f"gguf/{self.model_name} does not support tool calling", "use another provider")
        outputs: list[ChatResult] = []
        requests = [self._request(input, config, choice) for choice in range(config.num_choices or 1)]
        for request in requests:
            try:
                outputs.append(await anyio.to_thread.run_sync(self._backend.chat, self._model, request))
            except self._backend.ContextOverflow as exc:
                overflow = ModelOutput.from_content(self.model_name, "", "model_length", error=str(exc))
                return overflow, ModelCall.create(request=requests[0].kwargs(), response=None)
        output = self._output(outputs)
        call = ModelCall.create(request=requests[0].kwargs(), response=outputs[0].response, time=output.time)
        return output, call

    def _request(self, input: list[ChatMessage], config: GenerateConfig, choice: int) -> ChatRequest:
        # Distinct samples for num_choices > 1, still reproducible.
        seed = config.seed + choice if config.seed is not None else None
        schema = config.response_schema
        return self._backend.ChatRequest(
            messages=tuple(_message(m) for m in input),
            stop=tuple(config.stop_seqs or ()),
            seed=seed,
            json_schema=schema.json_schema.model_dump(exclude_none=True) if schema is not None else None,
            logit_bias=dict(config.logit_bias) if config.logit_bias else None,
            logprobs=bool(config.logprobs or config.top_logprobs),
            top_logprobs=config.top_logprobs or 0,
            prefix_cache=self._prefix_cache,
            **{name: getattr(config, name) for name in SAMPLING_FIELDS},
        )

    def _output(self, results: list[ChatResult]) -> ModelOutput:
        n_ctx = self._model.spec.n_ctx
        choices = [
            ChatCompletionChoice(
                message=ChatMessageAssistant(content=r.text, model=self.model_name, source="generate"),
                stop_reason=_stop_reason(r.finish_reason, r.prompt_tokens + r.completion_tokens, n_ctx),
                logprobs=_logprobs(r.logprobs) if r.logprobs is not None else None,
            )
            for r in results
        ]
        prompt_tokens = results[0].prompt_tokens  # the same prompt for every choice
        output_tokens = sum(r.completion_tokens for r in results)
        return ModelOutput(
            model=self.model_name,
            choices=choices,
            usage=ModelUsage(
                input_tokens=prompt_tokens,
                output_tokens=output_tokens,
                total_tokens=prompt_tokens + output_tokens,
            ),
            input_context_tokens=prompt_tokens,
            time=sum(r.seconds for r in results),
        )


def _message(message: ChatMessage) -> dict[str, str]:
    """A chat-template message; only text content is supported by the embedded models."""
    content = message.content
    if not isinstance(content, str) and any(c.type not in ("text", "reasoning") for c in content):
        raise ModelError("the embedded gguf models accept text only", "remove images/audio from the input")
    return {"role": message.role, "content": message.text}


def _stop_reason(finish_reason: str, used_tokens: int, n_ctx: int) -> StopReason:
    if finish_reason == "length":
        return "model_length" if used_tokens >= n_ctx else "max_tokens"
    return "stop"


def _logprobs(tokens: tuple[TokenLogprob, ...]) -> Logprobs:
    def top(t: TokenLogprob) -> list[TopLogprob] | None:
        return [TopLogprob(token=x.token, logprob=x.logprob, bytes=list(x.bytes)) for x in t.top] or None

    return Logprobs(
        content=[Logprob(token=t.token, logprob=t.logprob, bytes=list(t.bytes), top_logprobs=top(t)) for t in tokens]
    )
