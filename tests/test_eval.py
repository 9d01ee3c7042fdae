"""The Inspect integration end to end, through Inspect's real code path with the offline scripted provider.

`ccpt-scripted` is a registered Inspect model provider (like any API provider), so these runs exercise the
real tasks, solvers, judge scorer, epochs, cache and logs; only the model's text is scripted.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from ccpt.eval.tasks import npc_emergent, pi_canceled, pi_emergent, type_prediction

pytestmark = pytest.mark.shared_data
REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fresh Inspect model cache per test, so call counts are exact."""
    cache = tmp_path / "inspect-cache"
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(cache))
    return cache


def _run(
    task,
    tmp_path: Path,
    model: str = "ccpt-scripted/solver",
    judge: str = "ccpt-scripted/judge",
    limit: int = 2,
    **model_args,
) -> EvalLog:
    logs = inspect_eval(
        task,
        model=model,
        model_args=model_args,
        model_roles={"grader": judge},
        limit=limit,
        log_dir=str(tmp_path / "logs"),
        display="none",
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _rows(log: EvalLog) -> list[dict]:
    rows = []
    for sample in log.samples or []:
        meta = next(s.metadata["ccpt"] for s in sample.scores.values() if s.metadata and "ccpt" in s.metadata)
        rows.extend(meta["samples"])
    return rows


def _solver_seeds(log: EvalLog) -> list[int | None]:
    seeds = []
    for sample in log.samples or []:
        for event in sample.events:
            if event.event == "model" and event.role != "grader":
                seeds.append(event.config.seed)
    return seeds


def test_base_seeds_are_independent_draws(ccpt_dir: Path, tmp_path: Path) -> None:
    log = _run(pi_emergent(method="base", seeds=3, data_dir=str(ccpt_dir)), tmp_path)
    rows = _rows(log)
    assert len(rows) == 2 * 3 and {r["seed"] for r in rows} == {0, 1, 2}
    assert all(r["parse_ok"] and r["r_np"] is not None and r["judge"] == "ccpt-scripted/judge" for r in rows)
    # A distinct seed per epoch (Inspect alone would send the same one to every epoch), and the same seed for
    # every instance of one epoch: 2 instances × 3 epochs → 6 solver calls with 3 distinct seeds.
    seeds = _solver_seeds(log)
    assert len(seeds) == 6 and None not in seeds and len(set(seeds)) == 3
    by_epoch = {}
    for sample in log.samples or []:
        seed = next(e.config.seed for e in sample.events if e.event == "model" and e.role != "grader")
        by_epoch.setdefault(sample.epoch, set()).add(seed)
    assert sorted(len(s) for s in by_epoch.values()) == [1, 1, 1]
    for r in rows:  # E = max(R_N,P − max(R_H,P, R_M,P), 0) on the judged values
        assert r["r_hmp"] == max(r["r_hp"], r["r_mp"])
        assert r["score"] == pytest.approx(max(r["r_np"] - r["r_hmp"], 0.0))


def test_canceled_scores_cancellation(ccpt_dir: Path, tmp_path: Path) -> None:
    rows = _rows(_run(pi_canceled(method="cot", seeds=1, data_dir=str(ccpt_dir)), tmp_path))
    assert all(r["score"] == pytest.approx(max(r["r_hmp"] - r["r_np"], 0.0)) for r in rows)


def test_judge_calls_are_memoised_and_cached(ccpt_dir: Path, tmp_path: Path) -> None:
    from inspect_ai.model import get_model

    calls = tmp_path / "judge-calls.txt"
    task = pi_emergent(method="multi_oracle", seeds=2, oracle_n=5, data_dir=str(ccpt_dir))
    # One judge model argument for both runs: the cache is scoped by the model's arguments.
    logs = inspect_eval(
        task,
        model="ccpt-scripted/solver",
        model_roles={"grader": get_model("ccpt-scripted/judge", calls_file=str(calls), memoize=False)},
        limit=3,
        log_dir=str(tmp_path / "a"),
        display="none",
    )
    # Every judged (concept, property) pair was asked exactly once.
    rows = _rows(logs[0])
    pairs = {(c, r["answer"]) for r in rows for c in (r["combination"], r["head"], r["modifier"])}
    judge_events = [e for s in logs[0].samples for e in s.events if e.event == "model" and e.role == "grader"]
    assert len(judge_events) == len(pairs)
    asked = calls.read_text()
    assert asked.count("\n") == len(pairs)  # and the judge was sent each once
    assert len(rows) == 3 * 2 * 5 and {r["sample"] for r in rows} == set(range(5))
    # Re-scoring the same answers in a new run is free: every judge call is a cache hit.
    judge = get_model("ccpt-scripted/judge", calls_file=str(calls), memoize=False)
    inspect_eval(
        pi_emergent(method="multi_oracle", seeds=2, oracle_n=5, data_dir=str(ccpt_dir)),
        model="ccpt-scripted/solver",
        model_roles={"grader": judge},
        limit=3,
        log_dir=str(tmp_path / "b"),
        display="none",
    )
    assert calls.read_text() == asked  # nothing more was sent


def test_unparsable_answers_are_counted_not_replaced(ccpt_dir: Path, tmp_path: Path) -> None:
    log = _run(pi_emergent(method="base", seeds=2, data_dir=str(ccpt_dir)), tmp_path, limit=4, fail_every=2)
    rows = _rows(log)
    failed = [r for r in rows if not r["parse_ok"]]
    assert failed and all(r["parse_error"] == "no JSON object" and r["r_np"] is None for r in failed)
    assert all(r["answer"] is None and r["score"] is None for r in failed)


def test_noun_phrase_completion_judges_the_model_modifier(ccpt_dir: Path, tmp_path: Path) -> None:
    rows = _rows(_run(npc_emergent(method="base", seeds=1, data_dir=str(ccpt_dir)), tmp_path))
    for r in rows:
        assert r["head"] in r["answer"] and r["answer_modifier"] and r["answer_modifier"] in r["answer"]
        assert r["modifier"] != r["answer_modifier"] or r["combination"] == r["answer"]


def test_type_prediction_exact_match(ccpt_dir: Path, tmp_path: Path) -> None:
    log = _run(type_prediction(data_dir=str(ccpt_dir)), tmp_path, limit=12)
    rows = _rows(log)
    assert {r["gold_type"] for r in rows} == {"emergent", "component", "canceled", "others"}
    for sample, row in zip(log.samples, rows, strict=True):
        correct = next(iter(sample.scores.values())).value["accuracy"]
        assert correct == float(row["pred_type"] == row["gold_type"])


def test_spreading_activation_llm_never_touches_the_graph(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ccpt.spreading.solver as spreading

    def no_graph(*args, **kwargs):
        raise AssertionError("sa_llm must not load a concept graph")

    monkeypatch.setattr(spreading, "load_graph", no_graph)
    log = _run(pi_emergent(method="sa_llm", seeds=1, data_dir=str(ccpt_dir), sa_answer_every_step=True), tmp_path)
    for sample in log.samples:
        meta = next(iter(sample.scores.values())).metadata["ccpt"]
        trajectory = meta["trajectory"]
        seeds = {c.lower() for c in trajectory["seeds"]}
        assert trajectory["steps"] and not seeds & {c.lower() for c in trajectory["final"]}
        assert [r["sa_iteration"] for r in meta["samples"]] == [None, 1, 2, 3, 4, 5]


def test_spreading_activation_with_conceptnet_cache(ccpt_dir: Path, tmp_path: Path) -> None:
    log = _run(npc_emergent(method="sa_conceptnet", seeds=1, data_dir=str(ccpt_dir)), tmp_path)
    trajectory = next(iter(log.samples[0].scores.values())).metadata["ccpt"]["trajectory"]
    assert trajectory["stop_reason"] in ("converged", "max_iterations", "empty")
    assert all(0.0 <= step["delta"] <= 1.0 for step in trajectory["steps"])


def test_inspect_cli_runs_a_registered_task(ccpt_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    inspect = Path(sys.executable).with_name("inspect")
    result = subprocess.run(
        [
            str(inspect),
            "eval",
            "ccpt/pi_emergent",
            "--model",
            "ccpt-scripted/x",
            "--model-role",
            "grader=ccpt-scripted/judge",
            "--limit",
            "1",
            "-T",
            "method=cot",
            "-T",
            f"data_dir={ccpt_dir}",
            "--log-dir",
            str(tmp_path / "logs"),
            "--display",
            "none",
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-2000:]
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0])
    assert log.status == "success" and log.eval.task_args["method"] == "cot" and len(_rows(log)) == 3


def _ccpt(args: list[str], env: dict[str, str], timeout: float = 300) -> subprocess.CompletedProcess[str]:
    exe = Path(sys.executable).with_name("ccpt")
    return subprocess.run([str(exe), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False)


@pytest.mark.parametrize(
    ("model", "expected"),
    [
        ("nonexist/foo", "not recognized"),
        ("openai/gpt-4o", "OPENAI_API_KEY"),
        ("openai-api/loop/m", "Connection error"),
    ],
)
@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_bad_models_fail_fast_with_one_line(model: str, expected: str, ccpt_dir: Path, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI")}
    env |= {"LOOP_API_KEY": "x", "LOOP_BASE_URL": "http://127.0.0.1:9/v1"}
    start = time.monotonic()
    result = _ccpt(
        [
            "run",
            "--model",
            model,
            "--judge",
            model,
            "--limit",
            "1",
            "--task",
            "pi_emergent",
            "--data-dir",
            str(ccpt_dir),
            "--log-dir",
            str(tmp_path / "logs"),
        ],
        env,
        timeout=60,
    )
    assert time.monotonic() - start < 30
    assert result.returncode == 2
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("ccpt: error:") and expected in lines[0], result.stderr


def test_killed_sweep_resumes_without_repeating_calls(ccpt_dir: Path, tmp_path: Path) -> None:
    """Kill `ccpt run` midway, rerun it: every call finished before the kill is served from cache/log."""

    def sweep(log_dir: Path, calls: Path, cache: Path) -> tuple[list[str], dict[str, str]]:
        env = {**os.environ, "INSPECT_CACHE_DIR": str(cache)}
        args = [
            "run",
            "--model",
            "ccpt-scripted/solver",
            "--judge",
            "ccpt-scripted/judge",
            "--task",
            "pi_emergent",
            "--task",
            "npc_emergent",
            "--seeds",
            "2",
            "--limit",
            "4",
            "--no-preflight",
            "--data-dir",
            str(ccpt_dir),
            "--log-dir",
            str(log_dir),
            "-M",
            "latency=0.2",
            "-M",
            f"calls_file={calls}",
            "--max-connections",
            "1",
            "--format",
            "json",
        ]
        return args, env

    # Reference: one uninterrupted run.
    ref_calls = tmp_path / "ref-calls.txt"
    args, env = sweep(tmp_path / "ref", ref_calls, tmp_path / "ref-cache")
    assert _ccpt(args, env).returncode == 0
    expected = len(ref_calls.read_text().splitlines())

    calls = tmp_path / "calls.txt"
    args, env = sweep(tmp_path / "run", calls, tmp_path / "cache")
    exe = Path(sys.executable).with_name("ccpt")
    proc = subprocess.Popen([str(exe), *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < expected // 2):
        time.sleep(0.01)
    # Kill in the middle of the next call's 0.2 s latency, not right after a call returned: a call that has
    # returned but whose answer Inspect has not yet cached (a few ms) would be asked again, as with any API.
    time.sleep(0.1)
    proc.kill()
    proc.wait()
    done_before_kill = len(calls.read_text().splitlines())
    assert 0 < done_before_kill < expected
    result = _ccpt(args, env)
    assert result.returncode == 0, result.stderr[-2000:]
    assert len(calls.read_text().splitlines()) == expected
    summary = json.loads(result.stdout)
    assert summary  # the report of the resumed sweep is printed


def test_openai_compatible_endpoint_on_loopback(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Inspect's real OpenAI-compatible provider against an HTTP server on 127.0.0.1."""
    from loopback_openai import serve

    with serve() as (base_url, requests):
        monkeypatch.setenv("LOOP_API_KEY", "test-key")
        monkeypatch.setenv("LOOP_BASE_URL", base_url)
        log = _run(
            pi_emergent(method="base", seeds=1, data_dir=str(ccpt_dir)),
            tmp_path,
            model="openai-api/loop/test-model",
            judge="openai-api/loop/test-judge",
        )
    rows = _rows(log)
    assert all(r["parse_ok"] and r["r_np"] is not None for r in rows)
    models = [req["model"] for req in requests]
    # Every pair once, and the reply-format probe on the probe pair once (per judge and run: docs/methods.md).
    assert models.count("test-model") == 2 and models.count("test-judge") == 1 + len(
        {(c, r["answer"]) for r in rows for c in (r["combination"], r["head"], r["modifier"])}
    )
    assert all(req["temperature"] == 0.7 and req["top_p"] == 0.95 for req in requests if req["model"] == "test-model")


def test_expected_judge_mode_needs_logprobs(ccpt_dir: Path, tmp_path: Path) -> None:
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    result = _ccpt(
        ["run", "--model", "ccpt-scripted/a", "--judge", "ccpt-scripted/j", "--judge-mode", "expected", "--limit",
         "1", "--task", "pi_emergent", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs")],
        env,
        timeout=120,
    )  # fmt: skip
    lines = [line for line in result.stderr.splitlines() if line.strip()]
    assert result.returncode == 2 and len(lines) == 1 and "returns no token log-probabilities" in lines[0]


def test_a_run_present_twice_in_a_log_dir_is_counted_once(ccpt_dir: Path, tmp_path: Path) -> None:
    import shutil

    from ccpt.results import from_inspect_logs

    log = _run(pi_emergent(method="base", seeds=2, data_dir=str(ccpt_dir)), tmp_path)
    once = from_inspect_logs(tmp_path / "logs")
    source = Path(str(log.location).replace("file://", ""))
    shutil.copy(source, source.with_name("copy-" + source.name))
    twice = from_inspect_logs(tmp_path / "logs")
    assert len(once) == len(twice) == 4
    assert any("is a copy of" in w and "counted once" in w for w in twice.attrs["warnings"])


def test_a_failed_type_prediction_sample_is_counted_not_a_crash(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """One Task-3 sample rejected by the endpoint (HTTP 400): the report still prints, the failure is counted."""
    from loopback_openai import serve

    from ccpt.report import build_report, failures, render
    from ccpt.results import from_inspect_logs

    task = type_prediction(method="base", seeds=1, data_dir=str(ccpt_dir))
    victim = task.dataset[0]
    with serve(fail_when=f"Property: {victim.metadata['property']}") as (base_url, _requests):
        monkeypatch.setenv("LOOP_API_KEY", "test-key")
        monkeypatch.setenv("LOOP_BASE_URL", base_url)
        inspect_eval(
            task,
            model="openai-api/loop/m",
            model_roles={"grader": "openai-api/loop/j"},
            limit=3,
            max_retries=0,
            fail_on_error=False,
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 3
    failed = frame[frame["instance"] == victim.id].iloc[0]
    assert not failed["parse_ok"] and failed["gold_type"] == victim.target
    report = build_report(frame, stat="sem")
    (res,) = report.types
    assert int(res.classification.counts.sum()) + int(res.classification.unparsed.sum()) == 3
    assert int(res.classification.unparsed.sum()) >= 1
    (row,) = failures(frame)
    # The victim has no answer at all: a sample error, not a parse failure (the others are what they are).
    assert row.samples == 3 and row.sample_errors == 1
    assert row.parse_failures == int((frame["parse_ok"] != True).sum()) - 1  # noqa: E712
    assert "Unparsed" in render(report, "markdown")


def test_type_prediction_limit_takes_every_type_alike(ccpt_dir: Path) -> None:
    """`--limit N` on Task 3 (Inspect takes the first N samples) holds ⌊N/4⌋ pairs of each of the four types."""
    from collections import Counter

    from ccpt.spec import TYPE_LABELS

    dataset = type_prediction(data_dir=str(ccpt_dir)).dataset
    assert len(dataset) == 1000 and Counter(s.target for s in dataset) == dict.fromkeys(TYPE_LABELS, 250)
    for limit in (4, 5, 8, 11):
        first = Counter(s.target for s in dataset[:limit])
        assert sorted(first.values(), reverse=True) == [limit // 4 + (k < limit % 4) for k in range(4)], (limit, first)


def test_inspect_eval_without_a_grader_role_scores_with_the_distilled_judge(ccpt_dir: Path, tmp_path: Path) -> None:
    """Issue 17 case 3: `inspect eval` with no grader role never lets the evaluated model judge itself; the log's
    model roles and a warning name the default judge. Metrics: the headline E first, each with a stderr."""
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    inspect = Path(sys.executable).with_name("inspect")
    result = subprocess.run(
        [str(inspect), "eval", "ccpt/pi_emergent", "--model", "ccpt-scripted/x", "--limit", "2", "-T", "seeds=2",
         "-T", f"data_dir={ccpt_dir}", "--log-dir", str(tmp_path / "logs"), "--display", "plain"],
        capture_output=True, text=True, env=env, timeout=300, check=False,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    printed = " ".join((result.stdout + result.stderr).split())
    # (Rich's log layout may insert the source location inside the warning's line)
    assert "no 'grader' model role given" in printed and "ccpt-distilled/default judges" in printed, printed[-2000:]
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0])
    assert str(log.eval.model_roles["grader"].model) == "ccpt-distilled/default"
    judged = {str(e.model) for s in log.samples for e in s.events if e.event == "model" and e.role == "grader"}
    assert judged == {"ccpt-distilled/default"}
    assert [(s.name, list(s.metrics)) for s in log.results.scores] == [
        # The report's cell and its two spreads (the SEM, the paper's ±) first.
        ("E", ["ccpt/cell", "ccpt/cell_sem", "ccpt/cell_sd", "ccpt/mean", "ccpt/stderr"]),
        ("R_NP", ["ccpt/cell", "ccpt/cell_sem", "ccpt/cell_sd", "ccpt/mean", "ccpt/stderr"]),
        ("R_HMP", ["ccpt/cell", "ccpt/cell_sem", "ccpt/cell_sd", "ccpt/mean", "ccpt/stderr"]),
        ("parse_ok", ["ccpt/mean"]),
    ]
    rows = _rows(log)
    e_values = [s.scores["emergence_judge"].value["E"] for s in log.samples]
    assert log.results.scores[0].metrics["ccpt/mean"].value == pytest.approx(sum(e_values) / len(e_values))
    explanation = log.samples[0].scores["emergence_judge"].explanation
    assert f"R_N,P({rows[0]['combination']!r}, " in explanation and ", E = " in explanation


def test_model_arguments_scope_the_answer_cache(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inspect's cache key holds the request, the model and its base URL, not the model's arguments: before, a run
    with ``-M vocabulary=9`` after one with ``-M vocabulary=1`` (one cache) got the first run's answers. Now the
    cache is scoped by the arguments, and the second run answers as it does with a cache of its own."""
    from ccpt.cli import main
    from ccpt.results import load_results

    def answers(vocabulary: int, cache: str) -> list[str]:
        monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / cache))
        log_dir = tmp_path / f"v{vocabulary}-{cache}"
        argv = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
                "--method", "base", "--limit", "3", "--seeds", "1", "-M", f"vocabulary={vocabulary}", "--no-preflight",
                "--display", "none", "--data-dir", str(ccpt_dir), "--log-dir", str(log_dir)]  # fmt: skip
        assert main(argv) == 0
        frame = load_results([log_dir])
        return frame[frame["model"] == "ccpt-scripted/m"].sort_values("instance")["answer"].tolist()

    first = answers(1, "shared")
    assert answers(9, "shared") == answers(9, "own") != first
