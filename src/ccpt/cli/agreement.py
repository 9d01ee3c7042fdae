"""`ccpt judge-agreement`: correlation of a judge with the dataset's human relevance ratings (§6.1, Figure 4)."""

from __future__ import annotations

import time
from pathlib import Path

import click

from ccpt.cli.options import COUNT, FILE, SEED, data_dir_option, defaulted, judge_arg_option, judge_mode_option
from ccpt.judging.rated_pairs import PAIR_SETS


def _command(judge: str | None, pairs: str, rows: int | None, seed: int, mode: str, args: tuple[str, ...]) -> str:
    words = ["ccpt judge-agreement", *([f"--judge {judge}"] if judge else []), *(f"--judge-arg {a}" for a in args)]
    words += [*(["--judge-mode expected"] if judge and mode == "expected" else []), f"--pairs {pairs}"]
    return " ".join([*words, *([f"--n {rows}"] if rows else []), f"--seed {seed}"])


@click.command("judge-agreement")
@data_dir_option()
@click.option(
    "--judge",
    "judge_model",
    help="Judge to measure: distilled, gguf/qwen2.5-1.5b, openai/gpt-4o, … (default: the GPT-4o scores stored in "
    "the dataset, offline).",
)
@judge_mode_option
@judge_arg_option(
    "Argument for the judge model (repeatable), e.g. base_url=URL, or calibrated=false to measure the distilled "
    "judge's raw scale (stored and quoted apart from the calibrated one)."
)
@click.option(
    "--pairs",
    "pair_set_name",
    type=click.Choice(PAIR_SETS),
    help="The pairs (docs/judge.md): test = N/H/M pairs of every task's test rows (1,305); paper300 = 100 of those "
    "rows (300 pairs, the paper's size); all = every rated pair, training rows included (in-sample for the "
    "distilled judge: saved, never quoted in reports). Default: paper300 with --judge, test offline.",
)
@click.option(
    "--n",
    "n_rows",
    type=COUNT,
    help="Measure on a seeded sample of this many rows of the pair set (half emergent, half canceled; 3 pairs each; "
    "at most 1,000,000: a larger number is a slip, the pair sets hold thousands of rows).",
)
@defaulted("--seed", type=SEED, default=0, help="Seed of the row sample and the bootstrap.")
@click.option("--figure", type=FILE, help="Save the Figure-4 scatter (.png, .svg or .pdf).")
@defaulted("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def command(
    data_dir: Path | None,
    judge_model: str | None,
    judge_mode: str | None,
    judge_args: tuple[str, ...],
    pair_set_name: str | None,
    n_rows: int | None,
    seed: int,
    figure: Path | None,
    fmt: str,
) -> None:
    """Pearson and Spearman (95% bootstrap CIs) between a judge's relevance and the mean human Likert rating.

    Pairs: (noun phrase, property), (head, property), (modifier, property) of the chosen rows. A live judge's
    measurement is saved for reports under (judge, pair set); reports quote only the test-concept sets (test,
    paper300), never one holding training rows (all).
    """
    from ccpt.cli.options import key_values
    from ccpt.dataset import load_dataset
    from ccpt.io.jsonout import dumps, provenance
    from ccpt.judging.agreement import format_correlation, measure, save
    from ccpt.judging.rated_pairs import pair_set, stored_gpt4o

    if figure is not None:  # before any judge call: a bad figure path is one line, not a lost measurement
        from ccpt.io.outputs import ensure_writable_dir
        from ccpt.report.figures import FIGURE_SUFFIXES

        if figure.suffix.lower() not in FIGURE_SUFFIXES:
            raise click.BadParameter(
                f"{figure}: unknown figure format {figure.suffix!r}; use {', '.join(FIGURE_SUFFIXES)}",
                param_hint="--figure",
            )
        ensure_writable_dir(figure.parent, "--figure")
    if judge_args and judge_model is None:
        raise click.BadParameter("needs --judge (the stored GPT-4o scores take no arguments)", param_hint="--judge-arg")
    if judge_mode == "expected" and judge_model is None:  # was ignored: the stored scores are the written ones
        raise click.BadParameter("needs --judge (the stored GPT-4o scores are text scores)", param_hint="--judge-mode")
    args = key_values(judge_args, "--judge-arg")
    if judge_model is not None:  # its measurement is saved: a store that cannot take it is said before any call
        from ccpt.judging.agreement import writable_store

        writable_store()
    ds = load_dataset(data_dir)
    name = pair_set_name or ("paper300" if judge_model else "test")
    pairs = pair_set(ds, name, seed, rows=n_rows)
    started = time.monotonic()
    if judge_model is None:
        judge, mode, model = "gpt-4o (stored in the dataset)", "text", None
        scores = stored_gpt4o(ds, pairs)
    else:
        from inspect_ai.model import get_model

        from ccpt.eval.judge import Judge, default_judge_mode, live_scores
        from ccpt.judges import JudgeIdentity, model_name, of_model

        model = model_name(judge_model)
        mode = judge_mode or default_judge_mode(model)
        scores = live_scores(model, mode, [(p.concept, p.property) for p in pairs], args)  # type: ignore[arg-type]
        # Stored and quoted under the judge's structured identity (an in-process judge's version and scale; Inspect
        # memoises the model live_scores used), so reports of another version or scale never quote it.
        # An LLM judge is its model and mode (no model is built: it may be a test's or an unknown provider's).
        declared = of_model(model) is not None
        identity = Judge(get_model(model, **args), mode=mode).identity if declared else JudgeIdentity(model, mode=mode)  # type: ignore[arg-type]
        judge = identity.scored.key
    found = measure(
        judge,
        name,  # type: ignore[arg-type]
        pairs,
        scores,
        mode=mode,
        rows=n_rows,
        seed=seed,
        seconds=round(time.monotonic() - started, 1),
        command=_command(model, name, n_rows, seed, mode, judge_args),
    )
    # Reports quote a stored figure by the judge's identity; an argument that changes its scores outside it (a
    # plug-in's `weight`) would have its figure quoted for runs without it: measured and shown, never stored.
    from ccpt.results.inspect_logs import scoring_arguments

    unrecorded = sorted(scoring_arguments(model, args)) if model is not None else []
    if unrecorded:
        from ccpt.cli.messages import warn

        warn(f"not stored for reports: {', '.join(unrecorded)} changes scores outside the judge's identity ({judge})")
    elif judge_model is not None and found.result.pearson is not None:
        save(found)
    if figure is not None:
        from ccpt.report import figures as figs

        scored = [(p.target, s) for p, s in zip(pairs, scores, strict=True) if s is not None]
        fig = figs.judge_human_scatter([h for h, _ in scored], [s for _, s in scored], seed=seed)
        figs.save_as(fig, figure)
        fig.clear()
    if fmt == "json":
        block = provenance(judges=[judge], data_dir=ds.source or None)
        payload = {"judge": judge, "held_out": found.held_out, **found.entry(), "provenance": block}
        click.echo(dumps(payload, indent=None))
        return
    result = found.result
    missing = f" ({result.n_missing} without a judge score left out)" if result.n_missing else ""
    in_sample = "" if found.held_out else " (training rows included: in-sample for the distilled judge)"
    click.echo(
        f"judge {judge} vs mean human rating on {name} pairs{in_sample}: Pearson "
        f"{format_correlation(result.pearson)}{_ci(result.pearson_ci)}, Spearman "
        f"{format_correlation(result.spearman)}{_ci(result.spearman_ci)}, n = {result.n}{missing}"
    )


def _ci(interval: tuple[float, float] | None) -> str:
    return "" if interval is None else f" [95% CI {interval[0]:.3f}, {interval[1]:.3f}]"
