"""The llama-cpp-python side of the embedded model: loading, one chat call, token log-probabilities.

Imported lazily by :mod:`ccpt.eval.local_model` (llama-cpp-python is an optional extra); usable without Inspect.
"""

from __future__ import annotations

import contextlib
import functools
import threading
import time
import weakref
from collections.abc import Generator, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import llama_cpp.llama_cpp as llama_low
import numpy as np
from llama_cpp import Llama


@dataclass(frozen=True)
class LoadSpec:
    """What identifies one loaded model in this process."""

    path: str
    n_ctx: int = 4096
    n_threads: int = 2
    n_batch: int = 512
    verbose: bool = False


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion; ``None`` leaves a sampling parameter at llama-cpp-python's default."""

    messages: tuple[dict[str, str], ...]
    temperature: float | None = None
    top_p: float | None = None
    top_k: int | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] = ()
    seed: int | None = None
    json_schema: dict[str, Any] | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    logit_bias: dict[int, float] | None = None
    logprobs: bool = False
    top_logprobs: int = 0
    prefix_cache: str = "aligned"  # "aligned" | "off" | "any": see chat()

    def kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``Llama.create_chat_completion``."""
        args: dict[str, Any] = {"messages": [dict(m) for m in self.messages], "stop": list(self.stop)}
        optional = ("temperature", "top_p", "top_k", "max_tokens", "seed", "frequency_penalty", "presence_penalty")
        args.update({k: getattr(self, k) for k in (*optional, "logit_bias") if getattr(self, k) is not None})
        if self.json_schema is not None:
            args["response_format"] = {"type": "json_object", "schema": self.json_schema}
        return args


@dataclass(frozen=True)
class TokenLogprob:
    """A generated token with its log-probability and the most likely alternatives at its position."""

    token: str
    bytes: bytes
    logprob: float
    top: tuple[TokenLogprob, ...] = ()  # the alternatives (their own ``top`` empty)


@dataclass(frozen=True)
class ChatResult:
    text: str
    finish_reason: str  # "stop" | "length"
    prompt_tokens: int
    completion_tokens: int
    seconds: float
    logprobs: tuple[TokenLogprob, ...] | None = None
    response: dict[str, Any] = field(default_factory=dict)


class ContextOverflow(Exception):
    """The prompt (plus at least one generated token) does not fit in the context window."""


# The distribution recorded at one sampling step: the sampled token, its logprob, the top-k token ids and logprobs.
_Step = tuple[int, float, np.ndarray, np.ndarray]


@dataclass
class _Recorder:
    """Collects the raw next-token distribution at every sampling step of one call."""

    top_k: int
    steps: list[_Step] = field(default_factory=list)

    def record(self, token: int, logits: np.ndarray) -> None:
        # log-softmax in float64 so probabilities of the top tokens sum to ~1 exactly
        shifted = logits.astype(np.float64) - float(logits.max())
        log_z = float(np.log(np.exp(shifted).sum()))
        top_ids = np.empty(0, dtype=np.intp)
        if self.top_k > 0:
            k = min(self.top_k, shifted.size)
            top_ids = np.argpartition(shifted, -k)[-k:]
            top_ids = top_ids[np.argsort(-shifted[top_ids], kind="stable")]
        self.steps.append((token, float(shifted[token]) - log_z, top_ids, shifted[top_ids] - log_z))


class RecordingLlama(Llama):
    """A ``Llama`` that can record the raw distribution (before temperature, penalties and grammar) each generated
    token was sampled from: the context's last logits row, read after each token, instead of llama-cpp-python's
    ``logits_all=True`` (logits of every prompt token, the whole vocabulary sorted in Python)."""

    recorder: _Recorder | None = None
    aligned_reuse: bool = False

    def generate(self, tokens: Sequence[int], *args: Any, **kwargs: Any) -> Generator[int, Any, None]:
        if self.aligned_reuse:
            # Keep only the part of the cached prefix that ends on an ``n_batch`` boundary: llama.cpp's logits depend
            # on how the prompt was cut into batches, so every prompt is then evaluated in the same blocks
            # (bitwise-identical logits, tested).
            limit = min(self.n_tokens, len(tokens) - 1)  # the last token is always evaluated (fresh logits)
            common = self.longest_token_prefix(self.input_ids[:limit], tokens[:limit])
            self.n_tokens = common - common % self.n_batch
        inner = super().generate(tokens, *args, **kwargs)
        recorder = self.recorder
        if recorder is None:
            return (yield from inner)
        n_vocab = self.n_vocab()
        try:
            token = next(inner)
            while True:
                pointer = llama_low.llama_get_logits_ith(self.ctx, -1)
                recorder.record(token, np.ctypeslib.as_array(pointer, shape=(n_vocab,)))
                sent = yield token
                token = inner.send(sent)
        except StopIteration:
            return
        finally:
            inner.close()


@dataclass
class LoadedModel:
    """A loaded model and the lock serialising calls on it (a llama.cpp context is not thread-safe)."""

    spec: LoadSpec
    llama: RecordingLlama
    lock: threading.Lock = field(default_factory=threading.Lock)


_PARAMS_LOCK = threading.Lock()  # the temporary wrap below is safe if two threads load at once


@contextlib.contextmanager
def _no_extra_buffers() -> Iterator[None]:
    """Load models with llama.cpp's "extra buffer types" (weight repacking, incl. AMX, which segfaults on an
    AMX-capable CPU: llama.cpp #20824) off, by wrapping ``llama_model_default_params``: ``Llama()`` has no option."""
    original = llama_low.llama_model_default_params
    if "use_extra_bufts" not in {name for name, _ in llama_low.llama_model_params._fields_}:
        yield  # older llama.cpp: no such parameter and no AMX repacking to avoid
        return

    def params() -> Any:
        p = original()
        p.use_extra_bufts = False
        return p

    with _PARAMS_LOCK:
        llama_low.llama_model_default_params = params
        try:
            yield
        finally:
            llama_low.llama_model_default_params = original


# One Llama per LoadSpec per process, shared by every ModelAPI instance with its KV-cache prefix (a shared few-shot
# prompt is evaluated once); bounded, so old models are freed (`load_model.cache_clear()` resets it in tests).
@functools.lru_cache(maxsize=4)
def load_model(spec: LoadSpec) -> LoadedModel:
    """Load (once) the GGUF at ``spec.path``; raises ValueError if llama.cpp cannot read it."""
    with _no_extra_buffers():
        llama = RecordingLlama(
            model_path=spec.path,
            n_ctx=spec.n_ctx,
            n_batch=spec.n_batch,
            n_threads=spec.n_threads,
            n_threads_batch=spec.n_threads,
            verbose=spec.verbose,
        )
    loaded = LoadedModel(spec=spec, llama=llama)
    # Free the native model when the cache drops it or at exit: Llama.__del__ at shutdown runs after llama_cpp's
    # globals are gone and prints a traceback.
    weakref.finalize(loaded, llama.close)
    return loaded


def _token_logprobs(llama: Llama, steps: list[_Step], text: str) -> tuple[TokenLogprob, ...]:
    """Per-token logprobs for exactly the tokens of ``text`` (not end-of-generation tokens, nor the tokens sampled
    after a stop sequence cut the text short)."""
    vocab = llama._model.vocab
    budget = len(text.encode("utf-8"))
    out: list[TokenLogprob] = []
    prev: list[int] = []
    used = 0
    for token, logprob, top_ids, top_logprobs in steps:
        if used >= budget or llama_low.llama_vocab_is_eog(vocab, token):
            break
        piece = llama.detokenize([token], prev_tokens=prev)
        top = tuple(
            _token(llama.detokenize([int(i)], prev_tokens=prev), float(lp))
            for i, lp in zip(top_ids, top_logprobs, strict=True)
        )
        out.append(_token(piece, logprob, top))
        prev.append(token)
        used += len(piece)
    return tuple(out)


def _token(piece: bytes, logprob: float, top: tuple[TokenLogprob, ...] = ()) -> TokenLogprob:
    # A token can hold part of a multi-byte character; the exact bytes are kept alongside.
    return TokenLogprob(piece.decode("utf-8", errors="replace"), piece, logprob, top)


def chat(model: LoadedModel, request: ChatRequest) -> ChatResult:
    """Run one chat completion through the GGUF's chat template (blocking; call from a worker thread)."""
    kwargs = request.kwargs()
    with model.lock:
        llama = model.llama
        # Naive prefix reuse ("any") shifts logits by up to ~0.2 (measured): "aligned" reuses only whole n_batch blocks.
        if request.prefix_cache == "off":
            llama.reset()
        llama.aligned_reuse = request.prefix_cache == "aligned"
        llama.recorder = _Recorder(request.top_logprobs) if request.logprobs else None
        start = time.perf_counter()
        try:
            response: dict[str, Any] = llama.create_chat_completion(**kwargs)  # type: ignore[assignment]
        except ValueError as exc:
            # llama-cpp-python has no exception type for this: its message is the one sign (the adapter's test,
            # tests/test_local_model.py, pins it to the installed version).
            if "exceed context window" in str(exc):
                raise ContextOverflow(str(exc)) from exc
            raise
        finally:
            recorder, llama.recorder = llama.recorder, None
        seconds = time.perf_counter() - start
        choice = response["choices"][0]
        text = choice["message"].get("content") or ""
        logprobs = _token_logprobs(llama, recorder.steps, text) if recorder is not None else None
    usage = response.get("usage") or {}
    return ChatResult(
        text=text,
        finish_reason=str(choice.get("finish_reason") or "stop"),
        prompt_tokens=int(usage.get("prompt_tokens", 0)),
        completion_tokens=int(usage.get("completion_tokens", 0)),
        seconds=seconds,
        logprobs=logprobs,
        response=response,
    )
