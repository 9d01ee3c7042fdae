"""The catalogue of every file format ccpt reads, and docs/schemas.md rendered from its JSON schemas:
``python -m ccpt.schemas.docs > docs/schemas.md`` (tests/test_schemas_docs.py checks it is up to date).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping
from typing import Any

from ccpt.schemas.base import DERIVED, KEY, NONEMPTY, REQUIRED_TEXT, ROLE, FileFormat, TableSchema

__layer__ = "pipeline"  # it documents the pipeline TOML too, so it imports the pipeline (tests/test_layering.py)

INTRO = """# File schemas

Every file ccpt reads has one declared schema, in `src/ccpt/schemas/`; this page is generated from those
declarations (`python -m ccpt.schemas.docs > docs/schemas.md`; a test fails when the two differ).

**How a file is checked.** What a schema rejects is one line naming the file, the row and the column (rows are
counted from 0 after the header, as `test_index.json` counts them; in a spreadsheet, row *r* is line *r* + 2).
In a file with one row per sample (the authors' result files, tidy tables, judge-score pairs) a rejected value is
set aside — never used, never replaced — and counted as an *invalid cell* of its sample, which the Failures
table shows; the rest of the file is read. A rejected *key* cell (what identifies a sample, a rater, a pair) cannot
be set aside: it rejects the file. Sheets filled by people (solver and rating sheets, annotation answers) are
rejected at their first bad cell, since the person who filled them can fix it. *Derived* columns are recomputed
from the others, never read; a stored value that disagrees is reported. Every number must be finite: `nan`,
`inf` and `1e309` are rejected wherever a number is expected. An empty cell is "missing" (not judged, not
answered); it is not a rejected cell, except where a column below says it must not be empty.

**Why pydantic.** The schemas are pydantic 2 models (`TypedDict` rows for tables, `BaseModel`s for configuration
files). It is already installed with Inspect AI (no new dependency), its Rust core validates a 90,000-row tidy
table in about 0.3 s (docs/benchmarks.md), each error carries the field it belongs to (which is what turns into
"row, column"), it can validate cell by cell and set a bad cell aside, and its JSON schema is what this page is
rendered from. pandera, the usual choice for data frames, would add a dependency whose import alone costs more
than ccpt's core, and validates whole columns, where ccpt needs per-sample tolerance. The schemas are imported
only when a file is read: `import ccpt` stays cheap.
"""


def catalogue() -> list[FileFormat]:
    """Every declared format, in the order of the page."""
    from ccpt.schemas.dataset import DATASET
    from ccpt.schemas.pipeline import PIPELINE_TOML
    from ccpt.schemas.results import AUTHORS_ROW, AUTHORS_SAMPLE, AUTHORS_TYPE, TIDY
    from ccpt.schemas.sheets import ANSWERS, HITS, PAIRS, QUESTIONS, RATING_KEY, RATINGS, SOLVER
    from ccpt.schemas.stores import AGREEMENT_STORE, TEST_INDEX
    from ccpt.schemas.usage import PRICES

    return [DATASET, AUTHORS_ROW, AUTHORS_SAMPLE, AUTHORS_TYPE, TIDY, SOLVER, RATING_KEY, RATINGS, ANSWERS,
            QUESTIONS, HITS, PAIRS, AGREEMENT_STORE, TEST_INDEX, PIPELINE_TOML, PRICES]  # fmt: skip


# ---------------------------------------------------------------------------------------------- types


def _number(value: float) -> str:
    return f"{value:,}" if isinstance(value, int) else f"{value:g}"


def _bounds(spec: Mapping[str, Any]) -> str:
    low = spec.get("minimum", spec.get("exclusiveMinimum"))
    high = spec.get("maximum", spec.get("exclusiveMaximum"))
    if low is not None and high is not None:
        left = "(" if "exclusiveMinimum" in spec else "["
        right = ")" if "exclusiveMaximum" in spec else "]"
        return f" in {left}{_number(low)}, {_number(high)}{right}"
    if low is not None:
        return f" {'>' if 'exclusiveMinimum' in spec else '≥'} {_number(low)}"
    if high is not None:
        return f" {'<' if 'exclusiveMaximum' in spec else '≤'} {_number(high)}"
    return ""


def describe(spec: Mapping[str, Any]) -> str:
    """A JSON-schema type in words: ``number in [0, 1], or empty``, ``one of 'any', 'majority'``."""
    if "$ref" in spec:
        return f"table [{spec['$ref'].rsplit('/', 1)[-1].removesuffix('Section').lower()}]"
    if "anyOf" in spec:
        options = [o for o in spec["anyOf"] if o.get("type") != "null"]
        # A required-text option's null is only where a rejected cell is set aside: empty is not allowed.
        required = spec.get(NONEMPTY) or any(o.get("x-type") == REQUIRED_TEXT for o in options)
        nullable = len(options) < len(spec["anyOf"]) and not required
        text = " or ".join(describe(o) for o in options)
        return f"{text}, or empty" if nullable else text
    if "x-type" in spec:
        return str(spec["x-type"])
    if "enum" in spec or "const" in spec:
        values = spec.get("enum", [spec.get("const")])
        return "one of " + ", ".join(f"`{v}`" for v in values)
    kind = spec.get("type")
    if kind in ("number", "integer"):
        return kind + _bounds(spec)
    if kind == "boolean":
        return "true/false"
    if kind == "string":
        return "text" + (" (non-empty)" if spec.get("minLength") else "")
    if kind == "array":
        if "prefixItems" in spec:
            return "pair of " + " and ".join(describe(i) for i in spec["prefixItems"])
        size = f", at least {spec['minItems']}" if spec.get("minItems") else ""
        return f"list of {describe(spec.get('items', {}))}{size}"
    if kind == "object" and isinstance(values := spec.get("additionalProperties"), dict):
        keys = spec.get("propertyNames")
        return f"table of {describe(keys) if isinstance(keys, dict) else 'text'} → {describe(values)}"
    return "table" if kind == "object" else "any"


def _cell(text: Any) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _default(spec: Mapping[str, Any]) -> str:
    if "default" not in spec:
        return ""
    value = spec["default"]
    if value is None:
        return "empty"
    if isinstance(value, bool | str):
        return json.dumps(value, ensure_ascii=False)
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {v}" for k, v in value.items()) + "}"
    return str(value)


def _rows(spec: Mapping[str, Any], headers: Any = None, first: str = "key") -> list[str]:
    """The table of ``spec``'s properties (``headers``: a field's column name), with a blank line after it."""
    lines = [f"| {first} | type | role | default | meaning |", "|---|---|---|---|---|"]
    for name, prop in spec.get("properties", {}).items():
        what = {KEY: "key", DERIVED: "derived (recomputed)"}.get(prop.get(ROLE), "value")
        presence = "required" if name in spec.get("required", []) else "optional"
        lines.append(
            f"| `{_cell(headers(name) if headers else name)}` | {_cell(describe(prop))} | {what}, {presence} | "
            f"{_cell(_default(prop))} | {_cell(prop.get('description', ''))} |"
        )
    return [*lines, ""]


def _section(fmt: FileFormat) -> list[str]:
    """One format's section: its columns or keys, then (a file's) one table per [section], then the rules."""
    spec = fmt.json_schema
    defs = spec.get("$defs", {})
    out = [f"## {fmt.name}", "", f"Read by: {fmt.read_by}.", "", fmt.summary, ""]
    if isinstance(fmt, TableSchema):
        out += _rows(spec, fmt.header, "column")
        out += [
            f"- Unique: each {' × '.join(f'`{fmt.header(c)}`' for c in columns)} appears once."
            for columns in fmt.unique
        ]
    else:
        out += _rows(spec)
        # The definitions the properties refer to (directly or as an optional table): sections in the file's order.
        options = [o for p in spec.get("properties", {}).values() for o in [p, *p.get("anyOf", [])] if "$ref" in o]
        for name in [r for o in options if (r := o["$ref"].rsplit("/", 1)[-1]) in defs]:
            title = name.removesuffix("Section").lower()
            out += [f"### [{title}]", "", defs[name].get("description", ""), "", *_rows(defs[name])]
    out += [f"- {rule}" for rule in fmt.rules]
    if isinstance(fmt, TableSchema) and not fmt.tolerant:
        out.append("- The first rejected cell rejects the file (one line naming row and column).")
    return [*out, ""] if isinstance(fmt, TableSchema) or fmt.rules else out


def render() -> str:
    """docs/schemas.md."""
    # GitHub's heading anchor: lower case, spaces to hyphens, punctuation other than - and _ dropped.
    anchors = ["".join(c for c in f.name.lower().replace(" ", "-") if c.isalnum() or c in "-_") for f in catalogue()]
    links = [f"[{f.name}](#{anchor})" for f, anchor in zip(catalogue(), anchors, strict=True)]
    lines = [INTRO, "Formats: " + ", ".join(links) + ".", ""]
    for fmt in catalogue():
        lines += _section(fmt)
    return "\n".join(lines).rstrip() + "\n"


if __name__ == "__main__":
    sys.stdout.write(render())
