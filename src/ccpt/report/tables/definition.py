"""What a report table declares (:class:`ReportTable`): how it is computed from the tidy results table, shown as
display tables, written as records, and which instance sets its rows must share. The ``Report``, its warnings and
every renderer read tables only through these declarations (CONTRIBUTING.md, "Adding a table")."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ccpt.report.display import DisplayTable
from ccpt.report.tables.common import OracleReduction
from ccpt.stats import Stat

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

# Where a table's rows must cover one instance set: (where, row name → instance ids); else a warning says so.
Coverage = list[tuple[str, dict[str, frozenset[str]]]]


@dataclass(frozen=True)
class TableOptions:
    """The options of ``build_report`` every table's ``compute`` gets."""

    stat: Stat = "sem"
    oracle: OracleReduction = "paper"
    dataset: CCPTDataset | None = None
    rank_scope: Literal["model", "all"] = "model"
    n_boot: int = 10_000
    seed: int = 0


def _none(*_: Any) -> list[Any]:
    return []


@dataclass(frozen=True)
class ReportTable:
    """One report table. ``name`` is the ``Report`` attribute holding what ``compute`` returns (``report.failures``);
    ``display`` gives the display tables every format prints (none when empty), ``records`` its numbers in long
    format (the CSV/JSON rows, :data:`~ccpt.report.tables.common.CSV_FIELDS`), ``coverage`` the instance sets its
    rows must share, ``notes`` the lines it adds to the report's notes."""

    name: str
    compute: Callable[[pd.DataFrame, TableOptions], Any]
    display: Callable[[Any, Mapping[str, str]], list[DisplayTable]]
    records: Callable[[Any], list[dict[str, Any]]]
    coverage: Callable[[Any, Mapping[str, str]], Coverage] = _none
    notes: Callable[[Any, TableOptions], list[str]] = _none
