"""`ccpt run`: evaluate models on CCPT (a resumable sweep) and print the Table-3-style summary."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.options import (
    DIR,
    defaulted,
    judge_arg_option,
    judge_mode_option,
    key_values,
    prices_option,
    request_limits,
    run_option,
)
from ccpt.protocol import DEFAULT_PROTOCOL, PROTOCOLS
from ccpt.spec import METHODS, NOFILTER_SUFFIX, TASKS


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
@click.option("--max-tokens", type=run_option("max_tokens"), help="Answer token cap (default 2048).")
@click.option("--temperature", type=run_option("temperature"), help="Sampling temperature.")
@click.option("--top-p", type=run_option("top_p"), help="Nucleus sampling top-p.")
@click.option("--task", "tasks", multiple=True, type=click.Choice(TASKS), help="Task(s) to run. Default: all four.")
@click.option(
    "--method",
    "methods",
    multiple=True,
    metavar="METHOD",
    help=f"Method(s): {', '.join(METHODS)}; add {NOFILTER_SUFFIX} to an sa_* method for the filter "
    "ablation; gold = the annotated answers, scored by the same judge. Default: base and gold.",
)
@click.option(
    "--seeds",
    type=run_option("seeds"),
    help="Independent samples per instance. Default: 3 (the paper's), also for the offline default run.",
)
@click.option(
    "--limit",
    type=run_option("limit"),
    help="Instances per task (the first N of the test split; Task 3 takes them in turn from each actual type). "
    "Default: 10 for the offline default run, all for any other model. Use --limit 0 for all.",
)
@defaulted("--oracle-n", type=run_option("oracle_n"), default=5, help="Multi-Oracle samples per seed.")
@defaulted(
    "--log-dir",
    type=DIR,
    default=Path("ccpt-runs/default"),
    help="Where Inspect logs go; rerunning with the same directory resumes.",
)
@click.option("--data-dir", help="Local CCPT files (default: $CCPT_DATA_DIR or the download).")
@click.option("--max-connections", type=run_option("max_connections"), help="Concurrent requests per model.")
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
    max_tokens,
    temperature,
    top_p,
    tasks,
    methods,
    seeds,
    limit,
    log_dir,
    data_dir,
    timeout,
    model_args,
    task_args,
    stat,
    prices,
    no_preflight,
    dry_run,
    fmt,
    display,
    **sweep_options,  # --oracle-n, --max-connections, --max-retries
) -> None:
    """Run CCPT tasks × methods × models × seeds and print the paper's Table-3 layout.

    With no options it runs offline: the embedded gguf/qwen2.5-0.5b answers and the distilled judge scores
    (docs/judge.md), on the first 10 test instances of every task with 3 seeds (minutes on 2 CPU cores). Logs
    are Inspect logs (browse them with `inspect view --log-dir DIR`); `ccpt report DIR` rebuilds the tables.
    """
    from dataclasses import asdict

    from ccpt.cli.plan import print_plan
    from ccpt.cli.summary import print_summary
    from ccpt.eval.distilled_provider import judge_model_name
    from ccpt.eval.judge import default_judge_mode
    from ccpt.eval.sweep import DEFAULT_LIMIT, DEFAULT_SEEDS, PAPER_SEEDS, Sweep, run_sweep
    from ccpt.protocol import get_protocol
    from ccpt.schemas.run import ProtocolName, check

    offline_default = not models
    sweep = Sweep(
        log_dir=log_dir,
        data_dir=data_dir,
        timeout=timeout,
        display=display or ("plain" if fmt == "text" else "none"),
        **sweep_options,
    )
    sweep.models = list(models) or sweep.models
    judge_name, judge_spec_args = _judge_spec(judge) if judge else (None, {})
    if judge_name:
        sweep.judge = judge_model_name(judge_name)
    sweep.judge_mode = judge_mode or default_judge_mode(sweep.judge)
    sweep.tasks = list(tasks) or sweep.tasks
    sweep.methods = list(methods) or sweep.methods
    sweep.seeds = seeds or (DEFAULT_SEEDS if offline_default else PAPER_SEEDS)
    sweep.limit = (limit or None) if limit is not None else (DEFAULT_LIMIT if offline_default else None)
    sweep.model_args = key_values(model_args, "-M")
    sweep.base_urls = _base_urls(sweep.models, base_urls, sweep.model_args)
    sweep.task_args = key_values(task_args, "-T")
    sweep.judge_args = {**judge_spec_args, **key_values(judge_args, "--judge-arg")}
    sweep.protocol = check(sweep.task_args.pop("protocol", protocol), ProtocolName, "-T protocol")
    sweep.generate = {
        k: v for k, v in {"max_tokens": max_tokens, "temperature": temperature, "top_p": top_p}.items() if v is not None
    }
    if dry_run:
        print_plan(sweep, prices=prices, fmt=fmt)
        return
    finished = run_sweep(
        sweep, check_models=not no_preflight, warn=lambda line: click.echo(f"ccpt: warning: {line}", err=True)
    )
    chosen = get_protocol(sweep.protocol)
    generation = {
        # What each evaluated model was sent: the protocol's settings for its provider, then the command line's.
        "models": {name: {**asdict(chosen.call_settings(name)), **sweep.generate} for name in sweep.models},
        "seeds": sweep.seeds,
        "limit": sweep.limit,
        "judge_mode": sweep.judge_mode,
        "task_args": sweep.task_args,
    }
    print_summary(log_dir, stat=stat, fmt=fmt, data_dir=data_dir, generation=generation, prices=prices, timeout=timeout)
    if not finished:
        raise click.ClickException(f"some task runs did not finish; rerun the same command to resume ({log_dir})")
