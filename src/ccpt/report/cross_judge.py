"""Table 3 of the same answers under two judges: per cell b − a (points), and per column and model Kendall's τ-b
between the judges' orderings of the ranked methods and whether the best method is the same."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import pandas as pd

from ccpt.report.tables import RUN_ROW, GenerativeTable, as_reported, metric_name, table3
from ccpt.stats import defined, kendall_tau_b


@dataclass(frozen=True)
class CellDifference:
    """One Table-3 cell under both judges (percent points)."""

    model: str
    method: str
    task: str
    metric: str
    a: float
    b: float

    @property
    def difference(self) -> float:
        """b − a."""
        return self.b - self.a


@dataclass(frozen=True)
class ColumnRanking:
    """How the two judges order one model's ranked methods on one column."""

    model: str
    task: str
    metric: str
    methods: tuple[str, ...]
    tau: float | None  # Kendall's τ-b; None with fewer than two methods or no variation
    same_best: bool


@dataclass(frozen=True)
class CrossJudge:
    """The comparison of one set of answers under judge ``a`` and judge ``b``."""

    judge_a: str
    judge_b: str
    cells: tuple[CellDifference, ...]
    rankings: tuple[ColumnRanking, ...]
    compared: int = 0  # the (run, instance) pairs both judges scored, summed over runs: every cell is over these
    left_out: int = 0  # the (run, instance) pairs only one judge scored (a `rejudge --limit`): in no cell
    runs: int = 0  # the runs compared
    per_run: int | None = None  # the instances compared per run, when every run has as many

    def mean_absolute_difference(self, methods: Sequence[str] | None = None) -> float:
        """Mean |b − a| over the compared cells (of ``methods`` only, if given); NaN if there are none."""
        chosen = [c for c in self.cells if methods is None or c.method in methods]
        return sum(abs(c.difference) for c in chosen) / len(chosen) if chosen else math.nan


def _cells(table: GenerativeTable) -> dict[tuple[str, str, str, str], float]:
    return {
        (row.model, row.method, task, metric): summary.mean
        for row in table.rows
        if row.kind == RUN_ROW
        for (task, metric), summary in row.cells.items()
        if summary is not None and not math.isnan(summary.mean)
    }


def _answers(frame: pd.DataFrame) -> pd.Series:
    """Each row's run and instance as one text (the re-judged copy of an answer has the same, under its judge)."""
    key = [k for k in ("task", "model", "method", "sa_filter", "protocol", "variant", "instance") if k in frame]
    text = frame[key].astype("string").fillna("")
    return text.apply("\x1f".join, axis=1) if len(frame) else pd.Series([], dtype=object)


def cross_judge(
    frame_a: pd.DataFrame, frame_b: pd.DataFrame, judge_a: str, judge_b: str, stat: str = "paper"
) -> CrossJudge:
    """Both Table 3s (no Gold row) of tidy tables, built as ``ccpt report`` would, compared by cell and column, on
    the answers both judges scored (like with like: a `rejudge --limit 2` is compared on its 2 instances)."""
    ids_a, ids_b = _answers(frame_a), _answers(frame_b)
    both = set(ids_a) & set(ids_b)
    frame_a, frame_b = frame_a[ids_a.isin(both).to_numpy()], frame_b[ids_b.isin(both).to_numpy()]
    a, b = table3(as_reported(frame_a), stat=stat), table3(as_reported(frame_b), stat=stat)  # type: ignore[arg-type]
    ca, cb = _cells(a), _cells(b)
    shared = [k for k in ca if k in cb]
    cells = tuple(CellDifference(*k, a=ca[k], b=cb[k]) for k in shared)
    ranked = {(row.model, row.method) for row in a.rows if row.ranked}
    rankings: list[ColumnRanking] = []
    for column in a.columns:
        for model in sorted({m for m, _ in ranked}):
            keys = [
                k for k in shared if k[0] == model and (k[0], k[1]) in ranked and k[2:] == (column.task, column.metric)
            ]
            if not keys:
                continue
            tau = defined(kendall_tau_b([ca[k] for k in keys], [cb[k] for k in keys]))
            sign = 1 if column.higher_is_better else -1
            best_a, best_b = (max(keys, key=lambda k: sign * c[k]) for c in (ca, cb))
            methods = tuple(k[1] for k in keys)
            rankings.append(ColumnRanking(model, column.task, column.metric, methods, tau, best_a == best_b))
    left_out = len(set(ids_a) ^ set(ids_b))
    per_run = Counter(key.rpartition("\x1f")[0] for key in both)  # a key is the run's fields, then the instance
    uniform = next(iter(set(per_run.values()))) if len(set(per_run.values())) == 1 else None
    return CrossJudge(judge_a, judge_b, cells, tuple(rankings), len(both), left_out, len(per_run), uniform)


def markdown(view: CrossJudge) -> str:
    """The comparison as Markdown: one table of cells, one of rankings, and the mean absolute difference."""
    lines = [
        f"### Table 3 under two judges: {view.judge_b} − {view.judge_a}",
        "",
        f"| Model | Method | Task | Column | {view.judge_a} | {view.judge_b} | difference |",
        "|---|---|---|---|---|---|---|",
    ]
    lines += [
        f"| {c.model} | {c.method} | {c.task} | {metric_name(c.task, c.metric)} | {c.a:.1f} | {c.b:.1f} | "
        f"{c.difference:+.1f} |"
        for c in view.cells
    ]
    lines += [
        "",
        f"Mean absolute difference over {len(view.cells)} cells: {view.mean_absolute_difference():.1f} points.",
    ]
    if view.left_out:
        # Summed over runs, and per run when every run has as many (before: a sum labelled "per run").
        per = f", {view.per_run} per run" if view.per_run is not None else ""
        lines += ["", f"Compared on the instances both judges scored: {view.compared} over {view.runs} run(s){per}; "
                  f"{view.left_out} scored by one judge only are in no cell."]  # fmt: skip
    if view.rankings:
        lines += ["", "| Model | Task | Column | methods | Kendall τ-b | same best |", "|---|---|---|---|---|---|"]
        lines += [
            f"| {r.model} | {r.task} | {metric_name(r.task, r.metric)} | {len(r.methods)} | "
            f"{'n/a' if r.tau is None else f'{r.tau:.2f}'} | {'yes' if r.same_best else 'no'} |"
            for r in view.rankings
        ]
    return "\n".join(lines) + "\n"
