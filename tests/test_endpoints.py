"""Hostile OpenAI-compatible endpoints (tests/loopback_openai.py on 127.0.0.1) through Inspect's real provider:
a hung, dripping or truncating server is bounded by --timeout; an empty `choices` list is a counted failure."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from inspect_ai import eval as inspect_eval
from loopback_openai import HANG_LIMIT, serve

from ccpt.cli import main
from ccpt.errors import ModelError
from ccpt.eval.sweep import Sweep, preflight, run_sweep
from ccpt.eval.tasks import type_prediction
from ccpt.results import from_inspect_logs, load_results

pytestmark = pytest.mark.shared_data


@pytest.fixture(autouse=True)
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("LOOP_API_KEY", "test-key")


def _small_sweep(tmp_path: Path, ccpt_dir: Path, **fields: object) -> Sweep:
    """A one-seed sweep logging under ``tmp_path`` with no display; ``fields`` say the rest."""
    return Sweep(seeds=1, log_dir=tmp_path / "logs", data_dir=str(ccpt_dir), display="none", **fields)  # type: ignore[arg-type]


def _one_task3_item(model: str, tmp_path: Path, ccpt_dir: Path, *, max_retries: int) -> Sweep:
    """A sweep of one Task-3 item, attempts cut at 2 s."""
    return _small_sweep(
        tmp_path, ccpt_dir, models=[model], judge=None, tasks=["type_prediction"], limit=1, timeout=2,
        max_retries=max_retries,
    )  # fmt: skip


@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_hung_endpoint_fails_the_preflight_within_the_timeout(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        start = time.monotonic()
        # The server named (here from LOOP_BASE_URL): a model and a judge of one name may be on two servers.
        with pytest.raises(ModelError, match=rf"'openai-api/loop/m' at {loop.base_url} did not answer within 3s"):
            preflight(["openai-api/loop/m"], timeout=3)
        assert time.monotonic() - start < 3 + 5
        assert len(loop.requests) == 1  # one attempt, no retry of a hung request in the preflight


@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_hung_judge_fails_the_preflight_as_not_answering(monkeypatch: pytest.MonkeyPatch) -> None:
    """The judge's preflight is its real request: one --timeout when it hangs (its cut request is the answer; a
    liveness check after it doubled the wait), told apart from other failures by the exception's class."""
    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        start = time.monotonic()
        said = rf"^judge 'openai-api/loop/j' at {loop.base_url} did not answer within 3s \(is the endpoint"
        with pytest.raises(ModelError, match=said):  # at its URL (seen on the real server: a judge and a model of
            preflight([], ["openai-api/loop/j"], timeout=3)  # one name on two ports, the line named neither)
        # One request cut at --timeout: no liveness check after it (that took a second --timeout).
        assert time.monotonic() - start < 3 + 10
        assert len(loop.requests) == 1


@pytest.mark.parametrize("mode", ["hang", "drip", "truncated"])
@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_stalled_replies_are_bounded_by_timeout_and_counted(
    mode: str, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No preflight: each attempt of each sample is cut at --timeout; the failure is counted, the run ends."""
    with serve(mode=mode) as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        # a model name of its own: never a cache hit from another test
        sweep = _one_task3_item(f"openai-api/loop/{mode}", tmp_path, ccpt_dir, max_retries=0)
        start = time.monotonic()
        finished = run_sweep(sweep, check_models=False)
        elapsed = time.monotonic() - start
    # Each attempt is cut at 2 s, where one uncut attempt alone would be held for HANG_LIMIT (60 s); the sweep
    # retries a failed task run twice (Inspect's eval set). The rest of the time is task setup on a busy machine.
    assert loop.requests and elapsed < HANG_LIMIT, elapsed
    assert not finished
    frame = from_inspect_logs(tmp_path / "logs")
    (row,) = frame.itertuples()
    assert not row.parse_ok and row.parse_error.startswith("sample error:") and row.gold_type


def test_empty_choices_is_a_counted_parse_failure(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    with serve(mode="empty_choices") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        (log,) = inspect_eval(
            type_prediction(data_dir=str(ccpt_dir), seeds=1),
            model="openai-api/loop/m",
            limit=2,
            max_retries=0,
            attempt_timeout=20,
            log_dir=str(tmp_path / "logs"),
            display="none",
        )
    assert log.status == "success" and all(s.error is None for s in log.samples)
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 2 and not frame["parse_ok"].any() and set(frame["answer_raw"]) == {None}  # no text


def test_token_counts_equal_what_the_server_recorded(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Per model and role: calls and input/output tokens are the server's `usage`; a rerun is all cache hits."""
    from ccpt.results.usage import Price, read_usage

    def sweep(log_dir: Path) -> None:
        run_sweep(
            Sweep(
                models=["openai-api/loop/m"],
                judge="openai-api/loop/j",
                judge_mode="text",
                tasks=["pi_emergent", "type_prediction"],
                methods=["base"],
                seeds=1,
                limit=2,
                log_dir=log_dir,
                data_dir=str(ccpt_dir),
                display="none",
            ),
            check_models=False,
        )

    with serve() as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep(tmp_path / "first")
        served = list(loop.usage)
        sweep(tmp_path / "again")  # same model cache: nothing is asked twice
        assert loop.usage == served
    prices = {"openai-api/loop/j": Price(input=2.5, output=10.0)}
    rows = {(r.model, r.role): r for r in read_usage([tmp_path / "first"], prices)}
    assert set(rows) == {("openai-api/loop/m", "solver"), ("openai-api/loop/j", "judge")}
    for (model, _role), row in rows.items():
        mine = [u for u in served if u["model"] == model.rsplit("/", 1)[-1]]
        assert row.calls == len(mine) > 0 and row.cached_calls == 0
        assert row.input_tokens == sum(u["prompt_tokens"] for u in mine)
        assert row.output_tokens == sum(u["completion_tokens"] for u in mine)
    judge = rows[("openai-api/loop/j", "judge")]
    assert judge.cost == pytest.approx((judge.input_tokens * 2.5 + judge.output_tokens * 10.0) / 1e6)
    assert rows[("openai-api/loop/m", "solver")].cost is None  # no price given: no cost, never a guess
    again = {(r.model, r.role): r for r in read_usage([tmp_path / "again"])}
    assert {k: (r.calls, r.cached_calls) for k, r in again.items()} == {k: (0, r.calls) for k, r in rows.items()}


def test_empty_choices_fails_the_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    with serve(mode="empty_choices") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        with pytest.raises(ModelError, match=r"'openai-api/loop/m' answered with no choices"):
            preflight(["openai-api/loop/m"], timeout=10)
        # The same server as the judge: the same line, not a warning and a run of judge failures.
        with pytest.raises(ModelError, match=r"judge 'openai-api/loop/m' answered with no choices"):
            preflight([], judges=["openai-api/loop/m"], timeout=10)


def test_judge_refused_in_every_format_is_one_line_in_the_preflight(monkeypatch: pytest.MonkeyPatch) -> None:
    """A deterministic refusal of the judge's request (here HTTP 400 on the judge prompt) ends before any work."""
    with serve(fail_when="Relevance:") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        with pytest.raises(ModelError) as caught:
            preflight(["openai-api/loop/m"], ["openai-api/loop/j"], timeout=10)
    line = str(caught.value)
    assert "judge 'openai-api/loop/j' refused every request" in line and "HTTP 400: rejected by the test server" in line
    assert "\n" not in line
    judged = [r for r in loop.requests if r["model"] == "j"]
    # two refusals per format, best first: JSON schema, JSON object, the plain prompt
    kinds = [(r.get("response_format") or {}).get("type", "plain") for r in judged]
    assert kinds == ["json_schema"] * 2 + ["json_object"] * 2 + ["plain"] * 2


def test_judge_falls_back_from_json_schema_and_says_so(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """A server that refuses JSON schema (HTTP 500, as llama-cpp-python's does): the judge answers in JSON-object
    mode, every pair is judged (0 judge failures, not parse failures), and the report names the format."""
    with serve(mode="no_json_schema") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep = _small_sweep(
            tmp_path, ccpt_dir, models=["openai-api/loop/m"], judge="openai-api/loop/j", tasks=["pi_emergent"],
            methods=["base"], limit=2,
        )  # fmt: skip
        assert run_sweep(sweep)
    frame = from_inspect_logs(tmp_path / "logs")
    assert len(frame) == 2 and frame["parse_ok"].all() and frame["judge_failures"].sum() == 0
    assert set(frame["judge"]) == {"openai-api/loop/j (json_object)"}  # its identity: the format it took
    notes = load_results(tmp_path / "logs").attrs["notes"]  # what a report says, once for every path it reads
    assert any("openai-api/loop/j: json_object (json_schema refused: HTTP 500" in n for n in notes)
    judged = [(r.get("response_format") or {}).get("type") for r in loop.requests if r["model"] == "j"]
    # Negotiated once per judge and run (by the preflight, on the probe pair): JSON schema refused twice, then never
    # asked again, neither by the preflight's own pair nor by the task run's judge.
    assert judged[:2] == ["json_schema"] * 2 and set(judged[2:]) == {"json_object"}, judged


def test_a_request_the_server_rejects_is_one_line_without_rerun_advice(ccpt_dir: Path, tmp_path: Path) -> None:
    """Every Task-3 request gets HTTP 400: the run ends with what the server said, not "rerun to resume". The
    answers are slow, so other requests are still in flight when the first 400 stops the task run: their samples
    are cancelled, not refused, and must not hide the refusal."""
    import os
    import subprocess
    import sys

    with serve(fail_when="Property", latency=0.5) as loop:
        env = {**os.environ, "LOOP_BASE_URL": loop.base_url, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
        result = subprocess.run(
            [str(Path(sys.executable).with_name("ccpt")), "run", "--model", "openai-api/loop/m", "--task",
             "type_prediction", "--limit", "10", "--seeds", "1", "--no-preflight", "--max-retries", "0",
             "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs")],
            capture_output=True, text=True, env=env, timeout=300, check=False,
        )  # fmt: skip
    lines = [line for line in result.stderr.splitlines() if line.startswith("ccpt:")]
    assert result.returncode == 2 and len(lines) == 1, result.stderr[-2000:]
    assert "HTTP 400: rejected by the test server" in lines[0] and "rerun the same command" not in result.stderr


def test_timed_out_attempts_are_counted_per_model_and_role(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """Issue 17 case 5: attempts cut by --timeout and retried show in the usage table, and the run says why."""
    from ccpt.results.usage import read_usage, timeout_note

    with serve(mode="hang") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        sweep = _one_task3_item("openai-api/loop/slow", tmp_path, ccpt_dir, max_retries=1)
        run_sweep(sweep, check_models=False)
        sent = len(loop.requests)
    (row,) = read_usage([tmp_path / "logs"])
    assert (row.model, row.role) == ("openai-api/loop/slow", "solver")
    # Every request the server got, each cut at 2 s: the attempt and its one retry, in each of the eval set's three
    # tries of the task run (before, the logs of the first two tries were removed and their attempts not counted).
    assert row.calls == row.failed_attempts == row.timed_out == sent == 3 * 2
    note = timeout_note([row], 2)
    assert note and "6 of 6 attempts" in note and "--max-connections 1" in note


def test_each_model_reaches_its_own_server(ccpt_dir: Path, tmp_path: Path, monkeypatch) -> None:
    """`--model-base-url` once per `--model`: each model's preflight and requests go to its own server."""
    monkeypatch.delenv("LOOP_BASE_URL", raising=False)
    with serve() as one, serve() as two:
        models = ["openai-api/loop/first", "openai-api/loop/second"]
        urls = dict(zip(models, (one.base_url, two.base_url), strict=True))
        sweep = _small_sweep(
            tmp_path, ccpt_dir, models=models, base_urls=urls, judge=None, tasks=["type_prediction"], limit=2
        )
        assert run_sweep(sweep)
    assert {r["model"] for r in one.requests} == {"first"} and {r["model"] for r in two.requests} == {"second"}
    assert len(one.requests) == len(two.requests) == 3  # the preflight, then one request per item
    frame = from_inspect_logs(tmp_path / "logs")
    assert sorted(frame["model"]) == ["openai-api/loop/first"] * 2 + ["openai-api/loop/second"] * 2


def test_a_servers_detail_message_is_quoted_not_none() -> None:
    # llama-cpp-python's server (FastAPI) answers an unknown path with {"detail": "Not Found"}, not OpenAI's shape.
    import httpx
    import openai

    from ccpt.io.provider_errors import server_message

    body = {"detail": "Not Found"}
    response = httpx.Response(404, json=body, request=httpx.Request("POST", "http://127.0.0.1:9/v1/chat"))
    not_found = openai.NotFoundError("Error code: 404", response=response, body=body)
    assert server_message(not_found) == "HTTP 404: Not Found"
    openai_shape = {"error": {"message": "model 'x' not found"}}
    error = openai.NotFoundError("Error code: 404", response=response, body=openai_shape)
    assert server_message(error) == "HTTP 404: model 'x' not found"


@pytest.mark.parametrize("role", ["model", "judge"])
def test_a_missing_api_key_names_the_role_and_the_variable(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], role: str
) -> None:
    monkeypatch.setenv("NOKEYSVC_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("NOKEYSVC_API_KEY", raising=False)
    served = (
        ["--model", "openai-api/nokeysvc/x"]
        if role == "model"
        else ["--model", "ccpt-scripted/x", "--judge", "openai-api/nokeysvc/x"]
    )
    argv = ["run", *served, "--task", "pi_emergent", "--limit", "1", "--data-dir", str(ccpt_dir)]
    assert main([*argv, "--log-dir", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.splitlines() == [
        f"ccpt: error: {role} 'openai-api/nokeysvc/x' is not usable: NOKEYSVC_API_KEY is not set "
        "(export NOKEYSVC_API_KEY=<key>; any value does for a server that checks none)"
    ]


@pytest.mark.parametrize(
    ("model", "variable"),
    [
        ("openai-api/llamacpp/qwen", "LLAMACPP_BASE_URL"),
        ("openai-api/my-svc/m", "MY_SVC_BASE_URL"),
        ("llama-cpp-python/qwen", "LLAMA_CPP_PYTHON_BASE_URL"),
        ("ollama/llama3.1", "OLLAMA_BASE_URL"),
        ("openai/gpt-4o", "OPENAI_BASE_URL"),
        ("openai-api/other/m", "INSPECT_EVAL_MODEL_BASE_URL"),  # Inspect's fallback for every provider's variable
    ],
)
def test_the_server_a_variable_names_is_the_one_inspect_sends_to(
    model: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """ccpt reads a provider's base-URL variable as Inspect's provider does (checked on the built provider)."""
    from inspect_ai.model import get_model

    from ccpt.eval.endpoints import configured, same_url

    for name in ("OTHER_BASE_URL", "INSPECT_EVAL_MODEL_BASE_URL"):
        monkeypatch.delenv(name, raising=False)
    url = "http://127.0.0.1:9/v1/"
    monkeypatch.setenv(variable, url)
    service = model.split("/")[1 if model.startswith("openai-api/") else 0]
    monkeypatch.setenv(f"{service.upper().replace('-', '_')}_API_KEY", "k")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    api = get_model(model, memoize=False).api
    sent_to = getattr(api, "base_url", None) or str(api.client.base_url)  # type: ignore[attr-defined]
    assert same_url(sent_to, url)
    assert configured(model) == configured(model, url, variable)
    assert configured("gguf/qwen2.5-0.5b").url is None  # an in-process model reads no variable


def test_a_server_named_by_a_variable_is_recorded_and_compared(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The route docs/serving.md shows: LOOP_BASE_URL names the model's server, LOOPJ_BASE_URL the judge's. Each log
    records the URL; the same command with a variable pointed at another server is refused (the run, and --dry-run)
    in one line naming the variable; the same servers resume. Before, the log recorded no URL and the rerun printed
    the first server's table as the second's ("done: skipped")."""
    from ccpt.results.inspect_logs import read_logs

    monkeypatch.setenv("LOOPJ_API_KEY", "test-key")
    argv = ["run", "--model", "openai-api/loop/m", "--judge", "openai-api/loopj/j", "--task", "pi_emergent",
            "--method", "base", "--limit", "1", "--seeds", "1", "--data-dir", str(ccpt_dir), "--display", "none",
            "--log-dir", str(tmp_path / "logs"), "--format", "json"]  # fmt: skip
    with serve() as one, serve() as two:
        monkeypatch.setenv("LOOP_BASE_URL", one.base_url)
        monkeypatch.setenv("LOOPJ_BASE_URL", one.base_url)
        assert main(argv) == 0
        (log,) = read_logs([tmp_path / "logs"], header_only=True).logs
        assert log.eval.model_base_url == one.base_url and log.eval.model_roles["grader"].base_url == one.base_url
        for variable, role, name in (("LOOP_BASE_URL", "model", "loop/m"), ("LOOPJ_BASE_URL", "judge", "loopj/j")):
            monkeypatch.setenv(variable, two.base_url)
            for extra in ([], ["--dry-run"]):
                capsys.readouterr()
                assert main([*argv, *extra]) == 2
                err = capsys.readouterr().err.strip().splitlines()
                assert len(err) == 1 and f"holds a run of {role} 'openai-api/{name}'" in err[0]
                assert f"at {one.base_url}, not at {two.base_url} ({variable})" in err[0], err
            monkeypatch.setenv(variable, one.base_url)
        sent = len(one.requests)
        capsys.readouterr()
        assert main(argv) == 0  # the same servers: the finished run is skipped, nothing is asked again
        assert len(one.requests) - sent <= 2 and not two.requests  # the preflight's requests alone (or cached)
