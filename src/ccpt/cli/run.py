"""`ccpt run`: evaluate models on CCPT (a resumable sweep) and print the Table-3-style summary."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.spec import METHODS, NOFILTER_SUFFIX, TASKS


def _key_values(pairs: tuple[str, ...], what: str) -> dict[str, object]:
    out: dict[str, object] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected NAME=VALUE, got {pair!r}", param_hint=what)
        lowered = value.lower()
        out[key] = {"true": True, "false": False}.get(lowered, int(value) if value.lstrip("-").isdigit() else value)
    return out


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
    "--judge",
    default=None,
    metavar="MODEL",
    help="The LLM judge (paper: openai/gpt-4o). Default: the embedded gguf/qwen2.5-1.5b, read from "
    "its token probabilities; its agreement with human ratings is printed with the results.",
)
@click.option(
    "--judge-mode",
    type=click.Choice(["text", "expected"]),
    default=None,
    help="text: the score the judge writes (paper). expected: probability-weighted score from "
    "log-probabilities (needs a provider with logprobs). Default: expected for gguf judges, else text.",
)
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
    type=int,
    default=None,
    help="Independent samples per instance. Default: 3 (the paper's), 2 for the offline default run.",
)
@click.option(
    "--limit",
    type=int,
    default=None,
    help="Instances per task (first N of the test split). Default: 5 for the offline default run, "
    "all for any other model. Use --limit 0 for all.",
)
@click.option("--oracle-n", type=int, default=5, show_default=True, help="Multi-Oracle samples per seed.")
@click.option(
    "--log-dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path("ccpt-runs/default"),
    show_default=True,
    help="Where Inspect logs go; rerunning with the same directory resumes.",
)
@click.option("--data-dir", default=None, help="Local CCPT files (default: $CCPT_DATA_DIR or the download).")
@click.option("--max-connections", type=int, default=None, help="Concurrent requests per model.")
@click.option("--timeout", type=int, default=120, show_default=True, help="Seconds per model request.")
@click.option("--max-retries", type=int, default=3, show_default=True, help="Retries per failed request.")
@click.option("-M", "model_args", multiple=True, metavar="NAME=VALUE", help="Model argument (e.g. n_ctx=4096).")
@click.option(
    "-T",
    "task_args",
    multiple=True,
    metavar="NAME=VALUE",
    help="Task argument (e.g. sa_answer_every_step=true, conceptnet=PATH, seed=1).",
)
@click.option(
    "--stat",
    type=click.Choice(["sem", "paper", "ci"]),
    default="sem",
    show_default=True,
    help="Spread printed after ±: sem = standard error of the seed means; paper = population SD of "
    "the seed means (what the paper prints as SEM); ci = 95% bootstrap interval over instances.",
)
@click.option("--no-preflight", is_flag=True, help="Skip the one-request check of every model before starting.")
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
@click.option(
    "--display",
    type=click.Choice(["plain", "rich", "log", "none"]),
    default=None,
    help="Inspect's progress display (default: plain for --format text, none for json).",
)
def command(
    models,
    judge,
    judge_mode,
    tasks,
    methods,
    seeds,
    limit,
    oracle_n,
    log_dir,
    data_dir,
    max_connections,
    timeout,
    max_retries,
    model_args,
    task_args,
    stat,
    no_preflight,
    fmt,
    display,
) -> None:
    """Run CCPT tasks × methods × models × seeds and print the paper's Table-3 layout.

    With no options it runs offline on the embedded models: gguf/qwen2.5-0.5b answers, gguf/qwen2.5-1.5b
    judges, on the first 5 test instances of every task with 2 seeds (a few minutes on 2 CPU cores). Logs
    are Inspect logs (browse them with `inspect view --log-dir DIR`); `ccpt report DIR` rebuilds the tables.
    """
    from ccpt.cli.summary import print_summary
    from ccpt.eval.solvers import Sampling
    from ccpt.eval.sweep import DEFAULT_LIMIT, DEFAULT_SEEDS, PAPER_SEEDS, Sweep, run_sweep

    offline_default = not models
    sweep = Sweep(
        log_dir=log_dir,
        data_dir=data_dir,
        oracle_n=oracle_n,
        max_connections=max_connections,
        timeout=timeout,
        max_retries=max_retries,
        display=display or ("plain" if fmt == "text" else "none"),
    )
    if models:
        sweep.models = list(models)
    if judge:
        sweep.judge = judge
    elif not offline_default:
        sweep.judge = None  # the evaluated model judges itself, as Inspect's default role resolution does
    sweep.judge_mode = judge_mode or ("expected" if (sweep.judge or "").startswith("gguf/") else "text")
    if tasks:
        sweep.tasks = list(tasks)
    if methods:
        sweep.methods = list(methods)
    sweep.seeds = seeds or (DEFAULT_SEEDS if offline_default else PAPER_SEEDS)
    sweep.limit = (limit or None) if limit is not None else (DEFAULT_LIMIT if offline_default else None)
    sweep.model_args = _key_values(model_args, "-M")
    sweep.task_args = _key_values(task_args, "-T")
    finished = run_sweep(sweep, check_models=not no_preflight)
    sampling = Sampling()
    generation = {
        "temperature": sampling.temperature,
        "top_p": sampling.top_p,
        "seeds": sweep.seeds,
        "limit": sweep.limit,
        "judge_mode": sweep.judge_mode,
        "task_args": sweep.task_args,
    }
    print_summary(log_dir, stat=stat, fmt=fmt, data_dir=data_dir, generation=generation)
    if not finished:
        raise click.ClickException(f"some task runs did not finish; rerun the same command to resume ({log_dir})")
