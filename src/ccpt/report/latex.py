"""The report as LaTeX (booktabs tables)."""

from __future__ import annotations

from ccpt.report.display import (
    Cell,
    DisplayTable,
    decorate,
    display_tables,
    generative_display,
    preamble_lines,
    report_provenance_lines,
)
from ccpt.report.tables import RUN_ROW, GenerativeTable, Report
from ccpt.spec import TASK_SPECS

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}",
    "&": r"\&",
    "%": r"\%",
    "$": r"\$",
    "#": r"\#",
    "_": r"\_",
    "{": r"\{",
    "}": r"\}",
    "~": r"\textasciitilde{}",
    "^": r"\textasciicircum{}",
}


def latex_escape(text: str) -> str:
    """Escape LaTeX special characters in plain text."""
    return "".join(_LATEX_SPECIAL.get(ch, ch) for ch in text)


def _latex_text(text: str) -> str:
    return latex_escape(text).replace("±", r"$\pm$").replace("–", "--").replace("—", "---").replace("Δ", r"$\Delta$")


def _latex_cell(cell: Cell) -> str:
    return decorate(_latex_text(cell.text), cell.rank, lambda s: rf"\textbf{{{s}}}", lambda s: rf"\underline{{{s}}}")


def _latex_comment(text: str) -> str:
    return "% " + text.replace("\n", " ")


def generative_latex(table: GenerativeTable) -> str:
    """Table 3 as a booktabs tabular; Multi-Oracle rows grey (needs xcolor with the ``table`` option)."""
    display = generative_display(table)
    tasks = list(dict.fromkeys(c.task for c in table.columns))
    lines = [
        r"% requires \usepackage{booktabs} and \usepackage[table]{xcolor}",
        _latex_comment(display.title),
        r"\begin{tabular}{l" + "c" * len(table.columns) + "}",
        r"\toprule",
        " & " + " & ".join(rf"\multicolumn{{3}}{{c}}{{{latex_escape(TASK_SPECS[t].label)}}}" for t in tasks) + r" \\",
        " ".join(rf"\cmidrule(lr){{{2 + 3 * i}-{4 + 3 * i}}}" for i in range(len(tasks))),
        "Method & " + " & ".join(c.latex for c in table.columns) + r" \\",
        r"\midrule",
    ]
    current = None
    for row, shown in zip(table.rows, display.rows, strict=True):
        if row.kind == RUN_ROW:
            if row.model != current:
                if current is not None:
                    lines.append(r"\midrule")
                lines.append(
                    rf"\multicolumn{{{1 + len(table.columns)}}}{{l}}"
                    rf"{{\textit{{{latex_escape(row.model)}}}}} \\"
                )
                current = row.model
        else:
            lines.append(r"\midrule")
            current = None
        prefix = r"\rowcolor{gray!15}" if shown.oracle else ""
        method, *cells = shown.cells[1:]
        lines.append(prefix + _latex_cell(method) + " & " + " & ".join(_latex_cell(c) for c in cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    return "\n".join(lines)


def table_latex(table: DisplayTable) -> str:
    """One display table as a booktabs tabular, its title and notes as comments."""
    lines = [
        _latex_comment(table.title),
        r"\begin{tabular}{l" + "c" * (len(table.header) - 1) + "}",
        r"\toprule",
        " & ".join(_latex_text(h) for h in table.header) + r" \\",
        r"\midrule",
    ]
    for row in table.rows:
        prefix = r"\rowcolor{gray!15}" if row.oracle else ""
        lines.append(prefix + " & ".join(_latex_cell(c) for c in row.cells) + r" \\")
    lines += [r"\bottomrule", r"\end{tabular}"]
    lines += [_latex_comment(note) for note in table.notes]
    return "\n".join(lines)


def render_latex(report: Report) -> str:
    """Every table as a LaTeX fragment, with the notes and provenance as comments."""
    parts = ["\n".join(_latex_comment(line) for line in preamble_lines(report))]
    if report.generative:
        parts.append(generative_latex(report.generative))
    parts += [table_latex(t) for t in display_tables(report) if t.key != "table3"]
    if report.provenance:
        parts.append("\n".join(_latex_comment(line) for line in ["Provenance:", *report_provenance_lines(report)]))
    return "\n\n".join(parts) + "\n"
