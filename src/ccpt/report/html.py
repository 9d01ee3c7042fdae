"""The report as one self-contained HTML page (every text escaped; figures embedded)."""

from __future__ import annotations

import html
from collections.abc import Sequence
from typing import Any

from ccpt.io.jsonout import provenance_lines
from ccpt.report.build import Report, display_tables, preamble_lines
from ccpt.report.display import DisplayTable, decorate, examples_display

_CSS = """body{font-family:system-ui,sans-serif;max-width:1200px;margin:2em auto;padding:0 1em;color:#222}
table{border-collapse:collapse;margin:1em 0;font-size:0.9em}
th,td{border-bottom:1px solid #ccc;padding:3px 8px;text-align:right;vertical-align:top}
th:first-child,td:first-child,.l{text-align:left}tr.oracle{background:#eee}
th.ans{text-align:left}td.ans{text-align:left;max-width:40em;white-space:pre-wrap;font-family:monospace}
.ans,.id{overflow-wrap:anywhere}
.nw{white-space:nowrap}img{max-width:100%}
li.warn{color:#a40000;font-weight:bold}figure{margin:1.5em 0}figcaption{font-size:0.9em;color:#444}"""


def _h(text: Any) -> str:
    return html.escape("" if text is None else str(text), quote=True)


def _cell(tag: str, content: str, classes: Sequence[str], j: int) -> str:
    cls = classes[j] if j < len(classes) else ""
    return f'<{tag} class="{cls}">{content}</{tag}>' if cls else f"<{tag}>{content}</{tag}>"


# Example answers: text left-aligned, the raw model text monospace with its line breaks; scores never wrap. Names
# of models, judges and instances (no spaces) and the raw text may wrap inside a word: thirteen columns of them
# unwrapped ran past the page.
_EXAMPLE_CLASSES = ("l nw", "l id", "l", "", "l id", "l", "l", "ans", "l", "nw", "nw", "l nw", "l id")


def table_html(table: DisplayTable, classes: Sequence[str] | None = None) -> str:
    """One display table as HTML (every text escaped), its notes as paragraphs; ``classes`` gives column j the
    class [j] (default: "l id", aligned left and wrapped inside a name where it must, for its text columns)."""
    classes = ["l id" if text else "" for text in table.text_columns()] if classes is None else classes
    rows = ["<tr>" + "".join(_cell("th", _h(c), classes, j) for j, c in enumerate(table.header)) + "</tr>"]
    for row in table.rows:
        cells = [decorate(_h(c.text), c.rank, lambda s: f"<b>{s}</b>", lambda s: f"<u>{s}</u>") for c in row.cells]
        tr = '<tr class="oracle">' if row.oracle else "<tr>"
        rows.append(tr + "".join(_cell("td", c, classes, j) for j, c in enumerate(cells)) + "</tr>")
    notes = "".join(f"<p>{_h(note)}</p>" for note in table.notes)
    return f"<h2>{_h(table.title)}</h2><table>{''.join(rows)}</table>{notes}"


def render_html(report: Report, figures: Sequence[tuple[str, str]] = ()) -> str:
    """One self-contained HTML file, every text escaped; ``figures`` are (caption, data-URI or inline SVG) pairs."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>CCPT report</title>",
        f"<style>{_CSS}</style></head><body><h1>CCPT report</h1><ul>",
    ]
    lines, warned = preamble_lines(report), len(report.warnings)  # the warnings come first
    parts += [f"<li class='warn'>{_h(line)}</li>" for line in lines[:warned]]
    parts += [f"<li>{_h(line)}</li>" for line in lines[warned:]]
    parts.append("</ul>")
    parts += [table_html(table) for table in display_tables(report)]
    for caption, payload in figures:
        img = payload if payload.lstrip().startswith("<svg") else f"<img alt='{_h(caption)}' src='{_h(payload)}'>"
        parts.append(f"<figure>{img}<figcaption>{_h(caption)}</figcaption></figure>")
    if report.examples is not None and not report.examples.empty:
        parts.append(table_html(examples_display(report.examples, report.labels), _EXAMPLE_CLASSES))
    if report.provenance:
        items = "".join(f"<li>{_h(line)}</li>" for line in provenance_lines(report.provenance))
        parts.append(f"<details><summary>Provenance</summary><ul>{items}</ul></details>")
    parts.append("</body></html>")
    return "\n".join(parts)
