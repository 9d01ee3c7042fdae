"""Table 3 (and 4): the generative tasks, rows model × method (+ Human, + Gold), columns task × (R_H,M,P, R_N,P,
E/C), best and second marked; grouping and ranking only (numbers from :mod:`ccpt.scoring` and :mod:`ccpt.stats`)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ccpt.methods import method_label, order
from ccpt.report.display import (
    DisplayRow,
    DisplayTable,
    cells_n,
    metric_name,
    n_note,
    score_name,
    summary_cell,
    text_cell,
)
from ccpt.report.names import model_text
from ccpt.report.tables.common import (
    HUMAN_MODEL,
    METRICS,
    PERCENT,
    OracleReduction,
    cell_summary,
    generative_rows,
    instance_ids,
    judge_of,
    per_instance_values,
    summary_record,
)
from ccpt.report.tables.definition import Coverage, ReportTable, TableOptions
from ccpt.scoring import Relevances
from ccpt.spec import EMERGENT, GENERATIVE_TASKS, GOLD, GOLD_STORED, GOLD_STORED_LABEL, MULTI_ORACLE, TASK_SPECS
from ccpt.stats import Stat, Summary, summarize

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

GOLD_LABEL = GOLD_STORED_LABEL
STORED_JUDGE = "gpt-4o"  # the dataset's stored judge scores (meta.*_gpt-4o_relevance), as the authors' files name it


@dataclass(frozen=True)
class Column:
    """One Table-3 column: a metric of a task and its better direction (the paper's arrow)."""

    task: str
    metric: str  # "r_hmp" | "r_np" | "score"
    higher_is_better: bool

    @property
    def label(self) -> str:
        """Plain-text header with the arrow."""
        return f"{metric_name(self.task, self.metric)} {'↑' if self.higher_is_better else '↓'}"

    @property
    def latex(self) -> str:
        """LaTeX header with the arrow."""
        name = {
            "r_hmp": r"R_{\mathcal{H},\mathcal{M},\mathcal{P}}",
            "r_np": r"R_{\mathcal{N},\mathcal{P}}",
            "score": r"\mathcal{E}" if score_name(self.task) == "E" else r"\mathcal{C}",
        }[self.metric]
        arrow = r"\uparrow" if self.higher_is_better else r"\downarrow"
        return f"${name}{arrow}$"


# A row's kind: a (model, method) run (RUN_ROW), the Human row (HUMAN_MODEL) or the stored-judge Gold row (GOLD_STORED).
RUN_ROW = "run"


@dataclass
class Row:
    """One table row: a (model, method, judge) run, the Human row or the Gold row (told apart by ``kind``);
    ``cells`` and ``ranks`` (1 best, 2 second) are keyed by (task, metric), ``instances`` by task."""

    model: str
    method: str
    label: str
    ranked: bool
    cells: dict[tuple[str, str], Summary] = field(default_factory=dict)
    ranks: dict[tuple[str, str], int] = field(default_factory=dict)
    kind: str = RUN_ROW
    instances: dict[str, frozenset[str]] = field(default_factory=dict)
    judge: str = ""  # the judge identity of the row ("" when none is recorded)
    unjudged: dict[str, int] = field(default_factory=dict)  # Gold: per task, instances missing a stored relevance

    @property
    def key(self) -> tuple[str, str, str, str]:
        """What identifies the row: (kind, model, method, judge); the stored-judge Gold row has model ""."""
        return (self.kind, self.model, self.method, self.judge)

    def name(self, labels: Mapping[str, str] | None = None, *, with_judge: bool = False) -> str:
        """The row as a reader names it: ``model / method label`` for a run, else its label (Human, Gold); with
        ``with_judge`` (a table of several judges) followed by `` · judge <identity>``."""
        name = f"{model_text(self.model, labels)} / {self.label}" if self.kind == RUN_ROW else self.label
        return f"{name} · judge {self.judge or 'unknown'}" if with_judge and self.kind != GOLD_STORED else name


@dataclass
class GenerativeTable:
    """Paper Table 3 (LLM judge) or Table 4 (human judge) layout."""

    title: str
    columns: list[Column]
    rows: list[Row]
    stat: Stat
    oracle: OracleReduction

    @property
    def several_judges(self) -> bool:
        """Whether the runs' rows were scored by more than one judge (then every row names its judge)."""
        return len({row.judge for row in self.rows if row.kind != GOLD_STORED}) > 1


def rows_by_judge(rows: Sequence[Row], unknown: str = "unknown") -> dict[str, list[Row]]:
    """Rows grouped by the judge that scored them (``unknown`` where none is recorded), in table order."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.judge or unknown, []).append(row)
    return groups


def gold_row(
    dataset: CCPTDataset, tasks: Sequence[str], stat: Stat, instances: Mapping[str, set[str]] | None = None
) -> Row:
    """The Gold row: the dataset's stored judge relevances of the test rows, scored with :mod:`ccpt.scoring`;
    ``instances`` (task → ids) restricts a task to the instances the results cover (a ``--limit`` run)."""
    row = Row(model="", method=GOLD, label=GOLD_LABEL, ranked=False, kind=GOLD_STORED, judge=STORED_JUDGE)
    for task in tasks:
        kind = TASK_SPECS[task].kind
        records = dataset.test(task)  # type: ignore[arg-type]
        covered = [r for r in records if instances is not None and r.id in instances.get(task, set())]
        if covered:  # results whose ids are not dataset ids (e.g. unmatched CSVs) keep the whole split
            records = covered
        row.instances[task] = frozenset(r.id for r in records)
        rel = [Relevances(r.judge_combination, r.judge_head, r.judge_modifier) for r in records]
        if unjudged := sum(None in (x.r_np, x.r_hp, x.r_mp) for x in rel):  # an empty cell: never judged, counted
            row.unjudged[task] = unjudged
        for metric in METRICS:
            values = [[x.r_hmp if metric == "r_hmp" else x.r_np if metric == "r_np" else x.score(kind)] for x in rel]  # type: ignore[arg-type]
            row.cells[(task, metric)] = summarize(values, stat).scaled(PERCENT)
    return row


def _rank(rows: list[Row], columns: list[Column], scope: Literal["model", "all"]) -> None:
    """Mark best (1) and second-best (2) per column among ranked rows, on the displayed (1-decimal) values."""
    blocks: dict[tuple[str, str], list[Row]] = {}
    for row in rows:
        if row.ranked:  # rows of two judges are never ranked against each other
            blocks.setdefault((row.model if scope == "model" else "", row.judge), []).append(row)
    for block in blocks.values():
        for col in columns:
            key = (col.task, col.metric)
            means = {id(r): r.cells[key].mean for r in block if key in r.cells}
            shown = {i: round(m, 1) for i, m in means.items() if not math.isnan(m)}
            distinct = sorted(set(shown.values()), reverse=col.higher_is_better)
            for r in block:
                if id(r) in shown and len(shown) > 1 and (position := distinct.index(shown[id(r)]) + 1) <= 2:
                    r.ranks[key] = position


def table3(
    frame: pd.DataFrame,
    *,
    stat: Stat = "sem",
    oracle: OracleReduction = "paper",
    dataset: CCPTDataset | None = None,
    rank_scope: Literal["model", "all"] = "model",
    n_boot: int = 10_000,
    seed: int = 0,
    title: str = "Table 3: generative tasks (LLM judge)",
) -> GenerativeTable:
    """Table 3: rows model × method (+ Human, + Gold if ``dataset``), columns task × (R_H,M,P, R_N,P, E/C); ranks
    within each model's block (``rank_scope="model"``) or across rows, never Multi-Oracle, Human or Gold."""
    gen = generative_rows(frame)
    gen = gen.assign(judge_id=judge_of(gen))
    tasks = [t for t in GENERATIVE_TASKS if (gen["task"] == t).any()]
    # Directions as in paper Table 3: R_H,M,P down and R_N,P up for an emergent task, the reverse for a canceled one.
    kinds = [(t, TASK_SPECS[t].kind == EMERGENT) for t in tasks]
    columns = [Column(t, m, m == "score" or (m == "r_np") == emergent) for t, emergent in kinds for m in METRICS]
    rows: list[Row] = []
    # One row per (model, method, judge): rows two judges scored are two rows, never one average or best-of-two.
    runs = gen.groupby(["model", "method", "judge_id"], sort=False)
    # g = ((model, method, judge), rows): Human last, then by model, judge, and method in paper order.
    ordered = sorted(runs, key=lambda g: (g[0][0] == HUMAN_MODEL, g[0][0], g[0][2], order(g[0][1])))
    for (model, method, judge), run in ordered:
        human = model == HUMAN_MODEL
        label, ranked = ("Human", False) if human else (method_label(method), method not in (MULTI_ORACLE, GOLD))
        row = Row(model, method, label, ranked, kind=HUMAN_MODEL if human else RUN_ROW, judge=str(judge))
        for task in tasks:
            group = run[run["task"] == task]
            if group.empty:
                continue
            row.instances[task] = instance_ids(group["instance"])
            values = per_instance_values(group, task, oracle)
            for metric in METRICS:
                row.cells[(task, metric)] = cell_summary(values, metric, stat, n_boot, seed, scale=PERCENT)
        rows.append(row)
    if dataset is not None and tasks:
        covered = {t: set(gen.loc[gen["task"] == t, "instance"].astype(str)) for t in tasks}
        rows.append(gold_row(dataset, tasks, stat, covered))
    _rank(rows, columns, rank_scope)
    return GenerativeTable(title=title, columns=columns, rows=rows, stat=stat, oracle=oracle)


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
        cells = [text_cell(model_text(row.model, labels) if row.kind == RUN_ROW else ""), text_cell(label)]
        cells += [summary_cell(row.cells.get(key), spread=spread, rank=row.ranks.get(key)) for key in keys]
        rows.append(DisplayRow(row.key, tuple(cells), oracle=row.method == MULTI_ORACLE))
    # With several judges, a note says which judge scored which row.
    by_judge = rows_by_judge(table.rows)
    parts = "; ".join(f"{judge}: {', '.join(r.name(labels) for r in judged)}" for judge, judged in by_judge.items())
    note = f"Rows scored by different judges are kept apart and ranked only against rows of their judge — {parts}."
    runs = {r.name(labels, with_judge=several): cells_n(r.cells) for r in table.rows if r.kind != GOLD_STORED}
    stored = [r for r in table.rows if r.kind == GOLD_STORED]
    gold = [f"{r.label}: {cells_n(r.cells, seeds=False)}, one stored score each" for r in stored]
    n = n_note(runs, "row", gold)
    return DisplayTable("table3", table.title, header, tuple(rows), (n, note) if len(by_judge) > 1 else (n,))


def _records(table: GenerativeTable | None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in table.rows if table else []:
        method = GOLD_STORED if row.kind == GOLD_STORED else row.method
        base = {"table": "table3", "model": row.model, "method": method, "judge": row.judge}
        out += [
            {**base, "task": task, "metric": metric, "rank": row.ranks.get((task, metric)), **summary_record(summary)}
            for (task, metric), summary in row.cells.items()
        ]
    return out


def _coverage(table: GenerativeTable | None, labels: Mapping[str, str]) -> Coverage:
    """Per task column: the instance sets of its rows."""
    several = table is not None and table.several_judges
    return [
        (
            f"{table.title.split(':')[0]}, {TASK_SPECS[task].label}",
            {r.name(labels, with_judge=several): r.instances[task] for r in table.rows if task in r.instances},
        )
        for task in (dict.fromkeys(c.task for c in table.columns) if table is not None else ())
    ]


def _notes(table: GenerativeTable | None, options: TableOptions) -> list[str]:
    """Why the Gold row is missing, and the Gold instances no stored relevance covers."""
    notes = (
        ["Gold row omitted: pass --data-dir (or set CCPT_DATA_DIR) to include it"]
        if table and options.dataset is None
        else []
    )
    for row in table.rows if table is not None else []:
        if row.unjudged:
            counts = ", ".join(f"{task} {n} of {len(row.instances[task])}" for task, n in row.unjudged.items())
            notes.append(f"{row.label}: instances without a stored relevance (never judged), left out of the cells "
                         f"that need it: {counts}")  # fmt: skip
    return notes


def _compute(frame: pd.DataFrame, o: TableOptions) -> GenerativeTable | None:
    if generative_rows(frame).empty:
        return None
    return table3(frame, stat=o.stat, oracle=o.oracle, dataset=o.dataset, rank_scope=o.rank_scope, n_boot=o.n_boot,
                  seed=o.seed)  # fmt: skip


TABLE = ReportTable(
    "generative",
    _compute,
    lambda table, labels: [generative_display(table, labels)] if table else [],
    _records,
    _coverage,
    _notes,
)
