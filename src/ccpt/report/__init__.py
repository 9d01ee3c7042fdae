"""Reports: the paper's tables (:mod:`~ccpt.report.tables`) as display tables (:mod:`~ccpt.report.display`) in a
:class:`Report`, rendered as markdown, LaTeX, CSV, JSON or HTML; ``ccpt compare`` (:mod:`~ccpt.report.compare`);
figures in :mod:`~ccpt.report.figures` (matplotlib, never imported here). Definitions: docs/metrics.md."""

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
