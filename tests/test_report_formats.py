"""Every report format shows every table with the same numbers; every JSON output is strict JSON with provenance.

The results fixture is small and hand-made, so the expected cell values below are computed by hand (not by the
code under test): 2 instances × 2 seeds per run, scores chosen so every mean is exact at one decimal.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from pathlib import Path
from typing import Any

import pandas as pd
import pytest
from markdown_it import MarkdownIt

from ccpt.cli import main
from ccpt.io.jsonout import dumps, provenance, strict
from ccpt.report import FORMATS, build_report, render
from ccpt.results import COLUMNS


def _strict_loads(text: str) -> Any:
    """json.loads that rejects NaN / Infinity / -Infinity (as JavaScript and jq do)."""

    def refuse(constant: str) -> None:
        raise ValueError(f"non-standard JSON constant {constant}")

    return json.loads(text, parse_constant=refuse)


def _row(**values: Any) -> dict[str, Any]:
    row = dict.fromkeys(COLUMNS)
    row.update(parse_ok=True, judge_failures=0, sample=0, judge="judge/j", combination="c", property="p")
    row.update(values)
    return row


def results_fixture() -> pd.DataFrame:
    """Table 3 (base, multi_oracle), Table 5 (one unparsed), Table 6 (C_1, C_2), Table 7 (with / without Filter)."""
    rows = []
    # pi_emergent base: r_np (0.8, 0.6 | 0.7, 0.5), r_hmp 0.2 everywhere → score = r_np − 0.2.
    for seed, values in enumerate(((0.8, 0.6), (0.7, 0.5))):
        for i, r_np in enumerate(values):
            rows.append(
                _row(task="pi_emergent", model="m/one", method="base", seed=seed, instance=f"e{i}", r_np=r_np,
                     r_hp=0.2, r_mp=0.1, r_hmp=0.2, score=r_np - 0.2)
            )  # fmt: skip
    # Multi-Oracle: 2 samples per (instance, seed); the oracle takes the best per column.
    for seed in (0, 1):
        for i in (0, 1):
            for sample, r_np in enumerate((0.9, 0.4)):
                rows.append(
                    _row(task="pi_emergent", model="m/one", method="multi_oracle", seed=seed, instance=f"e{i}",
                         sample=sample, r_np=r_np, r_hp=0.3, r_mp=0.1, r_hmp=0.3, score=max(r_np - 0.3, 0.0))
                )  # fmt: skip
    # Type prediction, one seed: 4 emergent (3 right, 1 unparsed), 2 canceled (1 right, 1 "component").
    for i, (gold, pred) in enumerate(
        [("emergent", "emergent")] * 3 + [("emergent", None), ("canceled", "canceled"), ("canceled", "component")]
    ):
        rows.append(
            _row(task="type_prediction", model="m/one", method="base", seed=0, instance=f"t{i}", gold_type=gold,
                 pred_type=pred, parse_ok=pred is not None)
        )  # fmt: skip
    # SA with Filter (final answers and C_1, C_2) and without Filter (final answers), one seed.
    for flag, finals in ((True, (0.6, 0.4)), (False, (0.3, 0.1))):
        for i, score in enumerate(finals):
            rows.append(
                _row(task="pi_emergent", model="m/one", method="sa_llm", seed=0, instance=f"e{i}", r_np=score,
                     r_hp=0.0, r_mp=0.0, r_hmp=0.0, score=score, sa_filter=flag)
            )  # fmt: skip
    for t, scores in ((1, (0.2, 0.4)), (2, (0.5, 0.3))):
        for i, score in enumerate(scores):
            rows.append(
                _row(task="pi_emergent", model="m/one", method="sa_llm", seed=0, instance=f"e{i}", r_np=score,
                     r_hp=0.0, r_mp=0.0, r_hmp=0.0, score=score, sa_filter=True, sa_iteration=t)
            )  # fmt: skip
    return pd.DataFrame(rows, columns=list(COLUMNS))


@pytest.fixture(scope="module")
def report():
    fixed = provenance(models=["m/one"], judges=["judge/j"], now=pd.Timestamp("2026-01-02T03:04:05Z").to_pydatetime())
    return build_report(results_fixture(), stat="sem", n_boot=50, examples_per_group=0, provenance=fixed)


def _numbers(text: str) -> set[str]:
    return set(re.findall(r"(?<![\d.])-?\d+\.\d(?![\d.])", text))


def _without_provenance(fmt: str, text: str) -> str:
    # The provenance block carries versions ("0.1.0") and a timestamp; the tables' numbers are compared.
    # HTML's stylesheet has sizes ("0.9em"); it is not report content either.
    cut = {"markdown": "\nProvenance:", "latex": "% Provenance:", "html": "<details><summary>Provenance"}[fmt]
    return re.sub(r"<style>.*?</style>", "", text[: text.index(cut)], flags=re.S)


def test_hand_computed_cells(report) -> None:
    tables = report.tables()
    t3 = tables["table3"].to_frame().set_index("Method")
    # Base: seed 0 scores (0.6, 0.4) → 0.5, seed 1 (0.5, 0.3) → 0.4; mean 45.0, SEM = sd(0.5, 0.4)/√2 = 5.0.
    assert t3.loc["Base", "PI-Eme. E ↑"] == pytest.approx(45.0)
    assert tables["table3"].rows[0].cells[4].text == "45.0 ± 5.0"
    # Multi-Oracle per column: R_N,P = max(0.9, 0.4) = 0.9; E = max(0.6, 0.1) = 0.6.
    assert t3.loc["Multi-Oracle", "PI-Eme. R_N,P ↑"] == pytest.approx(90.0)
    assert t3.loc["Multi-Oracle", "PI-Eme. E ↑"] == pytest.approx(60.0)
    t5 = tables["table5:m/one:base"].to_frame().set_index("Actual \\ Predicted")
    assert t5.loc["Emergent", "Emergent"] == pytest.approx(75.0) and t5.loc["Emergent", "Unparsed"] == 25.0
    assert t5.loc["Canceled", "Component"] == pytest.approx(50.0) and t5.loc["Canceled", "n"] == 2
    assert "Accuracy: 66.7%" in tables["table5:m/one:base"].notes[0]
    t6 = tables["table6:m/one:sa_llm"].to_frame()
    assert t6[["C_1", "C_2"]].iloc[0].tolist() == pytest.approx([30.0, 40.0])
    t7 = tables["table7"].to_frame()
    assert t7[["w/o Filter", "w/ Filter", "Δ"]].iloc[0].tolist() == pytest.approx([20.0, 50.0, 30.0])
    failures = tables["failures"].to_frame().set_index(["Task", "Method"])
    assert failures.loc[("type_prediction", "Base"), ["Parse failures", "Unscored"]].tolist() == [1, 1]


def test_every_format_shows_every_table_with_the_same_numbers(report) -> None:
    texts = {fmt: render(report, fmt) for fmt in FORMATS}  # type: ignore[arg-type]
    shown = set()
    for table in report.tables().values():
        for row in table.rows:
            for cell in row.cells:
                shown |= _numbers(cell.text)
        for note in table.notes:
            shown |= _numbers(note)
    assert {"45.0", "5.0", "90.0", "60.0", "75.0", "25.0", "66.7", "20.0", "50.0", "30.0", "40.0"} <= shown
    text_numbers = {fmt: _numbers(_without_provenance(fmt, texts[fmt])) for fmt in ("markdown", "latex", "html")}
    assert text_numbers["markdown"] == text_numbers["latex"] == text_numbers["html"]
    assert shown <= text_numbers["markdown"]
    for fmt in ("markdown", "latex", "html"):
        for header in ("Unparsed", "binary (mean of both)", "Table 6", "Table 7", "Failures", "Judge failures"):
            assert header in texts[fmt], (fmt, header)
    # CSV and JSON hold the same numbers, unrounded.
    records = _strict_loads(texts["json"])["records"]
    csv_rows = list(csv.DictReader(io.StringIO(texts["csv"])))
    json_values = {round(abs(r[k]), 1) for r in records for k in ("mean", "spread", "lo", "hi") if r.get(k) is not None}
    csv_values = {round(abs(float(r[k])), 1) for r in csv_rows for k in ("mean", "spread") if r.get(k)}
    assert json_values == csv_values
    assert {abs(float(n)) for n in shown} <= json_values
    # Rows are told apart by keys: the run's Multi-Oracle record has its method name, not its label.
    assert {r["method"] for r in records if r["table"] == "table3"} == {"base", "multi_oracle", "sa_llm"}


def test_json_report_is_strict_and_carries_provenance(report) -> None:
    payload = _strict_loads(render(report, "json"))
    block = payload["provenance"]
    assert block["protocol"] == "ccpt" and block["models"] == ["m/one"] and block["judges"] == ["judge/j"]
    assert block["created_utc"] == "2026-01-02T03:04:05Z" and len(block["dataset"]["commit"]) == 40
    # Table 5 has no lacks-property instance of "others"/"component": undefined numbers are null, not NaN.
    assert any(r["mean"] is None for r in payload["records"] if r["metric"].startswith("confusion:component"))


def test_strict_converts_non_finite_values() -> None:
    np = pytest.importorskip("numpy")
    value = {"nan": float("nan"), "inf": float("inf"), "neg": -math.inf, "np": np.float64("nan"), 3: (1, 2.5)}
    assert strict(value) == {"nan": None, "inf": None, "neg": None, "np": None, "3": [1, 2.5]}
    assert _strict_loads(dumps(value)) == {"nan": None, "inf": None, "neg": None, "np": None, "3": [1, 2.5]}
    assert strict([pd.NA, pd.NaT, np.int64(7), np.array([1.5, np.inf])]) == [None, None, 7, [1.5, None]]


def test_cli_json_outputs_are_strict(ccpt_dir: Path, tmp_path: Path, capsys) -> None:
    results = tmp_path / "results.csv"
    results_fixture().to_csv(results, index=False)
    outputs = {}
    for name, argv in {
        "report": ["report", str(results), "--format", "json"],
        "compare": ["compare", str(results), "--a", "m/one:base", "--b", "m/one:multi_oracle", "--format", "json"],
        "stats": ["data", "stats", "--data-dir", str(ccpt_dir), "--format", "json"],
        "agreement": ["judge-agreement", "--data-dir", str(ccpt_dir), "--n", "20", "--format", "json"],
    }.items():
        assert main(argv) == 0, name
        outputs[name] = _strict_loads(capsys.readouterr().out)
    assert outputs["report"]["provenance"]["models"] == ["m/one"]
    assert outputs["compare"][0]["provenance"]["judges"] == ["judge/j"]
    assert outputs["stats"]["provenance"]["dataset"]["matches_pinned"] is True
    assert outputs["agreement"]["provenance"]["dataset"]["sha256"]


def test_constant_judge_agreement_is_null_not_nan(ccpt_dir: Path, monkeypatch, capsys) -> None:
    # A judge that gives every pair the same score has no defined correlation: strict JSON says null.
    monkeypatch.setattr("ccpt.eval.judge.live_scores", lambda model, mode, pairs, args=None: [0.5] * len(pairs))
    monkeypatch.setattr("ccpt.judging.agreement.save", lambda measurement: None)
    assert (
        main(["judge-agreement", "--data-dir", str(ccpt_dir), "--judge", "x/const", "--n", "5", "--format", "json"])
        == 0
    )
    payload = _strict_loads(capsys.readouterr().out)
    assert payload["pearson"] is None and payload["spearman"] is None and payload["n"] == 15


def test_run_summary_json_is_strict_with_generation_settings(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys):
    # A real (scripted-provider) `ccpt run --format json`: the summary it prints for its logs when the sweep ends.
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    run = ["run", "--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent"]
    run += ["--method", "base", "--seeds", "1", "--limit", "2", "--temperature", "0.7", "--format", "json"]
    assert main([*run, "--log-dir", str(tmp_path / "logs"), "--data-dir", str(ccpt_dir), "--no-preflight"]) == 0
    payload = _strict_loads(capsys.readouterr().out)
    block = payload["provenance"]
    # The judge is named by its identity, with the reply format its server took.
    assert block["models"] == ["ccpt-scripted/solver"] and block["judges"] == ["ccpt-scripted/judge (plain)"]
    generation = block["generation"]
    assert generation["models"]["ccpt-scripted/solver"]["temperature"] == 0.7
    assert (generation["seeds"], generation["limit"]) == (1, 2) and block["dataset"]["matches_pinned"] is True
    assert {r["table"] for r in payload["records"]} >= {"table3", "failures"}
    # `ccpt report` on the run's logs prints what the summary printed (one report-from-paths function); for the
    # run's sampling settings, what the model's logs recorded it was sent.
    assert main(["report", str(tmp_path / "logs"), "--format", "json", "--data-dir", str(ccpt_dir)]) == 0
    again = _strict_loads(capsys.readouterr().out)
    assert again["records"] == payload["records"] and again["judge"] == payload["judge"]
    assert {r["table"] for r in again["records"]} >= {"table3", "failures", "usage"}
    (sent,) = again["provenance"]["generation"]["sent"]["ccpt-scripted/solver"]
    assert sent.startswith("temperature 0.7") and list(again["provenance"]["generation"]) == ["sent"]
    # Markdown says it in its provenance, and of a model whose result file records nothing, that it does not.
    results = tmp_path / "other.csv"
    results_fixture().to_csv(results, index=False)
    assert main(["report", str(tmp_path / "logs"), str(results), "--data-dir", str(ccpt_dir)]) == 0
    text = capsys.readouterr().out
    assert f"- generation (ccpt-scripted/solver): {sent}\n" in text
    assert "- generation (m/one): not recorded by its result files\n" in text
    # The run's own text summary (the same finished run, asked again) lists each model's settings as key=value, not
    # a printed Python dict.
    assert main([*run[:-2], "--log-dir", str(tmp_path / "logs"), "--data-dir", str(ccpt_dir), "--no-preflight"]) == 0
    provenance_block = capsys.readouterr().out.split("Provenance:", 1)[1]
    assert "- generation (ccpt-scripted/solver): system_prompt=True, temperature=0.7, " in provenance_block
    assert "- run: seeds=1, limit=2, " in provenance_block and "{'" not in provenance_block, provenance_block


def test_a_table_is_one_declaration_every_format_prints(monkeypatch) -> None:
    """CONTRIBUTING.md's "Adding a table", followed: one declaration, one registry entry, nothing else changed."""
    import ccpt.report.build
    from ccpt.report.display import DisplayRow, DisplayTable, count_cell, text_cell
    from ccpt.report.tables import TABLES, ReportTable

    def compute(frame: pd.DataFrame, options: Any) -> dict[str, int]:
        return {str(model): len(rows) for model, rows in frame.groupby("model")}

    def display(counts: dict[str, int], labels: Any) -> list[DisplayTable]:
        rows = tuple(DisplayRow((m,), (text_cell(m), count_cell(n))) for m, n in counts.items())
        return [DisplayTable("samples", "Samples per model", ("Model", "Samples"), rows)]

    def records(counts: dict[str, int]) -> list[dict[str, Any]]:
        return [{"table": "samples", "model": m, "metric": "samples", "count": n} for m, n in counts.items()]

    monkeypatch.setattr(ccpt.report.build, "TABLES", (*TABLES, ReportTable("samples", compute, display, records)))
    report = build_report(results_fixture(), n_boot=50, examples_per_group=0)
    n = len(results_fixture())  # every sample of the fixture is model m/one's
    assert report.samples == {"m/one": n}
    assert report.tables()["samples"].to_frame().to_dict("records") == [{"Model": "m/one", "Samples": n}]
    texts = {fmt: render(report, fmt) for fmt in FORMATS}  # type: ignore[arg-type]
    for fmt in ("markdown", "latex", "html"):
        assert "Samples per model" in texts[fmt] and str(n) in texts[fmt], fmt
    json_rows = [r for r in _strict_loads(texts["json"])["records"] if r["table"] == "samples"]
    assert [(r["model"], r["count"], r["model_label"]) for r in json_rows] == [("m/one", n, "m/one")]
    csv_rows = [row for row in csv.DictReader(io.StringIO(texts["csv"])) if row["table"] == "samples"]
    assert [(row["model"], row["count"]) for row in csv_rows] == [("m/one", str(n))]


def test_markdown_report_opens_no_html_from_model_text() -> None:
    # A model name and an answer that are HTML: a Markdown renderer (CommonMark keeps raw HTML) must show them as text.
    hostile = '<img src=x onerror="alert(1)">'
    frame = results_fixture()
    frame["model"] = "m/" + hostile
    frame.loc[frame["task"] == "pi_emergent", "answer_raw"] = "\\" + hostile  # a backslash cannot cancel the escape
    frame.loc[frame["task"] == "pi_emergent", "answer"] = "a|b " + hostile
    text = render(build_report(frame, stat="sem", n_boot=20, examples_per_group=1), "markdown")
    assert hostile in text.replace("\\<", "<")  # the text itself is kept: every "<" is escaped, nothing else
    html = MarkdownIt("commonmark").render(text)
    assert "<img" not in html and html.count("&lt;img src=x") >= text.count("\\<img src=x")
    assert "<u>" in html  # ccpt's own markup (the second-best cell underlined) still renders
