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

The reply format is negotiated once per judge (per scorer, i.e. per task run): structured output is an
optimisation, never a requirement. The first request tries a JSON schema, then a JSON object, then the plain
prompt the paper used (the formats the provider family can take, best first; a protocol that sends none —
``as-run`` — starts and ends with the plain prompt). A format is dropped when the server refuses it twice (an
HTTP 4xx/5xx answer); when every format is refused the judge is unusable (:class:`JudgeUnusable`, one line
naming the judge and the server's message). A call that fails for any other reason after Inspect's retries is
a counted judge failure of that pair, never a default score.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
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
from ccpt.errors import ModelError
from ccpt.eval.distilled_provider import EXACT_RELEVANCE
from ccpt.eval.provider_errors import error_text, is_refusal, server_message
from ccpt.prompts import judge_prompt
from ccpt.scoring import relevance_from_score

JudgeMode = Literal["text", "expected"]
JudgeFormat = Literal["json_schema", "json_object", "plain"]
# Providers speaking the OpenAI chat API, where a server may take a JSON schema, a JSON object, or neither.
OPENAI_COMPATIBLE = frozenset({"openai", "openai-api", "vllm", "sglang", "ollama", "llama-cpp-python"})
# Providers that take a JSON schema (Inspect's response_schema) but have no "JSON object" mode.
SCHEMA_ONLY = frozenset({"gguf"})
PROBES_PER_FORMAT = 2  # a format is refused when the refusal repeats (one failure may be a passing one)
JUDGE_SCHEMA = ResponseSchema(
    name="relevance",
    json_schema=JSONSchema(
        type="object",
        properties={"relevance": JSONSchema(type="integer", enum=list(range(1, 11)))},
        required=["relevance"],
    ),
)
_DIGIT = re.compile(r"^\s*(\d)\s*$")


NO_CHOICES = "the judge answered with no choices (an empty `choices` list)"


class JudgeUnusable(ModelError):
    """Every reply format was refused by the judge's server: a deterministic error, no rerun will help."""


def format_ladder(model: str, use_schema: bool | None) -> tuple[JudgeFormat, ...]:
    """The reply formats to try for ``model``, best first; the last is always the plain prompt."""
    if use_schema is False:
        return ("plain",)
    provider = model.split("/", 1)[0]
    if provider in OPENAI_COMPATIBLE:
        return ("json_schema", "json_object", "plain")
    if provider in SCHEMA_ONLY or use_schema:
        return ("json_schema", "plain")
    return ("plain",)


def format_config(fmt: JudgeFormat) -> GenerateConfig:
    """The request fields of a reply format (``json_object`` travels as the OpenAI ``response_format``)."""
    if fmt == "json_schema":
        return GenerateConfig(response_schema=JUDGE_SCHEMA)
    if fmt == "json_object":
        return GenerateConfig(extra_body={"response_format": {"type": "json_object"}})
    return GenerateConfig()


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

    One instance per scorer (i.e. per task run); the memo and the negotiated reply format are per instance,
    never module-global.
    """

    model: Model
    mode: JudgeMode = "text"
    retries: int = 2
    use_schema: bool | None = None  # None: the formats of the provider family (format_ladder); False: plain only
    max_tokens: int = 24
    template: str = "judge"  # the prompt file (a protocol's judge surface)
    capitalise: bool = False  # upper-case the concept's first letter in the prompt
    lowercase_reply: bool = False  # lower-case the reply before parsing it
    request: GenerateConfig = field(default_factory=GenerateConfig)  # limits merged into every call (retries, timeouts)
    calls: int = 0
    format: JudgeFormat | None = None  # the negotiated reply format (None until the first call)
    refused: dict[str, str] = field(default_factory=dict)  # format → the server's refusal, for the log
    _memo: dict[tuple[str, str], asyncio.Task[Judgement]] = field(default_factory=dict, repr=False)
    _unusable: JudgeUnusable | None = field(default=None, repr=False)
    _lock: asyncio.Lock | None = field(default=None, repr=False)
    _lock_loop: asyncio.AbstractEventLoop | None = field(default=None, repr=False)

    @property
    def name(self) -> str:
        return str(self.model)

    def _config(self, attempt: int, fmt: JudgeFormat) -> GenerateConfig:
        config = GenerateConfig(
            # attempt 0 is the paper's greedy call; a retry must differ or it would repeat (and hit the cache).
            temperature=0.0 if attempt == 0 else 0.7,
            seed=attempt,
            max_tokens=self.max_tokens,
            logprobs=True if self.mode == "expected" else None,
            top_logprobs=10 if self.mode == "expected" else None,
        )
        return config.merge(format_config(fmt))

    async def _generate(self, prompt: str, attempt: int, fmt: JudgeFormat, **config: object) -> ModelOutput:
        return await self.model.generate(
            [ChatMessageUser(content=prompt)],
            config=self._config(attempt, fmt).merge(self.request).merge(GenerateConfig(**config)),  # type: ignore[arg-type]
            cache=CachePolicy(expiry=None, per_epoch=False),
        )

    def _format_lock(self) -> asyncio.Lock:
        # A lock belongs to one event loop; a judge may outlive one (Inspect runs each eval in its own).
        loop = asyncio.get_running_loop()
        if self._lock is None or self._lock_loop is not loop:
            self._lock, self._lock_loop = asyncio.Lock(), loop
        return self._lock

    async def reply_format(self, prompt: str) -> tuple[JudgeFormat, ModelOutput | None]:
        """The reply format this judge's server takes, negotiated on the first call with that call's request.

        Returns the format and, for the call that negotiated it, the accepted probe's reply (the real attempt-0
        request, so nothing is asked twice). A failure that is not a refusal (no connection, a timeout) decides
        nothing and is raised.
        """
        async with self._format_lock():
            if self._unusable is not None:
                raise self._unusable
            if self.format is not None:
                return self.format, None
            for fmt in format_ladder(self.name, self.use_schema):
                if fmt in self.refused:  # refused before a passing failure interrupted the negotiation
                    continue
                output, refusal = await self._probe(prompt, fmt)
                if output is not None:
                    self.format = fmt
                    return fmt, output
                self.refused[fmt] = refusal
            tried = "; ".join(f"{fmt}: {why}" for fmt, why in self.refused.items())
            self._unusable = JudgeUnusable(
                f"judge {self.name!r} refused every request ({tried})",
                "is the judge's model name right and is it served? check the server's log",
            )
            raise self._unusable

    async def _probe(self, prompt: str, fmt: JudgeFormat) -> tuple[ModelOutput | None, str]:
        """The reply when ``fmt`` is taken; else the server's message after ``PROBES_PER_FORMAT`` refusals."""
        message = ""
        for _ in range(PROBES_PER_FORMAT):
            self.calls += 1
            try:
                return await self._generate(prompt, 0, fmt, max_retries=0), ""
            except Exception as exc:  # provider errors come in many types; only a refusal is read here
                if not is_refusal(exc):
                    raise
                message = server_message(exc)
        return None, message

    async def _judge(self, concept: str, prop: str) -> Judgement:
        prompt = judge_prompt(concept, prop, self.template, self.capitalise)
        raw, error = "", "no attempt"
        try:
            fmt, first = await self.reply_format(prompt)
        except JudgeUnusable:
            raise
        except Exception as exc:  # no connection, a timeout: this pair's judgement failed, counted as such
            return Judgement(concept, prop, None, None, raw, 1, f"judge call failed: {error_text(exc)}")
        for attempt in range(self.retries + 1):
            if attempt == 0 and first is not None:
                output = first
            else:
                self.calls += 1
                try:
                    output = await self._generate(prompt, attempt, fmt)
                except Exception as exc:  # failed after Inspect's own retries: a judge failure, never a default
                    failed = f"judge call failed: {error_text(exc)}"
                    return Judgement(concept, prop, None, None, raw, attempt + 1, failed)
            if not output.choices:  # HTTP 200 with nothing in it: a server fault, not an unparsable reply
                error = NO_CHOICES
                continue
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

    def format_note(self) -> str | None:
        """How the reply format was decided, e.g. ``json_object (json_schema refused: HTTP 500: …)``."""
        if self.format is None:
            return None
        refused = "; ".join(f"{fmt} refused: {why}" for fmt, why in self.refused.items())
        return f"{self.format} ({refused})" if refused else self.format


async def score_pairs(judge: Judge, pairs: list[tuple[str, str]]) -> list[Judgement]:
    """Judge many (concept, property) pairs concurrently (used by judge–human agreement)."""
    return list(await asyncio.gather(*(judge.relevance(c, p) for c, p in pairs)))


def default_judge_mode(model: str | None) -> JudgeMode:
    """How to read a judge's score when the user did not say: the expected score over the digits' probabilities
    for a local GGUF judge (small models put real mass on neighbouring digits), the reply's text otherwise."""
    return "expected" if (model or "").startswith("gguf/") else "text"


def live_scores(model: str, mode: JudgeMode, pairs: Sequence[tuple[str, str]]) -> list[float | None]:
    """Judge every (concept, property) pair with the Inspect model ``model`` through ccpt's judge (the
    benchmark's scorer's code path); a pair the judge failed on is ``None``."""
    from inspect_ai.model import get_model

    from ccpt.errors import CcptError

    try:
        judge = Judge(get_model(model), mode=mode)
    except CcptError:
        raise
    except Exception as exc:  # Inspect raises plain exceptions for unknown providers / missing keys
        raise CcptError(f"cannot load judge model {model!r}: {error_text(exc)}") from None
    judgements = asyncio.run(score_pairs(judge, list(pairs)))
    return [j.relevance for j in judgements]
