"""Reports: the paper's tables from the tidy results table, rendered as markdown, LaTeX, CSV, JSON or HTML.

- :mod:`~ccpt.report.tables` computes the numbers (Tables 3/4, 5, 6, 7, failures);
- :mod:`~ccpt.report.display` turns each table into one display table that every renderer prints;
- :mod:`~ccpt.report.build` holds them in a :class:`Report` (:func:`build_report`; :func:`report_from_paths` from result
  files, as the CLI does), above the tables and their views;
- :mod:`~ccpt.report.markdown`, :mod:`~ccpt.report.latex`, :mod:`~ccpt.report.records` (CSV, JSON) and
  :mod:`~ccpt.report.html` render it; :func:`render` picks one;
- :mod:`~ccpt.report.compare` is ``ccpt compare`` (paired differences between two runs);
- :mod:`~ccpt.report.figures` draws the figures (matplotlib; imported on its own, never by this package).

Definitions: docs/metrics.md.
"""

from __future__ import annotations

from ccpt.report.build import Report, build_report, report_from_paths
from ccpt.report.compare import Comparison, compare_runs
from ccpt.report.display import (
    Cell,
    DisplayRow,
    DisplayTable,
    display_tables,
    failures_display,
    filters_display,
    generative_display,
    iterations_display,
    types_display,
    usage_display,
    usage_records,
)
from ccpt.report.html import generative_html, render_html, table_html
from ccpt.report.latex import generative_latex, latex_escape, render_latex, table_latex
from ccpt.report.markdown import generative_markdown, render_markdown, table_markdown
from ccpt.report.notes import frame_provenance, oracle_note, protocol_note, protocols_of, stat_note
from ccpt.report.records import CSV_FIELDS, render_csv, render_json, report_records
from ccpt.report.render import render
from ccpt.report.tables import (
    FORMATS,
    GOLD_LABEL,
    HUMAN_MODEL,
    HUMAN_ROW,
    METRICS,
    RUN_ROW,
    STORED_GOLD_ROW,
    Column,
    FailureRow,
    FilterRow,
    Format,
    GenerativeTable,
    IterationTable,
    OracleReduction,
    Row,
    RowKind,
    TypeResult,
    display_methods,
    failures,
    format_summary,
    generative_rows,
    gold_row,
    per_instance_values,
    score_name,
    table3,
    table5,
    table6,
    table7,
    task_columns,
)
from ccpt.spec import TYPE_LABELS

__layer__ = "report"  # reports read results, never eval/ (tests/test_layering.py)

__all__ = [
    "CSV_FIELDS",
    "FORMATS",
    "GOLD_LABEL",
    "HUMAN_MODEL",
    "HUMAN_ROW",
    "METRICS",
    "RUN_ROW",
    "STORED_GOLD_ROW",
    "TYPE_LABELS",
    "Cell",
    "Column",
    "Comparison",
    "DisplayRow",
    "DisplayTable",
    "FailureRow",
    "FilterRow",
    "Format",
    "GenerativeTable",
    "IterationTable",
    "OracleReduction",
    "Report",
    "Row",
    "RowKind",
    "TypeResult",
    "build_report",
    "compare_runs",
    "display_methods",
    "display_tables",
    "failures",
    "failures_display",
    "filters_display",
    "format_summary",
    "frame_provenance",
    "generative_display",
    "generative_html",
    "generative_latex",
    "generative_markdown",
    "generative_rows",
    "gold_row",
    "iterations_display",
    "latex_escape",
    "oracle_note",
    "per_instance_values",
    "protocol_note",
    "protocols_of",
    "render",
    "render_csv",
    "render_html",
    "render_json",
    "render_latex",
    "render_markdown",
    "report_from_paths",
    "report_records",
    "score_name",
    "stat_note",
    "table3",
    "table5",
    "table6",
    "table7",
    "table_html",
    "table_latex",
    "table_markdown",
    "task_columns",
    "types_display",
    "usage_display",
    "usage_records",
]
