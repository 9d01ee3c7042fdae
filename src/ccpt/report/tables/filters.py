"""Table 7: the Filter ablation of Spreading Activation, the score without and with Filter and Δ, per (model,
method, judge, task)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.methods import method_label
from ccpt.report.display import Cell, DisplayRow, DisplayTable, n_note, sample_size, summary_cell, text_cell
from ccpt.report.names import model_text
from ccpt.report.tables.common import (
    PERCENT,
    OracleReduction,
    cell_summary,
    instance_ids,
    judge_of,
    per_instance_values,
    summary_record,
)
from ccpt.report.tables.definition import Coverage, ReportTable, TableOptions
from ccpt.spec import GENERATIVE_TASKS, TASK_SPECS
from ccpt.stats import Stat, Summary


@dataclass
class FilterRow:
    """Table 7 line: score without and with Filter, and Δ = with − without (means, percent)."""

    model: str
    method: str
    task: str
    without: Summary | None
    with_: Summary | None
    instances: tuple[frozenset[str], frozenset[str]] = (frozenset(), frozenset())  # without, with
    judge: str = ""

    @property
    def delta(self) -> float | None:
        """Absolute change of the mean score when Filter is used (None unless both runs exist)."""
        return None if self.with_ is None or self.without is None else self.with_.mean - self.without.mean


def table7(
    frame: pd.DataFrame, *, stat: Stat = "sem", oracle: OracleReduction = "paper", n_boot: int = 10_000, seed: int = 0
) -> list[FilterRow]:
    """Filter ablation: final-answer rows with ``sa_filter`` False vs True per (model, method, task)."""
    sa = frame[frame["task"].isin(GENERATIVE_TASKS) & frame["sa_iteration"].isna() & frame["sa_filter"].notna()]
    sa = sa.assign(judge_id=judge_of(sa))
    out: list[FilterRow] = []
    for (model, method, judge, task), group in sa.groupby(["model", "method", "judge_id", "task"], sort=True):
        subs = {flag: group[group["sa_filter"] == flag] for flag in (False, True)}
        parts = {
            flag: cell_summary(per_instance_values(sub, str(task), oracle), "score", stat, n_boot, seed, scale=PERCENT)
            for flag, sub in subs.items()
            if not sub.empty
        }
        if False in parts:  # a method run only with its filter is not an ablation
            ids = (instance_ids(subs[False]["instance"]), instance_ids(subs[True]["instance"]))
            out.append(FilterRow(str(model), str(method), str(task), parts[False], parts.get(True), ids, str(judge)))
    return out


def filters_display(rows: Sequence[FilterRow], labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Table 7: score without and with Filter, and Δ."""
    several = len({r.judge for r in rows}) > 1
    body = tuple(
        DisplayRow(
            (r.model, r.method, r.judge, r.task),
            (
                text_cell(model_text(r.model, labels)),
                text_cell(method_label(r.method) + (f" · judge {r.judge or 'unknown'}" if several else "")),
                text_cell(TASK_SPECS[r.task].short),
                summary_cell(r.without),
                summary_cell(r.with_),
                Cell("–", None) if r.delta is None else Cell(f"{r.delta:+.1f}", r.delta),
            ),
        )
        for r in rows
    )
    header = ("Model", "Method", "Task", "w/o Filter", "w/ Filter", "Δ")
    runs: dict[str, list[tuple[str, Summary]]] = {}  # n per run, each task's count where tasks differ
    for r in rows:
        name = f"{model_text(r.model, labels)} / {method_label(r.method)}" + (f" · judge {r.judge}" if several else "")
        runs.setdefault(name, []).extend((r.task, s) for s in (r.without, r.with_) if s is not None)
    notes = (n_note({name: sample_size(cells) for name, cells in runs.items()}, "run"),)
    return DisplayTable("table7", "Table 7: impact of Filter in spreading activation", header, body, notes)


def _records(rows: list[FilterRow]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for fr in rows:
        base = {"table": "table7", "model": fr.model, "method": fr.method, "judge": fr.judge, "task": fr.task}
        for metric, summary in (("score_without_filter", fr.without), ("score_with_filter", fr.with_)):
            if summary is not None:
                out.append({**base, "metric": metric, **summary_record(summary)})
        out.append({**base, "metric": "delta", "mean": fr.delta})
    return out


def _coverage(rows: list[FilterRow], labels: Mapping[str, str]) -> Coverage:
    """Per run: without vs with Filter."""
    return [
        (
            f"Table 7, {TASK_SPECS[f.task].label}, {model_text(f.model, labels)} / {method_label(f.method)}",
            {"without Filter": f.instances[0], "with Filter": f.instances[1]},
        )
        for f in rows
        if f.with_ is not None
    ]


def _compute(frame: pd.DataFrame, o: TableOptions) -> list[FilterRow]:
    return table7(frame, stat=o.stat, oracle=o.oracle, n_boot=o.n_boot, seed=o.seed)


TABLE = ReportTable(
    "filters", _compute, lambda rows, labels: [filters_display(rows, labels)] if rows else [], _records, _coverage
)
