"""The report's tables, one module each: it computes its table from the tidy results table and declares how it is
shown and recorded (:class:`~ccpt.report.tables.definition.ReportTable`). :data:`TABLES` is the registry, in print
order: the ``Report`` and every renderer read it and nothing else (CONTRIBUTING.md, "Adding a table")."""

from __future__ import annotations

from ccpt.report.display import metric_name, score_name
from ccpt.report.tables import failure_counts, filters, generative, iterations, type_prediction, usage
from ccpt.report.tables.common import (
    FORMATS,
    HUMAN_MODEL,
    Format,
    OracleReduction,
    as_reported,
    display_methods,
    generative_rows,
    judge_of,
    per_instance_values,
    protocols_of,
    tagged_models,
)
from ccpt.report.tables.definition import ReportTable, TableOptions
from ccpt.report.tables.failure_counts import FailureRow, failures
from ccpt.report.tables.filters import FilterRow, table7
from ccpt.report.tables.generative import RUN_ROW, GenerativeTable, Row, rows_by_judge, table3
from ccpt.report.tables.iterations import IterationTable, table6
from ccpt.report.tables.type_prediction import TypeResult, table5, type_predictions

TABLES: tuple[ReportTable, ...] = (
    generative.TABLE,  # Table 3
    type_prediction.TABLE,  # Table 5, one per (model, method)
    iterations.TABLE,  # Table 6, one per (model, method)
    filters.TABLE,  # Table 7
    failure_counts.TABLE,
    usage.TABLE,
)

__all__ = [
    "FORMATS", "HUMAN_MODEL", "RUN_ROW", "TABLES", "FailureRow", "FilterRow", "Format", "GenerativeTable",
    "IterationTable", "OracleReduction", "ReportTable", "Row", "TableOptions", "TypeResult", "as_reported",
    "display_methods", "failures", "generative_rows", "judge_of", "metric_name", "per_instance_values",
    "protocols_of", "rows_by_judge", "score_name", "table3", "table5", "table6", "table7", "tagged_models",
    "type_predictions",
]  # fmt: skip
