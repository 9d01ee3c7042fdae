"""Tokens and cost: model calls, cache hits, tokens and cost per model and role, read from the Inspect logs (not
from the tidy table: :func:`ccpt.report.build.report_from_paths` sets it; docs/metrics.md, "Token and cost")."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import pandas as pd

from ccpt.report.display import Cell, DisplayRow, DisplayTable, count_cell, text_cell
from ccpt.report.names import model_text
from ccpt.report.tables.definition import ReportTable, TableOptions
from ccpt.results.usage import UsageRow


def usage_display(rows: Sequence[UsageRow], labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Model calls, cache hits, tokens and cost per model and role (docs/metrics.md, "Token and cost")."""
    invalid = any(r.invalid_usage for r in rows)
    body = tuple(
        DisplayRow(
            (r.model, r.role),
            (
                text_cell(model_text(r.model, labels)),
                text_cell(r.role),
                *[count_cell(n) for n in (r.calls, r.cached_calls)],
                *[Cell(f"{n:,}", int(n)) for n in (r.input_tokens, r.output_tokens)],
                # Calls set aside for invalid usage are not priced: the cost is then a lower bound, and says so.
                Cell("n/a (no price)", None)
                if r.cost is None
                else Cell(f"{'≥ ' if r.invalid_usage else ''}{r.cost:.4f}", float(r.cost)),
                *[count_cell(n) for n in (r.failed_attempts, r.timed_out)],
                # Only when a log holds one: calls whose recorded token counts were negative (set aside).
                *([count_cell(r.invalid_usage)] if invalid else []),
            ),
        )
        for r in rows
    )
    header = (
        "Model", "Role", "Calls", "From cache", "Input tokens", "Output tokens", "Cost (USD)", "Failed attempts",
        "Timed out", *(["Invalid usage (not counted)"] if invalid else []),
    )  # fmt: skip
    return DisplayTable("usage", "Tokens and cost", header, body)


def _records(rows: list[UsageRow]) -> list[dict[str, Any]]:
    usage = ("calls", "cached_calls", "input_tokens", "output_tokens", "cost", "failed_attempts", "timed_out")
    return [  # the role is in ``method``
        {"table": "usage", "model": r.model, "method": r.role, "task": None, "metric": name, "count": getattr(r, name)}
        for r in rows
        for name in usage + (("invalid_usage",) if r.invalid_usage else ())
    ]


def _compute(frame: pd.DataFrame, _: TableOptions) -> list[UsageRow]:
    return []  # the tidy table has no call records: report_from_paths reads them from the logs


TABLE = ReportTable("usage", _compute, lambda rows, labels: [usage_display(rows, labels)] if rows else [], _records)
