"""``ccpt-distilled/<head>``: the distilled relevance judge as an Inspect model provider (docs/judge.md).

``<head>`` is ``default`` (the shipped judge) or a path to a head file or ensemble manifest. It answers only the
relevance-judge prompt, with ``{"relevance": k}`` (k the nearest integer on the 1–10 scale) and the unrounded
relevance in the output's metadata under :data:`EXACT_RELEVANCE`; any other prompt gets a reply that says so (a
counted judge failure). ``calibrated=false`` (``-M``) scores on the raw, human-rating scale.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from inspect_ai.model import ChatMessage, GenerateConfig, ModelAPI, ModelOutput, ModelUsage, modelapi
from inspect_ai.tool import ToolChoice, ToolInfo

from ccpt.errors import ModelError
from ccpt.prompts import judge_prompt

PROVIDER = "ccpt-distilled"
ALIAS = "distilled"  # what users type: `--judge distilled`
EXACT_RELEVANCE = "ccpt_relevance"  # metadata key carrying the unrounded relevance in [0, 1]
NOT_A_JUDGE_PROMPT = "ccpt-distilled answers only the relevance-judge prompt (Concept / Property / Relevance)."
_C, _P = "\x00concept\x00", "\x00property\x00"
_FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def judge_model_name(name: str) -> str:
    """Expand the user-facing alias ``distilled`` to the provider's model name; other names pass unchanged."""
    return f"{PROVIDER}/default" if name == ALIAS else name


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


@modelapi(name=PROVIDER)
class DistilledModelAPI(ModelAPI):
    """Inspect ModelAPI around :class:`ccpt.judging.distilled.DistilledJudge` (loaded once, checked in full)."""

    def __init__(
        self,
        model_name: str,
        base_url: str | None = None,
        api_key: str | None = None,
        config: GenerateConfig = GenerateConfig(),  # noqa: B008 - Inspect's own signature
        calibrated: bool | str = True,
        **model_args: Any,
    ) -> None:
        from ccpt.judging.distilled import load_judge

        if model_args:
            raise ModelError(
                f"ccpt-distilled: unknown model argument(s) {', '.join(sorted(model_args))}", "use calibrated"
            )
        flag = calibrated if isinstance(calibrated, bool) else _FLAGS.get(str(calibrated).strip().lower())
        if flag is None:
            raise ModelError(f"ccpt-distilled: calibrated must be true or false, got {calibrated!r}")
        # Loading here (not lazily) makes an unusable head fail at get_model(), i.e. in the preflight.
        judge = load_judge(None if model_name in ("default", "") else Path(model_name), calibrated=flag)
        # Inspect's cache key includes base_url: naming the head, its scale and the encoders' weights there keeps
        # scores cached under one from being served for another under the same model name.
        scale = "" if judge.applies_calibration or judge.calibration is None else "+raw"
        weights = ",".join(head.encoder.weights_sha256[:16] for head in judge.heads)
        key = f"head-sha256:{judge.sha256}{scale};weights-sha256:{weights}"
        super().__init__(model_name, base_url or key, api_key, [], config)
        self.judge = judge
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
        # One forward pass at a time: torch already uses the cores, and the judge is not re-entrant.
        async with self._lock:
            (relevance,) = await anyio.to_thread.run_sync(self.judge.score, [pair])
        score = 1 + 9 * relevance
        output = ModelOutput.from_content(model=self.model_name, content=json.dumps({"relevance": round(score)}))
        output.metadata = {
            EXACT_RELEVANCE: relevance,
            "score": score,
            "head_sha256": self.judge.sha256,
            "calibrated": self.judge.applies_calibration,
        }
        # Words in, the reply's four tokens out: no tokenizer bills this judge; the counts only say how much it read.
        words = len(prompt.split())
        output.usage = ModelUsage(input_tokens=words, output_tokens=4, total_tokens=words + 4)
        return output
