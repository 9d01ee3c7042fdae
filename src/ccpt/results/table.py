"""What every reader of results shares: the run key that tells reruns apart, the tidy frame builder, and
what "missing" means for a cell. Columns are :data:`ccpt.rows.COLUMNS`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

import pandas as pd

from ccpt.rows import COLUMNS, FLOAT_COLUMNS
from ccpt.scoring import Relevances
from ccpt.spec import TASK_SPECS

# What identifies one answer across logs: the same key in two logs is the same run done twice. The judge
# is the log's grader role (LOG_JUDGE), not the row's ``judge``: that is empty on a failed sample, and a
# resumed run's answer must replace the failed or stale one of the killed run (counted once).
LOG_JUDGE = "_log_judge"
LOG_DONE = "_log_done"  # whether the row's log finished (success/error) rather than was interrupted
RUN_KEY = ("task", "model", "method", "sa_filter", LOG_JUDGE, "seed", "instance", "sample", "sa_iteration", "protocol")


def tidy_frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with :data:`COLUMNS` in order and numeric dtypes (None → NaN for relevances)."""
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out[list(FLOAT_COLUMNS)] = out[list(FLOAT_COLUMNS)].astype(float)
    out["judge_failures"] = out["judge_failures"].fillna(0).astype(int)
    return out


def missing_columns(columns: Iterable[str], required: Iterable[str]) -> list[str]:
    """The ``required`` columns not among ``columns``, in order."""
    have = set(columns)
    return [c for c in required if c not in have]


T = TypeVar("T")


def optional(value: Any, cast: Callable[[Any], T]) -> T | None:
    """``cast(value)``, or None for a missing cell: None, or NaN (how pandas stores a missing value).

    The one place that decides what "missing" means for a results cell (relevances, labels, answers).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return cast(value)


def set_scores(row: dict[str, Any], rel: Relevances) -> None:
    """Fill a row's relevances and its task's score (E or C) from ``rel``, always through :mod:`ccpt.scoring`."""
    kind = TASK_SPECS[row["task"]].kind
    row.update(r_np=rel.r_np, r_hp=rel.r_hp, r_mp=rel.r_mp, r_hmp=rel.r_hmp, score=rel.score(kind))  # type: ignore[arg-type]
