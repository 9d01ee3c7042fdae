"""Interrupted runs and damaged logs never cost or falsify a result: `ccpt run` as a subprocess, with the
registered `ccpt-scripted` provider (real Inspect code path, scripted text) and Task 3 in the sweep."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import cross_process_lock

pytestmark = pytest.mark.shared_data

CCPT = str(Path(sys.executable).with_name("ccpt"))


def _env(cache: Path) -> dict[str, str]:
    return {**os.environ, "INSPECT_CACHE_DIR": str(cache)}


def _run_args(ccpt_dir: Path, log_dir: Path, calls: Path | None = None) -> list[str]:
    args = [
        CCPT, "run", "--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/judge",
        "--task", "pi_emergent", "--task", "type_prediction", "--seeds", "1", "--limit", "2",
        "--no-preflight", "--data-dir", str(ccpt_dir), "--log-dir", str(log_dir), "--format", "json",
        "-M", "latency=0.5", "--max-connections", "1",
    ]  # fmt: skip
    # 0.5 s a call, one at a time: a signal sent just after the Nth of the 4 solver calls lands inside the next
    # even when a loaded machine runs this process late.
    return args + (["-M", f"calls_file={calls}"] if calls else [])


def _interruptible() -> None:
    """In the child before exec: SIGINT back to its default. A suite started in the background by a shell without
    job control (``pytest … &``) ignores SIGINT, every child inherits that, and Python then never raises
    KeyboardInterrupt: the run would simply finish, and the test would test nothing."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _report(log_dir: Path, capsys: pytest.CaptureFixture[str], *extra: str) -> tuple[int, str, str]:
    """`ccpt report LOG_DIR --format json` in-process: (exit code, stdout, stderr)."""
    from ccpt.cli import main

    capsys.readouterr()
    code = main(["report", str(log_dir), "--format", "json", *extra])
    out, err = capsys.readouterr()
    return code, out, err


def _results(report: tuple[int, str, str]) -> tuple[int, dict, str]:
    """The report without its token table (a resumed run legitimately served some calls from the model cache)
    and without its creation time (two reports made a second apart differ there and nowhere else)."""
    code, out, err = report
    payload = json.loads(out)
    payload["provenance"].pop("created_utc")
    usage = [r for r in payload["records"] if r["table"] == "usage"]
    assert usage  # the token table is there, just not compared
    payload["records"] = [r for r in payload["records"] if r["table"] != "usage"]
    return code, payload, err


@pytest.fixture(scope="module")
def reference(ccpt_dir: Path, run_shared_dir: Path) -> tuple[Path, Path]:
    """One uninterrupted run: (its log dir, its model cache).

    Made once per test run, not once per xdist worker that runs a test of this module (~15-30 s each): built
    under a lock, published by renaming the finished directory. Its logs are only read; its cache is used by
    test_truncated_log_is_named_skipped_and_run_again alone.
    """
    root = run_shared_dir / "interrupts-reference"
    with cross_process_lock(run_shared_dir / "interrupts-reference.lock"):
        if not root.is_dir():
            partial = root.with_name(f"{root.name}.partial-{os.getpid()}")
            done = subprocess.run(
                _run_args(ccpt_dir, partial / "logs"),
                env=_env(partial / "cache"),
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert done.returncode == 0, done.stderr[-2000:]
            partial.rename(root)
    return root / "logs", root / "cache"


@pytest.mark.parametrize(
    ("sig", "after"),
    [(signal.SIGINT, 2), (signal.SIGINT, 3), (signal.SIGKILL, 2)],
    ids=["SIGINT", "SIGINT-last-task", "SIGKILL"],
)
def test_killed_run_resumes_to_the_uninterrupted_report(
    sig: signal.Signals, after: int, ccpt_dir: Path, tmp_path: Path, reference: tuple[Path, Path], capsys
) -> None:
    """``after``: solver calls made before the signal. After the 3rd, Task 3 is running while pi_emergent's tasks
    are judging; Inspect then reported success with the cancelled runs left out of its list, and `ccpt run` printed
    an incomplete report with exit 0 (fixed: every task must have a log)."""
    calls, log_dir = tmp_path / "calls.txt", tmp_path / "logs"
    args, env = _run_args(ccpt_dir, log_dir, calls), _env(tmp_path / "cache")
    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=_interruptible
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < after):
        time.sleep(0.01)
    time.sleep(0.05)  # inside the next call's latency
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
        # The interrupted logs (cancelled samples, Task 3 among them) still report: failures counted, run flagged.
        code, out, err = _report(log_dir, capsys)
        assert code == 0 and "interrupted runs" in out, err
    else:
        assert proc.returncode == -signal.SIGKILL
    resumed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    # The interrupted run's logs stay in the directory; the resumed run's samples supersede them.
    assert len(list(log_dir.glob("*.eval"))) >= 3
    assert _results(_report(log_dir, capsys)) == _results(_report(reference[0], capsys))


def test_truncated_log_is_named_skipped_and_run_again(
    ccpt_dir: Path, tmp_path: Path, reference: tuple[Path, Path], capsys
) -> None:
    import shutil

    log_dir = tmp_path / "logs"
    shutil.copytree(reference[0], log_dir)
    (bad,) = log_dir.glob("*type-prediction*.eval")
    bad.write_bytes(bad.read_bytes()[: bad.stat().st_size // 2])  # as if killed while writing
    code, out, err = _report(log_dir, capsys)
    assert code == 0, err
    warnings = [line for line in err.splitlines() if line.strip()]
    assert len(warnings) == 1 and "skipped 1 unreadable log file" in warnings[0] and bad.name in warnings[0]
    assert '"table": "table3"' in out and '"table5"' not in out  # the good logs are still reported
    assert bad.name in out  # … and the report itself says one was skipped
    code, out, err = _report(log_dir, capsys, "--strict")
    assert code == 2 and out == "" and bad.name in err
    # A resumed `ccpt run` sets the bad file aside (named) and redoes its task run (from the model cache).
    resumed = subprocess.run(
        _run_args(ccpt_dir, log_dir), env=_env(reference[1]), capture_output=True, text=True, timeout=300
    )
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert bad.name in resumed.stderr and bad.with_name(bad.name + ".unreadable").exists()
    assert _results(_report(log_dir, capsys)) == _results(_report(reference[0], capsys))
