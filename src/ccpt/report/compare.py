"""``ccpt compare``: paired differences between two runs on the instances both scored."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from ccpt.errors import CcptError
from ccpt.report.tables import Oracle, per_instance_values, protocols_of
from ccpt.spec import TASK_SPECS, TASKS
from ccpt.stats import PairedComparison, paired_compare


@dataclass(frozen=True)
class Comparison:
    """``ccpt compare`` result for one task: A − B on the instances both runs scored."""

    task: str
    metric: str
    a: str
    b: str
    result: PairedComparison
    n_unpaired: int  # instances scored by only one of the two runs (or failed in one)
    protocols: tuple[str, str] = ("", "")  # the protocol(s) of A and of B ("/"-joined if several)


def _per_instance_mean(frame: pd.DataFrame, task: str, metric: str, oracle: Oracle) -> pd.Series:
    if not TASK_SPECS[task].generative:
        values = frame.assign(correct=(frame["pred_type"] == frame["gold_type"]).astype(float))
        return values.groupby("instance")["correct"].mean()
    return per_instance_values(frame, task, oracle).groupby("instance")[metric].mean()


def compare_runs(
    frame: pd.DataFrame,
    a: tuple[str, str],
    b: tuple[str, str],
    *,
    tasks: Sequence[str] | None = None,
    metric: str = "score",
    test: Literal["bootstrap", "permutation"] = "permutation",
    oracle: Oracle = "paper",
    n_resamples: int = 10_000,
    seed: int = 0,
    allow_mixed_protocols: bool = False,
) -> list[Comparison]:
    """Paired comparison of two (model, method) runs per task on per-instance seed-averaged values (×100).

    Runs produced under different protocols (e.g. the authors' as-run files against a ccpt run) are refused
    unless ``allow_mixed_protocols``.

    Type prediction compares per-instance accuracy. Instances missing or failed in either run are left out and
    counted in ``n_unpaired``.
    """
    final = frame[frame["sa_iteration"].isna()]

    def select(spec: tuple[str, str]) -> pd.DataFrame:
        model, method = spec
        chosen = final[(final["model"] == model) & (final["method"] == method)]
        if chosen.empty:
            known = sorted({f"{m}:{k}" for m, k in zip(final["model"], final["method"], strict=True)})
            raise CcptError(f"no results for {model}:{method}", f"available: {', '.join(known)}")
        return chosen

    run_a, run_b = select(a), select(b)
    protocols = {side: protocols_of(run) for side, run in (("A", run_a), ("B", run_b))}
    if protocols["A"] != protocols["B"] and not allow_mixed_protocols:
        raise CcptError(
            f"runs of different protocols: A is {'/'.join(protocols['A']) or 'unknown'}, "
            f"B is {'/'.join(protocols['B']) or 'unknown'} (pass --allow-mixed-protocols to compare anyway)"
        )
    common = [t for t in TASKS if (run_a["task"] == t).any() and (run_b["task"] == t).any()]
    chosen_tasks = list(tasks) if tasks else common
    out: list[Comparison] = []
    for task in chosen_tasks:
        if task not in common:
            raise CcptError(f"task {task!r} is not in both runs", f"tasks in both: {', '.join(common) or 'none'}")
        sa = _per_instance_mean(run_a[run_a["task"] == task], task, metric, oracle).dropna()
        sb = _per_instance_mean(run_b[run_b["task"] == task], task, metric, oracle).dropna()
        both = sa.index.intersection(sb.index)
        if len(both) < 2:
            raise CcptError(f"{task}: fewer than 2 instances scored by both runs")
        result = paired_compare(
            100 * sa.loc[both].to_numpy(),
            100 * sb.loc[both].to_numpy(),
            test=test,
            n_resamples=n_resamples,
            seed=seed,
        )
        unpaired = len(sa.index.union(sb.index)) - len(both)
        name = metric if TASK_SPECS[task].generative else "accuracy"
        names = ("/".join(protocols["A"]), "/".join(protocols["B"]))
        out.append(Comparison(task, name, f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}", result, unpaired, names))
    return out
