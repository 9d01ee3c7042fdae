"""What `ccpt run --dry-run` prints: the sweep's plan (:mod:`ccpt.eval.plan`), sending nothing."""

from __future__ import annotations

import json
from pathlib import Path

import click

from ccpt.eval.plan import cost_range, finished_samples, plan_rows, plan_totals
from ccpt.eval.sweep import Sweep, check_servers
from ccpt.results.inspect_logs import read_logs
from ccpt.results.usage import load_prices


def _span(low: int | float, high: int | float, money: bool = False) -> str:
    fmt = (lambda v: f"${v:,.2f}") if money else (lambda v: f"{v:,}")
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def print_plan(sweep: Sweep, *, prices: Path | None = None, fmt: str = "text") -> None:
    """Validate the sweep, build its tasks (no model is built, nothing is sent) and print the plan."""
    sweep.validate()
    tasks = sweep.task_objects(plan_only=True)
    options = {"oracle_n": sweep.oracle_n, **sweep.task_args}
    # What a rerun would not redo: the sweep's log directory, read as the rerun reads it (an unreadable log is
    # set aside by the rerun, so it finished nothing here either).
    logs = read_logs([sweep.log_dir], header_only=True).logs if sweep.log_dir.is_dir() else []
    check_servers(sweep, logs)
    done = finished_samples(logs, judge=sweep.judge, model_args=sweep.model_args, generate=sweep.generate)
    rows = plan_rows(tasks, sweep.models, sweep.limit, options, done if logs else None)
    solver, judge = plan_totals(rows)
    skipped = sum(r.skipped for r in rows)
    cost = cost_range(rows, load_prices(prices), sweep.judge, sweep.generate.get("max_tokens")) if prices else None
    if fmt == "json":
        payload = {
            "runs": [vars(r) | {"skipped": r.skipped} for r in rows],
            "skipped_runs": skipped,
            "done_samples": sum(r.done_samples for r in rows),
            "solver_calls": solver,
            "judge_calls": judge,
            "judge": sweep.judge,
            "cost_usd": None if cost is None else {"low": cost.low, "high": cost.high, "unpriced": cost.unpriced},
        }
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(f"Dry run: nothing is sent. Judge: {sweep.judge or 'none'}; protocol {sweep.protocol}.")
    click.echo("task / method / model: seeds × instances → solver calls, judge calls (memoised pairs asked once)")
    for r in rows:
        reused = f" ({r.done_samples} of {r.planned_samples} samples × seeds done: reused)" if r.done_samples else ""
        state = " (done: skipped)" if r.skipped else reused
        click.echo(
            f"  {r.task} / {r.method} / {r.model}: {r.seeds} × {r.instances} → solver {_span(*r.solver_calls)}, "
            f"judge {_span(*r.judge_calls)}{state}"
        )
    partial = [r for r in rows if r.done_samples and not r.skipped]
    done = [f"{skipped} of {len(rows)} task runs (a rerun skips them)"] if skipped else []
    if partial:
        done.append(
            f"{sum(r.done_samples for r in partial)} samples × seeds of {len(partial)} unfinished task run(s) (reused)"
        )
    if done:
        click.echo(f"Already done in {sweep.log_dir}: {'; '.join(done)}. The calls counted are the remaining ones.")
    click.echo(f"Total: {len(rows)} task runs; solver calls {_span(*solver)}; judge calls {_span(*judge)}.")
    if cost is not None:
        unpriced = f" (no price for {', '.join(cost.unpriced)})" if cost.unpriced else ""
        click.echo(f"Cost: {_span(cost.low, cost.high, money=True)}{unpriced}.")
    click.echo("Ranges: answers decide (Spreading Activation's steps, distinct judged pairs); see docs/metrics.md.")
