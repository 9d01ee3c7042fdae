"""``ccpt compare``: paired differences between two runs on the instances both scored."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

import pandas as pd

from ccpt.errors import CcptError
from ccpt.report.names import match_method, match_model, model_text, resolve_labels
from ccpt.report.notes import protocols_of
from ccpt.report.tables import OracleReduction, display_methods, judge_of, per_instance_values, type_predictions
from ccpt.results.identity import variant_tags
from ccpt.spec import TASK_SPECS, TASKS
from ccpt.stats import PairedComparison, paired_compare


@dataclass(frozen=True)
class Comparison:
    """``ccpt compare`` result for one task: A − B (``model:method`` ids; labels with display names)."""

    task: str
    metric: str
    a: str
    b: str
    result: PairedComparison
    n_unpaired: int  # instances scored by only one of the two runs (or failed in one)
    protocols: tuple[str, str] = ("", "")  # the protocol(s) of A and of B ("/"-joined if several)
    a_label: str = ""
    b_label: str = ""
    judges: tuple[str, str] = ("", "")  # the judge identity of A and of B ("" for Task 3: no judge)

    @property
    def warnings(self) -> list[str]:
        """What the numbers cannot say: a level no test can reach with this n (docs/metrics.md, ccpt compare)."""
        r = self.result
        if r.attainable:
            return []
        if r.test == "permutation" and r.min_p <= 1.0 / (r.n_resamples + 1):
            return [
                f"{self.task}: with {r.n_resamples} Monte-Carlo resamples the smallest p-value is {r.min_p:.4g}, "
                f"so p ≤ {r.alpha:.3g} is impossible; raise --resamples"
            ]
        if r.test == "bootstrap":
            consequence = "; the bootstrap's CI and p-value understate the uncertainty"
        elif not (math.isfinite(r.ci_low) and math.isfinite(r.ci_high)):
            consequence = f"; the {r.level:.0%} CI is unbounded"
        else:
            consequence = ""
        pairs = f"n = {r.n} paired instances" if r.n_nonzero == r.n else f"{r.n_nonzero} of {r.n} differences non-zero"
        return [
            f"{self.task}: {pairs}: the smallest two-sided sign-flip p-value is {r.min_p:.4g}, "
            f"so p ≤ {r.alpha:.3g} is impossible with any exact paired test{consequence}"
        ]


def _per_instance_mean(frame: pd.DataFrame, task: str, metric: str, oracle: OracleReduction) -> pd.Series:
    if not TASK_SPECS[task].generative:
        values = type_predictions(frame)
        values = values.assign(correct=(values["pred_type"] == values["gold_type"]).astype(float))
        return values.groupby("instance")["correct"].mean()
    return per_instance_values(frame, task, oracle).groupby("instance")[metric].mean()


def resolve_run(frame: pd.DataFrame, spec: tuple[str, str], labels: Mapping[str, str] | None = None) -> tuple[str, str]:
    """The (model id, method name) a user's ``MODEL:METHOD`` names: id or display name, method name or label. A
    model whose runs of that method are told apart by their arguments (``m [oracle_n 2]``) is one line naming them
    (before: "no method 'multi_oracle' in the results", listing the model's other methods)."""
    models = {str(m) for m in frame["model"].dropna()}
    model = match_model(spec[0], models, labels)
    try:
        return model, match_method(spec[1], {str(m) for m in frame.loc[frame["model"] == model, "method"]})
    except CcptError:
        tagged = sorted(m for m in models if m.startswith(f"{model} ["))
        runs = [f"{m}:{spec[1]}" for m in tagged if _has_method(frame, m, spec[1])]
        if runs:
            raise CcptError(
                f"{spec[0]}:{spec[1]} is {len(runs)} runs told apart by their arguments", f"name one: {', '.join(runs)}"
            ) from None
        raise


def _has_method(frame: pd.DataFrame, model: str, text: str) -> bool:
    try:
        match_method(text, {str(m) for m in frame.loc[frame["model"] == model, "method"]})
    except CcptError:
        return False
    return True


def compare_runs(
    frame: pd.DataFrame,
    a: tuple[str, str],
    b: tuple[str, str],
    *,
    tasks: Sequence[str] | None = None,
    metric: str = "score",
    test: Literal["bootstrap", "permutation"] = "permutation",
    oracle: OracleReduction = "paper",
    n_resamples: int = 10_000,
    seed: int = 0,
    allow_mixed_protocols: bool = False,
    level: float = 0.95,
    labels: Mapping[str, str] | None = None,
    judges: tuple[str | None, str | None] = (None, None),
) -> list[Comparison]:
    """Paired comparison of two (model, method) runs per task on per-instance seed-averaged values (×100; Task 3:
    accuracy), on the instances both scored. Different protocols are refused unless ``allow_mixed_protocols``; each
    side is one judge's rows (``judges``), two different judges only when both are named."""
    final = frame[frame["sa_iteration"].isna()]
    tags = variant_tags(final)  # runs of other number-changing arguments are runs of their own: `m [oracle_n 2]`
    model = final["model"].where(tags == "", final["model"] + " [" + tags + "]")
    final = final.assign(method=display_methods(final), model=model)  # a no-filter ablation is a run of its own
    names = resolve_labels(labels, {str(m) for m in final["model"].dropna()})
    a, b = resolve_run(final, a, names), resolve_run(final, b, names)
    ids = (f"{a[0]}:{a[1]}", f"{b[0]}:{b[1]}")
    (run_a, judge_a), (run_b, judge_b) = (
        one_judge(final[(final["model"] == m) & (final["method"] == k)], judge, f"{side} ({run})")
        for side, (m, k), judge, run in zip("AB", (a, b), judges, ids, strict=True)
    )
    if a == b and judge_a == judge_b:  # every difference 0 and p = 1: a slip in --a/--b, not a finding
        raise CcptError(
            f"--a and --b both name run {ids[0]}" + (f" (judge {judge_a})" if judge_a else ""),
            "name two different runs, or one run's two judges with --judge-a and --judge-b",
        )
    asked = judges[0] is not None and judges[1] is not None
    if judge_a != judge_b and judge_a and judge_b and not asked:
        raise CcptError(
            f"A is scored by judge {judge_a!r} and B by {judge_b!r}: a difference between them mixes the judges",
            "compare rows of one judge (--judge NAME), or ask for a judge comparison with --judge-a and --judge-b",
        )
    protocols = {side: protocols_of(run) for side, run in (("A", run_a), ("B", run_b))}
    if protocols["A"] != protocols["B"] and not allow_mixed_protocols:
        raise CcptError(
            f"runs of different protocols: A is {'/'.join(protocols['A']) or 'unknown'}, "
            f"B is {'/'.join(protocols['B']) or 'unknown'} (pass --allow-mixed-protocols to compare anyway)"
        )
    common = [t for t in TASKS if (run_a["task"] == t).any() and (run_b["task"] == t).any()]
    protocol_names = ("/".join(protocols["A"]), "/".join(protocols["B"]))
    shown = [f"{model_text(m, names)}:{k}" for m, k in (a, b)]  # the method as --a/--b take it
    out: list[Comparison] = []
    for task in tasks or common:
        if task not in common:
            raise CcptError(f"task {task!r} is not in both runs", f"tasks in both: {', '.join(common) or 'none'}")
        sa = _per_instance_mean(run_a[run_a["task"] == task], task, metric, oracle).dropna()
        sb = _per_instance_mean(run_b[run_b["task"] == task], task, metric, oracle).dropna()
        both = sa.index.intersection(sb.index)
        if len(both) < 2:
            raise CcptError(f"{task}: fewer than 2 instances scored by both runs")
        xa, xb = (100 * s.loc[both].to_numpy() for s in (sa, sb))
        result = paired_compare(xa, xb, test=test, n_resamples=n_resamples, seed=seed, level=level)
        generative = TASK_SPECS[task].generative
        unpaired = len(sa.index.union(sb.index)) - len(both)
        judged = (judge_a, judge_b) if generative else ("", "")
        measured = metric if generative else "accuracy"
        out.append(Comparison(task, measured, *ids, result, unpaired, protocol_names, *shown, judged))
    return out


NO_JUDGE = "unknown"  # the judge of generative rows that name none (ccpt.report.tables.rows_by_judge)


def one_judge(run: pd.DataFrame, wanted: str | None, side: str) -> tuple[pd.DataFrame, str]:
    """The rows of ``run`` scored by the judge ``wanted`` names (else its only judge), and that judge's identity. A
    generative row naming no judge is no judge's verdict: the judge ``unknown``, as ``ccpt report`` keeps it apart."""
    judge = judge_of(run)
    generative = run["task"].isin([t for t, spec in TASK_SPECS.items() if spec.generative])
    judge = judge.mask(generative & (judge == ""), NO_JUDGE)
    found = sorted(set(judge[judge != ""]))
    if wanted is None:
        if len(found) > 1:
            raise CcptError(
                f"{side} is scored by {len(found)} judges ({'; '.join(found)}): its rows are not one run",
                "choose one with --judge (or --judge-a / --judge-b)",
            )
        return run, found[0] if found and found != [NO_JUDGE] else ""
    matches = [j for j in found if j == wanted] or [j for j in found if wanted.lower() in j.lower()]
    if len(matches) != 1:
        what = "no judge" if not matches else f"{len(matches)} judges"
        raise CcptError(f"{side}: {what} matching {wanted!r}", f"its judges: {'; '.join(found) or 'none'}")
    return run[(judge == matches[0]) | (judge == "")], matches[0]
