"""`ccpt compare`: paired test between two (model, method) runs on the same instances."""

from __future__ import annotations

from pathlib import Path

import click

from ccpt.cli.options import SEED
from ccpt.errors import CcptError


def _spec(value: str) -> tuple[str, str]:
    model, sep, method = value.rpartition(":")
    if not sep or not model or not method:
        raise CcptError(f"bad run {value!r}", "write MODEL:METHOD, e.g. gpt-4o:base")
    return model, method


@click.command("compare")
@click.argument("paths", nargs=-1, required=True, type=click.Path(exists=True, path_type=Path))
@click.option("--a", "run_a", required=True, help="First run as MODEL:METHOD (e.g. gpt-4o:base).")
@click.option("--b", "run_b", required=True, help="Second run as MODEL:METHOD.")
@click.option("--task", "tasks", multiple=True, help="Task(s) to compare (default: every task both runs have).")
@click.option("--metric", type=click.Choice(["score", "r_np", "r_hmp"]), default="score", show_default=True)
@click.option("--test", type=click.Choice(["permutation", "bootstrap"]), default="permutation", show_default=True)
@click.option("--oracle", type=click.Choice(["paper", "single"]), default="paper", show_default=True)
@click.option("--resamples", type=click.IntRange(min=1), default=10_000, show_default=True)
@click.option("--seed", type=SEED, default=0, show_default=True)
@click.option("--data-dir", type=click.Path(file_okay=False, path_type=Path), default=None)
@click.option(
    "--allow-mixed-protocols",
    is_flag=True,
    help="Compare runs produced under different protocols (ccpt vs as-run); refused by default.",
)
@click.option("--format", "fmt", type=click.Choice(["text", "json"]), default="text", show_default=True)
def command(
    paths: tuple[Path, ...],
    run_a: str,
    run_b: str,
    tasks: tuple[str, ...],
    metric: str,
    test: str,
    oracle: str,
    resamples: int,
    seed: int,
    data_dir: Path | None,
    allow_mixed_protocols: bool,
    fmt: str,
) -> None:
    """Is A better than B? Per-instance differences (seed-averaged, ×100), paired bootstrap or sign-flip test.

    Prints mean difference A − B, its 95% bootstrap CI, the two-sided p-value, Cohen's d_z and n.
    """
    from ccpt.cli.report import _dataset
    from ccpt.report import compare_runs
    from ccpt.results import load_results

    dataset = _dataset(data_dir, required=data_dir is not None)
    frame = load_results(paths, dataset)
    results = compare_runs(
        frame,
        _spec(run_a),
        _spec(run_b),
        tasks=tasks or None,
        metric=metric,
        test=test,  # type: ignore[arg-type]
        oracle=oracle,
        n_resamples=resamples,
        seed=seed,  # type: ignore[arg-type]
        allow_mixed_protocols=allow_mixed_protocols,
    )
    if fmt == "json":
        from ccpt.jsonout import dumps
        from ccpt.report import frame_provenance

        # A list (one object per task), each carrying the provenance of the results compared.
        provenance = frame_provenance(frame, dataset)
        payload = [
            {
                "task": c.task,
                "metric": c.metric,
                "a": c.a,
                "b": c.b,
                "protocol_a": c.protocols[0],
                "protocol_b": c.protocols[1],
                "mean_diff": c.result.mean_diff,
                "ci": [c.result.ci_low, c.result.ci_high],
                "p_value": c.result.p_value,
                "cohens_dz": c.result.effect_size,
                "n": c.result.n,
                "n_unpaired": c.n_unpaired,
                "test": c.result.test,
                "resamples": c.result.n_resamples,
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
        click.echo(
            f"{c.task} {c.metric}: {c.a} − {c.b} = {r.mean_diff:+.2f} "
            f"(95% CI {r.ci_low:+.2f} … {r.ci_high:+.2f}), "
            f"p = {r.p_value:.4g} ({r.test}, {r.n_resamples} resamples), d_z = {r.effect_size:.2f}, n = {r.n}"
            + (f", {c.n_unpaired} unpaired instances left out" if c.n_unpaired else "")
            + f"; {protocol}"
        )
