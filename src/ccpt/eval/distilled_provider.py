"""Declared judges (:mod:`ccpt.judges`) as Inspect model providers: ``ccpt-judge/<name>[/<variant>]`` runs any
registered in-process judge, ``ccpt-distilled/<head>`` the distilled judge (docs/judge.md) under its own name.

A judge answers only the relevance-judge prompt, with ``{"relevance": k}`` (k the nearest integer on the 1–10
scale, so any reader sees a valid reply) and the unrounded relevance in the output's metadata under
:data:`EXACT_RELEVANCE`; any other prompt gets a reply that says so (a counted judge failure). Its structured
identity (:class:`ccpt.judges.JudgeIdentity`) is the API's ``identity``, which the scorer stores in the log. Its
base URL names that identity and its weights, so Inspect's cache never serves one judge's scores for another's;
nothing reads it back.
"""

from __future__ import annotations

import json
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from ccpt import judges
from ccpt.errors import ModelError
from ccpt.judges import JudgeIdentity
from ccpt.prompts import judge_prompt

EXACT_RELEVANCE = "ccpt_relevance"  # metadata key carrying the unrounded relevance in [0, 1]
NOT_A_JUDGE_PROMPT = "a ccpt judge answers only the relevance-judge prompt (Concept / Property / Relevance)."
_C, _P = "\x00concept\x00", "\x00property\x00"


def parse_judge_prompt(prompt: str) -> tuple[str, str] | None:
    """The (concept, property) the judge prompt asks about (the last query block), or None."""
    before, _, rest = judge_prompt(_C, _P).partition(_C)
    middle, _, after = rest.partition(_P)
    lead = before.rsplit("\n", 1)[-1]  # the text right before the concept
    text, tail = prompt.rstrip(), after.rstrip()
    if not text.endswith(tail):
        return None
    body = text.removesuffix(tail)
    cut = body.rfind(middle)
    start = body.rfind(lead, 0, cut)
    if cut < 0 or start < 0:
        return None
    concept, prop = body[start + len(lead) : cut], body[cut + len(middle) :]
    if not concept.strip() or not prop.strip() or "\n" in concept or "\n" in prop:
        return None
    return concept, prop


class DeclaredJudgeAPI(ModelAPI):
    """Inspect ModelAPI around a declared judge (made ready once: an unusable one fails at get_model())."""

    provider = judges.PROVIDER

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        **model_args: Any,
    ) -> None:
        model = f"{self.provider}/{model_name}"
        found = judges.of_model(model)
        if found is None:
            known = ", ".join(judges.registered())
            raise ModelError(f"{model}: no judge {model_name!r} is registered (registered: {known})")
        judge, variant = found
        scoring = judge.ready(variant, model_args)
        self.identity = JudgeIdentity(model, scoring.version, scoring.scale)
        # The full version (the key shows 12 characters of a hash) and the weights: Inspect's cache key.
        cache_key = ";".join(filter(None, [judges.BASE_URL + self.identity.key, scoring.version, scoring.fingerprint]))
        super().__init__(model_name, base_url or cache_key, api_key, [], config)
        self.scoring = scoring
        self._lock = anyio.Lock()

    def max_connections(self) -> int:
        return 8

    async def generate(
        self, input: list[ChatMessage], tools: list[ToolInfo], tool_choice: ToolChoice, config: GenerateConfig
    ) -> ModelOutput:
        prompt = input[-1].text if input else ""
        pair = parse_judge_prompt(prompt)
        if pair is None:
            return ModelOutput.from_content(model=self.model_name, content=NOT_A_JUDGE_PROMPT)
        # One call at a time: a judge's scorer need not be re-entrant (torch already uses the cores).
        async with self._lock:
            (relevance,) = await anyio.to_thread.run_sync(judges.scored, self.identity.key, self.scoring.score, [pair])
        if relevance is None or not judges.relevance(relevance):  # the plug-in's answer: a counted failure
            reason = "no score" if relevance is None else f"relevance {relevance!r} is outside [0, 1]"
            return ModelOutput.from_content(model=self.model_name, content=f"{self.identity.key}: {reason}")
        score = 1 + 9 * relevance
        output = ModelOutput.from_content(model=self.model_name, content=json.dumps({"relevance": round(score)}))
        output.metadata = {EXACT_RELEVANCE: float(relevance), "score": score}
        # Words in, the reply's four tokens out: no tokenizer bills this judge; the counts only say how much it read.
        words = len(prompt.split())
        output.usage = ModelUsage(input_tokens=words, output_tokens=4, total_tokens=words + 4)
        return output


class DistilledModelAPI(DeclaredJudgeAPI):
    """``ccpt-distilled/<head>``: the distilled judge under its own provider name (``--judge distilled``)."""

    provider = "ccpt-distilled"


@modelapi(name=judges.PROVIDER)
def ccpt_judge() -> type[ModelAPI]:
    """Register the provider of declared judges with Inspect."""
    return DeclaredJudgeAPI


@modelapi(name=DistilledModelAPI.provider)
def ccpt_distilled() -> type[ModelAPI]:
    """Register the distilled judge's provider with Inspect."""
    return DistilledModelAPI
