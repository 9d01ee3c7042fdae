"""One entry point for every format."""

from __future__ import annotations

from collections.abc import Sequence

from ccpt.errors import CcptError
from ccpt.report.build import Report
from ccpt.report.html import render_html
from ccpt.report.latex import render_latex
from ccpt.report.markdown import render_markdown
from ccpt.report.records import render_csv, render_json
from ccpt.report.tables import FORMATS, Format


def render(report: Report, fmt: Format, figures: Sequence[tuple[str, str]] = ()) -> str:
    """Render the report in one of :data:`FORMATS`."""
    if fmt == "html":
        return render_html(report, figures)
    renderers = {"markdown": render_markdown, "latex": render_latex, "csv": render_csv, "json": render_json}
    if fmt not in renderers:
        raise CcptError(f"unknown report format {fmt!r}; choose one of {', '.join(FORMATS)}")
    return renderers[fmt](report)
