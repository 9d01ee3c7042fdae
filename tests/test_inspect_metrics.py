"""One run, one set of numbers: the metrics an Inspect log shows (``inspect view``) are the cells ``ccpt report``
prints for it — the paper's seed means with the report's ± (SEM) and the paper's ± (population SD) first, the
instance mean and stderr beside them — under every protocol, with the as-run fill of failed samples included.

Real Inspect runs of the real tasks; the scripted provider answers and judges (offline, deterministic), so the
seeds give different answers, and chosen answers fail to parse (a cell with failures is where the two reductions
of the same numbers can differ, and where as-run fills a failed sample from another seed).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ccpt.cli import main


def _report(logs: Path, data_dir: Path, capsys: pytest.CaptureFixture[str], stat: str) -> list[dict]:
    capsys.readouterr()  # what the eval printed
    assert main(["report", str(logs), "--format", "json", "--stat", stat, "--data-dir", str(data_dir)]) == 0
    return json.loads(capsys.readouterr().out)["records"]


@pytest.mark.parametrize("protocol", ["ccpt", "as-run"])
@pytest.mark.parametrize("method", ["base", "multi_oracle"])
def test_log_metrics_equal_the_report_cells(
    ccpt_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    method: str,
    protocol: str,
) -> None:
    from inspect_ai import eval as inspect_eval

    from ccpt.eval.tasks import pi_canceled

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    (log,) = inspect_eval(
        pi_canceled(method=method, seeds=3, oracle_n=2, data_dir=str(ccpt_dir), protocol=protocol),
        model="ccpt-scripted/solver",
        model_args={"fail_one_in": 4},  # about one answer in four fails to parse, the same ones on every run
        model_roles={"grader": "ccpt-scripted/judge"},
        limit=8,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert log.status == "success" and log.results is not None
    shown = {(s.name, m.name.split("/")[-1]): m.value for s in log.results.scores for m in s.metrics.values()}
    by_stat = {}
    for stat in ("sem", "paper"):
        records = _report(tmp_path / "logs", ccpt_dir, capsys, stat)
        by_stat[stat] = {
            r["metric"]: r for r in records if r["table"] == "table3" and r["model"] and r["task"] == "pi_canceled"
        }
        failures = [r for r in records if r["table"] == "failures" and r["task"] == "pi_canceled"]
    counts = {r["metric"]: r["count"] for r in failures}
    assert counts["parse_failures"] > 0  # the run has failed samples ...
    assert (counts["filled"] > 0) == (protocol == "as-run")  # ... which as-run fills from another seed
    for key, metric in (("C", "score"), ("R_NP", "r_np"), ("R_HMP", "r_hmp")):
        assert shown[(key, "cell")] == pytest.approx(by_stat["sem"][metric]["mean"], abs=1e-9)
        assert shown[(key, "cell_sem")] == pytest.approx(by_stat["sem"][metric]["spread"], abs=1e-9)
        assert shown[(key, "cell_sd")] == pytest.approx(by_stat["paper"][metric]["spread"], abs=1e-9)
    # The instance mean (seeds averaged per instance, then over instances) is there too, on its own scale.
    assert 0.0 <= shown[("C", "mean")] <= 1.0
