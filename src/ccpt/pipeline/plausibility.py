"""The plausibility filter of stages 3–4 (paper §3.2 Step 2: VERA-T5-XXL, threshold 0.7), behind one interface.

- :class:`VeraScorer`: VERA (Liu et al., 2023) from the user's checkpoint (torch, transformers; GPU for T5-XXL).
- :class:`ModelJudgeScorer`: the offline CPU substitute, an Inspect model asked whether the statement is
  plausible (P(yes) from log-probabilities, else 1/0). **Not calibrated** against VERA, and labelled so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any, Protocol

from lemminflect import getAllLemmas

from ccpt.errors import CcptError
from ccpt.pipeline.llm import JsonCaller, LLMOptions, as_bool
from ccpt.prompts import render_template

VERA_THRESHOLD = 0.7
UNCALIBRATED = "uncalibrated substitute for VERA"
_MODALS = {"is", "are", "has", "have", "can", "could", "will", "would", "may", "might", "does", "was", "were"}


class PlausibilityScorer(Protocol):
    """Scores declarative statements in [0, 1] (None when a statement could not be scored)."""

    name: str
    calibrated: bool
    note: str

    async def score(self, statements: Sequence[str]) -> list[float | None]: ...


def statement(subject: str, prop: str) -> str:
    """A declarative statement for VERA: "pure crystal is limpid", "caged tiger can pace restlessly"."""
    words = prop.split()
    if not words:
        raise ValueError("empty property")
    first = words[0].lower()
    if first == "be":
        return f"{subject} is {' '.join(words[1:])}."
    if first in _MODALS:
        return f"{subject} {prop}."
    pos = getAllLemmas(first)
    if "VERB" in pos and "ADJ" not in pos:  # "pace restlessly", "shine": a verb phrase
        return f"{subject} can {prop}."
    return f"{subject} is {prop}."


class VeraScorer:
    """VERA plausibility on a T5 encoder with the checkpoint's linear head (GPU recommended)."""

    calibrated = True
    note = "VERA (Liu et al., 2023)"

    def __init__(self, weights: str, *, device: str | None = None, batch_size: int = 16) -> None:
        try:
            import torch
            import transformers
        except ImportError:
            raise CcptError(
                "the VERA backend needs torch and transformers",
                "pip install torch transformers sentencepiece, or use plausibility = 'model' (uncalibrated)",
            ) from None
        self.name = f"vera:{weights}"
        self._torch = torch
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        try:
            self.tokenizer = transformers.AutoTokenizer.from_pretrained(weights)
            self.model = transformers.T5EncoderModel.from_pretrained(weights).to(self.device).eval()
        except OSError as exc:
            raise CcptError(f"cannot load VERA weights from {weights!r}: {exc}", "pass a local checkpoint") from None
        shared = self.model.shared.weight
        self.linear = torch.nn.Linear(shared.shape[1], 1, dtype=self.model.dtype).to(self.device)
        self.linear.weight = torch.nn.Parameter(shared[32099, :].unsqueeze(0))
        self.linear.bias = torch.nn.Parameter(shared[32098, 0].unsqueeze(0))
        self.temperature = float(shared[32097, 0].item())
        self.batch_size = batch_size

    def _score_batch(self, statements: Sequence[str]) -> list[float]:
        torch = self._torch
        enc = self.tokenizer(
            list(statements), return_tensors="pt", padding="longest", truncation=True, max_length=128
        ).to(self.device)
        with torch.no_grad():
            hidden = self.model(input_ids=enc.input_ids, attention_mask=enc.attention_mask).last_hidden_state
            last = enc.attention_mask.sum(dim=1) - 1  # the </s> of each (right-padded) statement
            logits = self.linear(hidden[torch.arange(hidden.shape[0]), last]).squeeze(-1)
            return (logits / self.temperature).sigmoid().float().cpu().tolist()

    async def score(self, statements: Sequence[str]) -> list[float | None]:
        batches = (statements[i : i + self.batch_size] for i in range(0, len(statements), self.batch_size))
        return [score for batch in batches for score in await asyncio.to_thread(self._score_batch, batch)]


class ModelJudgeScorer:
    """Uncalibrated CPU substitute: an Inspect model's yes/no plausibility judgement."""

    calibrated = False
    note = UNCALIBRATED

    def __init__(self, options: LLMOptions, caller: JsonCaller | None = None) -> None:
        self.caller = caller or JsonCaller(options)
        self.name = f"model-judge:{options.model}"

    async def _one(self, text: str) -> float | None:
        reply = await self.caller.ask(render_template("pipeline_plausibility", statement=text), logprobs=True)
        if reply.p_yes is not None:
            return reply.p_yes
        answer = as_bool(reply.obj.get("plausible")) if reply.obj is not None else None
        if answer is None and reply.obj is not None:
            self.caller.failures["plausibility_unreadable"] += 1
        return None if answer is None else float(answer)

    async def score(self, statements: Sequence[str]) -> list[float | None]:
        return list(await asyncio.gather(*(self._one(s) for s in statements)))


def make_scorer(
    kind: str,
    *,
    options: LLMOptions,
    caller: JsonCaller | None = None,
    vera_weights: str | None = None,
    device: str | None = None,
) -> Any:
    """Build the configured scorer: ``model`` (default, uncalibrated) or ``vera`` (needs ``vera_weights``)."""
    if kind == "vera":
        if not vera_weights:
            raise CcptError("plausibility = 'vera' needs vera_weights", "pass the path of the VERA checkpoint")
        return VeraScorer(vera_weights, device=device)
    if kind == "model":
        return ModelJudgeScorer(options, caller)
    raise CcptError(f"unknown plausibility backend {kind!r}", "choose 'model' (CPU, uncalibrated) or 'vera'")
