"""Table 5: property type prediction per (model, method): the row-normalised confusion matrix (paper order), the
Unparsed share, accuracy over seeds, has/lacks-property accuracies."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import pandas as pd

from ccpt.methods import Judged, method_label, reduction
from ccpt.report.display import (
    DisplayRow,
    DisplayTable,
    count_cell,
    format_summary,
    pct_cell,
    share_text,
    text_cell,
)
from ccpt.report.names import model_text
from ccpt.report.tables.common import PERCENT, cell_summary, instance_ids, summary_record
from ccpt.report.tables.definition import Coverage, ReportTable, TableOptions
from ccpt.results import optional
from ccpt.scoring import Classification, classify
from ccpt.spec import TYPE_PREDICTION
from ccpt.stats import Stat, Summary


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
        acc = cell_summary(correct, "correct", stat, n_boot, seed, scale=PERCENT, index="item")
        per_type = correct.drop_duplicates("item")["gold_type"].astype(str)
        counts = tuple(int((per_type == label).sum()) for label in cls.labels)
        out.append(TypeResult(str(model), str(method), cls, acc, instance_ids(correct["item"]), counts))
    return out


def types_display(res: TypeResult, labels: Mapping[str, str] | None = None) -> DisplayTable:
    """Table 5 for one (model, method): row-normalised confusion matrix, Unparsed share, n, accuracies below."""
    cls = res.classification
    pct = cls.row_percent()
    header = ("Actual \\ Predicted", *[label.capitalize() for label in cls.labels], "Unparsed", "n")
    rows = []
    for i, label in enumerate(cls.labels):
        cells = [text_cell(label.capitalize()), *[pct_cell(v) for v in (*pct[i], res.unparsed_percent(i))]]
        rows.append(DisplayRow((label,), (*cells, count_cell(res.type_n(i)))))
    seeds = res.accuracy.n_seeds
    note = (
        f"Accuracy: {format_summary(res.accuracy)}% (n = {len(res.instances) or cls.n} instances, "
        f"{seeds} seed{'s' if seeds != 1 else ''}); has property (green): "
        f"{share_text(100 * cls.has_property_accuracy, '%')}; lacks property (red): "
        f"{share_text(100 * cls.lacks_property_accuracy, '%')}; "
        f"binary (mean of both): {share_text(100 * cls.binary_accuracy, '%')}."
    )
    title = f"Table 5: property type prediction — {model_text(res.model, labels)} / {method_label(res.method)}"
    return DisplayTable(f"table5:{res.model}:{res.method}", title, header, tuple(rows), (note,))


def _records(results: list[TypeResult]) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for res in results:
        base = {"table": "table5", "model": res.model, "method": res.method, "task": TYPE_PREDICTION}
        cls = res.classification
        out.append({**base, "metric": "accuracy", **summary_record(res.accuracy), "count": len(res.instances)})
        for name in ("has_property_accuracy", "lacks_property_accuracy", "binary_accuracy"):
            out.append({**base, "metric": name, "mean": PERCENT * getattr(cls, name)})
        pct = cls.row_percent()
        for i, actual in enumerate(cls.labels):
            for j, predicted in enumerate(cls.labels):
                metric = f"confusion:{actual}->{predicted}"
                out.append({**base, "metric": metric, "mean": float(pct[i, j]), "count": int(cls.counts[i, j])})
            share, count = res.unparsed_percent(i), int(cls.unparsed[i])
            out.append({**base, "metric": f"unparsed:{actual}", "mean": float(share), "count": count})
            out.append({**base, "metric": f"n:{actual}", "count": res.type_n(i)})
    return out


def _coverage(results: list[TypeResult], labels: Mapping[str, str]) -> Coverage:
    """Across runs: each (model, method)'s instances."""
    return [("Table 5", {f"{model_text(t.model, labels)} / {method_label(t.method)}": t.instances for t in results})]


def _compute(frame: pd.DataFrame, o: TableOptions) -> list[TypeResult]:
    return table5(frame, stat=o.stat, n_boot=o.n_boot, seed=o.seed)


TABLE = ReportTable(
    "types",
    _compute,
    lambda results, labels: [types_display(res, labels) for res in results],
    _records,
    _coverage,
)
