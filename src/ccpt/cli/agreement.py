"""`ccpt judge-agreement`: correlation of an LLM judge with the dataset's human relevance ratings (§6.1)."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.options import SEED
from ccpt.errors import CcptError


def live_scores(model: str, mode: str, pairs: list) -> list[float | None]:
    """Judge every pair with ``model`` through ccpt's judge (the same code path as the benchmark's scorer).

    ``pairs``: objects with ``concept`` and ``property`` attributes, or (concept, property) tuples.
    """
    import asyncio

    from inspect_ai.model import get_model

    from ccpt.eval.judge import Judge, score_pairs
    from ccpt.eval.sweep import error_text

    try:
        judge = Judge(get_model(model), mode=mode)  # type: ignore[arg-type]
    except CcptError:
        raise
    except Exception as exc:  # Inspect raises plain exceptions for unknown providers / missing keys
        raise CcptError(f"cannot load judge model {model!r}: {error_text(exc)}") from None
    texts = [p if isinstance(p, tuple) else (p.concept, p.property) for p in pairs]
    judgements = asyncio.run(score_pairs(judge, texts))
    return [j.relevance for j in judgements]


def _check_figure(figure: Path) -> None:
    """The figure's format is known and its directory writable (one line naming the option otherwise)."""
    from ccpt.outputs import ensure_writable_dir
    from ccpt.report.figures import FIGURE_SUFFIXES

    if figure.suffix.lower() not in FIGURE_SUFFIXES:
        raise click.BadParameter(
            f"{figure}: unknown figure format {figure.suffix!r}; use {', '.join(FIGURE_SUFFIXES)}",
            param_hint="--figure",
        )
    ensure_writable_dir(figure.parent, "--figure")


@click.command("judge-agreement")
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option(
    "--judge",
    "judge_model",
    default=None,
    help="Inspect model to judge with (default: GPT-4o scores stored in the dataset, offline).",
)
@click.option(
    "--judge-mode",
    type=click.Choice(["text", "expected"]),
    default=None,
    help="How to read the judge's score (see `ccpt run --help`). Default: expected for gguf judges, else text.",
)
@click.option(
    "--n",
    "n_rows",
    type=click.IntRange(min=1),
    default=None,
    help="Rows to sample (half emergent, half canceled; 3 pairs each). "
    "Default: all rows offline, 100 with --judge (the paper's 300 pairs).",
)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option(
    "--pairs",
    "pair_set_name",
    type=click.Choice(["test", "all", "paper300"]),
    default=None,
    help="Held-out pair sets with bootstrap 95% CIs (docs/judge.md): test = N/H/M pairs of every task's test "
    "rows; paper300 = 100 of those rows (300 pairs); all = every rated pair (training rows included).",
)
@click.option(
    "--figure",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Save the Figure-4 scatter (.png, .svg or .pdf).",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(
    data_dir: Path | None,
    judge_model: str | None,
    judge_mode: str | None,
    n_rows: int | None,
    seed: int,
    figure: Path | None,
    fmt: str,
    pair_set_name: str | None = None,
) -> None:
    """Pearson and Spearman between a judge's relevance and the mean of the 3 human Likert ratings.

    Pairs: (noun phrase, property), (head, property), (modifier, property) of the emergent and canceled
    rows.
    """
    from ccpt.agreement import agreement, format_correlation, pairs_from_dataset, with_judge_scores
    from ccpt.dataset import load_dataset

    if figure is not None:  # before any judge call: a bad figure path is one line, not a lost measurement
        _check_figure(figure)
    ds = load_dataset(data_dir)
    if judge_model is not None:
        from ccpt.eval.distilled_provider import judge_model_name

        judge_model = judge_model_name(judge_model)
    if pair_set_name is not None:
        from ccpt.cli.judge import rated_agreement

        rated_agreement(ds, pair_set_name, judge_model, judge_mode, seed, fmt)
        return
    if judge_model is not None and n_rows is None:
        n_rows = 100
    pairs = pairs_from_dataset(ds, n=n_rows, seed=seed)
    judge_name = "gpt-4o (stored in the dataset)"
    if judge_model is not None:
        judge_mode = judge_mode or ("expected" if judge_model.startswith("gguf/") else "text")
        pairs = with_judge_scores(pairs, live_scores(judge_model, judge_mode, pairs))
        judge_name = judge_model
    result = agreement(pairs)
    if judge_model is not None and result.pearson is not None and result.spearman is not None:
        from datetime import date

        from ccpt.agreement_store import save_measurement

        save_measurement(judge_model, {
            "pearson": round(result.pearson, 4), "spearman": round(result.spearman, 4), "n": result.n,
            "n_missing": result.n_missing, "mode": judge_mode, "rows": n_rows, "seed": seed,
            "measured": date.today().isoformat(),
            "command": f"ccpt judge-agreement --judge {judge_model} --judge-mode {judge_mode} --n {n_rows} "
            f"--seed {seed}",
        })  # fmt: skip
    if figure is not None:
        from ccpt.report import figures as figs

        scored = [p for p in pairs if p.judge is not None]
        fig = figs.judge_human_scatter([p.human_relevance for p in scored], [p.judge for p in scored], seed=seed)
        figs.save_as(fig, figure)
        figs.close(fig)
    if fmt == "json":
        from ccpt.jsonout import dumps, provenance

        payload = {
            "judge": judge_name,
            "judge_mode": judge_mode,
            "pearson": result.pearson,  # NaN (e.g. a constant judge) is written as null
            "spearman": result.spearman,
            "n": result.n,
            "n_missing": result.n_missing,
            "rows": n_rows,
            "seed": seed,
            "provenance": provenance(judges=[judge_model or "gpt-4o (stored)"], data_dir=ds.source or None),
        }
        click.echo(dumps(payload, indent=None))
        return
    click.echo(
        f"judge {judge_name} vs mean human rating: Pearson {format_correlation(result.pearson)}, "
        f"Spearman {format_correlation(result.spearman)}, "
        f"n = {result.n} pairs" + (f" ({result.n_missing} without a judge score left out)" if result.n_missing else "")
    )
