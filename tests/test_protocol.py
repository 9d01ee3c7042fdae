"""Protocols (ccpt / as-run) and generation settings, through Inspect's real code path.

Model calls go to the registered ``ccpt-scripted`` provider or to Inspect's real OpenAI provider talking to the
loopback server in ``loopback_openai.py``, which records every request body as sent over HTTP.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai import eval as inspect_eval
from inspect_ai.log import EvalLog

from ccpt.cli import main
from ccpt.errors import CcptError
from ccpt.eval.tasks import pi_canceled, pi_emergent, type_prediction
from ccpt.protocol import AS_RUN, CCPT, FILLED, fill_failed_samples, get_protocol

pytestmark = pytest.mark.shared_data


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    cache = tmp_path / "inspect-cache"
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(cache))
    return cache


@pytest.fixture
def openai_loop(monkeypatch: pytest.MonkeyPatch):
    """The loopback OpenAI server, with Inspect's OpenAI (and Ollama) provider pointed at it."""
    from loopback_openai import serve

    with serve() as loop:
        for variable in ("OPENAI_BASE_URL", "OLLAMA_BASE_URL"):
            monkeypatch.setenv(variable, loop.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "test-key")
        yield loop


def _eval(task, tmp_path: Path, model: str, judge: str, limit: int = 1, **kwargs) -> EvalLog:
    # Bounded like `ccpt run`: a request that cannot succeed fails the test instead of retrying for an hour.
    kwargs.setdefault("max_retries", 1)
    kwargs.setdefault("timeout", 60)
    logs = inspect_eval(
        task,
        model=model,
        model_roles={"grader": judge},
        limit=limit,
        log_dir=str(tmp_path / "logs"),
        display="none",
        **kwargs,
    )
    assert logs[0].status == "success", logs[0].error
    return logs[0]


def _solver_requests(requests: list[dict], model: str) -> list[dict]:
    return [r for r in requests if r["model"] == model]


# ------------------------------------------------------------------------------------------ bad input


def test_unknown_protocol_is_one_line(ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(CcptError, match="unknown protocol 'paper'; choose one of ccpt, as-run"):
        get_protocol("paper")
    code = main(
        ["run", "--model", "ccpt-scripted/a", "--judge", "ccpt-scripted/j", "--task", "pi_emergent", "--limit", "1",
         "-T", "protocol=paper", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs")]
    )  # fmt: skip
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1 and err[0] == "ccpt: error: -T protocol='paper': should be 'ccpt' or 'as-run'"
    assert not (tmp_path / "logs").exists()  # nothing half-written


def test_as_run_refuses_a_method_the_authors_never_ran(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code = main(
        ["run", "--protocol", "as-run", "--model", "ccpt-scripted/a", "--judge", "ccpt-scripted/j", "--method",
         "sa_llm_nofilter", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs")]
    )  # fmt: skip
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert code == 2 and len(err) == 1
    assert "protocol 'as-run' has no method 'sa_llm_nofilter': the authors never ran it" in err[0]
    CCPT.check_method("sa_llm_nofilter")  # the ccpt protocol has it


# ------------------------------------------------------------------------- settings reaching the model


def test_as_run_sends_no_system_message_and_no_top_p_to_openai(ccpt_dir: Path, tmp_path: Path, openai_loop) -> None:
    log = _eval(
        pi_canceled(method="cot", seeds=2, data_dir=str(ccpt_dir), protocol="as-run"),
        tmp_path,
        model="openai/gpt-4o",
        judge="openai/gpt-4o-judge",
    )
    requests = openai_loop.requests
    solver = _solver_requests(requests, "gpt-4o")
    assert len(solver) == 2  # two seeds
    for body in solver:
        assert [m["role"] for m in body["messages"]] == ["user"]
        assert "top_p" not in body
        assert body["temperature"] == 0.7
        assert body.get("max_tokens", body.get("max_completion_tokens")) == 1024
        # The authors' PI-canceled CoT prompt: Base instructions, mismatched worked examples.
        prompt = body["messages"][0]["content"]
        assert "- Combination: Brown apple" in prompt and "- Combination: burned banknote" not in prompt
        assert "carnivorous" in prompt and "reasoning" not in prompt.split("<Example 1>")[0]
    judge = _solver_requests(requests, "gpt-4o-judge")
    assert judge and all("\n---\n" in b["messages"][-1]["content"] for b in judge)
    assert log.eval.task_args["protocol"] == "as-run"


def test_type_prediction_as_run_sends_the_openai_settings(ccpt_dir: Path, tmp_path: Path, openai_loop) -> None:
    """Task 3 honours the protocol (it used to drop it): OpenAI as run is user turn only, 0.7, no top_p, 1024."""
    log = _eval(type_prediction(data_dir=str(ccpt_dir), protocol="as-run"), tmp_path, "openai/gpt-4o", "openai/j", 2)
    as_run = list(openai_loop.requests)
    openai_loop.requests.clear()
    _eval(type_prediction(data_dir=str(ccpt_dir)), tmp_path / "ccpt", "openai/gpt-4o", "openai/j", 2)
    printed = list(openai_loop.requests)
    assert len(as_run) == 2 and all([m["role"] for m in b["messages"]] == ["user"] for b in as_run)
    assert all(b["temperature"] == 0.7 and "top_p" not in b for b in as_run)
    assert all(b.get("max_tokens", b.get("max_completion_tokens")) == 1024 for b in as_run)
    assert all([m["role"] for m in b["messages"]] == ["system", "user"] and b["top_p"] == 0.95 for b in printed)
    assert log.eval.task_args["protocol"] == "as-run" and log.eval.metadata["protocol"] == "as-run"


def test_as_run_o_series_and_ollama_get_no_token_cap_and_their_sampling(
    ccpt_dir: Path, tmp_path: Path, openai_loop
) -> None:
    for model, args in (("openai/o1-mini", {"responses_api": False}), ("ollama/qwen2.5:72b", {})):
        task = pi_emergent(data_dir=str(ccpt_dir), protocol="as-run", seeds=1)
        _eval(task, tmp_path / model, model, "ccpt-scripted/j", model_args=args)  # the loopback speaks chat only
    requests = openai_loop.requests
    solver = [b for b in requests if b["model"] in ("o1-mini", "qwen2.5:72b")]
    assert {b["model"] for b in solver} == {"o1-mini", "qwen2.5:72b"}
    for body in solver:  # a cap would count o1's reasoning tokens; Ollama's native API got none either
        assert not {"max_tokens", "max_completion_tokens"} & set(body), body
        assert [m["role"] for m in body["messages"]] == ["user"]
        # o1: the API's defaults. Ollama: its native defaults, sent, since its /v1 would fill 1.0 for the unsent.
        sampling = {k: body[k] for k in ("temperature", "top_p") if k in body}
        assert sampling == ({} if body["model"] == "o1-mini" else {"temperature": 0.8, "top_p": 0.9}), body


def test_as_run_anthropic_seeds_are_three_requests_with_a_sequence_number(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through Inspect's real Anthropic provider, against a loopback Messages API that records each request."""
    with _anthropic_loopback() as (base_url, requests):
        monkeypatch.setenv("ANTHROPIC_API_KEY", "test-key")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", base_url)
        _eval(
            pi_emergent(data_dir=str(ccpt_dir), protocol="as-run", seeds=3),
            tmp_path,
            "anthropic/claude-3-5-sonnet-20240620",
            "ccpt-scripted/judge",
        )
    assert len(requests) == 3
    texts = sorted(_text(b["messages"][-1]["content"]) for b in requests)
    assert [t[-len(" Sequence: 0") :] for t in texts] == [" Sequence: 0", " Sequence: 1", " Sequence: 2"]
    assert len({t.removesuffix(t[-len(" Sequence: 0") :]) for t in texts}) == 1  # the same prompt otherwise
    assert all(b.get("system") and b["max_tokens"] == 2048 and "top_p" not in b for b in requests)
    # 1.0, the authors' backend default, is also the API's; this Inspect no longer sends a temperature to Anthropic.
    assert all(b.get("temperature", 1.0) == 1.0 for b in requests)


def _text(content: str | list[dict]) -> str:
    return content if isinstance(content, str) else " ".join(part.get("text", "") for part in content)


@contextmanager
def _anthropic_loopback() -> Iterator[tuple[str, list[dict]]]:
    """A minimal Anthropic Messages endpoint on 127.0.0.1 (port 0) answering with the scripted model."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    from scripted_provider import scripted_reply

    requests: list[dict] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
            requests.append(body)
            prompt = _text(body["messages"][-1]["content"])
            reply = {
                "id": f"msg_{len(requests)}", "type": "message", "role": "assistant", "model": body["model"],
                "content": [{"type": "text", "text": scripted_reply(prompt, None)}],
                "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
            }  # fmt: skip
            data = json.dumps(reply).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", requests
    finally:
        server.shutdown()
        server.server_close()


def test_ccpt_run_as_run_type_prediction_logs_as_run_messages_and_settings(ccpt_dir: Path, tmp_path: Path) -> None:
    """`ccpt run --protocol as-run --task type_prediction`, then the log read back: the as-run settings of the
    provider family (a local model here: system prompt, 0.71, no top_p, 2048) and the authors' "others" pairs."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    def run(protocol: str) -> EvalLog:
        logs = tmp_path / protocol
        args = ["run", "--model", "ccpt-scripted/tp", "--judge", "ccpt-scripted/j", "--task", "type_prediction",
                "--limit", "12", "--seeds", "1", "--protocol", protocol, "--data-dir", str(ccpt_dir),
                "--log-dir", str(logs)]  # fmt: skip
        assert main(args) == 0
        (path,) = list_eval_logs(str(logs))
        return read_eval_log(path)

    as_run, printed = run("as-run"), run("ccpt")
    assert as_run.eval.task_args["protocol"] == "as-run" and printed.eval.task_args["protocol"] == "ccpt"
    for log, settings in ((as_run, (0.71, None, 2048)), (printed, (0.7, 0.95, 2048))):
        calls = [e for s in log.samples for e in s.events if e.event == "model" and e.role != "grader"]
        assert len(calls) == 12
        assert {(e.config.temperature, e.config.top_p, e.config.max_tokens) for e in calls} == {settings}
        assert all([m.role for m in e.input] == ["system", "user"] for e in calls)
    others = [s for s in as_run.samples if s.target == "others"]
    typed = {str(s.id).split(":", 1)[1] for s in as_run.samples if s.target != "others"}
    assert others and len(typed) + len(others) == 12
    full = {str(s.id) for s in type_prediction(data_dir=str(ccpt_dir), protocol="as-run").dataset}
    assert {str(s.id) for s in as_run.samples} <= full  # the logged items are the as-run evaluation set


def test_ccpt_protocol_defaults_and_cli_max_tokens_reach_the_request(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from loopback_openai import serve

    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    with serve() as (base_url, requests):
        monkeypatch.setenv("LOOP_BASE_URL", base_url)
        _eval(
            pi_emergent(method="base", seeds=1, data_dir=str(ccpt_dir)),
            tmp_path / "default",
            model="openai-api/loop/test-model",
            judge="openai-api/loop/test-judge",
        )
        defaults = _solver_requests(requests, "test-model")
        requests.clear()
        _eval(
            pi_emergent(method="base", seeds=1, data_dir=str(ccpt_dir)),
            tmp_path / "override",
            model="openai-api/loop/test-model",
            judge="openai-api/loop/test-judge",
            max_tokens=4096,
            temperature=0.2,
        )
        overridden = _solver_requests(requests, "test-model")
    assert defaults and all(
        b["max_tokens"] == 2048 and b["temperature"] == 0.7 and b["top_p"] == 0.95 for b in defaults
    )
    assert [m["role"] for m in defaults[0]["messages"]] == ["system", "user"]
    assert overridden and all(b["max_tokens"] == 4096 and b["temperature"] == 0.2 for b in overridden)
    assert all(b["seed"] == 0 for b in overridden)  # per call: only the per-seed seed


def test_ccpt_run_max_tokens_judge_arg_and_yaml_task_args_reach_the_model(ccpt_dir: Path, tmp_path: Path) -> None:
    """`ccpt run --max-tokens 4096 --judge-arg base_url=… -T sa_epsilon=0.05` on the loopback server.

    Run as a separate `ccpt` process with its own model cache, as a user runs it: in-process state left by
    earlier tests of the session (Ray, signal handlers, a shared cache) then cannot reach this run."""
    import os
    import subprocess
    import sys

    from loopback_openai import serve

    with serve() as (base_url, requests), serve() as (judge_url, judge_requests):
        env = {
            **os.environ,
            "LOOP_API_KEY": "test-key",
            "JUDGE_API_KEY": "judge-key",
            "LOOP_BASE_URL": base_url,
            "JUDGE_BASE_URL": "http://127.0.0.1:9/unused",  # the --judge-arg base_url must win
            "INSPECT_CACHE_DIR": str(tmp_path / "cache"),
        }
        result = subprocess.run(
            [str(Path(sys.executable).with_name("ccpt")),
             "run", "--model", "openai-api/loop/run-model", "--judge", "openai-api/judge/run-judge",
             "--judge-arg", f"base_url={judge_url}", "--task", "pi_emergent", "--method", "sa_llm", "--limit", "1",
             "--seeds", "1", "--max-tokens", "4096", "-T", "sa_epsilon=0.05", "--data-dir", str(ccpt_dir),
             "--log-dir", str(tmp_path / "logs"), "--format", "json", "--timeout", "30", "--max-retries", "1"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    answers = [b for b in requests if b["model"] == "run-model" and "- Answer:" in b["messages"][-1]["content"]]
    assert answers and all(b["max_tokens"] == 4096 and b["temperature"] == 0.7 for b in answers)
    expansion = [b for b in requests if b["model"] == "run-model" and '{"concepts"' in b["messages"][-1]["content"]]
    assert expansion and all(b["temperature"] == 0 for b in expansion)  # SA's greedy expansion keeps its own
    assert judge_requests and all(b["model"] == "run-judge" for b in judge_requests)
    from inspect_ai.log import list_eval_logs, read_eval_log

    log = read_eval_log(list_eval_logs(str(tmp_path / "logs"))[0])
    assert log.eval.task_args["sa_epsilon"] == 0.05 and log.eval.task_args["protocol"] == "ccpt"
    assert json.loads(result.stdout)["provenance"]["protocol"] == "ccpt"


# ------------------------------------------------------------------------------------ SA as run


def _sa_concepts(log) -> tuple[set[str], set[str]]:
    """Every concept of every step of the samples' trajectories, and their seed words."""
    concepts, seeds = set(), set()
    for sample in log.samples:
        trajectory = next(iter(sample.scores.values())).metadata["ccpt"]["trajectory"]
        concepts |= {c for step in trajectory["steps"] for c in step["concepts"]}
        seeds |= set(trajectory["seeds"])
    return concepts, seeds


def test_as_run_sa_llm_is_llm_only_for_gpt4o(ccpt_dir: Path, tmp_path: Path, openai_loop) -> None:
    """GPT-4o's stored LLM-only runs hold no ConceptNet neighbour the model did not write: as run, its LLM source
    stays the model alone (the open models' had the graph too: test_spreading_activation_as_run)."""
    from scripted_provider import CONCEPTS

    task = pi_emergent(method="sa_llm", seeds=1, data_dir=str(ccpt_dir), protocol="as-run")
    concepts, seeds = _sa_concepts(_eval(task, tmp_path, "openai/gpt-4o", "ccpt-scripted/j", limit=2))
    assert concepts and concepts <= set(CONCEPTS) | seeds
    expansion = [b for b in openai_loop.requests if "- Answer:" not in b["messages"][-1]["content"]]
    assert expansion and all([m["role"] for m in b["messages"]] == ["user"] for b in expansion)


def test_spreading_activation_as_run(ccpt_dir: Path, tmp_path: Path) -> None:
    """The authors' algorithm through Inspect: sample of 10, filter view of 5 with O head-first, the own-lemma stop,
    the provider's sampling for the expansion (local family: 0.71) with no system prompt, one expansion shared by
    both seeds; an open (local) model's LLM source gets the ConceptNet neighbours too, as the authors' code gave
    them (their stored Llama LLM-only files: 177 of 454 step-1 concepts are neighbours)."""
    from inspect_ai.log import resolve_sample_attachments
    from scripted_provider import CONCEPTS

    from ccpt.answers import spacy_lemma
    from ccpt.spreading.as_run import as_run_delta

    log = _eval(
        pi_emergent(method="sa_llm", seeds=2, data_dir=str(ccpt_dir), protocol="as-run"),
        tmp_path,
        model="ccpt-scripted/solver",
        judge="ccpt-scripted/judge",
        limit=3,
    )
    finals: dict[str, set] = {}
    calls: Counter[str] = Counter()
    for sample in map(resolve_sample_attachments, log.samples):
        trajectory = next(iter(sample.scores.values())).metadata["ccpt"]["trajectory"]
        steps = trajectory["steps"]
        meta = sample.metadata
        assert trajectory["seeds"] == [meta["head"], meta["modifier"]] == trajectory["objective"]
        assert 1 <= len(steps) <= 5 and all(s["n_candidates"] <= 10 and s["n_shown"] <= 5 for s in steps)
        for step in steps:  # the stop test: every concept its own spaCy lemma (Δ = 0), as the stored files show
            assert step["delta"] == pytest.approx(as_run_delta(step["concepts"], spacy_lemma))
        assert trajectory["stop_reason"] == ("converged" if steps[-1]["delta"] < 0.1 else "max_iterations")
        assert trajectory["final"] == steps[-1]["concepts"]  # the Table-3 answer: the set, seed words and all
        finals.setdefault(str(sample.id), set()).add(tuple(trajectory["final"]))
        expansion = [
            e
            for e in sample.events
            if e.event == "model" and e.role != "grader" and "- Answer:" not in e.input[-1].text
        ]
        filters = [e for e in expansion if "related to both concepts" in e.input[-1].text]
        assert all(f'Concepts: "{meta["head"]}","{meta["modifier"]}"' in e.input[-1].text for e in filters)
        assert all(e.config.temperature == 0.71 and e.config.max_tokens == 2048 for e in expansion)
        assert all([m.role for m in e.input] == ["user"] for e in expansion)  # the authors sent no system prompt
        calls[str(sample.id)] += len(filters)
    assert all(len(v) == 1 for v in finals.values())  # both seeds answer from one trajectory...
    assert len(calls) == 3 and all(calls.values())  # ...expanded once: by whichever seed came first
    concepts, seeds = _sa_concepts(log)
    assert concepts - set(CONCEPTS) - seeds  # concepts the scripted model never writes: the graph's neighbours


def test_failed_sa_steps_are_counted_and_never_reported_as_converged(ccpt_dir: Path, tmp_path: Path) -> None:
    """Issue 22: with every activation reply unparsable the log said "converged" and the report 0 failures."""
    from ccpt.report import build_report, render_markdown
    from ccpt.results import from_inspect_logs

    log = _eval(
        pi_emergent(method="sa_llm", seeds=2, data_dir=str(ccpt_dir)),
        tmp_path,
        model="ccpt-scripted/broken",
        judge="ccpt-scripted/judge",
        limit=2,
        model_args={"fail_every": 1},  # every reply: "I am not sure."
    )
    for sample in log.samples:
        trajectory = next(iter(sample.scores.values())).metadata["ccpt"]["trajectory"]
        assert trajectory["stop_reason"] == "failed" and trajectory["activation_failures"] == 4
        assert trajectory["failed_steps"] == len(trajectory["steps"]) == 2
    frame = from_inspect_logs(tmp_path / "logs")
    assert frame["sa_failed_steps"].tolist() == [2] * 4
    text = render_markdown(build_report(frame, examples_per_group=0))
    failures = text.split("### Failures", 1)[1]
    assert (
        "| SA failed |" in failures
        and "| pi_emergent | ccpt-scripted/broken | S.A.w/ LLM | 4 | 0 | 4 | 0 | 0 | 4 | 0 | 4 |" in failures
    )
    assert "SA failed: samples whose Spreading Activation had a step with an unreadable" in text


def test_a_tidy_table_written_before_sa_failed_steps_existed_still_loads(tmp_path: Path) -> None:
    from ccpt.results import from_tidy

    old = _frame([0.5, 0.5, 0.5], "as-run").drop(columns=["sa_failed_steps", "protocol"])
    old.to_csv(tmp_path / "old.csv", index=False)
    back = from_tidy(tmp_path / "old.csv")
    assert back["sa_failed_steps"].isna().all() and set(back["protocol"]) == {"ccpt"} and len(back) == 3


def test_scorer_falls_back_to_the_output_of_another_solver(ccpt_dir: Path, tmp_path: Path) -> None:
    from inspect_ai.solver import generate

    log = _eval(
        pi_emergent(method="base", seeds=1, data_dir=str(ccpt_dir)),
        tmp_path,
        model="ccpt-scripted/solver",
        judge="ccpt-scripted/judge",
        solver=generate(),
    )
    rows = next(iter(log.samples[0].scores.values())).metadata["ccpt"]["samples"]
    assert len(rows) == 1 and rows[0]["answer_raw"] == log.samples[0].output.completion and rows[0]["parse_ok"]


# ------------------------------------------------------------------------------ as-run failure fill


def _frame(scores: list[float | None], protocol: str) -> pd.DataFrame:
    from ccpt.results import COLUMNS

    rows = []
    for seed, score in enumerate(scores):
        row = dict.fromkeys(COLUMNS)
        row.update(task="pi_emergent", model="m", method="base", seed=seed, instance="i", sample=0, protocol=protocol)
        row.update(answer=None if score is None else f"p{seed}", parse_ok=score is not None, judge="j")
        row.update(r_np=score, r_hp=score, r_mp=score, r_hmp=score, score=score)
        rows.append(row)
    return pd.DataFrame(rows)


def test_as_run_fills_a_failed_sample_from_another_seed_and_counts_it() -> None:
    filled = fill_failed_samples(_frame([None, 0.5, 0.25], "as-run"))
    assert filled["score"].tolist() == [0.5, 0.5, 0.25] and filled["answer"].tolist() == ["p1", "p1", "p2"]
    assert filled[FILLED].tolist()[0] == 1 and filled[FILLED].isna().tolist() == [False, True, True]
    assert filled["parse_ok"].tolist() == [False, True, True]  # still a counted failure
    untouched = fill_failed_samples(_frame([None, 0.5, 0.25], "ccpt"))
    assert pd.isna(untouched["score"][0]) and untouched[FILLED].isna().all()
    assert AS_RUN.fill_failures and not CCPT.fill_failures


def test_report_names_the_protocol_and_counts_fills() -> None:
    from ccpt.report import build_report, render_markdown

    text = render_markdown(build_report(_frame([None, 0.5, 0.25], "as-run"), examples_per_group=0))
    assert "Protocol: as-run" in text
    failures = text.split("### Failures", 1)[1]
    # samples, sample errors, parse failures, judge failures, invalid cells, unscored, filled
    assert "| pi_emergent | m | Base | 3 | 0 | 1 | 0 | 0 | 0 | 1 |" in failures


def test_compare_refuses_mixed_protocols(reference_dir: Path, tmp_path: Path, capsys) -> None:
    from ccpt.results import export, from_reference_csv

    ours = from_reference_csv(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    ours = ours.assign(model="my-model", protocol="ccpt")
    export(ours, tmp_path / "ours.csv")
    args = ["compare", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), str(tmp_path / "ours.csv"),
            "--a", "gpt-4o:base", "--b", "my-model:base", "--resamples", "200"]  # fmt: skip
    assert main(args) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and "runs of different protocols: A is as-run, B is ccpt" in err[0]
    assert main([*args, "--allow-mixed-protocols"]) == 0
    out = capsys.readouterr().out
    assert "pi_emergent score: gpt-4o:base − my-model:base = +0.00" in out and "; protocols as-run vs ccpt" in out


def test_inspect_logs_of_any_model_name_are_read(ccpt_dir: Path, tmp_path: Path) -> None:
    from ccpt.report import build_report, render_markdown
    from ccpt.results import from_inspect_logs

    model = "ccpt-scripted/meta-llama/Llama-3.1-70B.q4:latest"
    _eval(pi_emergent(method="base", seeds=2, data_dir=str(ccpt_dir)), tmp_path, model, "ccpt-scripted/gpt-4.1")
    frame = from_inspect_logs(tmp_path / "logs")
    assert set(frame["model"]) == {model} and set(frame["judge"]) == {"ccpt-scripted/gpt-4.1 (plain)"}  # its identity
    assert set(frame["protocol"]) == {"ccpt"} and len(frame) == 2
    assert f"| {model} | Base |" in render_markdown(build_report(frame, examples_per_group=0))


def test_ccpt_run_judge_as_an_inspect_model_role_spec(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The judge given as an Inspect model-role spec with its own base URL (a separate `ccpt` process, as in
    the test above)."""
    import os
    import subprocess
    import sys

    from loopback_openai import serve

    with serve() as (judge_url, judge_requests):
        env = {**os.environ, "SPEC_API_KEY": "judge-key", "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
        result = subprocess.run(
            [str(Path(sys.executable).with_name("ccpt")),
             "run", "--model", "ccpt-scripted/a", "--judge", f"{{model: openai-api/spec/j, base_url: {judge_url}}}",
             "--task", "pi_emergent", "--limit", "1", "--seeds", "1", "--data-dir", str(ccpt_dir),
             "--log-dir", str(tmp_path / "logs"), "--format", "json", "--timeout", "30", "--max-retries", "1"],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
    assert result.returncode == 0, result.stderr[-2000:]
    assert judge_requests and all(b["model"] == "j" for b in judge_requests)
    bad = main(["run", "--judge", "{model: x/y, colour: red}", "--log-dir", str(tmp_path / "bad")])
    assert bad == 2 and "unsupported key(s) colour in the judge spec" in capsys.readouterr().err


def test_a_report_never_averages_two_protocols_together() -> None:
    from ccpt.report import build_report, render_markdown

    both = pd.concat([_frame([0.5, 0.5, 0.5], "as-run"), _frame([0.0, 0.0, 0.0], "ccpt")], ignore_index=True)
    text = render_markdown(build_report(both, examples_per_group=0))
    plain = text.replace("**", "").replace("<u>", "").replace("</u>", "")
    rows = {line.split("|")[1].strip(): line for line in plain.splitlines() if "| Base |" in line and "pi_" not in line}
    assert set(rows) == {"m [as-run]", "m [ccpt]"}
    assert "| 50.0 ± 0.0 |" in rows["m [as-run]"] and "| 0.0 ± 0.0 |" in rows["m [ccpt]"]
    assert "50.0" not in rows["m [ccpt]"]  # no mean over both protocols' rows
    assert "Protocol: as-run (" in text and "; ccpt (" in text


# ------------------------------------------------------------------------------ NPC answers as run


@pytest.mark.parametrize(
    ("files", "n", "field_rule", "phrase_rule"), [("*", 5511, 5482, 5480), ("more-models/*", 5511, 5460, 5449)]
)
def test_as_run_npc_modifier_is_the_authors_on_their_stored_answers(
    reference_dir: Path, files: str, n: int, field_rule: int, phrase_rule: int
) -> None:
    """The authors lemmatised the reply's ``modifier`` field (the phrase only as a fallback): on their stored replies
    of GPT-4o, and of Llama-3.1-70B and Claude-3.5, that rule gives their modifier more often than the phrase's."""
    from ccpt.answers import authors_modifier, normalise_modifier, parse_answer
    from ccpt.spec import NPC_EMERGENT, TASK_SPECS

    rows = []
    for path in sorted(reference_dir.glob(f"{files}npc_emergent_*.csv")):
        frame = pd.read_csv(path, keep_default_na=False)  # "null" is a modifier there, not a missing value
        for column in frame.columns:
            if column.endswith("_combination") and not column.startswith("meta."):
                run = column.removesuffix("_combination")
                cells = (frame[f"{run}_generated"], frame[column], frame[f"{run}_modifier"], frame["root"])
                rows += zip(*cells, strict=True)
    assert len(rows) == n
    npc = TASK_SPECS[NPC_EMERGENT]
    agree = sum(
        (parse_answer(npc, reply, head, as_run=True).modifier or "") == stored for reply, _, stored, head in rows
    )
    assert agree == field_rule  # the rest: spaCy model versions ("staged" → "stag" here, "stage" in their files)
    assert sum((authors_modifier(c, head) or "") == stored for _, c, stored, head in rows) == phrase_rule
    ccpt_rule = sum(normalise_modifier(c.split()[0]) == stored for _, c, stored, _ in rows if c.split())
    assert ccpt_rule < agree - 300  # ccpt's rule keeps "broken", "dried" …: it is not what the authors judged


def test_as_run_npc_answers_without_the_head_noun_are_judged_anyway() -> None:
    from ccpt.answers import parse_answer
    from ccpt.spec import NPC_EMERGENT, TASK_SPECS

    reply = 'So: {"combination": "campfire", "modifier": "camp"}'
    npc = TASK_SPECS[NPC_EMERGENT]
    assert parse_answer(npc, reply, "fire").error == "head noun 'fire' not in combination"
    as_run = parse_answer(npc, reply, "fire", as_run=True)
    # The authors' rule: the lemma of the reply's modifier field (the combination's word only without one).
    assert as_run.ok and (as_run.value, as_run.modifier) == ("campfire", "camp")
    broken = parse_answer(npc, '{"combination": "a broken oil-rich vase"}', "vase", as_run=True)
    assert broken.ok and broken.modifier == "break"  # no "modifier" key needed; the first content word's lemma
    assert parse_answer(npc, '{"combination": "eye for an eye"}', "eye", as_run=True).error == (
        "combination 'eye for an eye' has no content word besides the head"
    )


def test_as_run_without_spacy_is_one_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import spacy

    from ccpt import answers

    def missing(*args, **kwargs):
        raise OSError("[E050] Can't find model")

    monkeypatch.setattr(spacy, "load", missing)
    caches = (answers.spacy_pipeline, answers._word_lemma, answers.spacy_lemma)
    for cached in caches:
        cached.cache_clear()
    try:
        with pytest.raises(CcptError) as info:
            answers.authors_modifier("broken vase", "vase")
        assert "\n" not in str(info.value) and "pip install 'ccpt[pipeline]'" in str(info.value)
        assert "the as-run protocol needs spaCy" in str(info.value)
    finally:
        for cached in caches:
            cached.cache_clear()


# ------------------------------------------------------------------------------------ issue 41, item 8


@pytest.mark.parametrize(("protocol", "attempts"), [("as-run", 4), ("ccpt", 3)])
def test_judge_attempts_follow_the_protocol(protocol: str, attempts: int) -> None:
    """The authors' judge made 4 attempts: as run, 1 + 3 retries unless -T judge_retries says otherwise."""
    import asyncio

    from inspect_ai.model import get_model

    from ccpt.eval.scorers import make_judge

    model = get_model("ccpt-scripted/judge", fail_every=1)  # every reply unparsable
    judge = make_judge(model, protocol=protocol)
    verdict = asyncio.run(judge.relevance("old ivory,", "white"))
    assert verdict.relevance is None and model.api.calls == attempts  # type: ignore[attr-defined]
    assert make_judge(model, retries=0, protocol=protocol).retries == 0  # -T judge_retries wins


def test_as_run_keeps_the_combinations_as_the_stored_files_have_them(ccpt_dir: Path, reference_dir: Path) -> None:
    """Three test combinations end in a comma in the dataset ("old ivory,"): ccpt strips it, the authors' prompts
    and judge kept it, as their stored answer files show."""
    from ccpt.eval.tasks import npc_emergent

    def combinations(task) -> set[str]:
        return {str(s.metadata["combination"]) for s in task.dataset}

    for build, task in ((pi_canceled, "pi_canceled"), (npc_emergent, "npc_emergent")):
        as_run = combinations(build(protocol="as-run", data_dir=str(ccpt_dir)))
        ccpt = combinations(build(data_dir=str(ccpt_dir)))
        stored = set(pd.read_csv(reference_dir / f"{task}_gpt-4o_naive.csv")["combination"].astype(str))
        assert as_run - ccpt == {c for c in stored if c.endswith(",")} == as_run & stored - ccpt
        assert not any(c.endswith(",") for c in ccpt)
    prompts = [s.input for s in pi_canceled(protocol="as-run", data_dir=str(ccpt_dir)).dataset]
    assert "Combination: old ivory," in prompts


@pytest.mark.parametrize(("model", "asked"), [("ccpt-scripted/solver", True), ("openai/gpt-4o", False)])
def test_as_run_sa_conceptnet_asks_an_open_model_too(
    ccpt_dir: Path, tmp_path: Path, openai_loop, model: str, asked: bool
) -> None:
    """Llama's stored ConceptNet-only runs name concepts that are no neighbour exactly where the head has fewer
    than three (tests/test_activation.py): its runs had the model's list in every method, after the neighbours.
    GPT-4o's ConceptNet-only runs name none: the graph alone."""
    from inspect_ai.log import resolve_sample_attachments

    log = _eval(pi_canceled(method="sa_conceptnet", seeds=1, data_dir=str(ccpt_dir), protocol="as-run"), tmp_path,
                model=model, judge="ccpt-scripted/judge")  # fmt: skip
    sample = resolve_sample_attachments(log.samples[0])
    prompts = [e.input[-1].text for e in sample.events if e.event == "model" and e.role != "grader"]
    activations = [p for p in prompts if "Nodes:" not in p and "- Answer:" not in p]
    assert bool(activations) is asked


def test_dry_run_counts_an_open_models_activations_in_every_sa_method() -> None:
    """As run, an open model's sa_conceptnet asks it for activations too: the plan's call range says so."""
    from ccpt import methods
    from ccpt.methods.definition import Plan
    from ccpt.spec import task_spec

    spec = task_spec("pi_emergent")
    method = methods.parse("sa_conceptnet", spec.name)
    instances = [{}] * 4

    def calls(model: str, protocol: str) -> tuple[int, int]:
        return method.calls(method, Plan(spec, instances, 1, {}, model, protocol))[0]

    graph_only = calls("openai/gpt-4o", "as-run")
    assert calls("vllm/meta-llama/Llama-3.1-70B-Instruct", "ccpt") == graph_only
    open_low, open_high = calls("vllm/meta-llama/Llama-3.1-70B-Instruct", "as-run")
    assert open_low == graph_only[0] + 4 * 2  # both seed words asked at step 1
    assert open_high > graph_only[1]
