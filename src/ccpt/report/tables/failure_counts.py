"""The Failures table: per (task, model, method, judge, SA step) every sample without a score, counted, never
hidden: sample errors, parse and judge failures, invalid cells, as-run fills, failed SA steps."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.methods import method_label
from ccpt.protocol import FILLED
from ccpt.report.display import DisplayRow, DisplayTable, count_cell, text_cell
from ccpt.report.names import model_text
from ccpt.report.tables.common import display_methods, judge_of
from ccpt.report.tables.definition import ReportTable, TableOptions
from ccpt.results.inspect_logs import NO_SCORE_METADATA, SAMPLE_ERROR
from ccpt.spec import NOFILTER_SUFFIX, SA_METHODS, TASK_SPECS


@dataclass(frozen=True)
class FailureRow:
    """The failure counts of one (task, model, method, judge, SA step)."""

    task: str
    model: str
    method: str
    samples: int
    parse_failures: int  # answers that were there but unreadable (sample errors not included)
    judge_failures: int
    unscored: int
    invalid_cells: int = 0  # cells of the result files set aside by their schema (ccpt.schemas)
    filled: int = 0  # as-run: unscored samples filled from another seed (ccpt.protocol.fill_failed_samples)
    sa_failed: int | None = 0  # samples with an unreadable SA step reply; None: not recorded (unknown, not zero)
    sa_iteration: int | None = None  # Table 6 rows: the answers from C_t
    sample_errors: int = 0  # Inspect's errored samples (call failed after retries, timed out, raised): no answer
    judge: str = ""  # the judge identity of the run ("" for Task 3 and files that name none)


def _count(group: pd.DataFrame, column: str) -> int:
    """The sum of a count column (absent in frames built before it existed: 0)."""
    return int(pd.to_numeric(group[column], errors="coerce").fillna(0).sum()) if column in group else 0


def failures(frame: pd.DataFrame) -> list[FailureRow]:
    """Parse and judge failures, never hidden: every sample without a score is counted here."""
    out: list[FailureRow] = []
    # Samples without an answer (Inspect's errored samples), told by their parse_error.
    text = frame["parse_error"].astype("string").fillna("") if "parse_error" in frame else pd.Series("", frame.index)
    errored = text.str.startswith(SAMPLE_ERROR) | (text == NO_SCORE_METADATA)
    frame = frame.assign(method=display_methods(frame), judge_id=judge_of(frame), errored=errored)
    keys = ["task", "model", "method", "judge_id", "sa_iteration"]
    for (task, model, method, judge, step), group in frame.groupby(keys, sort=True, dropna=False):
        target = "score" if TASK_SPECS[str(task)].generative else "pred_type"
        steps = pd.to_numeric(group["sa_failed_steps"], errors="coerce") if "sa_failed_steps" in group else None
        recorded = steps is not None and steps.notna().any()
        unrecorded = None if str(method).removesuffix(NOFILTER_SUFFIX) in SA_METHODS else 0  # SA rows: unknown, not 0
        errored = group["errored"]
        out.append(
            FailureRow(
                str(task),
                str(model),
                str(method),
                samples=len(group),
                parse_failures=int(((group["parse_ok"] != True) & ~errored).sum()),  # noqa: E712
                sample_errors=int(errored.sum()),
                judge_failures=_count(group, "judge_failures"),
                invalid_cells=_count(group, "invalid_cells"),
                unscored=int(group[target].isna().sum()),
                filled=int(group[FILLED].notna().sum()) if FILLED in group else 0,
                sa_failed=int((steps > 0).sum()) if recorded else unrecorded,  # type: ignore[operator]
                sa_iteration=None if pd.isna(step) else int(step),
                judge=str(judge),
            )
        )
    return out


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
                text_cell(r.task),
                text_cell(model_text(r.model, labels)),
                text_cell(
                    method_label(r.method)
                    + (f" · judge {r.judge}" if several and r.judge else "")
                    + ("" if r.sa_iteration is None else f", C_{r.sa_iteration}")
                ),
                *[count_cell(getattr(r, name)) for name in FAILURE_COUNTS],
            ),
        )
        for r in rows
    )
    return DisplayTable("failures", "Failures", ("Task", "Model", "Method", *FAILURE_COUNTS.values()), body)


def _records(rows: list[FailureRow]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for f in rows:
        base = {"table": "failures", "model": f.model, "method": f.method, "judge": f.judge, "task": f.task}
        step = "" if f.sa_iteration is None else f"@C_{f.sa_iteration}"  # as Table 6's "score@C_t"
        out += [{**base, "metric": name + step, "count": getattr(f, name)} for name in FAILURE_COUNTS]
    return out


def _compute(frame: pd.DataFrame, _: TableOptions) -> list[FailureRow]:
    return failures(frame)


TABLE = ReportTable("failures", _compute, lambda rows, labels: [failures_display(rows, labels)], _records)
