"""What every reader of results shares: the tidy frame builder, score (re)computation, and what "missing" means for
a cell. Columns are :data:`ccpt.rows.COLUMNS`."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pandas as pd

from ccpt.rows import COLUMNS, FLOAT_COLUMNS
from ccpt.scoring import Relevances
from ccpt.spec import TASK_SPECS

LOG_DONE = "_log_done"  # whether the row's log finished (success/error) rather than was interrupted


def tidy_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with :data:`COLUMNS` in order and numeric dtypes (None → NaN for relevances)."""
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out[list(FLOAT_COLUMNS)] = out[list(FLOAT_COLUMNS)].astype(float)
    for count in ("judge_failures", "invalid_cells"):
        out[count] = out[count].fillna(0).astype(int)
    return out


def missing_columns(columns: Iterable[str], required: Iterable[str]) -> list[str]:
    """The ``required`` columns not among ``columns``, in order."""
    have = set(columns)
    return [c for c in required if c not in have]


T = TypeVar("T")


def optional(value: Any, cast: Callable[[Any], T]) -> T | None:
    """``cast(value)``, or None for a missing results cell (None, or NaN)."""
    return None if value is None or (isinstance(value, float) and math.isnan(value)) else cast(value)


def set_scores(row: dict[str, Any], rel: Relevances) -> None:
    """Fill a row's relevances and its task's score (E or C) from ``rel``, always through :mod:`ccpt.scoring`."""
    kind = TASK_SPECS[row["task"]].kind
    row.update(r_np=rel.r_np, r_hp=rel.r_hp, r_mp=rel.r_mp, r_hmp=rel.r_hmp, score=rel.score(kind))  # type: ignore[arg-type]


DERIVED_TOLERANCE = 1e-9  # a stored derived value within this of the recomputed one agrees


def recompute(row: dict[str, Any]) -> list[tuple[float, str]]:
    """Recompute a tidy row's ``r_hmp`` and ``score`` in place (a Task-3 row without a gold type loses its
    prediction); returns (|stored − recomputed|, column) of each disagreeing stored value (inf: one missing)."""
    stored = {"r_hmp": row.get("r_hmp"), "score": row.get("score")}
    if TASK_SPECS[row["task"]].generative:
        set_scores(row, Relevances(row.get("r_np"), row.get("r_hp"), row.get("r_mp")))
    else:
        row.update(r_hmp=None, score=None)
        if row.get("gold_type") is None:
            row["pred_type"] = None
    deltas = {
        name: math.inf if before is None or row[name] is None else abs(before - row[name])
        for name, before in stored.items()
        if before is not None or row[name] is not None
    }
    return [(delta, name) for name, delta in deltas.items() if delta > DERIVED_TOLERANCE]


def derived_note(file: str, mismatches: list[tuple[float, int, str]], derived: str, sources: str) -> str:
    """The note reporting stored derived cells that disagree with the recomputed ones: (|Δ|, row, column)."""
    delta, row, name = max(mismatches)
    shown = "one of them missing" if math.isinf(delta) else f"difference {delta:.3g}"
    return (
        f"{file}: the stored {derived} differ from the values recomputed from {sources} in {len(mismatches)} "
        f"cell(s) (largest: row {row}, column {name!r}, {shown}); ccpt uses the recomputed values"
    )
