"""The LLM-as-a-judge relevance metric (paper §4.3, Table 17) on any Inspect model (docs/methods.md, "The judge").

A call asks how much concept X has property P (1–10), mapped to [0, 1] by (s − 1) / 9; ``text`` mode reads the
integer, ``expected`` the probability-weighted score from the log-probabilities. The reply format is negotiated once
per endpoint on :data:`PROBE_PAIR`. A failed call is final and counted, or transient (:class:`JudgeUnavailable`,
:class:`~ccpt.eval.endpoints.EndpointDown`) and judged again by the rerun.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal, NoReturn

from inspect_ai.model import ChatMessageUser, GenerateConfig, Model, ModelOutput, ResponseSchema, get_model
from inspect_ai.util import JSONSchema

from ccpt.answers import parse_relevance
from ccpt.errors import CcptError, ModelError
from ccpt.eval import endpoints
from ccpt.eval.distilled_provider import EXACT_RELEVANCE
from ccpt.eval.inspect_compat import cache_policy, guard_model
from ccpt.io.provider_errors import error_text, http_status, is_refusal, is_transient, server_message
from ccpt.judges import JudgeIdentity
from ccpt.prompts import judge_prompt
from ccpt.schemas.run import JudgeMode
from ccpt.scoring import relevance_from_score

JudgeFormat = Literal["json_schema", "json_object", "plain"]
# Providers speaking the OpenAI chat API, where a server may take a JSON schema, a JSON object, or neither.
OPENAI_COMPATIBLE = frozenset({"openai", "openai-api", "vllm", "sglang", "ollama", "llama-cpp-python"})
# Providers that take a JSON schema (Inspect's response_schema) but have no "JSON object" mode.
SCHEMA_ONLY = frozenset({"gguf"})
PROBES_PER_FORMAT = 2  # a format is refused when the refusal repeats (one failure may be a passing one)
# The negotiation's and the liveness check's request: a harmless pair every judge answers (the preflight's default).
PROBE_PAIR = ("a peeled apple", "white")
# Server errors that mean "not now" (a gateway or an overloaded server), never "not this format".
UNAVAILABLE_STATUSES = frozenset({502, 503, 504})
PROBE_LIMIT = 60.0  # seconds the liveness check waits at most when the run set no attempt timeout
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


class JudgeUnavailable(ModelError):
    """A judge call failed transiently (a timeout, 429, a server error): no result, the rerun judges it again."""


# Per process: (endpoint, judge model, format ladder) → the negotiated format and the refusals on the way (see the
# module docstring); cleared by forget_formats() when a command starts.
_negotiated: dict[tuple[str, str, tuple[str, ...]], tuple[JudgeFormat, dict[str, str]]] = {}
_negotiating: dict[tuple[str, str, tuple[str, ...]], tuple[asyncio.AbstractEventLoop, asyncio.Lock]] = {}


def forget_formats() -> None:
    """Forget every negotiated reply format (a new run negotiates again: the server may have changed)."""
    _negotiated.clear()
    _negotiating.clear()


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


@dataclass(frozen=True)
class Judgement:
    """One judged (concept, property) pair: ``relevance`` in [0, 1] or ``None`` with ``error``."""

    concept: str
    property: str
    relevance: float | None
    score: float | None  # on the 1–10 scale (fractional in expected mode)
    raw: str
    error: str | None = None
    call_failed: bool = False  # the judge's server refused the call (``error`` says why), not an unscorable reply


def expected_score(output: ModelOutput) -> float | None:
    """Probability-weighted 1–10 score from the top log-probabilities at the first digit of the reply. Digits are
    single tokens in the local models, so after a "1" the mass of a following "0" counts as 10 (an approximation)."""
    logprobs = output.choices[0].logprobs if output.choices else None
    tokens = logprobs.content if logprobs is not None else []
    for i, position in enumerate(tokens):
        if not _DIGIT.match(position.token):
            continue
        probs: dict[int, float] = {}
        for top in position.top_logprobs or []:
            match = _DIGIT.match(top.token)
            if match and match[1] != "0":
                probs[int(match[1])] = probs.get(int(match[1]), 0.0) + math.exp(top.logprob)
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
    """The unrounded relevance a provider put in the output's metadata (``ccpt-distilled`` does), if any."""
    value = (output.metadata or {}).get(EXACT_RELEVANCE)
    if isinstance(value, int | float) and not isinstance(value, bool) and 0.0 <= value <= 1.0:
        return float(value)
    return None


@dataclass
class Judge:
    """A relevance judge bound to one Inspect model, with a memo of its calls (one judge per task run)."""

    model: Model
    mode: JudgeMode = "text"
    retries: int = 2
    use_schema: bool | None = None  # None: the formats of the provider family (format_ladder); False: plain only
    max_tokens: int = 24
    template: str = "judge"  # the prompt file (a protocol's judge surface)
    capitalise: bool = False  # the concept as Python's str.capitalize() writes it, in the prompt
    retry_temperature: float = 0.7  # the temperature of attempts after the first (a protocol's choice)
    lowercase_reply: bool = False  # lower-case the reply before parsing it
    request: GenerateConfig = field(default_factory=GenerateConfig)  # limits merged into every call (retries, timeouts)
    format: JudgeFormat | None = None  # the negotiated reply format (None until the first call)
    refused: dict[str, str] = field(default_factory=dict)  # format → the server's refusal, for the log
    liveness: bool = True  # before a failing endpoint is declared down, ask it the probe pair (the preflight: no)
    _memo: dict[tuple[str, str], asyncio.Task[Judgement]] = field(default_factory=dict, repr=False)
    _unusable: JudgeUnusable | None = field(default=None, repr=False)

    def __post_init__(self) -> None:
        # The SDK's own retries off (--max-retries is every retry there is) and a dead endpoint stops every call.
        guard_model(self.model)

    @property
    def name(self) -> str:
        return str(self.model)

    @property
    def endpoint(self) -> str:
        return endpoints.endpoint_of(self.model)

    @property
    def identity(self) -> JudgeIdentity:
        """The judge as its scores depend on it: a declared judge's own (version, scale), else the model and its
        negotiated reply format; and the reading mode. The scorer stores its fields in the log."""
        declared = getattr(getattr(self.model, "api", None), "identity", None)
        if isinstance(declared, JudgeIdentity):
            return replace(declared, mode=self.mode)
        return JudgeIdentity(self.name, reply_format=self.format, mode=self.mode)

    def _key(self) -> tuple[str, str, tuple[str, ...]]:
        return (self.endpoint, self.name, format_ladder(self.name, self.use_schema))

    def _probe_prompt(self) -> str:
        return judge_prompt(*PROBE_PAIR, self.template, self.capitalise)

    async def _generate(
        self, prompt: str, attempt: int, fmt: JudgeFormat, cache: bool = True, **config: object
    ) -> ModelOutput:
        sampling = GenerateConfig(
            # attempt 0 is the paper's greedy call; a retry must differ or it would repeat (and hit the cache).
            temperature=0.0 if attempt == 0 else self.retry_temperature,
            seed=attempt,
            max_tokens=self.max_tokens,
            logprobs=True if self.mode == "expected" else None,
            top_logprobs=10 if self.mode == "expected" else None,
            # The reply format's fields (``json_object`` travels as the OpenAI ``response_format``).
            response_schema=JUDGE_SCHEMA if fmt == "json_schema" else None,
            extra_body={"response_format": {"type": "json_object"}} if fmt == "json_object" else None,
        )
        return await self.model.generate(
            [ChatMessageUser(content=prompt)],
            config=sampling.merge(self.request).merge(GenerateConfig(**config)),  # type: ignore[arg-type]
            cache=cache_policy(self.model, per_epoch=False) if cache else False,
        )

    def _format_lock(self) -> asyncio.Lock:
        # One negotiation per judge at a time; a lock belongs to one event loop, and a judge may outlive one
        # (Inspect runs each eval in its own; the preflight runs in another).
        loop = asyncio.get_running_loop()
        held = _negotiating.get(self._key())
        if held is None or held[0] is not loop:
            held = (loop, asyncio.Lock())
            _negotiating[self._key()] = held
        return held[1]

    async def reply_format(self) -> JudgeFormat:
        """The reply format this judge's server takes, negotiated once per judge and run on the probe pair."""
        async with self._format_lock():
            if self._unusable is not None:
                raise self._unusable
            known = _negotiated.get(self._key())
            if known is not None:
                self.format, self.refused = known[0], dict(known[1])
                return self.format
            ladder = format_ladder(self.name, self.use_schema)
            prompt = self._probe_prompt()
            for fmt in ladder:
                if fmt in self.refused:  # refused before a passing failure interrupted the negotiation
                    continue
                # One format (the plain prompt) leaves nothing to choose: no request.
                refusal = None if len(ladder) == 1 else await self._probe(prompt, fmt)
                if refusal is None:
                    self.format = fmt
                    _negotiated[self._key()] = (fmt, dict(self.refused))
                    return fmt
                self.refused[fmt] = refusal
            tried = "; ".join(f"{fmt}: {why}" for fmt, why in self.refused.items())
            self._unusable = JudgeUnusable(
                f"judge {self.name!r} refused every request ({tried})",
                "is the judge's model name right and is it served? check the server's log",
            )
            raise self._unusable

    async def _probe(self, prompt: str, fmt: JudgeFormat) -> str | None:
        """None when ``fmt`` is taken; else the server's message after ``PROBES_PER_FORMAT`` refusals."""
        message = ""
        for _ in range(PROBES_PER_FORMAT):
            try:
                await self._generate(prompt, 0, fmt, max_retries=0)
                return None
            except Exception as exc:  # provider errors come in many types; only a refusal is read here
                if not is_refusal(exc) or http_status(exc) in UNAVAILABLE_STATUSES:
                    await self._raise_unavailable(exc)
                message = server_message(exc)
        return message

    async def _answers_probe(self) -> bool:
        """Whether the judge answers the probe pair now, uncached: the endpoint is up and takes other pairs."""
        if not self.liveness:  # its failure is the answer
            return False
        fmt = self.format or "plain"
        limit = self.request.attempt_timeout or PROBE_LIMIT
        try:
            output = await asyncio.wait_for(
                self._generate(self._probe_prompt(), 0, fmt, cache=False, max_retries=0), timeout=limit + 5
            )
        except Exception:  # whatever it is, the judge did not answer
            return False
        return bool(output.choices)

    async def _raise_unavailable(self, exc: BaseException, answers_probe: bool | None = None) -> NoReturn:
        """Raise the transient error for ``exc``: the endpoint is declared down unless it answers the probe."""
        if isinstance(exc, endpoints.EndpointDown):
            raise exc
        if answers_probe if answers_probe is not None else await self._answers_probe():
            raise JudgeUnavailable(
                f"judge {self.name!r} failed transiently: {error_text(exc)}",
                "the sample is retried when the same command is rerun",
            ) from exc  # the cause tells a timeout apart by its class, not its text
        endpoints.mark_down(self.endpoint, error_text(exc))
        raise endpoints.EndpointDown(self.name, self.endpoint, error_text(exc)) from exc

    async def _failed(self, concept: str, prop: str, raw: str, exc: Exception) -> Judgement:
        """A failed call after Inspect's retries: a counted judge failure of this pair, or raised as transient."""
        if isinstance(exc, endpoints.EndpointDown):
            raise exc
        status = http_status(exc)
        if not is_transient(exc):  # a 4xx, a provider's own error: the server judged this request; final
            said = server_message(exc) if status is not None else error_text(exc)  # not the request Inspect dumps
            return Judgement(concept, prop, None, None, raw, f"judge call failed: {said}", call_failed=True)
        alive = await self._answers_probe()
        if alive and status is not None and 500 <= status <= 599 and status not in UNAVAILABLE_STATUSES:
            # A 5xx for this pair while the judge answers the probe pair: it refuses this pair (a content filter),
            # as every rerun would: final, counted.
            why = f"judge call failed: {server_message(exc)} (the judge answers other pairs: this pair is refused)"
            return Judgement(concept, prop, None, None, raw, why, call_failed=True)
        await self._raise_unavailable(exc, alive)

    async def _judge(self, concept: str, prop: str) -> Judgement:
        prompt = judge_prompt(concept, prop, self.template, self.capitalise)
        raw, error = "", "no attempt"
        down = endpoints.down(self.endpoint)
        if down is not None:  # declared down during this run: no request, the rerun asks
            raise endpoints.EndpointDown(self.name, self.endpoint, down)
        fmt = await self.reply_format()
        for attempt in range(self.retries + 1):
            try:
                output = await self._generate(prompt, attempt, fmt)
            except Exception as exc:  # failed after Inspect's own retries: counted, or transient (raised)
                return await self._failed(concept, prop, raw, exc)
            if not output.choices:  # HTTP 200 with nothing in it: a server fault, not an unparsable reply
                error = NO_CHOICES
                continue
            raw = output.completion
            parsed = parse_relevance(raw.lower() if self.lowercase_reply else raw)
            exact = exact_relevance(output)
            if exact is not None:  # a provider that knows the unrounded relevance (the distilled judge)
                return Judgement(concept, prop, exact, 1 + 9 * exact, raw)
            if self.mode == "expected":
                value = expected_score(output)
                if value is not None:
                    return Judgement(concept, prop, relevance_from_score(value), value, raw)
                error = "no score log-probabilities in the reply"
            elif parsed.ok and parsed.value is not None:
                score = float(parsed.value)
                return Judgement(concept, prop, relevance_from_score(score), score, raw)
            else:
                error = parsed.error or "unparsable"
        return Judgement(concept, prop, None, None, raw, error)

    async def relevance(self, concept: str, prop: str) -> Judgement:
        """Judge how much ``concept`` has ``prop`` (memoised; concurrent askers share one call)."""
        key = (" ".join(concept.split()), " ".join(prop.split()))
        task = self._memo.get(key)
        if task is None:
            task = asyncio.ensure_future(self._judge(*key))
            self._memo[key] = task
        try:
            return await task
        except (JudgeUnavailable, endpoints.EndpointDown):
            # Transient: not a result to remember (the eval set's retry of the task run asks again).
            if self._memo.get(key) is task:
                del self._memo[key]
            raise

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
    """``expected`` for a local GGUF judge (small models put real mass on neighbouring digits), else ``text``."""
    return "expected" if (model or "").startswith("gguf/") else "text"


def live_scores(
    model: str, mode: JudgeMode, pairs: Sequence[tuple[str, str]], model_args: dict[str, Any] | None = None
) -> list[float | None]:
    """Judge every (concept, property) pair with the Inspect model ``model`` as the scorer does (a failure: None)."""
    try:
        judge = Judge(get_model(model, **(model_args or {})), mode=mode)
    except CcptError:
        raise
    except Exception as exc:  # Inspect raises plain exceptions for unknown providers / missing keys
        raise CcptError(f"cannot load judge model {model!r}: {error_text(exc)}") from None
    return [j.relevance for j in asyncio.run(score_pairs(judge, list(pairs)))]
