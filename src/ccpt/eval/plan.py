"""`ccpt run --dry-run`: what a sweep would run and ask, before anything is sent (docs/metrics.md, "The plan").

Counts come from the tasks the sweep builds (each method counts its own calls, :mod:`ccpt.methods`): exact, or a
(low, high) range where the answers decide; a task run a rerun would skip or resume in ``--log-dir`` counts only
what is left. Cost (``--prices``): input tokens a fifth to a third of each prompt's characters, output tokens 1 to
the call's cap (``--max-tokens``, 2048 by default; the judge's 24); a model without a price has no cost; an
in-process judge costs its declared cost per judged pair (:attr:`ccpt.judges.Judge.cost_per_pair`).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccpt import methods
from ccpt.eval.inspect_compat import logged_args, task_args_of
from ccpt.eval.judge import Judge
from ccpt.judges import cost_per_pair
from ccpt.methods import Method, Plan, Range
from ccpt.prompts import judge_prompt, system_prompt, task_prompt
from ccpt.results.inspect_logs import samples_completed, task_of
from ccpt.results.usage import Price
from ccpt.spec import BASE_TEMPLATE, TASK_SPECS

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
    planned_samples: int = 0  # instances × seeds
    done_samples: int = 0  # of those, finished in the log directory (all of them: the rerun skips this task run)

    @property
    def skipped(self) -> bool:
        """Whether a rerun skips this task run: its log finished every planned sample."""
        return self.planned_samples > 0 and self.done_samples >= self.planned_samples


def plan_rows(
    tasks: Sequence[Any],
    models: Sequence[str],
    limit: int | None,
    options: Mapping[str, Any],
    done: Callable[[Any, str], int] | None = None,
) -> list[PlanRow]:
    """The plan of ``tasks`` (built by the sweep) for each of ``models``; ``done(task, model)`` (see
    :func:`finished_samples`) says how many of a task run's samples × seeds a rerun would not redo."""
    rows: list[PlanRow] = []
    for task in tasks:
        meta = task.metadata or {}
        spec = TASK_SPECS[meta["ccpt_task"]]
        method = methods.parse(str(meta["method"]), spec.name)
        samples = list(task.dataset)[: limit or None]
        seeds = int(meta.get("seeds", 1))
        metas = [s.metadata for s in samples]
        first = samples[0].metadata if samples else {}
        solver_chars = _prompt_chars(spec, method, first) if first else 0
        judge_chars = len(judge_prompt(str(first["combination"]), str(first["property"]))) if first else 0
        planned = len(samples) * seeds
        for model in models:
            solver, judge = method.call_ranges(Plan(spec, metas, seeds, options, model, meta.get("protocol")))
            finished = min(done(task, model), planned) if done else 0
            left = planned - finished
            rows.append(
                PlanRow(
                    spec.name, method.name, model, seeds, len(samples), _share(solver, left, planned),
                    _share(judge, left, planned), solver_chars, judge_chars, planned, finished,
                )
            )  # fmt: skip
    return rows


def _share(calls: Range, left: int, planned: int) -> Range:
    """The calls of ``left`` of ``planned`` samples: all of them, none, or the proportional share."""
    if left >= planned:
        return calls
    return (calls[0] * left // planned, -(-calls[1] * left // planned))


def finished_samples(
    logs: Sequence[Any], *, judge: str | None, model_args: Mapping[str, Any], generate: Mapping[str, Any]
) -> Callable[[Any, str], int]:
    """``done(task, model)``: the samples × seeds of that task run finished in ``logs`` (headers, oldest first), in
    its newest log with the same task, arguments, model, generation settings and judge, as a rerun resumes it."""
    given = logged_args(model_args)  # as the logs hold them: a rerun may pass an API key or not

    def same(log: Any, task: Any, model: str) -> bool:
        ev = log.eval
        grader = (ev.model_roles or {}).get("grader")  # bound for every task of the sweep, Task 3's too
        return (
            task_of(log) == str(task.name).split("/")[-1]
            and str(ev.model) == model
            and _normal(getattr(ev, "task_args_passed", None) or ev.task_args or {}) == _normal(task_args_of(task))
            and _normal(ev.model_args or {}) == _normal(given)
            and all(getattr(ev.model_generate_config, key, None) == value for key, value in generate.items())
            and (grader.model if grader is not None else None) == judge
        )

    def done(task: Any, model: str) -> int:
        mine = [log for log in logs if same(log, task, model)]
        if not mine:
            return 0
        newest = mine[-1]
        results = newest.results
        if newest.status == "success" and results is not None and not getattr(newest, "invalidated", False):
            # As Inspect's eval set judges a finished log: by the samples it logged (or planned), so a run with a
            # few failed samples inside a successful log is done, not redone.
            logged = getattr(results, "logged_samples", None)
            return int(logged if logged is not None else results.total_samples)
        return samples_completed(newest)  # an interrupted log: its samples completed without error

    return done


def _normal(args: Mapping[str, Any]) -> str:
    """Arguments as the log stores them (JSON; paths as strings), for comparing a task with its log."""
    return json.dumps(dict(args), sort_keys=True, default=str)


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
            calls.append((judge, row.judge_calls, row.judge_chars, Judge.max_tokens))
        if judge and row.judge_calls[1] and (per_pair := cost_per_pair(judge)) is not None:
            calls.pop()  # an in-process judge declares its cost per judged pair: no tokens are billed
            low, high = low + row.judge_calls[0] * per_pair, high + row.judge_calls[1] * per_pair
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

    def total(ranges: list[Range]) -> Range:
        return (sum(low for low, _ in ranges), sum(high for _, high in ranges))

    return total([row.solver_calls for row in rows]), total([row.judge_calls for row in rows])
