"""The CPU plausibility substitute's log-probability branch: P(yes) by hand from top log-probs, and the real
embedded model returning log-probabilities through Inspect's model layer."""

from __future__ import annotations

import asyncio
import math
import os

import pytest
from inspect_ai.model import ChatCompletionChoice, ChatMessageAssistant, Logprob, Logprobs, ModelOutput, TopLogprob

from ccpt.io import weights
from ccpt.pipeline.llm import LLMOptions, _p_yes
from ccpt.pipeline.plausibility import UNCALIBRATED, ModelJudgeScorer


def _output(tokens: list[tuple[str, float, list[tuple[str, float]]]] | None) -> ModelOutput:
    logprobs = None
    if tokens is not None:
        logprobs = Logprobs(
            content=[
                Logprob(token=t, logprob=lp, top_logprobs=[TopLogprob(token=a, logprob=b) for a, b in top] or None)
                for t, lp, top in tokens
            ]
        )
    text = "".join(t for t, _, _ in tokens or [])
    choice = ChatCompletionChoice(message=ChatMessageAssistant(content=text), logprobs=logprobs)
    return ModelOutput(model="test", choices=[choice])


def test_p_yes_sums_yes_and_no_spellings_at_the_first_answer_token() -> None:
    top = [("yes", -0.2), ("Yes", -1.5), (' "no', -2.5), ("maybe", -3.0)]
    out = _output([('{"', -0.01, []), ("plausible", -0.1, []), ('":"', -0.05, []), ("yes", -0.2, top)])
    yes = math.exp(-0.2) + math.exp(-1.5)
    assert _p_yes(out) == pytest.approx(yes / (yes + math.exp(-2.5)))


def test_p_yes_without_alternatives_uses_the_chosen_token() -> None:
    assert _p_yes(_output([("no", -0.3, [])])) == 0.0
    assert _p_yes(_output([("Yes", -0.3, [])])) == 1.0


def test_p_yes_is_none_without_logprobs_or_an_answer_token() -> None:
    assert _p_yes(_output(None)) is None
    assert _p_yes(_output([("{", -0.1, []), ("}", -0.1, [])])) is None


SKIP = None if weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]) else "embedded model missing"


@pytest.mark.embedded
@pytest.mark.skipif(SKIP is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(SKIP))
def test_embedded_model_scores_from_log_probabilities() -> None:
    options = LLMOptions(model=f"gguf/{weights.DEFAULT_SOLVER}", max_connections=1, max_tokens=20)
    scorer = ModelJudgeScorer(options)
    statements = ["a caged tiger can pace restlessly.", "a rock can sing opera.", "pure crystal is limpid."]
    scores = asyncio.run(scorer.score(statements))
    assert scorer.caller.calls == 3 and not scorer.caller.failures
    assert all(s is not None and 0.0 <= s <= 1.0 for s in scores)
    # Written answers could only give 0 or 1: a fractional score is the log-probability branch at work.
    assert any(s is not None and 0.0 < s < 1.0 for s in scores)
    assert not scorer.calibrated and scorer.note == UNCALIBRATED
