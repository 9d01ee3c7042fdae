"""The report as LaTeX: each table a booktabs ``table`` float (``table*`` when wide) with caption and label. Every
text is escaped for pdfLaTeX: specials, the tables' symbols, accents as commands, anything else ``[U+XXXX]``."""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Sequence

from ccpt.io.jsonout import provenance_lines
from ccpt.report.build import Report, display_tables, preamble_lines
from ccpt.report.display import Cell, DisplayTable, decorate
from ccpt.report.names import file_stem, model_text, unique_name
from ccpt.report.notes import stat_note
from ccpt.report.tables.generative import RUN_ROW, GenerativeTable
from ccpt.spec import TASK_SPECS

PACKAGES = r"% requires \usepackage{booktabs}, \usepackage{graphicx} and \usepackage[table]{xcolor}"
# More columns than this: a two-column-wide float (table*). Every table shrinks to the line width if wider.
WIDE_COLUMNS = 7

_LATEX_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_", "{": r"\{", "}": r"\}",
    "~": r"\textasciitilde{}", "^": r"\textasciicircum{}", "<": r"\textless{}", ">": r"\textgreater{}",
    "|": r"\textbar{}",
}  # fmt: skip
_SYMBOLS = {
    "±": r"$\pm$", "–": "--", "—": "---", "Δ": r"$\Delta$", "√": r"$\surd$", "×": r"$\times$", "↑": r"$\uparrow$",
    "↓": r"$\downarrow$", "→": r"$\rightarrow$", "≤": r"$\leq$", "≥": r"$\geq$", "·": r"$\cdot$", "…": r"\ldots{}",
    "“": "``", "”": "''", "‘": "`", "’": "'",
    "ß": r"\ss{}", "æ": r"\ae{}", "Æ": r"\AE{}", "œ": r"\oe{}", "Œ": r"\OE{}", "ø": r"\o{}", "Ø": r"\O{}",
    "ł": r"\l{}", "Ł": r"\L{}", "ı": r"\i{}",
}  # fmt: skip
# Combining marks with an accent command of every font encoding (OT1 included).
_ACCENTS = {
    "\u0300": "`", "\u0301": "'", "\u0302": "^", "\u0303": "~", "\u0304": "=", "\u0306": "u", "\u0307": ".",
    "\u0308": '"', "\u030a": "r", "\u030b": "H", "\u030c": "v", "\u0327": "c",
}  # fmt: skip


def _latex_char(ch: str) -> str:
    if text := _LATEX_SPECIAL.get(ch) or _SYMBOLS.get(ch):
        return text
    if " " <= ch <= "~":
        return ch
    if ch.isspace() or unicodedata.category(ch).startswith("C"):
        return " "  # line breaks and control characters: a line break would end a comment or a table row
    base, *marks = unicodedata.normalize("NFD", ch)
    if len(marks) == 1 and marks[0] in _ACCENTS and base.isascii() and base.isalpha():
        return "\\" + _ACCENTS[marks[0]] + "{" + ("\\i" if base == "i" else base) + "}"
    return f"[U+{ord(ch):04X}]"


def latex_escape(text: str) -> str:
    """Plain text as pdfLaTeX-safe text (see the module docstring)."""
    return "".join(_latex_char(ch) for ch in text)


def _latex_cell(cell: Cell) -> str:
    return decorate(latex_escape(cell.text), cell.rank, lambda s: rf"\textbf{{{s}}}", lambda s: rf"\underline{{{s}}}")


def _latex_comment(text: str) -> str:
    return "% " + " ".join(text.splitlines())


def _float(tabular: list[str], columns: int, table: DisplayTable, notes: Sequence[str], taken: set[str]) -> str:
    """A tabular in a table float (shrunk to the line width if wider), its title above; the caption is the title
    without its "Table N:" (LaTeX numbers floats itself), then ``notes``; the label is unique among ``taken``."""
    env = "table*" if columns > WIDE_COLUMNS else "table"
    title = re.sub(r"^Table \d+:\s*", "", table.title)
    title = title[:1].upper() + title[1:]
    caption = " ".join([title.rstrip(".") + ".", *notes])
    label = unique_name("tab:ccpt-" + file_stem(table.key.replace(":", "-")), taken)
    return "\n".join(
        [
            _latex_comment(table.title),
            rf"\begin{{{env}}}[tbp]",
            r"\centering",
            r"\resizebox{\ifdim\width>\linewidth\linewidth\else\width\fi}{!}{%",
            *tabular,
            "}",
            rf"\caption{{{latex_escape(caption)}}}",
            rf"\label{{{label}}}",
            rf"\end{{{env}}}",
        ]
    )


def generative_tabular(
    table: GenerativeTable, display: DisplayTable, labels: dict[str, str] | None = None
) -> list[str]:
    """Table 3's tabular: a header group per task, each model's rows under its name, Multi-Oracle rows grey."""
    tasks = list(dict.fromkeys(c.task for c in table.columns))
    lines = [
        r"\begin{tabular}{l" + "c" * len(table.columns) + "}",
        r"\toprule",
        " & " + " & ".join(rf"\multicolumn{{3}}{{c}}{{{latex_escape(TASK_SPECS[t].label)}}}" for t in tasks) + r" \\",
        " ".join(rf"\cmidrule(lr){{{2 + 3 * i}-{4 + 3 * i}}}" for i in range(len(tasks))),
        "Method & " + " & ".join(c.latex for c in table.columns) + r" \\",
        r"\midrule",
    ]
    current = None
    for row, shown in zip(table.rows, display.rows, strict=True):
        if row.kind != RUN_ROW:
            lines.append(r"\midrule")
            current = None
        elif row.model != current:
            if current is not None:
                lines.append(r"\midrule")
            name = latex_escape(model_text(row.model, labels))
            lines.append(rf"\multicolumn{{{1 + len(table.columns)}}}{{l}}{{\textit{{{name}}}}} \\")
            current = row.model
        prefix = r"\rowcolor{gray!15}" if shown.oracle else ""
        lines.append(prefix + " & ".join(_latex_cell(c) for c in shown.cells[1:]) + r" \\")  # no Model column
    return [*lines, r"\bottomrule", r"\end{tabular}"]


def table_tabular(table: DisplayTable) -> list[str]:
    """One display table's booktabs tabular."""
    columns = "".join("l" if j == 0 or text else "c" for j, text in enumerate(table.text_columns()))
    lines = [
        r"\begin{tabular}{" + columns + "}",
        r"\toprule",
        " & ".join(latex_escape(h) for h in table.header) + r" \\",
        r"\midrule",
    ]
    for row in table.rows:
        prefix = r"\rowcolor{gray!15}" if row.oracle else ""
        lines.append(prefix + " & ".join(_latex_cell(c) for c in row.cells) + r" \\")
    return [*lines, r"\bottomrule", r"\end{tabular}"]


def render_latex(report: Report) -> str:
    """Every table as a LaTeX float with caption and label; the notes and provenance as comments."""
    parts = ["\n".join([PACKAGES, *(_latex_comment(line) for line in preamble_lines(report))])]
    taken: set[str] = set()
    for table in display_tables(report):
        # Table 3 has its own layout (task header groups, model rows), what ± is in its caption; no Model column.
        if table.key == "table3" and report.generative:
            tabular = generative_tabular(report.generative, table, report.labels)
            columns, notes = len(table.header) - 1, [stat_note(report.stat), *table.notes]
        else:
            tabular, columns, notes = table_tabular(table), len(table.header), table.notes
        parts.append(_float(tabular, columns, table, notes, taken))
    if report.provenance:
        parts.append("\n".join(_latex_comment(line) for line in ["Provenance:", *provenance_lines(report.provenance)]))
    return "\n\n".join(parts) + "\n"
