"""`ccpt run`: evaluate models on CCPT (a resumable sweep) and print the Table-3-style summary (or the plan)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import click

from ccpt.cli.messages import warn
from ccpt.cli.options import (
    DIR,
    RUN_TYPES,
    defaulted,
    judge_arg_option,
    judge_mode_option,
    key_values,
    prices_option,
    request_limits,
)
from ccpt.methods import BUILTIN
from ccpt.protocol import DEFAULT_PROTOCOL, PROTOCOLS
from ccpt.spec import NOFILTER_SUFFIX, TASKS

if TYPE_CHECKING:
    from ccpt.eval.sweep import Sweep


def _base_urls(models: list[str], urls: tuple[str, ...], model_args: dict[str, object]) -> dict[str, str]:
    """Each evaluated model's server: one ``--model-base-url`` (or ``-M base_url``) for all models or one per model."""
    given = list(urls)
    if "base_url" in model_args:
        if given:
            raise click.BadParameter("give the base URL once: -M base_url or --model-base-url", param_hint="-M")
        given = [str(model_args.pop("base_url"))]
    if not given:
        return {}
    if len(given) == 1:
        return dict.fromkeys(models, given[0])
    if len(given) != len(models):
        raise click.BadParameter(
            f"give one URL for all models or one per --model ({len(given)} URLs for {len(models)} models)",
            param_hint="--model-base-url",
        )
    return dict(zip(models, given, strict=True))


def _check_selection(models: tuple[str, ...], tasks: tuple[str, ...], methods: tuple[str, ...], run: list[str]) -> None:
    """Refuse a selection whose part would be dropped or doubled without a word: a repeated --model/--task/--method
    (its task runs planned twice), a --method no selected task runs (Task 3 runs Base), an --oracle-n no selected
    method reads."""
    from click.core import ParameterSource

    from ccpt.methods import parse as parse_method
    from ccpt.spec import TASK_SPECS

    for option, given in (("--model", models), ("--task", tasks), ("--method", methods)):
        if repeated := sorted({value for value in given if given.count(value) > 1}):
            raise click.BadParameter(f"{', '.join(repeated)} given more than once", param_hint=option)
    chosen = [parse_method(m) for m in methods]
    for method in chosen:
        if not any(method.applies(TASK_SPECS[t]) for t in run):
            raise click.BadParameter(
                f"{method.name} applies to none of the selected tasks ({', '.join(run)}; Task 3 runs base)",
                param_hint="--method",
            )
    reads = any(m.sample_count({"oracle_n": 1}) != m.sample_count({"oracle_n": 2}) for m in chosen)
    if click.get_current_context().get_parameter_source("oracle_n") is ParameterSource.COMMANDLINE and not reads:
        raise click.BadParameter("no selected --method takes it (multi_oracle does)", param_hint="--oracle-n")


def require_parts(model: str, option: str) -> None:
    """One line naming the install command when ``model`` runs in-process on a part this install lacks (the
    distilled judge's torch, a GGUF model's llama.cpp): said before a plan is printed or a call is made."""
    from importlib.util import find_spec

    from ccpt.errors import ModelError
    from ccpt.io.weights import install_hint
    from ccpt.judging.encoder import judge_install_hint

    if model.startswith("ccpt-distilled/"):
        modules, hint = ("torch", "tokenizers", "safetensors"), judge_install_hint
    elif model.startswith("gguf/"):
        modules, hint = ("llama_cpp",), install_hint
    else:
        return
    if missing := [name for name in modules if find_spec(name) is None]:
        raise ModelError(f"{option} {model} needs {', '.join(missing)}, which this install lacks", hint())


def _judge_spec(value: str) -> tuple[str, dict[str, object]]:
    """``--judge``: a model name, or an Inspect model-role spec ``{model: M, base_url: U, model_args: {...}}``."""
    import yaml

    if not value.lstrip().startswith("{"):
        return value, {}
    try:
        spec = yaml.safe_load(value)
    except yaml.YAMLError:
        spec = None
    if not isinstance(spec, dict) or not isinstance(spec.get("model"), str):
        raise click.BadParameter("expected a model name or {model: NAME, base_url: URL, ...}", param_hint="--judge")
    args = dict(spec.pop("model_args", None) or {})
    name = spec.pop("model")
    if unknown := sorted(set(spec) - {"base_url", "api_key"}):
        raise click.BadParameter(f"unsupported key(s) {', '.join(unknown)} in the judge spec", param_hint="--judge")
    return name, {**args, **spec}


@click.command("run")
@click.option(
    "--model",
    "models",
    multiple=True,
    metavar="MODEL",
    help="Inspect model to evaluate (repeatable), e.g. openai/gpt-4o, vllm/…, ollama/llama3.1, "
    "gguf/qwen2.5-0.5b or gguf//path/to/model.gguf. Default: the embedded gguf/qwen2.5-0.5b.",
)
@click.option(
    "--model-base-url",
    "base_urls",
    multiple=True,
    metavar="URL",
    help="Base URL of the server of the evaluated model (e.g. http://127.0.0.1:8000/v1): once for all models, or "
    "once per --model in the same order. Same as -M base_url=URL.",
)
@click.option(
    "--judge",
    metavar="MODEL",
    help="The judge (paper: openai/gpt-4o), or an Inspect model-role spec such as "
    "'{model: openai-api/my/judge, base_url: http://host:8000/v1}'. Default: `distilled`, trained on the "
    "dataset's human ratings (docs/judge.md); the embedded LLM judge is gguf/qwen2.5-1.5b. A model judges itself "
    "only when named here. The judge's agreement with human ratings is printed with the results.",
)
@judge_mode_option
@judge_arg_option("Argument for the judge model (repeatable): base_url=URL, api_key=KEY or a provider model argument.")
@defaulted(
    "--protocol",
    type=click.Choice(list(PROTOCOLS)),
    default=DEFAULT_PROTOCOL,
    help="ccpt: the paper's method as printed, the authors' code defects fixed. as-run: what the authors' "
    "released code ran to produce the paper's tables (docs/methods.md).",
)
@click.option(
    "--max-tokens",
    type=RUN_TYPES["max_tokens"],
    help="Answer token cap (default 2048; at most 1,000,000, past every model's context).",
)
@click.option(
    "--temperature", type=RUN_TYPES["temperature"], help="Sampling temperature (hosted APIs take at most 1 or 2)."
)
@click.option("--top-p", type=RUN_TYPES["top_p"], help="Nucleus sampling top-p.")
@click.option("--task", "tasks", multiple=True, type=click.Choice(TASKS), help="Task(s) to run. Default: all four.")
@click.option(
    "--method",
    "methods",
    multiple=True,
    metavar="METHOD",
    help=f"Method(s): {', '.join(m.base for m in BUILTIN)} or a plug-in's; add {NOFILTER_SUFFIX} to an sa_* "
    "method for the filter ablation; gold = the annotated answers, scored by the same judge. Default: base and gold.",
)
@click.option(
    "--seeds",
    type=RUN_TYPES["seeds"],
    help="Independent samples per instance. Default: 3 (the paper's), also for the offline default run. At most "
    "1,000: each seed answers every instance again.",
)
@click.option(
    "--limit",
    type=RUN_TYPES["limit"],
    help="Instances per task (the first N of the test split; Task 3 takes them in turn from each actual type). "
    "Default: 10 for the offline default run, all for any other model. Use --limit 0 for all (at most 1,000,000: "
    "a larger number is a slip, no split is that large).",
)
@defaulted(
    "--oracle-n",
    type=RUN_TYPES["oracle_n"],
    default=5,
    help="Multi-Oracle samples per seed (at most 100: each is one more answer).",
)
@defaulted(
    "--log-dir",
    type=DIR,
    default=Path("ccpt-runs/default"),
    help="Where Inspect logs go; rerunning with the same directory resumes.",
)
@click.option("--data-dir", help="Local CCPT files (default: $CCPT_DATA_DIR or the download).")
@click.option(
    "--max-connections",
    type=RUN_TYPES["max_connections"],
    help="Concurrent requests per model (at most 10,000: more than any server accepts).",
)
@request_limits("model")
@click.option("-M", "model_args", multiple=True, metavar="NAME=VALUE", help="Model argument (e.g. n_ctx=4096).")
@click.option(
    "-T",
    "task_args",
    multiple=True,
    metavar="NAME=VALUE",
    help="Task argument (e.g. sa_answer_every_step=true, conceptnet=PATH, seed=1).",
)
@defaulted(
    "--stat",
    type=click.Choice(["sem", "paper", "ci"]),
    default="sem",
    help="Spread printed after ±: sem = standard error of the seed means; paper = population SD of "
    "the seed means (what the paper prints as SEM); ci = 95% bootstrap interval over instances.",
)
@prices_option
@click.option("--no-preflight", is_flag=True, help="Skip the one-request check of every model before starting.")
@click.option(
    "--dry-run",
    is_flag=True,
    help="Print what would run (tasks × methods × models × seeds, instances), the solver and judge calls to "
    "expect and, with --prices, the cost range; send nothing. Task runs already done in --log-dir are counted as "
    "skipped and finished samples as reused, as a rerun would.",
)
@defaulted("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
@click.option(
    "--display",
    type=click.Choice(["plain", "rich", "log", "none"]),
    help="Inspect's progress display (default: plain for --format text, none for json).",
)
def command(
    models,
    base_urls,
    judge,
    judge_mode,
    judge_args,
    protocol,
    tasks,
    methods,
    seeds,
    limit,
    model_args,
    task_args,
    stat,
    prices,
    no_preflight,
    dry_run,
    fmt,
    display,
    **sweep_options,  # --oracle-n, --log-dir, --data-dir, --max-connections, --timeout, --max-retries; sampling
) -> None:
    """Run CCPT tasks × methods × models × seeds and print the paper's Table-3 layout.

    With no options it runs offline: the embedded gguf/qwen2.5-0.5b answers and the distilled judge scores
    (docs/judge.md), on the first 10 test instances of every task with 3 seeds (minutes on 2 CPU cores). Logs
    are Inspect logs (browse them with `inspect view --log-dir DIR`); `ccpt report DIR` rebuilds the tables.
    """
    from dataclasses import asdict

    from ccpt.eval.judge import default_judge_mode
    from ccpt.eval.sweep import DEFAULT_LIMIT, DEFAULT_SEEDS, PAPER_SEEDS, Sweep, run_sweep
    from ccpt.judges import check_model, model_name
    from ccpt.protocol import get_protocol
    from ccpt.schemas.run import ProtocolName, check

    offline_default = not models
    generate = {name: sweep_options.pop(name) for name in ("max_tokens", "temperature", "top_p")}  # sampling
    display = display or ("plain" if fmt == "text" else "none")
    sweep = Sweep(display=display, **sweep_options)
    sweep.models = list(models) or sweep.models
    judge_name, judge_spec_args = _judge_spec(judge) if judge else (None, {})
    if judge_name:
        sweep.judge = model_name(judge_name)
    sweep.judge_mode = judge_mode or default_judge_mode(sweep.judge)
    sweep.tasks = list(tasks) or sweep.tasks
    sweep.methods = list(methods) or sweep.methods
    _check_selection(models, tasks, methods, sweep.tasks)
    sweep.seeds = seeds or (DEFAULT_SEEDS if offline_default else PAPER_SEEDS)
    sweep.limit = (limit or None) if limit is not None else (DEFAULT_LIMIT if offline_default else None)
    sweep.model_args = key_values(model_args, "-M")
    sweep.base_urls = _base_urls(sweep.models, base_urls, sweep.model_args)
    sweep.task_args = key_values(task_args, "-T")
    sweep.judge_args = {**judge_spec_args, **key_values(judge_args, "--judge-arg")}
    sweep.protocol = check(sweep.task_args.pop("protocol", protocol), ProtocolName, "-T protocol")
    sweep.generate = {k: v for k, v in generate.items() if v is not None}
    for option, model in [*(("--model", m) for m in sweep.models), ("--judge", sweep.judge)]:
        require_parts(model, option)  # before the plan: a run it would refuse is not planned
    check_model(sweep.judge, sweep.judge_args)
    if dry_run:
        print_plan(sweep, prices=prices, fmt=fmt)
        return
    finished = run_sweep(sweep, check_models=not no_preflight, warn=warn)
    from ccpt.dataset import load_dataset
    from ccpt.errors import DataError
    from ccpt.report import render_json, render_markdown, report_from_paths
    from ccpt.results.usage import load_prices, timeout_note

    chosen = get_protocol(sweep.protocol)
    generation = {
        # What each evaluated model was sent: the protocol's settings for its provider, then the command line's.
        "models": {name: {**asdict(chosen.call_settings(name)), **sweep.generate} for name in sweep.models},
        "seeds": sweep.seeds,
        "limit": sweep.limit,
        "judge_mode": sweep.judge_mode,
        "task_args": sweep.task_args,
    }
    # What a sweep prints when it ends: the report of every log in --log-dir; a run whose attempts mostly timed out
    # says so on stderr and in the report, with the fix.
    try:
        dataset = load_dataset(sweep.data_dir)
    except DataError:
        dataset = None  # the Gold row needs the dataset; the rest of the summary does not
    price_list = load_prices(prices) if prices else None
    report = report_from_paths([sweep.log_dir], dataset=dataset, stat=stat, generation=generation, prices=price_list)  # type: ignore[arg-type]
    if slow := timeout_note(report.usage, sweep.timeout):
        report.notes.append(slow)
        warn(slow)
    click.echo(render_json(report) if fmt == "json" else render_markdown(report))
    if not finished:
        raise click.ClickException(f"some task runs did not finish; rerun the same command to resume ({sweep.log_dir})")


def _span(low: int | float, high: int | float, money: bool = False) -> str:
    fmt = (lambda v: f"${v:,.2f}") if money else (lambda v: f"{v:,}")
    return fmt(low) if low == high else f"{fmt(low)}–{fmt(high)}"


def print_plan(sweep: Sweep, *, prices: Path | None = None, fmt: str = "text") -> None:
    """What `ccpt run --dry-run` prints: validate the sweep, build its tasks (no model is built, nothing is sent)
    and print the plan (:mod:`ccpt.eval.plan`)."""
    from ccpt.eval.plan import cost_range, finished_samples, plan_rows, plan_totals
    from ccpt.eval.sweep import check_instance_sets, check_servers
    from ccpt.results.inspect_logs import read_logs
    from ccpt.results.usage import load_prices

    sweep.validate()
    tasks = sweep.task_objects(plan_only=True)
    options = {"oracle_n": sweep.oracle_n, **sweep.task_args}
    # What a rerun would not redo: the sweep's log directory, read as the rerun reads it (an unreadable log is
    # set aside by the rerun, so it finished nothing here either).
    logs = read_logs([sweep.log_dir], header_only=True).logs if sweep.log_dir.is_dir() else []
    check_servers(sweep, logs)
    check_instance_sets(sweep, logs)
    done = finished_samples(logs, judge=sweep.judge, model_args=sweep.model_args, generate=sweep.generate)
    rows = plan_rows(tasks, sweep.models, sweep.limit, options, done if logs else None)
    solver, judge = plan_totals(rows)
    skipped = sum(r.skipped for r in rows)
    cost = cost_range(rows, load_prices(prices), sweep.judge, sweep.generate.get("max_tokens")) if prices else None
    if fmt == "json":
        payload = {
            "runs": [vars(r) | {"skipped": r.skipped} for r in rows],
            "skipped_runs": skipped,
            "done_samples": sum(r.done_samples for r in rows),
            "solver_calls": solver,
            "judge_calls": judge,
            "judge": sweep.judge,
            "cost_usd": None if cost is None else {"low": cost.low, "high": cost.high, "unpriced": cost.unpriced},
        }
        click.echo(json.dumps(payload, indent=2))
        return
    click.echo(f"Dry run: nothing is sent. Judge: {sweep.judge or 'none'}; protocol {sweep.protocol}.")
    click.echo("task / method / model: seeds × instances → solver calls, judge calls (memoised pairs asked once)")
    for r in rows:
        reused = f" ({r.done_samples} of {r.planned_samples} samples × seeds done: reused)" if r.done_samples else ""
        state = " (done: skipped)" if r.skipped else reused
        click.echo(
            f"  {r.task} / {r.method} / {r.model}: {r.seeds} × {r.instances} → solver {_span(*r.solver_calls)}, "
            f"judge {_span(*r.judge_calls)}{state}"
        )
    partial = [r for r in rows if r.done_samples and not r.skipped]
    done = [f"{skipped} of {len(rows)} task runs (a rerun skips them)"] if skipped else []
    if partial:
        done.append(
            f"{sum(r.done_samples for r in partial)} samples × seeds of {len(partial)} unfinished task run(s) (reused)"
        )
    if done:
        click.echo(f"Already done in {sweep.log_dir}: {'; '.join(done)}. The calls counted are the remaining ones.")
    click.echo(f"Total: {len(rows)} task runs; solver calls {_span(*solver)}; judge calls {_span(*judge)}.")
    if cost is not None:
        unpriced = f" (no price for {', '.join(cost.unpriced)})" if cost.unpriced else ""
        click.echo(f"Cost: {_span(cost.low, cost.high, money=True)}{unpriced}.")
    click.echo("Ranges: answers decide (Spreading Activation's steps, distinct judged pairs); see docs/metrics.md.")
