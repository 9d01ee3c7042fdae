"""Interrupted runs and damaged logs never cost or falsify a result: `ccpt run` as a subprocess, with the
registered `ccpt-scripted` provider (real Inspect code path, scripted text) and Task 3 in the sweep."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = pytest.mark.shared_data

CCPT = str(Path(sys.executable).with_name("ccpt"))


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "INSPECT_CACHE_DIR": str(cache)}


def _run_args(ccpt_dir: Path, log_dir: Path, calls: Path | None = None) -> list[str]:
    args = [
        CCPT, "run", "--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/judge",
        "--task", "pi_emergent", "--task", "type_prediction", "--seeds", "1", "--limit", "2",
        "--no-preflight", "--data-dir", str(ccpt_dir), "--log-dir", str(log_dir), "--format", "json",
        "-M", "latency=0.2", "--max-connections", "1",
    ]  # fmt: skip
    return args + (["-M", f"calls_file={calls}"] if calls else [])


def _report(log_dir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [CCPT, "report", str(log_dir), "--format", "json", *extra],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def reference(ccpt_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """One uninterrupted run: (its log dir, the JSON report of it)."""
    root = tmp_path_factory.mktemp("reference")
    done = subprocess.run(
        _run_args(ccpt_dir, root / "logs"), env=_env(root / "cache"), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, done.stderr[-2000:]
    report = _report(root / "logs")
    assert report.returncode == 0, report.stderr
    return root / "logs", report.stdout


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGKILL], ids=["SIGINT", "SIGKILL"])
def test_killed_run_resumes_to_the_uninterrupted_report(
    sig: signal.Signals, ccpt_dir: Path, tmp_path: Path, reference: tuple[Path, str]
) -> None:
    calls, log_dir = tmp_path / "calls.txt", tmp_path / "logs"
    args, env = _run_args(ccpt_dir, log_dir, calls), _env(tmp_path / "cache")
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < 2):
        time.sleep(0.01)
    time.sleep(0.1)  # inside the next call's latency
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        # Exit 130, how many samples finished, and no report that could pass for a complete one.
        assert proc.returncode == 130, stderr[-2000:]
        lines = [line for line in stderr.splitlines() if line.startswith("ccpt:")]
        assert len(lines) == 1 and "interrupted" in lines[0], stderr[-2000:]
        finished, total = (int(x) for x in lines[0].split(": ", 2)[2].split(" samples")[0].split(" of "))
        assert 0 <= finished < total == 2 * 3  # pi_emergent base + gold + type_prediction, 2 instances each
        assert stdout == ""
    else:
        assert proc.returncode == -signal.SIGKILL
    resumed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    # The interrupted run's logs stay in the directory; the resumed run's samples supersede them.
    assert len(list(log_dir.glob("*.eval"))) >= 3
    report = _report(log_dir)
    assert report.returncode == 0 and report.stdout == reference[1]


def test_truncated_log_is_named_skipped_and_run_again(
    ccpt_dir: Path, tmp_path: Path, reference: tuple[Path, str]
) -> None:
    import shutil

    log_dir = tmp_path / "logs"
    shutil.copytree(reference[0], log_dir)
    (bad,) = log_dir.glob("*type-prediction*.eval")
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])  # as if killed while writing
    report = _report(log_dir)
    assert report.returncode == 0, report.stderr
    warnings = [line for line in report.stderr.splitlines() if line.strip()]
    assert len(warnings) == 1 and "1 unreadable log file" in warnings[0] and bad.name in warnings[0]
    assert '"table": "table3"' in report.stdout and '"table5"' not in report.stdout  # the good logs are reported
    strict = _report(log_dir, "--strict")
    assert strict.returncode == 2 and strict.stdout == "" and bad.name in strict.stderr
    # A resumed `ccpt run` sets the bad file aside (named) and redoes its task run.
    resumed = subprocess.run(
        _run_args(ccpt_dir, log_dir), env=_env(tmp_path / "cache"), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert bad.name in resumed.stderr and bad.with_name(bad.name + ".unreadable").exists()
    assert _report(log_dir).stdout == reference[1]
