"""The report as markdown."""

from __future__ import annotations

from ccpt.io.jsonout import provenance_lines
from ccpt.report.build import Report, display_tables, preamble_lines
from ccpt.report.display import Cell, DisplayTable, decorate
from ccpt.report.tables.generative import GenerativeTable, generative_display


def _md_escape(text: str) -> str:
    # Model names and answers are untrusted text, and Markdown renderers pass raw HTML through: a backslash before
    # every "<" opens no tag (CommonMark renders it as "<"), and stays readable where the report is printed raw.
    return text.replace("\\", "\\\\").replace("<", r"\<").replace("|", r"\|").replace("\n", " ")


def _md_list(lines: list[str]) -> str:
    return "\n".join(f"- {_md_escape(line)}" for line in lines)


def _md_cell(cell: Cell) -> str:
    return decorate(_md_escape(cell.text), cell.rank, lambda s: f"**{s}**", lambda s: f"<u>{s}</u>")


def table_markdown(table: DisplayTable) -> str:
    """One display table in markdown (best **bold**, second <u>underlined</u>), its notes below it."""
    header = [_md_escape(h) for h in table.header]
    lines = [f"### {_md_escape(table.title)}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(_md_cell(c) for c in row.cells) + " |" for row in table.rows]
    return "\n\n".join(["\n".join(lines), *[_md_escape(n) for n in table.notes]])


def generative_markdown(table: GenerativeTable) -> str:
    """Table 3 layout in markdown (best **bold**, second <u>underlined</u>)."""
    return table_markdown(generative_display(table))


def render_markdown(report: Report) -> str:
    """The whole report as markdown."""
    parts = ["# CCPT report", _md_list(preamble_lines(report))]
    parts += [table_markdown(table) for table in display_tables(report)]
    if report.provenance:
        parts.append("Provenance:\n" + _md_list(provenance_lines(report.provenance)))
    return "\n\n".join(parts) + "\n"
