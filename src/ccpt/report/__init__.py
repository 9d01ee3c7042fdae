"""Reports: the paper's tables (:mod:`~ccpt.report.tables`) as display tables (:mod:`~ccpt.report.display`) in a
:class:`Report`, rendered as markdown, LaTeX, CSV, JSON or HTML; ``ccpt compare`` (:mod:`~ccpt.report.compare`);
figures in :mod:`~ccpt.report.figures` (matplotlib, never imported here). Definitions: docs/metrics.md."""

from __future__ import annotations

from collections.abc import Sequence

from ccpt.errors import CcptError
from ccpt.report.build import Report, build_report, report_from_paths
from ccpt.report.compare import Comparison, compare_runs
from ccpt.report.html import render_html
from ccpt.report.latex import render_latex
from ccpt.report.markdown import generative_markdown, render_markdown
from ccpt.report.notes import frame_provenance
from ccpt.report.records import render_csv, render_json
from ccpt.report.tables import FORMATS, Format, failures, table3, table5

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


def render(report: Report, fmt: Format, figures: Sequence[tuple[str, str]] = ()) -> str:
    """Render the report in one of :data:`FORMATS`."""
    if fmt == "html":
        return render_html(report, figures)
    renderers = {"markdown": render_markdown, "latex": render_latex, "csv": render_csv, "json": render_json}
    if fmt not in renderers:
        raise CcptError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](report)
