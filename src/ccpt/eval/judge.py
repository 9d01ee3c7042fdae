"""The LLM-as-a-judge relevance metric (paper §4.3, Table 17) on any Inspect model.

A judge call asks "how much does concept X have property P, 1–10" and maps the answer to [0, 1] with
(s − 1) / 9. Calls are memoised per (judge model, concept, property) for the whole run — a pair shared by
many samples, seeds or methods is judged once — and go through Inspect's model cache, so re-scoring a run
is deterministic and free. Unparsable replies are retried a bounded number of times, then recorded as a
failure (relevance ``None``), never replaced by a default.

Two readings of the judge's answer:
- ``text`` (default, the paper's): the integer the judge writes, at temperature 0.
- A provider that knows the exact relevance (the distilled judge, ``ccpt-distilled``) puts it in the output's
  metadata; it is taken as is, unrounded, in either mode.
- ``expected``: the probability-weighted mean score from the judge's token log-probabilities at the
  score position. Small local judges carry a usable signal only there (docs/methods.md, "The judge"). Digits are single
  tokens in the supported local models, so "10" is the token "1" followed by "0": when the chosen first
  digit is "1", P("0" | "1") from the next position splits its mass between 1 and 10; otherwise the mass
  of "1" is counted as 1 (a documented approximation, small because that mass is small then).
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass, field
from typing import Literal

from inspect_ai.model import (
    CachePolicy,
    ChatMessageUser,
    GenerateConfig,
    Logprob,
    Model,
    ModelOutput,
    ResponseSchema,
)
from inspect_ai.util import JSONSchema

from ccpt.answers import parse_relevance
from ccpt.eval.distilled_provider import EXACT_RELEVANCE
from ccpt.prompts import judge_prompt
from ccpt.scoring import relevance_from_score

JudgeMode = Literal["text", "expected"]
# Providers known to honour a JSON-schema response format; others get the plain prompt.
SCHEMA_PROVIDERS = frozenset({"gguf", "openai", "vllm", "openai-api"})
JUDGE_SCHEMA = ResponseSchema(
    name="relevance",
    json_schema=JSONSchema(
        type="object",
        properties={"relevance": JSONSchema(type="integer", enum=list(range(1, 11)))},
        required=["relevance"],
    ),
)
_DIGIT = re.compile(r"^\s*(\d)\s*$")


@dataclass(frozen=True)
class Judgement:
    """One judged (concept, property) pair: ``relevance`` in [0, 1] or ``None`` with ``error``."""

    concept: str
    property: str
    relevance: float | None
    score: float | None  # on the 1–10 scale (fractional in expected mode)
    raw: str
    attempts: int
    error: str | None = None


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _digit_distribution(position: Logprob) -> dict[int, float]:
    probs: dict[int, float] = {}
    for top in position.top_logprobs or []:
        match = _DIGIT.match(top.token)
        if match and match.group(1) != "0":
            digit = int(match.group(1))
            probs[digit] = probs.get(digit, 0.0) + math.exp(top.logprob)
    return probs


def expected_score(output: ModelOutput) -> float | None:
    """Probability-weighted 1–10 score from the top log-probabilities at the first digit of the reply."""
    logprobs = output.choices[0].logprobs if output.choices else None
    if logprobs is None:
        return None
    tokens = logprobs.content
    for i, position in enumerate(tokens):
        if not _DIGIT.match(position.token):
            continue
        probs = _digit_distribution(position)
        total = sum(probs.values())
        if total <= 0:
            return None
        p_ten_given_one = 0.0
        if position.token.strip() == "1" and i + 1 < len(tokens):
            following = {t.token.strip(): math.exp(t.logprob) for t in tokens[i + 1].top_logprobs or []}
            p_ten_given_one = following.get("0", 0.0)
        mass_one = probs.pop(1, 0.0)
        value = sum(d * p for d, p in probs.items()) + mass_one * (10 * p_ten_given_one + (1 - p_ten_given_one))
        return value / total
    return None


def exact_relevance(output: ModelOutput) -> float | None:
    """The unrounded relevance a provider put in the output's metadata (``ccpt-distilled`` does), if any.

    Preferred over the reply text in both modes: the text carries only the rounded 1–10 integer.
    """
    value = (output.metadata or {}).get(EXACT_RELEVANCE)
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)
    return None


@dataclass
class Judge:
    """A relevance judge bound to one Inspect model, with a run-wide memo of in-flight and finished calls.

    One instance per scorer (i.e. per task run); the memo is per instance, never module-global.
    """

    model: Model
    mode: JudgeMode = "text"
    retries: int = 2
    use_schema: bool | None = None  # None: on for providers in SCHEMA_PROVIDERS
    max_tokens: int = 24
    template: str = "judge"  # the prompt file (a protocol's judge surface)
    capitalise: bool = False  # upper-case the concept's first letter in the prompt
    lowercase_reply: bool = False  # lower-case the reply before parsing it
    calls: int = 0
    _memo: dict[tuple[str, str], asyncio.Task[Judgement]] = field(default_factory=dict, repr=False)

    @property
    def name(self) -> str:
        return str(self.model)

    def _config(self, attempt: int) -> GenerateConfig:
        schema = self.use_schema
        if schema is None:
            schema = str(self.model).split("/", 1)[0] in SCHEMA_PROVIDERS
        return GenerateConfig(
            # attempt 0 is the paper's greedy call; a retry must differ or it would repeat (and hit the cache).
            temperature=0.0 if attempt == 0 else 0.7,
            seed=attempt,
            max_tokens=self.max_tokens,
            response_schema=JUDGE_SCHEMA if schema else None,
            logprobs=True if self.mode == "expected" else None,
            top_logprobs=10 if self.mode == "expected" else None,
        )

    async def _judge(self, concept: str, prop: str) -> Judgement:
        prompt = judge_prompt(concept, prop, self.template, self.capitalise)
        raw, error = "", "no attempt"
        for attempt in range(self.retries + 1):
            self.calls += 1
            output = await self.model.generate(
                [ChatMessageUser(content=prompt)],
                config=self._config(attempt),
                cache=CachePolicy(expiry=None, per_epoch=False),
            )
            raw = output.completion
            parsed = parse_relevance(raw.lower() if self.lowercase_reply else raw)
            exact = exact_relevance(output)
            if exact is not None:  # a provider that knows the unrounded relevance (the distilled judge)
                return Judgement(concept, prop, exact, 1 + 9 * exact, raw, attempt + 1)
            if self.mode == "expected":
                value = expected_score(output)
                if value is not None:
                    return Judgement(concept, prop, relevance_from_score(value), value, raw, attempt + 1)
                error = "no score log-probabilities in the reply"
            elif parsed.ok and parsed.value is not None:
                score = float(parsed.value)
                return Judgement(concept, prop, relevance_from_score(score), score, raw, attempt + 1)
            else:
                error = parsed.error or "unparsable"
        return Judgement(concept, prop, None, None, raw, self.retries + 1, error)

    async def relevance(self, concept: str, prop: str) -> Judgement:
        """Judge how much ``concept`` has ``prop`` (memoised; concurrent askers share one call)."""
        key = (_normalise(concept), _normalise(prop))
        task = self._memo.get(key)
        if task is None:
            task = asyncio.ensure_future(self._judge(*key))
            self._memo[key] = task
        return await task


async def score_pairs(judge: Judge, pairs: list[tuple[str, str]]) -> list[Judgement]:
    """Judge many (concept, property) pairs concurrently (used by judge–human agreement)."""
    return list(await asyncio.gather(*(judge.relevance(c, p) for c, p in pairs)))
