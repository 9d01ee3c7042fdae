"""One run, one set of numbers: the metrics an Inspect log shows (``inspect view``) are the cells ``ccpt report``
prints for it — the paper's seed means and their ± first, the instance mean and stderr beside them.

Real Inspect runs of the real tasks; the scripted provider answers and judges (offline, deterministic), so the
seeds give different answers and some replies fail to parse (a cell with failures is where the two reductions of
the same numbers can differ).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccpt.cli import main


@pytest.mark.parametrize("method", ["base", "multi_oracle"])
def test_log_metrics_equal_the_report_cells(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], method: str
) -> None:
    from inspect_ai import eval as inspect_eval

    from ccpt.eval.tasks import pi_canceled

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    (log,) = inspect_eval(
        pi_canceled(method=method, seeds=3, oracle_n=2, data_dir=str(ccpt_dir)),
        model="ccpt-scripted/solver",
        model_roles={"grader": "ccpt-scripted/judge"},
        limit=6,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.results is not None
    shown = {(s.name, m.name.split("/")[-1]): m.value for s in log.results.scores for m in s.metrics.values()}
    capsys.readouterr()  # what the eval printed
    assert main(["report", str(tmp_path / "logs"), "--format", "json", "--data-dir", str(ccpt_dir)]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    cells = {r["metric"]: r for r in records if r["table"] == "table3" and r["model"] and r["task"] == "pi_canceled"}
    for key, metric in (("C", "score"), ("R_NP", "r_np"), ("R_HMP", "r_hmp")):
        assert shown[(key, "cell")] == pytest.approx(cells[metric]["mean"], abs=1e-9)
        assert shown[(key, "cell_sem")] == pytest.approx(cells[metric]["spread"], abs=1e-9)
    # The instance mean (seeds averaged per instance, then over instances) is there too, on its own scale.
    assert 0.0 <= shown[("C", "mean")] <= 1.0
