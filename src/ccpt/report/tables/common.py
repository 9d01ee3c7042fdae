"""What the report's tables share: the tidy results table as a report reads it (models tagged, as-run fills, each
row's judge and method), one cell's summary over instances × seeds, and the fields of a record. Each table is one
module beside this one (the registry: :data:`ccpt.report.tables.TABLES`). Definitions: docs/metrics.md."""

from __future__ import annotations

from typing import Any, Literal

import pandas as pd

from ccpt.methods import Judged, reduction
from ccpt.protocol import fill_failed_samples
from ccpt.results import optional
from ccpt.results.identity import variant_tags
from ccpt.scoring import Relevances
from ccpt.spec import GENERATIVE_TASKS, TASK_SPECS, method_name
from ccpt.stats import Stat, Summary, summarize

# Multi-Oracle per instance and seed: "paper" = each column its own best sample, "single" = all from the best E/C.
OracleReduction = Literal["paper", "single"]
Format = Literal["markdown", "latex", "csv", "json", "html"]
FORMATS: tuple[str, ...] = ("markdown", "latex", "csv", "json", "html")

HUMAN_MODEL = "human"
METRICS: tuple[str, ...] = ("r_hmp", "r_np", "score")
PERCENT = 100.0  # the paper prints scores, relevances and accuracies in percent

SUMMARY_FIELDS = ("mean", "spread", "lo", "hi", "stat", "n_seeds", "n_instances", "n_failed")  # of a Summary
CSV_FIELDS: tuple[str, ...] = (
    "table", "model", "method", "judge", "task", "metric", *SUMMARY_FIELDS, "rank", "count", "model_label", "text",
)  # fmt: skip


def summary_record(summary: Summary) -> dict[str, Any]:
    """A :class:`Summary` as the fields of a record (``ccpt report --format csv``)."""
    return {name: getattr(summary, name) for name in SUMMARY_FIELDS}


def per_instance_values(group: pd.DataFrame, task: str, oracle: OracleReduction = "paper") -> pd.DataFrame:
    """One row per (instance, seed) with r_hmp, r_np, score: several samples reduce the way their method does
    (:func:`ccpt.methods.reduction`)."""
    kind = TASK_SPECS[task].kind
    if not group.duplicated(["instance", "seed"]).any():  # one sample is its own cell under any reduction
        return group[["instance", "seed", *METRICS]].astype({m: float for m in METRICS})
    # The samples of each (method, instance, seed) in row order, gathered in one pass (a pandas group per cell
    # costs milliseconds: seconds for a stored paper's best-of-5 runs); a row missing a key is in no cell.
    cells: dict[tuple[Any, Any, Any], list[Judged]] = {}
    columns = ("method", "instance", "seed", "answer", "r_np", "r_hp", "r_mp")
    for method, instance, seed, answer, *rel in zip(*(group[c] for c in columns), strict=True):
        if not (pd.isna(method) or pd.isna(instance) or pd.isna(seed)):
            judged = Judged(optional(answer, str), Relevances(*(optional(v, float) for v in rel)))
            cells.setdefault((method, instance, seed), []).append(judged)
    records = []
    for (method, instance, seed), samples in cells.items():
        cell = reduction(str(method))(samples, kind, oracle)  # type: ignore[arg-type]
        records.append((instance, seed, cell.r_hmp, cell.r_np, cell.score))
    return pd.DataFrame(records, columns=["instance", "seed", *METRICS]).astype({m: float for m in METRICS})


def cell_summary(
    values: pd.DataFrame, metric: str, stat: Stat, n_boot: int, seed: int, *, scale: float, index: str = "instance"
) -> Summary:
    """The metric over instances × seeds (instances aligned across seeds; a missing cell = failed), × ``scale``."""
    matrix = values.pivot_table(index=index, columns="seed", values=metric, aggfunc="first", dropna=False)
    return summarize(matrix.to_numpy(float), stat, n_boot=n_boot, seed=seed).scaled(scale)


def instance_ids(values: pd.Series) -> frozenset[str]:
    """The instance ids of a column, as text (what the coverage warnings compare)."""
    return frozenset(values.astype(str))


def judge_of(frame: pd.DataFrame) -> pd.Series:
    """Each row's judge identity as text ("" where none is recorded: Task 3, files without a judge)."""
    return frame["judge"].astype("string").fillna("").astype(str) if "judge" in frame else pd.Series("", frame.index)


def generative_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """Rows of Table 3: generative tasks, final answers (no SA-iteration rows, no no-filter ablation)."""
    keep = frame["task"].isin(GENERATIVE_TASKS) & frame["sa_iteration"].isna() & (frame["sa_filter"] != False)  # noqa: E712
    return frame[keep]


def display_methods(frame: pd.DataFrame) -> list[str]:
    """Method names with the filter ablation spelled out (``sa_both`` with sa_filter False → ``sa_both_nofilter``)."""
    flags = frame["sa_filter"] if "sa_filter" in frame else [None] * len(frame)
    return [method_name(m, f) for m, f in zip(frame["method"], flags, strict=True)]


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
