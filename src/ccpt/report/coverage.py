"""Warnings when the rows of one table average over different instance sets (their means are not comparable)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from ccpt.methods import method_label
from ccpt.report.names import model_text
from ccpt.spec import TASK_SPECS

if TYPE_CHECKING:  # tables builds the report with these warnings: no import back at run time
    from ccpt.report.tables import FilterRow, GenerativeTable, TypeResult

_ADVICE = "their means are not comparable; `ccpt compare` pairs instances"


def differing_sets(where: str, sets: Mapping[str, frozenset[str]]) -> str | None:
    """One warning line when the named instance sets are not all equal, else None."""
    if len(set(sets.values())) <= 1:
        return None
    counts = ", ".join(f"{name}: {len(ids)}" for name, ids in sets.items())
    common = len(frozenset.intersection(*sets.values()))
    return f"{where}: rows cover different instance sets ({counts} instances; {common} in all of them) — {_ADVICE}."


def coverage_warnings(
    generative: GenerativeTable | None,
    types: Sequence[TypeResult],
    filters: Sequence[FilterRow],
    labels: Mapping[str, str] | None = None,
) -> list[str]:
    """Warnings for Table 3 (per task column), Table 5 (across runs) and Table 7 (without vs with Filter)."""
    out: list[str | None] = []
    if generative is not None:
        several = generative.several_judges
        for task in dict.fromkeys(c.task for c in generative.columns):
            sets = {
                r.name(labels, with_judge=several): r.instances[task] for r in generative.rows if task in r.instances
            }
            out.append(differing_sets(f"{generative.title.split(':')[0]}, {TASK_SPECS[task].label}", sets))
    runs = {f"{model_text(t.model, labels)} / {method_label(t.method)}": t.instances for t in types}
    out.append(differing_sets("Table 5", runs))
    for f in filters:
        if f.with_ is not None:
            run = f"{model_text(f.model, labels)} / {method_label(f.method)}"
            sets = {"without Filter": f.instances[0], "with Filter": f.instances[1]}
            out.append(differing_sets(f"Table 7, {TASK_SPECS[f.task].label}, {run}", sets))
    return [w for w in out if w]
