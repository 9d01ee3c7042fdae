"""`ccpt run --dry-run`: what a sweep would run and ask, before anything is sent.

Counts come from the tasks the sweep builds (their datasets, seeds and methods; each registered method counts
its own calls, see :mod:`ccpt.methods`) and are exact where the run's structure fixes them; a range where the
models' answers decide:

- **solver calls** per (task, method, model): instances × seeds × samples per answer (1; ``oracle_n`` for
  Multi-Oracle; 0 for Gold). Spreading Activation adds its expansion, which is greedy and shared by the seeds of
  an instance (cached): at least one step (one activation call per seed concept from the LLM, plus the filter
  call), at most ``sa_max_iterations`` steps of up to ``neighbours_k`` activations plus the filter; with
  ``sa_answer_every_step`` one answer per step and seed besides.
- **judge calls**: three judged pairs per answer, each (concept, property) asked once per run (memoised). At most
  3 × answers; at least 3 per instance (every seed giving the same answer). Gold is exact: its distinct pairs.
- **cost** (with ``--prices``): input tokens between a fifth and a third of each prompt's characters (tokenizers
  differ), output tokens between 1 and the call's cap (``--max-tokens``, 2048 by default; the judge's 24); the
  prices as in the Tokens and cost table. A model without a price has no cost (never a guess).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccpt import methods
from ccpt.eval.judge import Judge
from ccpt.methods import Method, Plan, Range
from ccpt.prompts import judge_prompt, system_prompt, task_prompt
from ccpt.results.usage import Price
from ccpt.spec import BASE_TEMPLATE, TASK_SPECS

JUDGE_MAX_TOKENS = Judge.max_tokens
DEFAULT_MAX_TOKENS = 2048


@dataclass(frozen=True)
class PlanRow:
    """One task run of the sweep: its size and the calls it would make (ranges are (low, high))."""

    task: str
    method: str
    model: str
    seeds: int
    instances: int
    solver_calls: Range
    judge_calls: Range
    solver_chars: int  # characters of one solver prompt (the first instance's), for the token estimate
    judge_chars: int


def _add(a: Range, b: Range) -> Range:
    return (a[0] + b[0], a[1] + b[1])


def plan_rows(
    tasks: Sequence[Any], models: Sequence[str], limit: int | None, options: Mapping[str, Any]
) -> list[PlanRow]:
    """The plan of ``tasks`` (Inspect Task objects built by the sweep) for each of ``models``."""
    rows: list[PlanRow] = []
    for task in tasks:
        meta = task.metadata or {}
        spec = TASK_SPECS[meta["ccpt_task"]]
        method = methods.parse(str(meta["method"]), spec.name)
        samples = list(task.dataset)[: limit or None]
        seeds = int(meta.get("seeds", 1))
        solver, judge = method.calls(method, Plan(spec, [s.metadata for s in samples], seeds, options))
        first = samples[0].metadata if samples else {}
        solver_chars = _prompt_chars(spec, method, first) if first else 0
        judge_chars = (
            len(judge_prompt(str(first.get("combination", "")), str(first.get("property", "")))) if first else 0
        )
        for model in models:
            rows.append(
                PlanRow(spec.name, method.name, model, seeds, len(samples), solver, judge, solver_chars, judge_chars)
            )
    return rows


def _prompt_chars(spec: Any, method: Method, meta: Mapping[str, Any]) -> int:
    try:
        text = task_prompt(spec.name, method.template, **spec.prompt_fields(meta))
    except Exception:  # a template needing SA concepts: the base prompt is the same size class
        text = task_prompt(spec.name, BASE_TEMPLATE, **spec.prompt_fields(meta))
    return len(system_prompt()) + len(text)


@dataclass(frozen=True)
class CostRange:
    """US dollars, low and high, for the models that have a price; ``unpriced`` names the others."""

    low: float
    high: float
    unpriced: tuple[str, ...]


def cost_range(
    rows: Sequence[PlanRow], prices: Mapping[str, Price], judge: str | None, max_tokens: int | None
) -> CostRange:
    """The cost range of the plan under ``prices`` (see the module docstring for the token bounds)."""
    low = high = 0.0
    unpriced: set[str] = set()
    cap = max_tokens or DEFAULT_MAX_TOKENS
    for row in rows:
        calls = [(row.model, row.solver_calls, row.solver_chars, cap)]
        if judge and row.judge_calls[1]:
            calls.append((judge, row.judge_calls, row.judge_chars, JUDGE_MAX_TOKENS))
        for model, (n_low, n_high), chars, out_cap in calls:
            if not n_high:
                continue
            price = prices.get(model)
            if price is None:
                unpriced.add(model)
                continue
            low += n_low * (chars / 5 * price.input + 1 * price.output) / 1e6
            high += n_high * (chars / 3 * price.input + out_cap * price.output) / 1e6
    return CostRange(low, high, tuple(sorted(unpriced)))


def plan_totals(rows: Sequence[PlanRow]) -> tuple[Range, Range]:
    """(solver calls, judge calls) over the whole plan."""
    solver: Range = (0, 0)
    judge: Range = (0, 0)
    for row in rows:
        solver, judge = _add(solver, row.solver_calls), _add(judge, row.judge_calls)
    return solver, judge
