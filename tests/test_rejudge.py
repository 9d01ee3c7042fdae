"""`ccpt rejudge`: an Inspect run and an authors' file re-judged by the scripted judge, checked against a direct
computation of Table 3 from the stored answers; the cross-judge view; resuming asks the judge nothing.

The scripted judge (``ccpt-scripted``, a registered Inspect provider) answers the judge prompt with a pure
function of the prompt, so the expected relevances are computed here straight from that function on the
rendered judge prompt, and the table cells with plain arithmetic (mean over seeds of per-seed instance means).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from scripted_provider import scripted_reply

from ccpt.cli import main
from ccpt.prompts import judge_prompt
from ccpt.protocol import get_protocol
from ccpt.report.cross_judge import cross_judge, kendall_tau_b
from ccpt.results import load_results
from ccpt.spec import TASK_SPECS


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))


def _scripted_relevance(concept: str, prop: str, protocol: str) -> float:
    surface = get_protocol(protocol)
    prompt = judge_prompt(
        " ".join(concept.split()), " ".join(prop.split()), surface.judge_template, surface.judge_capitalise
    )
    return (json.loads(scripted_reply(prompt, None))["relevance"] - 1) / 9


def _expected_cells(frame: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """(task, method, metric) → 100 × mean over seeds of the per-seed mean over instances, computed directly."""
    values = []
    for row in frame.to_dict("records"):
        spec = TASK_SPECS[row["task"]]
        if not row["parse_ok"]:
            continue
        modifier = row["answer_modifier"] if isinstance(row["answer_modifier"], str) else None
        concepts, prop = spec.judged_pairs(row, row["answer"], modifier)
        n, h, m = (_scripted_relevance(c, prop, row["protocol"]) for c in concepts)
        hmp = max(h, m)
        score = max(n - hmp, 0.0) if spec.kind == "emergent" else max(hmp - n, 0.0)
        values.append(
            {"task": row["task"], "method": row["method"], "seed": row["seed"], "r_np": n, "r_hmp": hmp, "score": score}
        )
    table = pd.DataFrame(values)
    cells = {}
    for (task, method), group in table.groupby(["task", "method"]):
        for metric in ("r_hmp", "r_np", "score"):
            cells[(task, method, metric)] = 100 * group.groupby("seed")[metric].mean().mean()
    return cells


def _report_cells(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str, str], float]:
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    return {(r["task"], r["method"], r["metric"]): r["mean"] for r in records if r["table"] == "table3"}


def _rejudge(source: Path, out: Path, calls: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = ["rejudge", str(source), "--judge", "ccpt-scripted/rejudge", "--out", str(out), "--no-preflight"]
    assert main([*args, "--judge-arg", f"calls_file={calls}"]) == 0
    return capsys.readouterr().out


def test_rejudge_an_authors_file_matches_a_direct_computation(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first rows of a real result file, in the authors' own format (every column kept).
    source = tmp_path / "pi_canceled_gpt-4o_naive.csv"
    pd.read_csv(reference_dir / source.name).head(6).to_csv(source, index=False)
    stored = load_results(source)
    assert (stored["protocol"] == "as-run").all()  # the judge surface the direct computation must use

    calls = tmp_path / "calls.txt"
    out = _rejudge(source, tmp_path / "rejudged", calls, capsys)
    assert "re-judged 18 answers" in out  # 6 instances × 3 seeds

    got = _report_cells(tmp_path / "rejudged", capsys)
    expected = _expected_cells(stored)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    rejudged = load_results(tmp_path / "rejudged")
    assert set(rejudged["judge"]) == {"ccpt-scripted/rejudge"}
    key = ["instance", "seed"]
    kept = rejudged.sort_values(key)[[*key, "answer"]].reset_index(drop=True)
    assert kept.equals(stored.sort_values(key)[[*key, "answer"]].reset_index(drop=True))  # answers kept as stored

    # Resuming a finished re-judge asks the judge nothing.
    before = calls.read_text().count("\n")
    _rejudge(source, tmp_path / "rejudged", calls, capsys)
    assert calls.read_text().count("\n") == before

    # The cross-judge view: the stored GPT-4o cells against the re-judged ones.
    view = cross_judge(stored, rejudged, "gpt-4o", "scripted")
    for cell in view.cells:
        assert cell.difference == pytest.approx(cell.b - cell.a)
        assert cell.b == pytest.approx(expected[(cell.task, cell.method, cell.metric)])


def test_rejudge_an_inspect_run_matches_a_direct_computation(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["run", "--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/first", "--task", "npc_emergent"]
    args += ["--task", "pi_emergent", "--method", "base", "--method", "cot", "--limit", "3", "--seeds", "2"]
    assert main([*args, "--log-dir", str(run), "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]) == 0
    stored = load_results(run)
    assert (stored["protocol"] == "ccpt").all()

    out = _rejudge(run, tmp_path / "rejudged", tmp_path / "calls.txt", capsys)
    assert "re-judged 24 answers in 4 task runs" in out  # 2 tasks × 2 methods × 3 instances × 2 seeds

    got = _report_cells(tmp_path / "rejudged", capsys)
    expected = _expected_cells(stored)
    assert got.keys() == expected.keys() and len(expected) == 12
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key


def test_kendall_tau_b() -> None:
    assert kendall_tau_b([1, 2, 3], [10, 20, 30]) == 1.0
    assert kendall_tau_b([1, 2, 3], [30, 20, 10]) == -1.0
    assert kendall_tau_b([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(2 / 3)
    assert kendall_tau_b([1, 1], [1, 2]) is None  # no variation on one side: undefined
    # ties: τ-b = (C − D) / sqrt((n0 − n1)(n0 − n2)) with one tie in x: (2 − 0) / sqrt(2 × 3)
    assert kendall_tau_b([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / 6**0.5)
