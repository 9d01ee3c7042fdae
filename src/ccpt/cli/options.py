"""Option types shared by the commands: every number finite and in range, checked before anything starts."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, TypeVar

import click

# Seeds feed Python's and NumPy's generators; NumPy refuses negative seeds and ones of 2**32 and more.
SEED = click.IntRange(0, 2**32 - 1)


class FiniteFloat(click.ParamType):
    """A finite float in ``[low, high]`` (click's FloatRange lets ``nan`` through: every comparison with it
    is false)."""

    name = "number"

    def __init__(self, low: float | None = None, high: float | None = None, *, open_bounds: bool = False) -> None:
        self.low, self.high, self.open = low, high, open_bounds  # open_bounds: (low, high) rather than [low, high]

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> float:
        try:
            number = float(value)
        except (TypeError, ValueError):
            self.fail(f"{value!r} is not a number", param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        below = self.low is not None and (number <= self.low if self.open else number < self.low)
        above = self.high is not None and (number >= self.high if self.open else number > self.high)
        if below or above:
            self.fail(f"{number:g} is not in the range {self._range()}", param, ctx)
        return number

    def _range(self) -> str:
        low = "-inf" if self.low is None else f"{self.low:g}"
        high = "inf" if self.high is None else f"{self.high:g}"
        return f"({low}, {high})" if self.open else f"[{low}, {high}]"

    def __repr__(self) -> str:
        return f"FiniteFloat{self._range()}"


UNIT_INTERVAL = FiniteFloat(0.0, 1.0)
F = TypeVar("F", bound=Callable[..., Any])


# How a judge's score is read (ccpt.eval.judge.JudgeMode), one option for every command that calls a judge.
judge_mode_option = click.option(
    "--judge-mode",
    type=click.Choice(["text", "expected"]),
    default=None,
    help="text: the score the judge writes (paper). expected: probability-weighted score from log-probabilities "
    "(needs a provider with logprobs). Default: expected for gguf judges, else text.",
)


def request_limits(what: str) -> Callable[[F], F]:
    """``--timeout`` and ``--max-retries`` for every command that sends requests, ``what`` naming whose."""

    def decorate(command: F) -> F:
        command = click.option(
            "--max-retries",
            type=click.IntRange(min=0),
            default=3,
            show_default=True,
            help=f"Retries per failed {what} request (0: none, the provider SDK's own retries included).",
        )(command)
        return click.option(
            "--timeout",
            type=click.IntRange(min=1),
            default=120,
            show_default=True,
            help=f"Seconds one {what} request may take (each attempt, and the preflight request).",
        )(command)

    return decorate
