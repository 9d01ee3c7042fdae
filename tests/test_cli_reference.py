"""docs/cli.md is generated from the click commands: it must be what they print today."""

from __future__ import annotations

from pathlib import Path

from ccpt.cli.reference import render

DOCS = Path(__file__).resolve().parents[1] / "docs" / "cli.md"


def test_the_cli_reference_is_up_to_date() -> None:
    assert DOCS.read_text(encoding="utf-8") == render(), (
        "docs/cli.md is stale: run `python -m ccpt.cli.reference > docs/cli.md`"
    )


def test_every_command_has_a_section_and_the_width_is_fixed(monkeypatch) -> None:
    text = render()
    for name in ("run", "report", "compare", "rejudge", "judge-agreement", "data stats", "human serve", "pipeline run"):
        assert f"\n## `ccpt {name}`\n" in text
    monkeypatch.setenv("COLUMNS", "40")  # a narrow terminal changes nothing
    assert render() == text
