"""LLM calls of stages 3–4 through Inspect's model layer: cached, concurrent, JSON replies (never evaluated).

An unparsable reply or a failed call is counted in :attr:`JsonCaller.failures` and returned as None.
"""

from __future__ import annotations

import asyncio
import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ccpt.answers import extract_json_object
from ccpt.errors import ModelError


@dataclass(frozen=True)
class LLMOptions:
    """Which model answers the pipeline's prompts and how."""

    model: str
    max_connections: int = 8
    temperature: float = 0.0
    seed: int = 0
    max_tokens: int = 400
    timeout: int = 120
    max_retries: int = 3
    model_args: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> dict[str, Any]:
        """Parameters recorded in stage manifests."""
        return {k: getattr(self, k) for k in ("model", "temperature", "seed", "max_tokens", "model_args")}


@dataclass
class Reply:
    """A parsed reply: the JSON object, and P(yes) from log-probabilities when the provider gives them."""

    obj: dict[str, object] | None
    p_yes: float | None = None


class JsonCaller:
    """Concurrent, cached JSON-answer calls to one Inspect model."""

    def __init__(self, options: LLMOptions) -> None:
        from inspect_ai.model import get_model

        try:
            self.model = get_model(options.model, **options.model_args)
        except Exception as exc:  # Inspect raises several types for unknown providers / bad args
            raise ModelError(
                f"cannot load model {options.model!r}: {exc}", "check the model name and -M args"
            ) from None
        self.options = options
        self.failures: Counter[str] = Counter()
        self.calls = 0
        self._semaphore = asyncio.Semaphore(options.max_connections)

    async def ask(self, prompt: str, *, logprobs: bool = False) -> Reply:
        """One prompt → its parsed reply (``obj`` None on failure, counted under the prompt's kind)."""
        from inspect_ai.model import CachePolicy, GenerateConfig

        options = {k: getattr(self.options, k) for k in ("temperature", "seed", "max_tokens", "timeout", "max_retries")}
        config = GenerateConfig(**options, logprobs=logprobs or None, top_logprobs=5 if logprobs else None)
        async with self._semaphore:
            self.calls += 1
            try:
                output = await self.model.generate(prompt, config=config, cache=CachePolicy(expiry=None))
            except Exception as exc:  # provider errors after Inspect's own retries
                self.failures[f"call_error:{type(exc).__name__}"] += 1
                return Reply(None)
        obj = extract_json_object(output.completion)
        if obj is None:
            self.failures["unparsable_reply"] += 1
        return Reply(obj, _p_yes(output) if logprobs else None)


def _p_yes(output: Any) -> float | None:
    """P(yes) / (P(yes) + P(no)) at the first generated token that reads yes or no, from top log-probs."""
    logprobs = getattr(output.choices[0], "logprobs", None) if output.choices else None
    if logprobs is None:
        return None
    for item in logprobs.content:
        if item.token.strip(" \"'").lower() not in ("yes", "no"):
            continue
        mass = {"yes": 0.0, "no": 0.0}
        for alt in item.top_logprobs or [item]:
            word = alt.token.strip(" \"'").lower()
            if word in mass:
                mass[word] += math.exp(alt.logprob)
        total = mass["yes"] + mass["no"]
        return mass["yes"] / total if total > 0 else None
    return None


def as_bool(value: object) -> bool | None:
    """A JSON yes/no answer as bool (true/false, "yes"/"no", "true"/"false"); None if it is neither."""
    if isinstance(value, bool):
        return value
    word = value.strip().lower() if isinstance(value, str) else ""
    return {"yes": True, "true": True, "no": False, "false": False}.get(word)


def as_string_list(value: object, limit: int) -> list[str]:
    """The first ``limit`` distinct non-empty strings of a JSON list (other items are dropped)."""
    if not isinstance(value, list):
        return []
    kept = (item for item in value if isinstance(item, str) and item.strip() and len(item) <= 100)
    distinct = dict.fromkeys(" ".join(item.split()).strip(" .").lower() for item in kept)
    return [s for s in distinct if s][:limit]
