"""Transient is not final (issue 28, cases 6-7): `ccpt run` with the scripted solver (in-process) and a judge
on the loopback OpenAI server (tests/loopback_openai.py), through Inspect's real OpenAI provider.

- a judge that refuses some pairs (HTTP 400 or 500 for them, while it answers others): the run finishes and those
  pairs are counted judge failures, even when the refused pair is the first one asked;
- a judge whose server is gone: the run stops with one line, exit 2, no traceback; the rerun with the server
  back reports exactly what an uninterrupted run reports;
- a stalled judge is bounded by --timeout; --max-retries 0 is one request per call, the SDK's retries included;
- a rerun with another judge into the same directory keeps both judges' task runs.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from loopback_openai import serve

from ccpt.cli import main
from ccpt.results import from_inspect_logs

pytestmark = pytest.mark.shared_data

CCPT = str(Path(sys.executable).with_name("ccpt"))
JUDGE = "openai-api/loop/j"


def _first_instance(ccpt_dir: Path) -> dict[str, str]:
    """The metadata of pi_emergent's first test instance (the first pairs a run judges)."""
    from ccpt.eval.samples import task_dataset
    from ccpt.spec import PI_EMERGENT, TASK_SPECS

    return dict(task_dataset(TASK_SPECS[PI_EMERGENT], split="test", data_dir=str(ccpt_dir))[0][0].metadata)


def _argv(ccpt_dir: Path, log_dir: Path, *extra: str) -> list[str]:
    return [
        "run", "--model", "ccpt-scripted/solver", "--judge", JUDGE, "--task", "pi_emergent", "--method", "base",
        "--limit", "3", "--seeds", "1", "--data-dir", str(ccpt_dir), "--log-dir", str(log_dir), "--format", "json",
        "--no-preflight", *extra,
    ]  # fmt: skip


def _env(base_url: str, cache: Path) -> dict[str, str]:
    return {**os.environ, "LOOP_BASE_URL": base_url, "LOOP_API_KEY": "test-key", "INSPECT_CACHE_DIR": str(cache)}


def _comparable(stdout: str) -> dict:
    """The JSON report without its token table and creation time (a resumed run served some calls from the cache,
    and two reports made apart differ in their time alone)."""
    payload = json.loads(stdout)
    payload["provenance"].pop("created_utc")
    payload["records"] = [r for r in payload["records"] if r["table"] != "usage"]
    return payload


def _judge_errors(log_dir: Path) -> dict[str, list[str]]:
    """Instance → the judge errors its rows recorded (the score metadata's ``judge_errors``), where there are any."""
    from ccpt.results.inspect_logs import read_logs

    found: dict[str, list[str]] = {}
    for log in read_logs([log_dir]).logs:
        for sample in log.samples or []:
            for score in (sample.scores or {}).values():
                for row in (score.metadata or {}).get("ccpt", {}).get("samples", []):
                    if row.get("judge_errors"):
                        found.setdefault(str(row["instance"]), []).extend(row["judge_errors"])
    return found


def _interruptible() -> None:
    """In the child: SIGINT back to its default (tests/test_interrupts.py says why). A dead endpoint stops the
    run the way Ctrl-C does, through asyncio's SIGINT handler, which Python installs only then."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize("status", [400, 500])
def test_a_judge_refusing_some_pairs_counts_them_and_the_run_finishes(
    status: int, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """The refused pair is the run's first (the first instance's noun phrase): it no longer decides the reply
    format (negotiated on the probe pair), so the other pairs are judged and that one is a counted failure. Before,
    a 500 there failed the negotiation, every sample was an error and every rerun failed alike."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    combination = _first_instance(ccpt_dir)["combination"]
    with serve(fail_when=f"Concept: {combination}\n", fail_status=status) as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        assert main(_argv(ccpt_dir, tmp_path / "logs", "--max-retries", "1")) == 0, capsys.readouterr().err
        report = json.loads(capsys.readouterr().out)
        asked = len(loop.requests)
        # Final, not transient: the rerun asks the judge nothing (the task run is finished).
        assert main(_argv(ccpt_dir, tmp_path / "logs")) == 0
        assert len(loop.requests) == asked
    frame = from_inspect_logs(tmp_path / "logs")
    refused = frame[frame["combination"] == combination]
    assert len(frame) == 3 and frame["parse_ok"].all()
    assert refused["judge_failures"].tolist() == [1] and refused["r_np"].isna().all()
    (errors,) = _judge_errors(tmp_path / "logs").values()
    assert len(errors) == 1 and f"HTTP {status}: rejected by the test server" in errors[0], errors
    assert frame.loc[frame["combination"] != combination, "judge_failures"].sum() == 0
    failures = {r["metric"]: r["count"] for r in report["records"] if r["table"] == "failures"}
    assert failures["judge_failures"] == 1 and failures["sample_errors"] == 0


def test_a_passing_judge_outage_is_retried_not_counted(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys
) -> None:
    """HTTP 503 for one pair, twice (the call and its one retry), then answers: the sample is an error, not a judge
    failure, and the eval set's own retry of the task run judges it again; the run finishes complete. Before, the
    pair was a counted "judge failed" for good."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    combination = _first_instance(ccpt_dir)["combination"]
    with serve(fail_when=f"Concept: {combination}\n", fail_status=503, fail_times=2) as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        assert main(_argv(ccpt_dir, tmp_path / "logs", "--max-retries", "1")) == 0, capsys.readouterr().err
    capsys.readouterr()
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 3 and frame["parse_ok"].all() and frame["judge_failures"].sum() == 0
    assert frame["r_np"].notna().all()


def test_a_dead_judge_stops_the_run_and_the_rerun_equals_the_uninterrupted_run(ccpt_dir: Path, tmp_path: Path) -> None:
    """The judge's server is gone (its port refuses connections): one line, exit 2, no traceback, no table; the
    same command with the server back on the same port reports what an uninterrupted run reports. Before, the
    run exited 0 with every pair "judge failed", and the rerun kept them."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/v1"
    argv = [CCPT, *_argv(ccpt_dir, tmp_path / "logs")]
    shown = [*argv, "--display", "plain"]  # Inspect's progress display, where a traceback wall would be printed
    env = _env(url, tmp_path / "cache")
    dead = subprocess.run(shown, env=env, capture_output=True, text=True, timeout=300, preexec_fn=_interruptible)
    assert dead.returncode == 2, dead.stderr[-3000:]
    assert dead.stderr.count("\n") == 1 and dead.stderr.startswith("ccpt: error: "), dead.stderr[-3000:]
    assert f"{url} stopped answering during the run" in dead.stderr and "0 of 3 samples finished" in dead.stderr
    assert "Traceback" not in dead.stdout and '"records"' not in dead.stdout
    with serve(port=port) as loop:
        back = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
        assert back.returncode == 0, back.stderr[-3000:]
        reference = [CCPT, *_argv(ccpt_dir, tmp_path / "reference")]
        alone = subprocess.run(reference, env=_env(url, tmp_path / "ref-cache"), capture_output=True, text=True)
        assert alone.returncode == 0, alone.stderr[-3000:]
    resumed = _comparable(back.stdout)
    assert resumed == _comparable(alone.stdout)
    failures = {r["metric"]: r["count"] for r in resumed["records"] if r["table"] == "failures"}
    assert failures["judge_failures"] == 0 and failures["sample_errors"] == 0
    assert loop.requests  # the rerun judged what the outage left


@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_a_stalled_judge_is_bounded_by_timeout(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """A judge that accepts requests and never answers: --timeout 3 bounds each judge request, and the run stops
    with one line once the judge does not answer the probe either. Before, judge calls ignored --timeout (Inspect
    hands a role model no attempt timeout) and a stalled judge held the run for minutes."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        start = time.monotonic()
        code = main(_argv(ccpt_dir, tmp_path / "logs", "--timeout", "3", "--max-retries", "0", "--display", "none"))
        elapsed = time.monotonic() - start
    out, err = capsys.readouterr()
    assert code == 2 and out == "", err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "stopped answering during the run" in lines[0] and "AttemptTimeoutError" in lines[0]
    # The negotiation's request and the liveness check, each cut at 3 s; nothing else was sent to a dead judge.
    assert len(loop.requests) == 2
    assert elapsed < 45, elapsed  # two attempts of 3 s, plus task setup on a busy machine (HANG_LIMIT is 60 s)


def test_max_retries_is_every_retry_there_is(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """A server answering HTTP 500 to the solver: --max-retries 0 sends one request per call and --max-retries 1
    two. Before, the OpenAI SDK retried twice inside each of Inspect's attempts (three requests for one)."""
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    for retries in (0, 1):
        monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / f"cache-{retries}"))
        with serve(fail_when="Property", fail_status=500) as loop:
            monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
            model = f"openai-api/loop/m{retries}"  # a model of its own: Inspect keeps built models for the process
            argv = ["run", "--model", model, "--task", "type_prediction", "--limit", "1", "--seeds", "1"]
            argv += ["--no-preflight", "--max-retries", str(retries), "--data-dir", str(ccpt_dir), "--display", "none"]
            code = main([*argv, "--log-dir", str(tmp_path / f"logs-{retries}"), "--format", "json"])
        capsys.readouterr()
        assert code == 1  # a transient failure: not a finished run, "rerun the same command to resume"
        # One sample, tried by the eval set three times (its two task-run retries), each call 1 + retries attempts.
        assert len(loop.requests) == 3 * (1 + retries), (retries, len(loop.requests))
    # Still transient in the log: the rerun asks it again (the log was marked unfinished).
    frame = from_inspect_logs(tmp_path / "logs-1")
    assert frame["parse_error"].str.startswith("sample error:").all()


def test_a_rerun_with_another_judge_keeps_both(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """Two judges into one directory: each judge's task run is its own (neither resumes nor replaces the other),
    and each command's sample count is its own judge's."""
    from ccpt.results.inspect_logs import read_logs, run_key

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--model", "ccpt-scripted/solver", "--task", "pi_emergent", "--method", "base", "--limit", "2"]
    base += ["--seeds", "1", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"), "--no-preflight"]
    assert main([*base, "--judge", "ccpt-scripted/a", "--display", "none"]) == 0
    first = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "logs").glob("*.eval")}
    assert main([*base, "--judge", "ccpt-scripted/b", "--display", "none"]) == 0
    capsys.readouterr()
    logs = read_logs([tmp_path / "logs"]).logs
    assert sorted(run_key(log)[3] for log in logs) == ["ccpt-scripted/a", "ccpt-scripted/b"]
    assert all(log.status == "success" and len(log.samples) == 2 for log in logs)
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "logs").glob("*.eval") if p.name in first} == first
    frame = from_inspect_logs(tmp_path / "logs")
    assert sorted(frame["judge"]) == ["ccpt-scripted/a (plain)"] * 2 + ["ccpt-scripted/b (plain)"] * 2


def _ignoring_sigint() -> None:
    """In the child: SIGINT ignored, as a shell starts a background job (``ccpt run … &``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def test_a_server_killed_mid_run_is_one_line_and_counts_what_the_logs_hold(ccpt_dir: Path, tmp_path: Path) -> None:
    """The evaluated model's server goes away after a few answers, in a process started with SIGINT ignored (a
    background job): the run stops with ccpt's one line, Inspect's display says nothing after it (no sample-error
    warning, task panel, traceback nor "Completed all tasks … successfully"), and the count of finished samples is
    the logs' (an interrupted log records no count of its own; it used to be read as 0)."""
    from inspect_ai.log import read_eval_log

    argv = [
        CCPT, "run", "--model", "openai-api/loop/m", "--task", "type_prediction", "--limit", "8", "--seeds", "2",
        "--max-connections", "1", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"), "--no-preflight",
        "--display", "plain",
    ]  # fmt: skip
    with serve(die_after=5) as loop:
        env = _env(loop.base_url, tmp_path / "cache")
        dead = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, preexec_fn=_ignoring_sigint)
    assert dead.returncode == 2, dead.stderr[-3000:]
    assert dead.stderr.count("\n") == 1 and f"{loop.base_url} stopped answering during the run" in dead.stderr
    for said in ("Traceback", "Sample error", "Completed all tasks", "retry 1 of"):
        assert said not in dead.stdout + dead.stderr, dead.stdout[-3000:]
    logs = [read_eval_log(str(p)) for p in (tmp_path / "logs").glob("*.eval")]
    held = sum(1 for log in logs for s in log.samples or [] if s.error is None and s.scores)
    assert held == 5 and f"; {held} of 16 samples finished" in dead.stderr, dead.stderr


def test_transient_failures_below_inspects_threshold_are_not_called_a_success(ccpt_dir: Path, tmp_path: Path) -> None:
    """One pair of six answered HTTP 503 every time: Inspect finishes the task run (one failed sample is under its
    ``fail_on_error`` of 20%) and would print "Completed all tasks … successfully"; ccpt marks the log unfinished
    (a transient failure is no result), so that line is not printed: ccpt's own says how many samples failed and
    that the same command resumes them; the rerun that finishes them prints Inspect's line. Before, both lines were
    printed, the first contradicting the second. Each command runs in its own process, as a user's does: Inspect
    keeps the first display type a process asks for, so in a test worker an earlier test's "none" would hide it."""
    combination = _first_instance(ccpt_dir)["combination"]
    argv = [CCPT, *_argv(ccpt_dir, tmp_path / "logs", "--max-retries", "0", "--display", "plain")]
    argv[argv.index("--limit") + 1] = "6"
    port = _free_port()  # the rerun's server on the same port: the same endpoint
    with serve(fail_when=f"Concept: {combination}\n", fail_status=503, port=port) as loop:
        env = _env(loop.base_url, tmp_path / "cache")
        first = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert first.returncode == 1, first.stderr[-3000:]
    shown = first.stdout + first.stderr
    assert "Completed all tasks" not in shown and "successfully" not in shown, shown[-3000:]
    assert "1 sample(s) failed transiently" in first.stderr and "rerun the same command" in first.stderr, first.stderr
    with serve(port=port):  # the rerun, the pair answered: finished, and Inspect's line says so
        again = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300)
    assert again.returncode == 0, again.stderr[-3000:]
    assert "Completed all tasks" in again.stdout and "failed transiently" not in again.stderr, again.stdout[-3000:]
