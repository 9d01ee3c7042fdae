"""One display table per report table: the cells every renderer prints (text, value, rank), so the five
formats cannot drift apart.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.eval.usage import UsageRow
from ccpt.jsonout import provenance_lines
from ccpt.report.tables import (
    RUN_ROW,
    FailureRow,
    FilterRow,
    GenerativeTable,
    IterationTable,
    Report,
    TypeResult,
    format_summary,
    oracle_note,
    row_spread,
    stat_note,
)
from ccpt.spec import GENERATIVE_TASKS, MULTI_ORACLE, TASK_SPECS, method_label
from ccpt.stats import Summary

# Every renderer draws the same display tables: one builder decides the rows, columns and cell texts of each
# table, the renderers only escape and decorate. The numbers behind the cells are kept for `to_frame()`.


@dataclass(frozen=True)
class Cell:
    """One displayed cell: its text (format-neutral, with "±" and "–"), the number behind it, its rank mark."""

    text: str
    value: float | int | str | None = None
    rank: int | None = None


@dataclass(frozen=True)
class DisplayRow:
    """A table row, identified by ``key`` (never by its display label); ``oracle`` rows are shaded."""

    key: tuple[str, ...]
    cells: tuple[Cell, ...]
    oracle: bool = False


@dataclass(frozen=True)
class DisplayTable:
    """One table as every format shows it: title, header, rows, and the lines printed under it."""

    key: str
    title: str
    header: tuple[str, ...]
    rows: tuple[DisplayRow, ...]
    notes: tuple[str, ...] = ()

    def to_frame(self) -> pd.DataFrame:
        """The table's numbers (means, percentages, counts; text for label columns), one row per display row."""
        return pd.DataFrame([[c.value for c in row.cells] for row in self.rows], columns=list(self.header))


def _summary_cell(summary: Summary | None, *, spread: bool = True, rank: int | None = None) -> Cell:
    value = None if summary is None or math.isnan(summary.mean) else summary.mean
    return Cell(format_summary(summary, spread=spread), value, rank)


def _pct(value: float) -> str:
    return "—" if value != value else f"{value:.1f}"  # NaN: no instance of that type in the results


def _pct_cell(value: float) -> Cell:
    return Cell(_pct(value), None if value != value else float(value))


def _text_cell(text: str) -> Cell:
    return Cell(text, text)


def _count_cell(count: int) -> Cell:
    return Cell(str(count), int(count))


def generative_display(table: GenerativeTable) -> DisplayTable:
    """Table 3 (or 4): Model, Method, then task × (R_H,M,P, R_N,P, E/C)."""
    header = ("Model", "Method", *[f"{TASK_SPECS[c.task].short} {c.label}" for c in table.columns])
    rows = []
    for row in table.rows:
        cells = [_text_cell(row.model if row.kind == RUN_ROW else ""), _text_cell(row.label)]
        for col in table.columns:
            key = (col.task, col.metric)
            cells.append(_summary_cell(row.cells.get(key), spread=row_spread(row), rank=row.ranks.get(key)))
        rows.append(DisplayRow(row.key, tuple(cells), oracle=row.method == MULTI_ORACLE))
    return DisplayTable("table3", table.title, header, tuple(rows))


def types_display(res: TypeResult) -> DisplayTable:
    """Table 5 for one (model, method): row-normalised confusion matrix (percent), Unparsed share, n, and the
    accuracies under it."""
    cls = res.classification
    pct = cls.row_percent()
    totals = cls.row_totals()
    header = ("Actual \\ Predicted", *[label.capitalize() for label in cls.labels], "Unparsed", "n")
    rows = []
    for i, label in enumerate(cls.labels):
        unparsed = 100 * cls.unparsed[i] / totals[i] if totals[i] else float("nan")
        cells = [_text_cell(label.capitalize()), *[_pct_cell(v) for v in pct[i]], _pct_cell(unparsed)]
        rows.append(DisplayRow((label,), (*cells, _count_cell(int(totals[i])))))
    note = (
        f"Accuracy: {format_summary(res.accuracy)}% (n={cls.n}); has property (green): "
        f"{_pct(100 * cls.has_property_accuracy)}%; lacks property (red): {_pct(100 * cls.lacks_property_accuracy)}%; "
        f"binary (mean of both): {_pct(100 * cls.binary_accuracy)}%."
    )
    title = f"Table 5: property type prediction — {res.model} / {method_label(res.method)}"
    return DisplayTable(f"table5:{res.model}:{res.method}", title, header, tuple(rows), (note,))


def iterations_display(tab: IterationTable) -> DisplayTable:
    """Table 6 for one (model, method): score per SA iteration C_t, per task."""
    tasks = [t for t in GENERATIVE_TASKS if any((t, i) in tab.cells for i in tab.iterations)]
    rows = tuple(
        DisplayRow(
            (t,), (_text_cell(TASK_SPECS[t].short), *[_summary_cell(tab.cells.get((t, i))) for i in tab.iterations])
        )
        for t in tasks
    )
    title = f"Table 6: score per iteration — {tab.model} / {method_label(tab.method)}"
    return DisplayTable(f"table6:{tab.model}:{tab.method}", title, ("Task", *[f"C_{t}" for t in tab.iterations]), rows)


def filters_display(rows: Sequence[FilterRow]) -> DisplayTable:
    """Table 7: score without and with Filter, and Δ."""
    body = tuple(
        DisplayRow(
            (r.model, r.method, r.task),
            (
                _text_cell(r.model),
                _text_cell(method_label(r.method)),
                _text_cell(TASK_SPECS[r.task].short),
                _summary_cell(r.without),
                _summary_cell(r.with_),
                Cell("–", None) if r.delta is None else Cell(f"{r.delta:+.1f}", r.delta),
            ),
        )
        for r in rows
    )
    header = ("Model", "Method", "Task", "w/o Filter", "w/ Filter", "Δ")
    return DisplayTable("table7", "Table 7: impact of Filter in spreading activation", header, body)


def failures_display(rows: Sequence[FailureRow]) -> DisplayTable:
    """The failure counts per (task, model, method)."""
    body = tuple(
        DisplayRow(
            (r.task, r.model, r.method),
            (
                _text_cell(r.task),
                _text_cell(r.model),
                _text_cell(method_label(r.method)),
                *[_count_cell(n) for n in (r.samples, r.parse_failures, r.judge_failures, r.unscored, r.filled)],
            ),
        )
        for r in rows
    )
    header = ("Task", "Model", "Method", "Samples", "Parse failures", "Judge failures", "Unscored", "Filled")
    return DisplayTable("failures", "Failures", header, body)


def display_tables(report: Report) -> list[DisplayTable]:
    """Every table of the report, in print order: 3, 5 (per run), 6 (per run), 7 (if any), failures."""
    tables = [generative_display(report.generative)] if report.generative else []
    tables += [types_display(res) for res in report.types]
    tables += [iterations_display(tab) for tab in report.iterations]
    if report.filters:
        tables.append(filters_display(report.filters))
    tables.append(failures_display(report.failures))
    if report.usage:
        tables.append(usage_display(report.usage))
    return tables


def usage_display(rows: Sequence[UsageRow]) -> DisplayTable:
    """Model calls, cache hits, tokens and cost per model and role (docs/metrics.md, "Token and cost")."""
    body = tuple(
        DisplayRow(
            (r.model, r.role),
            (
                _text_cell(r.model),
                _text_cell(r.role),
                *[_count_cell(n) for n in (r.calls, r.cached_calls)],
                Cell(f"{r.input_tokens:,}", int(r.input_tokens)),
                Cell(f"{r.output_tokens:,}", int(r.output_tokens)),
                Cell("n/a (no price)", None) if r.cost is None else Cell(f"{r.cost:.4f}", float(r.cost)),
                *[_count_cell(n) for n in (r.failed_attempts, r.timed_out)],
            ),
        )
        for r in rows
    )
    header = (
        "Model",
        "Role",
        "Calls",
        "From cache",
        "Input tokens",
        "Output tokens",
        "Cost (USD)",
        "Failed attempts",
        "Timed out",
    )
    return DisplayTable("usage", "Tokens and cost", header, body)


def usage_records(rows: Sequence[UsageRow]) -> list[dict[str, Any]]:
    """The usage table as long-format records (table "usage"; the role is in ``method``) for JSON and CSV."""
    out: list[dict[str, Any]] = []
    for r in rows:
        base = {"table": "usage", "model": r.model, "method": r.role, "task": None}
        for name in ("calls", "cached_calls", "input_tokens", "output_tokens", "cost", "failed_attempts", "timed_out"):
            out.append({**base, "metric": name, "count": getattr(r, name)})
    return out


def preamble_lines(report: Report) -> list[str]:
    """The notes every format prints above the tables: statistic, oracle, judge, failures, run notes."""
    lines = [stat_note(report.stat), oracle_note(report.oracle)]
    if report.judge_info:
        lines.append(f"Judge: {report.judge_info}")
    lines.append(
        "Failed samples (unparsable answer or failed judge call) are excluded from the means "
        "and counted in the "
        "Failures table."
    )
    lines.extend(report.notes)
    return lines


def report_provenance_lines(report: Report) -> list[str]:
    """The report's provenance block as ``key: value`` lines (none when the report has no provenance)."""
    return provenance_lines(report.provenance) if report.provenance else []


def decorate(text: str, rank: int | None, bold: Callable[[str], str], underline: Callable[[str], str]) -> str:
    """``text`` marked as best (rank 1) or second (rank 2) with the renderer's own bold and underline."""
    return bold(text) if rank == 1 else underline(text) if rank == 2 else text
