"""Paper Tables 3/4, 5, 6, 7 and the failure counts from the tidy results table: grouping and ranking only (numbers
from :mod:`ccpt.scoring` and :mod:`ccpt.stats`). Definitions: docs/metrics.md."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal

import pandas as pd

from ccpt.methods import Judged, method_label, order, reduction
from ccpt.protocol import FILLED, fill_failed_samples
from ccpt.report.names import model_text
from ccpt.results import optional
from ccpt.results.identity import variant_tags
from ccpt.results.inspect_logs import NO_SCORE_METADATA, SAMPLE_ERROR
from ccpt.scoring import Classification, Relevances, classify
from ccpt.spec import (
    EMERGENT,
    GENERATIVE_TASKS,
    GOLD,
    GOLD_STORED,
    MULTI_ORACLE,
    NOFILTER_SUFFIX,
    SA_METHODS,
    TASK_SPECS,
    TYPE_PREDICTION,
    method_name,
)
from ccpt.stats import Stat, Summary, summarize

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


# Multi-Oracle per instance and seed: "paper" = each column its own best sample, "single" = all from the best E/C.
OracleReduction = Literal["paper", "single"]
Format = Literal["markdown", "latex", "csv", "json", "html"]
FORMATS: tuple[str, ...] = ("markdown", "latex", "csv", "json", "html")

HUMAN_MODEL = "human"
GOLD_LABEL = "Gold (stored GPT-4o judge)"
STORED_JUDGE = "gpt-4o"  # the dataset's stored judge scores (meta.*_gpt-4o_relevance), as the authors' files name it
METRICS: tuple[str, ...] = ("r_hmp", "r_np", "score")


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


def score_name(task: str) -> str:
    """The score's letter for a generative task: E (emergence) or C (cancellation)."""
    return "E" if TASK_SPECS[task].kind == EMERGENT else "C"


def metric_name(task: str, metric: str) -> str:
    """A column's plain-text name: R_H,M,P, R_N,P, or the score's letter."""
    return {"r_hmp": "R_H,M,P", "r_np": "R_N,P"}.get(metric) or score_name(task)


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


def per_instance_values(group: pd.DataFrame, task: str, oracle: OracleReduction = "paper") -> pd.DataFrame:
    """One row per (instance, seed) with r_hmp, r_np, score: several samples reduce the way their method does
    (:func:`ccpt.methods.reduction`)."""
    kind = TASK_SPECS[task].kind
    if not group.duplicated(["instance", "seed"]).any():  # one sample is its own cell under any reduction
        return group[["instance", "seed", *METRICS]].astype({m: float for m in METRICS})
    records = []
    for (method, instance, seed), members in group.groupby(["method", "instance", "seed"], sort=False):
        rows = members[["answer", "r_np", "r_hp", "r_mp"]].itertuples(index=False)
        samples = [Judged(optional(a, str), Relevances(*(optional(v, float) for v in rel))) for a, *rel in rows]
        cell = reduction(str(method))(samples, kind, oracle)  # type: ignore[arg-type]
        records.append((instance, seed, cell.r_hmp, cell.r_np, cell.score))
    return pd.DataFrame(records, columns=["instance", "seed", *METRICS]).astype({m: float for m in METRICS})


def _summary(values: pd.DataFrame, metric: str, stat: Stat, n_boot: int, seed: int, index: str = "instance") -> Summary:
    """The metric over instances × seeds (instances aligned across seeds; a missing cell = failed), in percent."""
    matrix = values.pivot_table(index=index, columns="seed", values=metric, aggfunc="first", dropna=False)
    return summarize(matrix.to_numpy(float), stat, n_boot=n_boot, seed=seed).scaled(100.0)


def _ids(values: pd.Series) -> frozenset[str]:
    return frozenset(values.astype(str))


def judge_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's judge identity as text ("" where none is recorded: Task 3, files without a judge)."""
    return frame["judge"].astype("string").fillna("").astype(str) if "judge" in frame else pd.Series("", frame.index)


def generative_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of Table 3: generative tasks, final answers (no SA-iteration rows, no no-filter ablation)."""
    keep = frame["task"].isin(GENERATIVE_TASKS) & frame["sa_iteration"].isna() & (frame["sa_filter"] != False)  # noqa: E712
    return frame[keep]


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
            row.cells[(task, metric)] = summarize(values, stat).scaled(100.0)
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
            row.instances[task] = _ids(group["instance"])
            values = per_instance_values(group, task, oracle)
            for metric in METRICS:
                row.cells[(task, metric)] = _summary(values, metric, stat, n_boot, seed)
        rows.append(row)
    if dataset is not None and tasks:
        covered = {t: set(gen.loc[gen["task"] == t, "instance"].astype(str)) for t in tasks}
        rows.append(gold_row(dataset, tasks, stat, covered))
    _rank(rows, columns, rank_scope)
    return GenerativeTable(title=title, columns=columns, rows=rows, stat=stat, oracle=oracle)


@dataclass
class TypeResult:
    """Table 5 for one (model, method): predictions pooled over seeds (confusion matrix), accuracy over seeds."""

    model: str
    method: str
    classification: Classification
    accuracy: Summary  # percent
    instances: frozenset[str] = frozenset()  # each counted once, whatever the number of seeds
    type_instances: tuple[int, ...] = ()  # each actual type's instance count (Table 5's ``n``)

    def unparsed_percent(self, i: int) -> float:
        """The share of actual type ``i``'s predictions that were unparsed (NaN: no prediction of that type)."""
        totals = self.classification.row_totals()
        return 100 * self.classification.unparsed[i] / totals[i] if totals[i] else float("nan")

    def type_n(self, i: int) -> int:
        """Table 5's ``n`` of actual type ``i``: its instances (its predictions where none are recorded)."""
        return self.type_instances[i] if self.type_instances else int(self.classification.row_totals()[i])


def type_predictions(rows: pd.DataFrame) -> pd.DataFrame:
    """Task-3 rows, one per (method, item, seed), the predicted type the method's reduction counts of the item's
    samples (Base: its one answer; a vote: the winner). Items: the instance id numbered by occurrence within a seed
    and sample (the authors' repeated pairs count twice)."""
    keys = [k for k in ("method", "instance", "seed", "sample") if k in rows]
    occurrence = rows.groupby(keys, sort=False, dropna=False).cumcount()
    rows = rows.assign(item=rows["instance"].astype(str) + "#" + occurrence.astype(str))
    cells = rows.groupby(["method", "item", "seed"], sort=False, dropna=False)
    if len(cells) == len(rows):  # one sample is its own answer under any reduction
        return rows
    answers = [
        reduction(str(method))([Judged(optional(p, str)) for p in members["pred_type"]], None, "paper").answer
        for (method, _, _), members in cells
    ]
    return cells.head(1).assign(pred_type=answers)


def table5(frame: pd.DataFrame, *, stat: Stat = "sem", n_boot: int = 10_000, seed: int = 0) -> list[TypeResult]:
    """Property type prediction per (model, method): confusion matrix (paper order), accuracy, has/lacks."""
    tp = frame[frame["task"] == TYPE_PREDICTION]
    if tp.empty:
        return []
    # Without a gold type no confusion cell (the Failures table counts it); a boolean Series, as [] selects columns.
    tp = tp[tp["gold_type"].map(lambda g: optional(g, str) is not None).astype(bool)]
    out: list[TypeResult] = []
    for (model, method), rows in tp.groupby(["model", "method"], sort=True):  # Task 3 has no judge
        group = type_predictions(rows)
        preds = [optional(p, str) for p in group["pred_type"]]
        cls = classify([str(g) for g in group["gold_type"]], preds)
        right = [float(p == g) for p, g in zip(preds, group["gold_type"], strict=True)]
        correct = group.assign(correct=right)
        acc = _summary(correct, "correct", stat, n_boot, seed, index="item")
        per_type = correct.drop_duplicates("item")["gold_type"].astype(str)
        counts = tuple(int((per_type == label).sum()) for label in cls.labels)
        out.append(TypeResult(str(model), str(method), cls, acc, _ids(correct["item"]), counts))
    return out


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
            (str(task), int(t)): _summary(per_instance_values(sub, str(task), oracle), "score", stat, n_boot, seed)
            for (task, t), sub in group.groupby(["task", "sa_iteration"])
        }
        out.append(IterationTable(str(model), str(method), iterations, cells, str(judge)))
    return out


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
            flag: _summary(per_instance_values(sub, str(task), oracle), "score", stat, n_boot, seed)
            for flag, sub in subs.items()
            if not sub.empty
        }
        if False in parts:  # a method run only with its filter is not an ablation
            ids = (_ids(subs[False]["instance"]), _ids(subs[True]["instance"]))
            out.append(FilterRow(str(model), str(method), str(task), parts[False], parts.get(True), ids, str(judge)))
    return out


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


def display_methods(frame: pd.DataFrame) -> list[str]:
    """Method names with the filter ablation spelled out (``sa_both`` with sa_filter False → ``sa_both_nofilter``)."""
    flags = frame["sa_filter"] if "sa_filter" in frame else [None] * len(frame)
    return [method_name(m, f) for m, f in zip(frame["method"], flags, strict=True)]


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


def protocols_of(frame: pd.DataFrame) -> list[str]:
    """The protocols of the rows (human answers have none)."""
    return sorted({str(p) for p in frame["protocol"].dropna()}) if "protocol" in frame else []


def tagged_models(frame: pd.DataFrame) -> pd.Series:
    """Each row's model as a report keys and prints it: ``model [protocol]`` when there are several protocols, and
    ``model [oracle_n 2]`` where its model and method have runs of other number-changing arguments
    (:func:`ccpt.results.identity.variant_tags`): two such runs are two rows, never one average."""
    model = frame["model"].astype(object)
    if len(protocols_of(frame)) > 1:
        labelled = frame["protocol"].notna()
        model = model.where(~labelled, model + " [" + frame["protocol"].astype(str) + "]")
    tags = variant_tags(frame)
    return model.where(tags == "", model + " [" + tags + "]")


def as_reported(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows as a report averages them: models tagged by :func:`tagged_models`, unscored ``as-run`` samples
    filled from another seed (:func:`ccpt.protocol.fill_failed_samples`)."""
    if len(frame):
        frame = frame.assign(model=tagged_models(frame))
    return fill_failed_samples(frame)


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
    differ ("PI-Eme. 200, NPC-Eme. 167 instances"), a range where one task's cells differ ("2–3 seeds")."""
    instances: dict[str, set[int]] = {}
    seed_counts: set[int] = set()
    for task, summary in cells:
        instances.setdefault(task, set()).add(summary.n_instances)
        seed_counts.add(summary.n_seeds)
    counts = {task: _span(n) for task, n in instances.items()}
    if len(set(counts.values())) <= 1:
        text = next(iter(counts.values()), "0")
    else:
        text = ", ".join(f"{TASK_SPECS[task].short} {n}" for task, n in counts.items())
    text += " instance" if counts and set(counts.values()) == {"1"} else " instances"
    if seeds and seed_counts:
        text += f" × {_span(seed_counts)} seed{'' if seed_counts == {1} else 's'}"
    return text


def _span(values: set[int]) -> str:
    return str(min(values)) if len(values) == 1 else f"{min(values)}–{max(values)}"
