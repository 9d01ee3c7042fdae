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
from ccpt.report.markdown import generative_markdown, render_markdown
from ccpt.report.notes import frame_provenance
from ccpt.report.records import render_json
from ccpt.report.render import render
from ccpt.report.tables import FORMATS, failures, table3, table5

__layer__ = "report"  # reports read results, never eval/ (tests/test_layering.py)

__all__ = [
    "FORMATS",
    "Comparison",
    "Report",
    "build_report",
    "compare_runs",
    "failures",
    "frame_provenance",
    "generative_markdown",
    "render",
    "render_json",
    "render_markdown",
    "report_from_paths",
    "table3",
    "table5",
]
