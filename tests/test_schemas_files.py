"""Hostile configuration and store files: the judge-agreement store and the pipeline TOML, built in the tests."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccpt.agreement_store import judge_note, measurements, save_measurement, user_store

GOOD = {"pearson": 0.5, "spearman": 0.4, "n": 300, "mode": "text", "measured": "2026-01-01"}


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("CCPT_HOME", str(tmp_path))
    return user_store()


@pytest.mark.parametrize(
    ("content", "reason"),
    [
        (json.dumps({"judge/x": {**GOOD, "pearson": "high"}}), "entry 'judge/x': pearson: should be a valid number"),
        (json.dumps({"judge/x": {**GOOD, "pearson": 1.7}}), "pearson: should be less than or equal to 1"),
        (json.dumps({"judge/x": {"pearson": 0.5}}), "entry 'judge/x': n: Field required"),
        (json.dumps({"judge/x": {**GOOD, "n": -4}}), "n: should be greater than or equal to 0"),
        (json.dumps({"judge/x": {**GOOD, "pearson_ci": [0.1]}}), "pearson_ci"),
        (json.dumps({"judge/x": 5}), "entry 'judge/x'"),
        ("[1, 2]", "not a JSON object"),
        ("{not json", "not readable as JSON"),
        ("[" * 50_000, "not readable as JSON"),
    ],
)
def test_a_malformed_store_is_named_in_the_note_not_a_crash(store: Path, content: str, reason: str) -> None:
    store.write_text(content, encoding="utf-8")
    note = judge_note(["judge/x"])
    assert reason in note and "ignored" in note
    assert "judge/x: agreement with human ratings not measured" in note  # the bad number is never shown
    assert "1.70" not in note


def test_a_malformed_entry_of_another_judge_is_not_mentioned_and_good_ones_are_used(store: Path) -> None:
    store.write_text(json.dumps({"judge/x": GOOD, "judge/y": {"pearson": "?"}}), encoding="utf-8")
    note = judge_note(["judge/x"])
    assert "judge/x: Pearson 0.50, Spearman 0.40" in note and "judge/y" not in note
    assert set(measurements()) >= {"judge/x"} and "judge/y" not in measurements()


def test_the_report_of_a_run_survives_a_malformed_store(
    store: Path, reference_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccpt.cli import main

    store.write_text(json.dumps({"gpt-4o": {"pearson": "high", "n": 3}}), encoding="utf-8")
    assert main(["report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv")]) == 0
    out = capsys.readouterr().out
    assert "entry 'gpt-4o': pearson" in out and "| gpt-4o | Base |" in out


def test_saving_keeps_other_entries_and_sets_an_unreadable_store_aside(store: Path) -> None:
    store.write_text(json.dumps({"judge/old": {"pearson": "kept as it was"}}), encoding="utf-8")
    save_measurement("judge/new", GOOD)
    saved = json.loads(store.read_text(encoding="utf-8"))
    assert saved == {"judge/old": {"pearson": "kept as it was"}, "judge/new": GOOD}  # not ours to delete
    store.write_text("{truncated", encoding="utf-8")
    save_measurement("judge/new", GOOD)
    assert json.loads(store.read_text(encoding="utf-8")) == {"judge/new": GOOD}
    assert store.with_name(store.name + ".unreadable").read_text(encoding="utf-8") == "{truncated"
    assert not list(store.parent.glob("*.partial"))  # written atomically, nothing left behind
