"""`ccpt compare`: paired test between two (model, method) runs on the same instances."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import click
from pydantic import Field

from ccpt.cli.messages import warn
from ccpt.cli.options import EXISTING_PATH, SEED, Declared, data_dir_option, defaulted, label_option, optional_dataset
from ccpt.errors import CcptError
from ccpt.schemas.run import at_most


def _spec(value: str) -> tuple[str, str]:
    model, sep, method = value.rpartition(":")
    if not sep or not model or not method:
        raise CcptError(f"bad run {value!r}", "write MODEL:METHOD, e.g. gpt-4o:base")
    return model, method


@click.command("compare")
@click.argument("paths", nargs=-1, required=True, type=EXISTING_PATH)
@click.option(
    "--a",
    "run_a",
    required=True,
    help="First run as MODEL:METHOD, names as the tables print them (e.g. gpt-4o:base, GPT-4o:Multi-Oracle).",
)
@click.option("--b", "run_b", required=True, help="Second run as MODEL:METHOD.")
@click.option("--task", "tasks", multiple=True, help="Task(s) to compare (default: every task both runs have).")
@defaulted("--metric", type=click.Choice(["score", "r_np", "r_hmp"]), default="score")
@defaulted("--test", type=click.Choice(["permutation", "bootstrap"]), default="permutation")
@defaulted("--oracle", type=click.Choice(["paper", "single"]), default="paper")
@defaulted(
    "--resamples",
    type=Declared(at_most(100_000)),
    default=10_000,
    help="Bootstrap replicates, or random sign patterns (permutation, n > 16); at least 2/(1 − LEVEL): 40 at 0.95; "
    "at most 100,000: each is a row of instance values in memory (100,000 × 1,000 instances is 0.8 GB).",
)
@defaulted(
    "--level",
    type=Declared(Annotated[float, Field(gt=0.5, lt=1, allow_inf_nan=False)]),  # click's FloatRange lets nan through
    default=0.95,
    help="Confidence level of the CI; the test's significance level is 1 − LEVEL.",
)
@label_option("Print model MODEL as NAME (and accept NAME in --a/--b); repeatable.")
@defaulted("--seed", type=SEED, default=0)
@data_dir_option()
@click.option(
    "--allow-mixed-protocols",
    is_flag=True,
    help="Compare runs produced under different protocols (ccpt vs as-run); refused by default.",
)
@click.option("--judge", help="Compare the rows of this judge (its name, or a unique part of it).")
@click.option("--judge-a", help="A's judge; with --judge-b naming another, a judge comparison (same answers).")
@click.option("--judge-b", help="B's judge (see --judge-a).")
@defaulted("--format", "fmt", type=click.Choice(["text", "json"]), default="text")
def command(
    paths: tuple[Path, ...],
    run_a: str,
    run_b: str,
    tasks: tuple[str, ...],
    resamples: int,
    level: float,
    labels: tuple[str, ...],
    data_dir: Path | None,
    judge: str | None,
    judge_a: str | None,
    judge_b: str | None,
    fmt: str,
    **options: Any,
) -> None:
    """Is A better than B? Per-instance differences (seed-averaged, ×100), paired sign-flip or bootstrap test.

    Prints mean difference A − B, its CI and two-sided p-value from the same test (permutation: the sign-flip
    test and its inversion; bootstrap: one set of replicates), Cohen's d_z and n; warns when n is too small
    for the level. Each side is one judge's rows: runs scored by different judges are refused unless both
    --judge-a and --judge-b are given (a judge comparison).
    """
    from ccpt.io.jsonout import dumps
    from ccpt.report import compare_runs, frame_provenance
    from ccpt.report.names import parse_labels
    from ccpt.results import load_results, unreadable_line
    from ccpt.stats import min_resamples

    if resamples < min_resamples(level):  # checked before the (slow) loading: it depends on --level
        raise click.BadParameter(
            f"{resamples} is too few for a {level:g} CI: each tail needs resamples, so at least {min_resamples(level)}",
            param_hint="--resamples",
        )

    dataset = optional_dataset(data_dir)
    frame = load_results(paths, dataset)
    if unreadable := frame.attrs.get("unreadable", []):  # named as `ccpt report` names them, never passed over
        warn(f"skipped {unreadable_line(unreadable)}")
    for warning in frame.attrs.get("warnings", []):  # rows read twice, counted once
        warn(warning)
    models = {str(m) for m in frame["model"].dropna()}
    results = compare_runs(
        frame,
        _spec(run_a),
        _spec(run_b),
        tasks=tasks or None,
        n_resamples=resamples,
        level=level,
        labels=parse_labels(labels, models),
        judges=(judge_a or judge, judge_b or judge),
        **options,  # --metric, --test, --oracle, --seed, --allow-mixed-protocols
    )
    for c in results:
        for warning in c.warnings:
            warn(warning)
    if fmt == "json":
        # A list (one object per task), each carrying the provenance of the results compared.
        provenance = frame_provenance(frame, dataset)
        payload = [
            {
                **{key: getattr(c, key) for key in ("task", "metric", "a", "b", "a_label", "b_label")},
                **dict(zip(("protocol_a", "protocol_b", "judge_a", "judge_b"), (*c.protocols, *c.judges), strict=True)),
                "mean_diff": c.result.mean_diff,
                "ci": [c.result.ci_low, c.result.ci_high],  # null: unbounded
                "level": c.result.level,
                "ci_method": CI_METHODS[c.result.test],
                "p_value": c.result.p_value,
                "cohens_dz": c.result.effect_size,
                "n": c.result.n,
                "n_unpaired": c.n_unpaired,
                "test": c.result.test,
                "resamples": c.result.n_resamples,
                "min_p": c.result.min_p,
                "n_nonzero": c.result.n_nonzero,
                "warnings": c.warnings,
                "provenance": provenance,
            }
            for c in results
        ]
        click.echo(dumps(payload))
        return
    for c in results:
        r = c.result
        same = c.protocols[0] == c.protocols[1]
        protocol = f"protocol {c.protocols[0]}" if same else f"protocols {c.protocols[0]} vs {c.protocols[1]}"
        if c.judges[0] or c.judges[1]:
            both = c.judges[0] == c.judges[1]
            protocol += f"; judge {c.judges[0]}" if both else f"; judges {c.judges[0]} vs {c.judges[1]}"
        unbounded = not (math.isfinite(r.ci_low) or math.isfinite(r.ci_high))
        ci = "unbounded" if unbounded else f"{_bound(r.ci_low)} … {_bound(r.ci_high)}"
        # A resampled p of 0 only says "below one in the number of resamples".
        p = f"p < {1 / r.n_resamples:.2g}" if r.p_value == 0 else f"p = {r.p_value:.4g}"
        click.echo(
            f"{c.task} {c.metric}: {c.a_label} − {c.b_label} = {r.mean_diff:+.2f} "
            f"({r.level:.0%} CI {ci}, {CI_METHODS[r.test]}), "
            f"{p} ({r.test}, {r.n_resamples} resamples), d_z = {r.effect_size:.2f}, n = {r.n}"
            + (f", {c.n_unpaired} unpaired instances left out" if c.n_unpaired else "")
            + f"; {protocol}"
        )


# How the CI is computed for each --test: always the same method as the p-value.
CI_METHODS = {"permutation": "sign-flip test inversion", "bootstrap": "percentile bootstrap"}


def _bound(value: float) -> str:
    return "unbounded" if not math.isfinite(value) else f"{round(value, 2) + 0.0:+.2f}"  # + 0.0: no "-0.00"
