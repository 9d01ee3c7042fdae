"""Table 6: the score of the answers generated from each Spreading Activation iteration C_t, per task, for one
(model, method, judge)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.methods import method_label
from ccpt.report.display import DisplayRow, DisplayTable, cells_n, summary_cell, text_cell
from ccpt.report.names import model_text
from ccpt.report.tables.common import (
    PERCENT,
    OracleReduction,
    cell_summary,
    display_methods,
    judge_of,
    per_instance_values,
    summary_record,
)
from ccpt.report.tables.definition import ReportTable, TableOptions
from ccpt.spec import GENERATIVE_TASKS, TASK_SPECS
from ccpt.stats import Stat, Summary


@dataclass
class IterationTable:
    """Table 6: E or C per SA iteration C_t, per task (rows) for one (model, method)."""

    model: str
    method: str
    iterations: list[int]
    cells: dict[tuple[str, int], Summary]
    judge: str = ""


def table6(
    frame: pd.DataFrame, *, stat: Stat = "sem", oracle: OracleReduction = "paper", n_boot: int = 10_000, seed: int = 0
) -> list[IterationTable]:
    """Rows with a non-null ``sa_iteration`` t: the score of answers generated from C_t."""
    it = frame[frame["task"].isin(GENERATIVE_TASKS) & frame["sa_iteration"].notna()]
    it = it.assign(method=display_methods(it), judge_id=judge_of(it))  # a no-filter run is a method of its own
    out: list[IterationTable] = []
    for (model, method, judge), group in it.groupby(["model", "method", "judge_id"], sort=True):
        iterations = sorted({int(t) for t in group["sa_iteration"]})
        cells = {
            (str(task), int(t)): cell_summary(
                per_instance_values(sub, str(task), oracle), "score", stat, n_boot, seed, scale=PERCENT
            )
            for (task, t), sub in group.groupby(["task", "sa_iteration"])
        }
        out.append(IterationTable(str(model), str(method), iterations, cells, str(judge)))
    return out


def iterations_display(
    tab: IterationTable, labels: Mapping[str, str] | None = None, *, with_judge: bool = False
) -> DisplayTable:
    """Table 6 for one (model, method): score per SA iteration C_t, per task."""
    tasks = [t for t in GENERATIVE_TASKS if any((t, i) in tab.cells for i in tab.iterations)]
    rows = tuple(
        DisplayRow(
            (t,), (text_cell(TASK_SPECS[t].short), *[summary_cell(tab.cells.get((t, i))) for i in tab.iterations])
        )
        for t in tasks
    )
    judged = f" · judge {tab.judge or 'unknown'}" if with_judge else ""
    title = f"Table 6: score per iteration — {model_text(tab.model, labels)} / {method_label(tab.method)}{judged}"
    key = f"table6:{tab.model}:{tab.method}" + (f":{tab.judge}" if with_judge else "")
    notes = (f"n = {cells_n(tab.cells)} per cell.",)
    return DisplayTable(key, title, ("Task", *[f"C_{t}" for t in tab.iterations]), rows, notes)


def _display(tables: list[IterationTable], labels: Mapping[str, str]) -> list[DisplayTable]:
    several = len({tab.judge for tab in tables}) > 1
    return [iterations_display(tab, labels, with_judge=several) for tab in tables]


def _records(tables: list[IterationTable]) -> list[dict[str, Any]]:
    return [
        {"table": "table6", "model": tab.model, "method": tab.method, "judge": tab.judge, "task": task,
         "metric": f"score@C_{t}", **summary_record(summary)}
        for tab in tables
        for (task, t), summary in tab.cells.items()
    ]  # fmt: skip


def _compute(frame: pd.DataFrame, o: TableOptions) -> list[IterationTable]:
    return table6(frame, stat=o.stat, oracle=o.oracle, n_boot=o.n_boot, seed=o.seed)


TABLE = ReportTable("iterations", _compute, _display, _records)
