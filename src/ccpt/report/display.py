"""One display table per report table: the cells (text, value, rank) all five renderers print, so they cannot
drift apart; the numbers behind the cells feed `to_frame()`."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pandas as pd

from ccpt.methods import method_label
from ccpt.report.names import model_text
from ccpt.report.notes import oracle_note, stat_note
from ccpt.report.tables import (
    RUN_ROW,
    FailureRow,
    FilterRow,
    GenerativeTable,
    IterationTable,
    TypeResult,
    format_summary,
    rows_by_judge,
    sample_size,
    score_name,
)
from ccpt.results import optional
from ccpt.results.usage import UsageRow
from ccpt.spec import GENERATIVE_TASKS, GOLD_STORED, MULTI_ORACLE, TASK_SPECS
from ccpt.stats import Summary

if TYPE_CHECKING:
    from ccpt.report.build import Report  # built above this module (display_tables is one of its views)


@dataclass(frozen=True)
class Cell:
    """One displayed cell: format-neutral text, the number behind it, its rank mark and a mean's :class:`Summary`."""

    text: str
    value: float | int | str | None = None
    rank: int | None = None
    summary: Summary | None = None


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

    def text_columns(self) -> tuple[bool, ...]:
        """Per column, whether it holds text (names, labels) rather than numbers: renderers align it left."""
        return tuple(
            bool(self.rows) and all(isinstance(row.cells[j].value, str) for row in self.rows)
            for j in range(len(self.header))
        )

    def to_frame(self, spread: bool = False) -> pd.DataFrame:
        """The table's numbers (text for label columns), one row per display row; ``spread=True`` adds after each
        column of means its printed spread, ``"<column> ±"`` or ``"<column> lo"``/``"hi"`` (None where none)."""
        columns: dict[str, list[Any]] = {}
        for j, name in enumerate(self.header):
            cells = [row.cells[j] for row in self.rows]
            columns[name] = [cell.value for cell in cells]
            summaries = [c.summary for c in cells if c.summary is not None]
            if spread and summaries:
                for part in ("lo", "hi") if summaries[0].stat == "ci" else ("±",):
                    columns[f"{name} {part}"] = [_spread_value(cell, part) for cell in cells]
        return pd.DataFrame(columns, dtype=None if self.rows else object)  # without rows: object columns


def _spread_value(cell: Cell, part: str) -> float | None:
    """The spread the cell prints (None where it prints only the mean)."""
    s = cell.summary
    if s is None or cell.text == format_summary(s, spread=False):
        return None
    value = {"±": s.spread, "lo": s.lo, "hi": s.hi}[part]
    return None if value is None or math.isnan(value) else float(value)


def _summary_cell(summary: Summary | None, *, spread: bool = True, rank: int | None = None) -> Cell:
    value = None if summary is None or math.isnan(summary.mean) else summary.mean
    return Cell(format_summary(summary, spread=spread), value, rank, summary)


def _pct(value: float, unit: str = "") -> str:
    """A share: "95.6" (unit "%" in a sentence), or "—" when undefined (NaN: no instance of the group)."""
    return "—" if value != value else f"{value:.1f}{unit}"


def _pct_cell(value: float) -> Cell:
    return Cell(_pct(value), None if value != value else float(value))


def _text_cell(text: str) -> Cell:
    return Cell(text, text)


def _count_cell(count: int | None) -> Cell:
    """A count; None (not recorded by the rows) prints as "–", never as 0."""
    return Cell("–", None) if count is None else Cell(str(count), int(count))


def generative_display(table: GenerativeTable, labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Table 3 (or 4): Model, Method, then task × (R_H,M,P, R_N,P, E/C); models printed by display name."""
    header = ("Model", "Method", *[f"{TASK_SPECS[c.task].short} {c.label}" for c in table.columns])
    rows = []
    several = table.several_judges
    keys = [(col.task, col.metric) for col in table.columns]
    for row in table.rows:
        spread = row.kind != GOLD_STORED  # the stored-judge Gold row: one value per instance, no seeds, no ±
        # With several judges the method column names the row's judge (not on the Gold row).
        label = f"{row.label} · judge {row.judge or 'unknown'}" if several and spread else row.label
        cells = [_text_cell(model_text(row.model, labels) if row.kind == RUN_ROW else ""), _text_cell(label)]
        cells += [_summary_cell(row.cells.get(key), spread=spread, rank=row.ranks.get(key)) for key in keys]
        rows.append(DisplayRow(row.key, tuple(cells), oracle=row.method == MULTI_ORACLE))
    # With several judges, a note says which judge scored which row.
    by_judge = rows_by_judge(table.rows)
    parts = "; ".join(f"{judge}: {', '.join(r.name(labels) for r in judged)}" for judge, judged in by_judge.items())
    note = f"Rows scored by different judges are kept apart and ranked only against rows of their judge — {parts}."
    runs = {r.name(labels, with_judge=several): _cells_n(r.cells) for r in table.rows if r.kind != GOLD_STORED}
    stored = [r for r in table.rows if r.kind == GOLD_STORED]
    gold = [f"{r.label}: {_cells_n(r.cells, seeds=False)}, one stored score each" for r in stored]
    n = _n_note(runs, "row", gold)
    return DisplayTable("table3", table.title, header, tuple(rows), (n, note) if len(by_judge) > 1 else (n,))


def _cells_n(cells: Mapping[tuple[str, Any], Summary], *, seeds: bool = True) -> str:
    """The n of a row's cells (keyed by task and metric or iteration)."""
    return sample_size([(task, summary) for (task, _), summary in cells.items()], seeds=seeds)


def _n_note(groups: Mapping[str, str], unit: str, extra: Sequence[str] = ()) -> str:
    """The caption line stating n: once when every group has the same ("n = 200 instances × 3 seeds in every
    row"), else per group ("n per row: GPT-4o / Base: 200 instances × 1 seed; …"); ``extra``: said after it."""
    if len(set(groups.values())) == 1:
        head = f"n = {next(iter(groups.values()))} in every {unit}"
        return head + (f" ({'; '.join(extra)})." if extra else ".")
    return f"n per {unit}: " + "; ".join([*(f"{name}: {n}" for name, n in groups.items()), *extra]) + "."


def types_display(res: TypeResult, labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Table 5 for one (model, method): row-normalised confusion matrix, Unparsed share, n, accuracies below."""
    cls = res.classification
    pct = cls.row_percent()
    header = ("Actual \\ Predicted", *[label.capitalize() for label in cls.labels], "Unparsed", "n")
    rows = []
    for i, label in enumerate(cls.labels):
        cells = [_text_cell(label.capitalize()), *[_pct_cell(v) for v in (*pct[i], res.unparsed_percent(i))]]
        rows.append(DisplayRow((label,), (*cells, _count_cell(res.type_n(i)))))
    seeds = res.accuracy.n_seeds
    note = (
        f"Accuracy: {format_summary(res.accuracy)}% (n = {len(res.instances) or cls.n} instances, "
        f"{seeds} seed{'s' if seeds != 1 else ''}); has property (green): "
        f"{_pct(100 * cls.has_property_accuracy, '%')}; lacks property (red): "
        f"{_pct(100 * cls.lacks_property_accuracy, '%')}; "
        f"binary (mean of both): {_pct(100 * cls.binary_accuracy, '%')}."
    )
    title = f"Table 5: property type prediction — {model_text(res.model, labels)} / {method_label(res.method)}"
    return DisplayTable(f"table5:{res.model}:{res.method}", title, header, tuple(rows), (note,))


def iterations_display(
    tab: IterationTable, labels: Mapping[str, str] | None = None, *, with_judge: bool = False
) -> DisplayTable:
    """Table 6 for one (model, method): score per SA iteration C_t, per task."""
    tasks = [t for t in GENERATIVE_TASKS if any((t, i) in tab.cells for i in tab.iterations)]
    rows = tuple(
        DisplayRow(
            (t,), (_text_cell(TASK_SPECS[t].short), *[_summary_cell(tab.cells.get((t, i))) for i in tab.iterations])
        )
        for t in tasks
    )
    judged = f" · judge {tab.judge or 'unknown'}" if with_judge else ""
    title = f"Table 6: score per iteration — {model_text(tab.model, labels)} / {method_label(tab.method)}{judged}"
    key = f"table6:{tab.model}:{tab.method}" + (f":{tab.judge}" if with_judge else "")
    notes = (f"n = {_cells_n(tab.cells)} per cell.",)
    return DisplayTable(key, title, ("Task", *[f"C_{t}" for t in tab.iterations]), rows, notes)


def filters_display(rows: Sequence[FilterRow], labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Table 7: score without and with Filter, and Δ."""
    several = len({r.judge for r in rows}) > 1
    body = tuple(
        DisplayRow(
            (r.model, r.method, r.judge, r.task),
            (
                _text_cell(model_text(r.model, labels)),
                _text_cell(method_label(r.method) + (f" · judge {r.judge or 'unknown'}" if several else "")),
                _text_cell(TASK_SPECS[r.task].short),
                _summary_cell(r.without),
                _summary_cell(r.with_),
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
    notes = (_n_note({name: sample_size(cells) for name, cells in runs.items()}, "run"),)
    return DisplayTable("table7", "Table 7: impact of Filter in spreading activation", header, body, notes)


# The Failures table's counts (FailureRow fields → column names), in print order; also the metrics of its records.
FAILURE_COUNTS = {
    "samples": "Samples", "sample_errors": "Sample errors", "parse_failures": "Parse failures",
    "judge_failures": "Judge failures", "invalid_cells": "Invalid cells", "unscored": "Unscored", "filled": "Filled",
    "sa_failed": "SA failed",
}  # fmt: skip


def failures_display(rows: Sequence[FailureRow], labels: Mapping[str, str] | None = None) -> DisplayTable:
    """The failure counts per (task, model, method, judge; Table-6 answers from C_t on their own line)."""
    several = len({r.judge for r in rows if r.judge}) > 1
    body = tuple(
        DisplayRow(
            (r.task, r.model, r.method, r.judge, *(() if r.sa_iteration is None else (f"C_{r.sa_iteration}",))),
            (
                _text_cell(r.task),
                _text_cell(model_text(r.model, labels)),
                _text_cell(
                    method_label(r.method)
                    + (f" · judge {r.judge}" if several and r.judge else "")
                    + ("" if r.sa_iteration is None else f", C_{r.sa_iteration}")
                ),
                *[_count_cell(getattr(r, name)) for name in FAILURE_COUNTS],
            ),
        )
        for r in rows
    )
    return DisplayTable("failures", "Failures", ("Task", "Model", "Method", *FAILURE_COUNTS.values()), body)


def display_tables(report: Report) -> list[DisplayTable]:
    """Every table of the report, in print order: 3, 5 (per run), 6 (per run), 7 (if any), failures."""
    names = report.labels
    tables = [generative_display(report.generative, names)] if report.generative else []
    tables += [types_display(res, names) for res in report.types]
    several = len({tab.judge for tab in report.iterations}) > 1
    tables += [iterations_display(tab, names, with_judge=several) for tab in report.iterations]
    tables += [filters_display(report.filters, names)] if report.filters else []
    tables.append(failures_display(report.failures, names))
    return tables + ([usage_display(report.usage, names)] if report.usage else [])


def usage_display(rows: Sequence[UsageRow], labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Model calls, cache hits, tokens and cost per model and role (docs/metrics.md, "Token and cost")."""
    invalid = any(r.invalid_usage for r in rows)
    body = tuple(
        DisplayRow(
            (r.model, r.role),
            (
                _text_cell(model_text(r.model, labels)),
                _text_cell(r.role),
                *[_count_cell(n) for n in (r.calls, r.cached_calls)],
                *[Cell(f"{n:,}", int(n)) for n in (r.input_tokens, r.output_tokens)],
                # Calls set aside for invalid usage are not priced: the cost is then a lower bound, and says so.
                Cell("n/a (no price)", None)
                if r.cost is None
                else Cell(f"{'≥ ' if r.invalid_usage else ''}{r.cost:.4f}", float(r.cost)),
                *[_count_cell(n) for n in (r.failed_attempts, r.timed_out)],
                # Only when a log holds one: calls whose recorded token counts were negative (set aside).
                *([_count_cell(r.invalid_usage)] if invalid else []),
            ),
        )
        for r in rows
    )
    header = (
        "Model", "Role", "Calls", "From cache", "Input tokens", "Output tokens", "Cost (USD)", "Failed attempts",
        "Timed out", *(["Invalid usage (not counted)"] if invalid else []),
    )  # fmt: skip
    return DisplayTable("usage", "Tokens and cost", header, body)


EXAMPLES_HEADER = (
    "Task", "Model", "Method", "Seed", "Instance", "Combination", "Property", "Answer (raw)", "Answer", "R_N,P",
    "R_H,M,P", "Score", "Judge",
)  # fmt: skip


def _relevance_cell(value: Any) -> Cell:
    number = optional(value, float)
    return Cell("–", None) if number is None else Cell(f"{100 * number:.1f}", 100 * number)


def _example_score(sample: Mapping[str, Any]) -> Cell:
    """E or C (×100) of a generative sample; right or wrong (with the gold type) for Task 3."""
    task = str(sample["task"])
    if TASK_SPECS[task].generative:
        score = optional(sample.get("score"), float)
        if score is None:
            return Cell("– (unscored)", None)
        return Cell(f"{score_name(task)} = {100 * score:.1f}", 100 * score)
    gold, pred = optional(sample.get("gold_type"), str), optional(sample.get("pred_type"), str)
    if pred is None:
        return Cell(f"unparsed (gold: {gold})", None)
    return Cell("correct", 1.0) if pred == gold else Cell(f"wrong (gold: {gold})", 0.0)


def examples_display(examples: pd.DataFrame, labels: Mapping[str, str] | None = None) -> DisplayTable:
    """The example answers with their per-sample scores (×100), or whether a Task-3 prediction was right."""
    rows = []
    for sample in examples.to_dict("records"):
        task, model, method = (str(sample[k]) for k in ("task", "model", "method"))
        answer = sample.get("answer") if TASK_SPECS[task].generative else sample.get("pred_type")
        seed = optional(sample.get("seed"), int)
        cells = (
            _text_cell(task),
            _text_cell(model_text(model, labels)),
            _text_cell(method_label(method)),
            Cell("–" if seed is None else str(seed), seed),
            _text_cell(str(sample["instance"])),
            *[_text_cell(optional(sample.get(k), str) or "") for k in ("combination", "property", "answer_raw")],
            _text_cell(optional(answer, str) or "–"),
            _relevance_cell(sample.get("r_np")),
            _relevance_cell(sample.get("r_hmp")),
            _example_score(sample),
            _text_cell(optional(sample.get("judge"), str) or "–"),
        )
        rows.append(DisplayRow((task, model, method), cells))
    return DisplayTable("examples", "Example answers (raw model text) with their scores", EXAMPLES_HEADER, tuple(rows))


def preamble_lines(report: Report) -> list[str]:
    """The notes every format prints above the tables: warnings (one line each, starting with "Warning:", e.g. rows
    over different instance sets), statistic, oracle, judge, failures, run notes."""
    lines = [f"Warning: {w}" for w in report.warnings]
    lines += [stat_note(report.stat), oracle_note(report.oracle)]
    if report.judge_info:
        lines.append(f"Judge: {report.judge_info}")
    lines.append(
        "Failed samples (unparsable answer, failed judge call, or a result-file cell its schema rejected) are "
        "counted in the Failures table and, when they leave no score, excluded from the means; a reply in an "
        "authors' result file that ccpt cannot parse keeps the score the authors stored for it (docs/metrics.md)."
    )
    if any(f.sa_failed for f in report.failures):
        lines.append(
            "SA failed: samples whose Spreading Activation had a step with an unreadable activation or filter reply "
            "(treated as an empty list; the answer is kept and scored)."
        )
    if any(f.sa_failed is None for f in report.failures):
        lines.append("SA failed –: not recorded by those rows (e.g. the authors' result files), so unknown, not zero.")
    lines.extend(report.notes)
    return lines


def decorate(text: str, rank: int | None, bold: Callable[[str], str], underline: Callable[[str], str]) -> str:
    """``text`` marked as best (rank 1) or second (rank 2) with the renderer's own bold and underline."""
    return bold(text) if rank == 1 else underline(text) if rank == 2 else text
