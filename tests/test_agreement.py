"""Judge–human agreement (§6.1, Figure 4): the pair sets, the measurement, the store and what reports quote."""

from __future__ import annotations

import dataclasses
import json
import math
from pathlib import Path

import pytest

from ccpt.cli import main
from ccpt.judges import JudgeIdentity
from ccpt.judging.agreement import Measurement, agreement_ci, judge_note, measure, read_store, save, user_store
from ccpt.judging.distilled import JUDGE_SHA256
from ccpt.judging.rated_pairs import heldout_records, pair_key, pair_set, record_rated_pairs, training_pairs

DISTILLED_IDENTITY = JudgeIdentity("ccpt-distilled/default", version=JUDGE_SHA256)  # the shipped judge's identity
DISTILLED = DISTILLED_IDENTITY.key  # ccpt-distilled/default@<sha256[:12]>: what its measurements are stored under


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty user store: what a user's earlier measurements would be, per test."""
    monkeypatch.setenv("CCPT_HOME", str(tmp_path / "home"))
    return user_store()


def test_rated_pairs_are_three_per_row_with_mean_likert(dataset) -> None:
    pairs = record_rated_pairs(dataset.emergent[0])  # ccpt_emergent:0, combination ratings (5,5,5)
    assert [p.role for p in pairs] == ["combination", "head", "modifier"]
    first = pairs[0]
    assert (first.concept, first.property) == ("a boat on the rocks", "strand")
    assert first.human == 5.0 and first.target == 1.0


def test_pair_sets_and_the_one_sampler(dataset) -> None:
    test = pair_set(dataset, "test")
    assert len(test) == 1305
    paper = pair_set(dataset, "paper300", seed=1)
    held_rows = {r.id for r in heldout_records(dataset)}
    assert len(paper) == 300 and {p.source for p in paper} <= held_rows
    assert paper == pair_set(dataset, "paper300", seed=1) != pair_set(dataset, "paper300", seed=2)
    assert sum(p.kind == "canceled" for p in paper) == 150  # 50 + 50 rows, 3 pairs each
    # paper300 is the sampler at the paper's size: the same rows as 100 sampled test rows.
    assert paper == pair_set(dataset, "test", seed=1, rows=100)
    sample = pair_set(dataset, "test", seed=0, rows=7)  # odd: the extra row is emergent
    assert [p.kind for p in sample[::3]].count("emergent") == 4
    everything = pair_set(dataset, "all")
    train = {pair_key(p.concept, p.property) for p in training_pairs(dataset)}
    assert any(pair_key(p.concept, p.property) in train for p in everything)  # all is in-sample for distilled
    assert not any(pair_key(p.concept, p.property) in train for p in test)


def test_agreement_ci_by_hand_counts_missing_and_says_undefined() -> None:
    result = agreement_ci([1, 3, 5, 2], [0.0, 0.4, 0.9, None], n_resamples=200)
    assert result.n == 3 and result.n_missing == 1
    # By hand: x̄ = 3, ȳ = 1.3/3; Σdxdy = 1.8, Σdx² = 8, Σdy² = 0.97 − 1.69/3 = 1.22/3 → r = 1.8 / √(8·1.22/3).
    assert result.pearson == pytest.approx(1.8 / math.sqrt(8 * 1.22 / 3))
    assert result.spearman == pytest.approx(1.0)
    constant = agreement_ci([1, 3, 5], [0.5, 0.5, 0.5])
    assert constant.pearson is None and constant.pearson_ci is None and "undefined" in constant.line()


def test_cli_offline_measures_stored_gpt4o_on_held_out_pairs(ccpt_dir: Path, tmp_path: Path, home: Path, capsys):
    figure = tmp_path / "fig4.png"
    assert main(["judge-agreement", "--data-dir", str(ccpt_dir), "--format", "json", "--figure", str(figure)]) == 0
    result = json.loads(capsys.readouterr().out)
    # The stored GPT-4o scores on the 1,305 test pairs (docs/metrics.md: 0.762 [0.735, 0.789]); §6.1 reports
    # 0.85 / 0.83 on its own 300 MTurk-rated pairs.
    assert result["pairs"] == "test" and result["held_out"] is True and result["n"] == 1305
    assert result["pearson"] == pytest.approx(0.762, abs=5e-4) and result["spearman"] == pytest.approx(0.750, abs=5e-4)
    assert result["pearson_ci"][0] < result["pearson"] < result["pearson_ci"][1]
    assert not home.exists()  # stored scores are a fact of the dataset, not a measurement to save
    png = figure.read_bytes()  # a real PNG of the documented size: 3.3 in square at 200 dpi, cropped
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert 400 < width <= 660 and 400 < height <= 660


def test_the_store_keys_by_judge_and_pair_set(home: Path) -> None:
    held = Measurement("judge/x", "test", agreement_ci([1, 2, 3, 4], [0.1, 0.3, 0.2, 0.9]), measured="2026-01-01")
    in_sample = Measurement("judge/x", "all", agreement_ci([1, 2, 3, 4], [0.1, 0.2, 0.3, 0.4]), measured="2026-01-02")
    save(held)
    save(in_sample)
    saved = json.loads(home.read_text(encoding="utf-8"))
    assert set(saved["judge/x"]) == {"test", "all"}
    entries = read_store(home).entries
    assert entries[("judge/x", "test")].result.pearson == pytest.approx(held.result.pearson, abs=1e-4)
    note = judge_note([JudgeIdentity("judge/x")])
    assert (
        f"Pearson {held.result.pearson:.2f}" in note
        and "the benchmark's test concepts (the pairs of every test row) (pair set 'test'" in note
    )
    assert "Pearson 1.00" not in note  # the in-sample figure (a perfect fit) is never quoted


def test_an_older_flat_store_entry_is_read_under_its_pair_set(home: Path) -> None:
    home.parent.mkdir(parents=True)
    flat_held = {"pearson": 0.5, "spearman": 0.4, "n": 300, "pairs": "paper300", "measured": "2026-01-01"}
    flat_all = {"pearson": 0.9, "spearman": 0.9, "n": 300, "measured": "2026-01-01"}  # no pairs: every row
    home.write_text(json.dumps({"judge/a": flat_held, "judge/b": flat_all}), encoding="utf-8")
    note = judge_note([JudgeIdentity("judge/a"), JudgeIdentity("judge/b")])
    assert (
        "judge/a: Pearson 0.50" in note
        and "judge/b: agreement with human ratings on the benchmark's test concepts" in note
    )
    save(Measurement("judge/a", "test", agreement_ci([1, 2, 3], [0.1, 0.2, 0.4])))
    assert set(json.loads(home.read_text(encoding="utf-8"))["judge/a"]) == {"paper300", "test"}


@pytest.mark.embedded
def test_judge_agreement_on_the_distilled_judge_cannot_change_what_reports_quote(
    ccpt_dir: Path, home: Path, capsys
) -> None:
    """Issue 19: `judge-agreement --judge distilled` without --pairs once measured on training rows and replaced
    the quoted figure in every report. Measured for real here: the default, and the in-sample set."""
    before = judge_note([DISTILLED_IDENTITY])
    assert "Pearson 0.64 [0.61, 0.67]" in before and "1305 pairs of the benchmark's test concepts" in before
    # The test rows are not independent of its teacher data: the note says so and gives the figure on unseen rows.
    assert "on rows in none of its training or teacher data (validation fold 0" in before
    assert "Pearson 0.671" in before and "its test-concept figure is not independent" in before
    assert main(["judge-agreement", "--data-dir", str(ccpt_dir), "--judge", "distilled", "--format", "json"]) == 0
    default = json.loads(capsys.readouterr().out)
    assert default["pairs"] == "paper300" and default["held_out"] is True and default["n"] == 300
    # A few rows are enough to show an in-sample measurement is stored apart (each pair is a real judge call).
    argv = ["judge-agreement", "--data-dir", str(ccpt_dir), "--judge", "distilled", "--pairs", "all", "--n", "10"]
    assert main([*argv, "--format", "json"]) == 0
    in_sample = json.loads(capsys.readouterr().out)
    assert in_sample["held_out"] is False and in_sample["n"] == 30
    assert set(read_store(home).entries) == {(DISTILLED, "paper300"), (DISTILLED, "all/rows=10/seed=0")}
    assert judge_note([DISTILLED_IDENTITY]) == before
    # Even an in-sample figure over more pairs than the test-concept one is never quoted.
    inflated = agreement_ci([1, 2, 3, 4, 5], [0.0, 0.25, 0.5, 0.75, 1.0])
    save(Measurement(DISTILLED, "all", dataclasses.replace(inflated, n=99_999)))
    assert judge_note([DISTILLED_IDENTITY]) == before


@pytest.mark.embedded
def test_the_raw_scale_is_measured_by_name_and_stored_apart(ccpt_dir: Path, home: Path, capsys) -> None:
    """`--judge-arg calibrated=false` measures the distilled judge's raw scale: saved under its own identity (the
    calibrated judge's quoted figure is untouched), and the saved command line says how to measure it again."""
    before = judge_note([DISTILLED_IDENTITY])
    argv = ["judge-agreement", "--data-dir", str(ccpt_dir), "--judge", "distilled", "--judge-arg", "calibrated=false"]
    assert main([*argv, "--pairs", "test", "--n", "10", "--format", "json"]) == 0
    raw = json.loads(capsys.readouterr().out)
    assert raw["judge"] == DISTILLED + "+raw" and raw["n"] == 30
    assert "--judge-arg calibrated=false" in raw["command"]
    assert set(read_store(home).entries) == {(DISTILLED + "+raw", "test/rows=10/seed=0")}
    assert judge_note([DISTILLED_IDENTITY]) == before


def test_a_figure_measured_under_score_changing_judge_args_is_not_stored(ccpt_dir: Path, home: Path, capsys) -> None:
    """Eighth hostile round: `--judge-arg fail_every=2` (7 of 60 pairs unscored) was stored under the judge's bare
    identity and quoted under the report of its runs without that argument. Printed, not stored, said in one line;
    where the judge is reached and how long it waits are no such argument."""
    argv = ["judge-agreement", "--data-dir", str(ccpt_dir), "--judge", "ccpt-scripted/j", "--pairs", "test"]
    assert main([*argv, "--n", "20", "--judge-arg", "fail_every=2"]) == 0
    out, err = capsys.readouterr()
    assert "7 without a judge score left out" in out and not home.exists()
    assert "not stored for reports: --judge-arg fail_every changes scores outside the judge's identity" in err
    assert main([*argv, "--n", "20", "--judge-arg", "timeout=60"]) == 0
    assert set(read_store(home).entries) == {("ccpt-scripted/j", "test/rows=20/seed=0")}


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--judge-arg", "calibrated=false"], "--judge-arg"),
        # Before: ignored, and the stored GPT-4o text scores measured as if they were expected scores.
        (["--judge-mode", "expected"], "--judge-mode"),
    ],
)
def test_judge_args_need_a_judge(args: list[str], option: str, ccpt_dir: Path, capsys) -> None:
    assert main(["judge-agreement", "--data-dir", str(ccpt_dir), *args]) == 2
    assert f"{option}: needs --judge" in capsys.readouterr().err


def test_measure_records_how_it_was_made(dataset) -> None:
    pairs = pair_set(dataset, "test", rows=4)
    found = measure("judge/x", "test", pairs, [p.target for p in pairs], mode="expected", rows=4, seed=0)
    assert found.result.pearson == pytest.approx(1.0) and found.pair_set_id == "test/rows=4/seed=0"
    entry = found.entry()
    assert entry["pairs"] == "test" and entry["rows"] == 4 and entry["mode"] == "expected" and entry["n"] == 12


def test_a_figure_measured_in_one_reading_mode_is_not_quoted_for_the_other(home: Path) -> None:
    """The embedded 1.5B judge was measured reading log-probabilities (expected): a text-mode run of it is another
    judge, and a reply format a server negotiated is not part of the key."""
    expected = judge_note([JudgeIdentity("gguf/qwen2.5-1.5b", mode="expected")])
    assert "gguf/qwen2.5-1.5b (expected): Pearson 0.29" in expected
    text = judge_note([JudgeIdentity("gguf/qwen2.5-1.5b", reply_format="json_schema")])
    assert "not measured (run `ccpt judge-agreement --judge gguf/qwen2.5-1.5b --pairs test`)" in text
    save(Measurement("judge/x", "test", agreement_ci([1, 2, 3], [0.1, 0.2, 0.4])))
    assert "judge/x: Pearson 0.98" in judge_note([JudgeIdentity("judge/x", reply_format="json_schema")])
    assert (
        "judge/x (expected): agreement with human ratings on the benchmark's test concepts not measured"
        in judge_note([JudgeIdentity("judge/x", reply_format="json_schema", mode="expected")])
    )


def test_the_command_suggested_for_a_judge_known_only_by_its_text_is_not_that_text(home: Path) -> None:
    """A tidy table or another file names its judge by its key ("m/j (plain)"): the note suggested
    `--judge m/j (plain)`, which does not run; it now asks for the model that key names."""
    note = judge_note([JudgeIdentity("ccpt-scripted/j (plain)")])
    assert "--judge ccpt-scripted/j (plain)" not in note
    asked = "run `ccpt judge-agreement --judge MODEL --pairs test` with the judge 'ccpt-scripted/j (plain)' names"
    assert asked in note
