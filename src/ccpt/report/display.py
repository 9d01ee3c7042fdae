"""What every renderer prints: a display table's cells (text, value, rank), so the five formats cannot drift apart
(the numbers behind the cells feed `to_frame()`), and the cell makers the tables (:mod:`ccpt.report.tables`) use."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.methods import method_label
from ccpt.report.names import model_text
from ccpt.results import optional
from ccpt.spec import EMERGENT, TASK_SPECS
from ccpt.stats import Summary


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


def summary_cell(summary: Summary | None, *, spread: bool = True, rank: int | None = None) -> Cell:
    """A mean's cell ("44.1 ± 0.6"; its spread left out with ``spread=False``), its rank mark."""
    value = None if summary is None or math.isnan(summary.mean) else summary.mean
    return Cell(format_summary(summary, spread=spread), value, rank, summary)


def share_text(value: float, unit: str = "") -> str:
    """A share: "95.6" (unit "%" in a sentence), or "—" when undefined (NaN: no instance of the group)."""
    return "—" if value != value else f"{value:.1f}{unit}"


def pct_cell(value: float) -> Cell:
    """A share's cell (see :func:`share_text`)."""
    return Cell(share_text(value), None if value != value else float(value))


def text_cell(text: str) -> Cell:
    """A label's cell: its text is its value."""
    return Cell(text, text)


def count_cell(count: int | None) -> Cell:
    """A count; None (not recorded by the rows) prints as "–", never as 0."""
    return Cell("–", None) if count is None else Cell(str(count), int(count))


def cells_n(cells: Mapping[tuple[str, Any], Summary], *, seeds: bool = True) -> str:
    """The n of a row's cells (keyed by task and metric or iteration)."""
    return sample_size([(task, summary) for (task, _), summary in cells.items()], seeds=seeds)


def n_note(groups: Mapping[str, str], unit: str, extra: Sequence[str] = ()) -> str:
    """The caption line stating n: once when every group has the same ("n = 200 instances × 3 seeds in every
    row"), else per group ("n per row: GPT-4o / Base: 200 instances × 1 seed; …"); ``extra``: said after it."""
    if len(set(groups.values())) == 1:
        head = f"n = {next(iter(groups.values()))} in every {unit}"
        return head + (f" ({'; '.join(extra)})." if extra else ".")
    return f"n per {unit}: " + "; ".join([*(f"{name}: {n}" for name, n in groups.items()), *extra]) + "."


def score_name(task: str) -> str:
    """The score's letter for a generative task: E (emergence) or C (cancellation)."""
    return "E" if TASK_SPECS[task].kind == EMERGENT else "C"


def metric_name(task: str, metric: str) -> str:
    """A column's plain-text name: R_H,M,P, R_N,P, or the score's letter."""
    return {"r_hmp": "R_H,M,P", "r_np": "R_N,P"}.get(metric) or score_name(task)


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
            text_cell(task),
            text_cell(model_text(model, labels)),
            text_cell(method_label(method)),
            Cell("–" if seed is None else str(seed), seed),
            text_cell(str(sample["instance"])),
            *[text_cell(optional(sample.get(k), str) or "") for k in ("combination", "property", "answer_raw")],
            text_cell(optional(answer, str) or "–"),
            _relevance_cell(sample.get("r_np")),
            _relevance_cell(sample.get("r_hmp")),
            _example_score(sample),
            text_cell(optional(sample.get("judge"), str) or "–"),
        )
        rows.append(DisplayRow((task, model, method), cells))
    return DisplayTable("examples", "Example answers (raw model text) with their scores", EXAMPLES_HEADER, tuple(rows))


def format_summary(summary: Summary | None, *, spread: bool = True) -> str:
    """'44.1 ± 0.6', '44.1 [43.2, 45.0]' (ci) or '44.1' (one seed, Gold, Human)."""
    if summary is None or math.isnan(summary.mean):
        return "–"
    text = f"{summary.mean:.1f}"
    if not spread:
        return text
    if summary.stat == "ci" and summary.lo is not None and summary.hi is not None:
        return f"{text} [{summary.lo:.1f}, {summary.hi:.1f}]"
    if summary.spread is not None and summary.n_seeds > 1 and not math.isnan(summary.spread):
        return f"{text} ± {summary.spread:.1f}"
    return text


def sample_size(cells: Iterable[tuple[str, Summary]], *, seeds: bool = True) -> str:
    """The n of (task, cell) pairs as a paper states it: "200 instances × 3 seeds"; each task's count where tasks
    differ ("PI-Eme. 200, NPC-Eme. 167 instances"), a range where one task's cells differ ("2–3 seeds"); then the
    (instance, seed) cells left unscored, which the means leave out ("4 instances × 1 seed, 1 unscored")."""
    instances: dict[str, set[int]] = {}
    seed_counts: set[int] = set()
    unscored: set[int] = set()
    for task, summary in cells:
        instances.setdefault(task, set()).add(summary.n_instances)
        seed_counts.add(summary.n_seeds)
        unscored.add(summary.n_failed)
    counts = {task: _span(n) for task, n in instances.items()}
    if len(set(counts.values())) <= 1:
        text = next(iter(counts.values()), "0")
    else:
        text = ", ".join(f"{TASK_SPECS[task].short} {n}" for task, n in counts.items())
    text += " instance" if counts and set(counts.values()) == {"1"} else " instances"
    if seeds and seed_counts:
        text += f" × {_span(seed_counts)} seed{'' if seed_counts == {1} else 's'}"
    if max(unscored, default=0):  # n counts them (docs/metrics.md); said, or "n = 4" reads as a mean over 4
        text += f", {'' if len(unscored) == 1 else 'up to '}{max(unscored)} unscored (left out of the means)"
    return text


def _span(values: set[int]) -> str:
    return str(min(values)) if len(values) == 1 else f"{min(values)}–{max(values)}"


def decorate(text: str, rank: int | None, bold: Callable[[str], str], underline: Callable[[str], str]) -> str:
    """``text`` marked as best (rank 1) or second (rank 2) with the renderer's own bold and underline."""
    return bold(text) if rank == 1 else underline(text) if rank == 2 else text
