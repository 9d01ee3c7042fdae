"""docs/schemas.md is generated from the schema code: it must be what the code renders today."""

from __future__ import annotations

from pathlib import Path

from ccpt.schemas.docs import catalogue, describe, render

DOCS = Path(__file__).resolve().parents[1] / "docs" / "schemas.md"


def test_the_schema_page_is_up_to_date() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/schemas.md is stale: run `python -m ccpt.schemas.docs > docs/schemas.md`"
    )


def test_every_format_the_issue_lists_has_a_section() -> None:
    names = {fmt.name for fmt in catalogue()}
    assert names >= {
        "authors' result file: run columns",
        "authors' Task-3 file",
        "tidy table",
        "solver sheet",
        "rating sheet",
        "annotation answers",
        "judge-score pairs",
        "agreement store",
        "pipeline TOML",
        "test_index.json",
    }
    text = render()
    assert all(f"## {name}\n" in text for name in names)


def test_types_are_described_from_the_json_schema() -> None:
    assert describe({"type": "number", "minimum": 0, "maximum": 1}) == "number in [0, 1]"
    assert describe({"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}]}) == "integer ≥ 1, or empty"
    assert describe({"enum": ["any", "majority"]}) == "one of `any`, `majority`"
    assert describe({"type": "integer", "exclusiveMinimum": 0}) == "integer > 0"
