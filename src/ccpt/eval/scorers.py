"""Scorers: the relevance judge for the generative tasks and exact-match for Task 3.

Each scored sample carries ``metadata["ccpt"] = {"samples": [row, ...]}``: one :class:`ccpt.rows.SampleRow` per
reply (the record :mod:`ccpt.results` reads back), with the raw reply, the parsed answer or the parse
failure reason, every relevance, R_H,M,P and E or C. The Score *value* holds the same numbers reduced for
Inspect's own display (Multi-Oracle: the paper's per-column best); the report layer recomputes everything
from the rows.
"""

from __future__ import annotations

import asyncio
from typing import Any

from inspect_ai.model import get_model
from inspect_ai.scorer import (
    Metric,
    SampleScore,
    Score,
    Scorer,
    Target,
    metric,
    score_reducer,
    scorer,
)
from inspect_ai.solver import TaskState

from ccpt.eval.judge import Judge, JudgeMode
from ccpt.eval.solvers import REPLIES, STEP_REPLIES, TRAJECTORY
from ccpt.protocol import get_protocol
from ccpt.rows import SampleRow
from ccpt.scoring import Relevances, oracle_per_column
from ccpt.spec import TASK_SPECS, Kind

VALUE_KEYS = ("r_hmp", "r_np", "score", "parse_ok")


def _mean_defined(values: list[Any]) -> float:
    present = [float(v) for v in values if v is not None]
    return sum(present) / len(present) if present else float("nan")


@metric
def defined_mean() -> Metric:
    """Mean over samples that have a value (failed answers are counted in ``parse_ok``, not averaged as 0)."""

    def compute(scores: list[SampleScore]) -> float:
        return _mean_defined([s.score.value for s in scores])

    return compute


@score_reducer(name="ccpt_mean")
def ccpt_mean():  # type: ignore[no-untyped-def]
    """Epoch (seed) reducer: per key, the mean of the seeds that have a value; ``None`` if none has."""

    def reduce(scores: list[Score]) -> Score:
        first = scores[0]
        if not isinstance(first.value, dict):
            return Score(value=_mean_defined([s.value for s in scores]))
        keys = first.value.keys()
        value = {}
        for key in keys:
            mean = _mean_defined([s.value.get(key) for s in scores])  # type: ignore[union-attr]
            value[key] = None if mean != mean else mean  # NaN → None
        return Score(value=value, answer=first.answer, metadata={"epochs": len(scores)})

    return reduce


def _row(state: TaskState, method: str, judge_name: str | None, reply: str, sample: int) -> SampleRow:
    meta = state.metadata
    return SampleRow(
        task=meta["task"],
        model=str(state.model),
        method=method,
        seed=state.epoch - 1,
        instance=meta["instance"],
        sample=sample,
        combination=meta["combination"],
        head=meta["head"],
        modifier=meta["modifier"],
        property=meta["property"],
        answer_raw=reply,
        judge=judge_name,
        gold_type=meta.get("gold_type"),
    )


def _replies(state: TaskState) -> list[str]:
    """The replies to score: ccpt's solvers store them; any other solver (Inspect's ``--solver``) left its output."""
    replies: list[str] | None = state.store.get(REPLIES)
    if replies:
        return replies
    return [state.output.completion if state.output else ""]


async def judge_row(row: SampleRow, judge: Judge) -> SampleRow:
    """Parse the reply in ``row`` and fill its relevances, R_H,M,P and E/C (in place; returns the row)."""
    task = TASK_SPECS[row.task]
    parsed = task.parse(str(row.answer_raw), row.head)
    row.parse_ok, row.parse_error = parsed.ok, parsed.error
    if parsed.ok and task.completes_phrase and not parsed.modifier:
        row.parse_ok, row.parse_error = False, "no modifier"  # nothing to judge R_M,P on
    if not row.parse_ok or parsed.value is None:
        return row
    row.answer, row.answer_modifier = parsed.value, parsed.modifier
    concepts, prop = task.judged_pairs(vars(row), parsed.value, parsed.modifier)
    judged = await asyncio.gather(*(judge.relevance(c, prop) for c in concepts))
    row.r_np, row.r_hp, row.r_mp = (j.relevance for j in judged)
    failed = [j for j in judged if j.relevance is None]
    row.judge_failures = len(failed)
    row.judge_errors = [f"{j.concept!r}/{j.property!r}: {j.error}" for j in failed]
    rel = Relevances(row.r_np, row.r_hp, row.r_mp)
    row.r_hmp, row.score = rel.r_hmp, rel.score(task.kind)  # type: ignore[arg-type]
    return row


def score_value(rows: list[SampleRow], kind: Kind) -> dict[str, Any]:
    """A sample's score value: its answer's cells, or Multi-Oracle's per-column best over its members."""
    parse_ok = sum(r.parse_ok for r in rows) / len(rows)
    if len(rows) == 1:
        r = rows[0]
        return {"r_hmp": r.r_hmp, "r_np": r.r_np, "score": r.score, "parse_ok": parse_ok}
    oracle = oracle_per_column([Relevances(r.r_np, r.r_hp, r.r_mp) for r in rows], kind)
    return {"r_hmp": oracle.r_hmp, "r_np": oracle.r_np, "score": oracle.score, "parse_ok": parse_ok}


def grader_judge(protocol: str, judge_mode: JudgeMode = "text", judge_retries: int = 2) -> Judge:
    """A judge on the ``grader`` model role with ``protocol``'s judge surface (prompt and reply handling)."""
    surface = get_protocol(protocol)
    return Judge(
        get_model(role="grader"),
        mode=judge_mode,
        retries=judge_retries,
        template=surface.judge_template,
        capitalise=surface.judge_capitalise,
        lowercase_reply=surface.judge_lowercase_reply,
        use_schema=surface.judge_schema,
    )


@scorer(metrics={key: [defined_mean()] for key in VALUE_KEYS})
def relevance_judge(
    method: str, judge_mode: JudgeMode = "text", judge_retries: int = 2, protocol: str = "ccpt"
) -> Scorer:
    """Judge every reply of a generative task with the ``grader`` model role (default: the solver model).

    The judge's prompt and reply handling follow ``protocol`` (the as-run judge surface differs).
    """
    holder: dict[str, Judge] = {}  # one judge (and memo) per scorer instance, created on first use

    async def score(state: TaskState, target: Target) -> Score:
        if "judge" not in holder:
            holder["judge"] = grader_judge(protocol, judge_mode, judge_retries)
        judge = holder["judge"]
        kind = TASK_SPECS[state.metadata["task"]].kind
        rows = [_row(state, method, judge.name, reply, k) for k, reply in enumerate(_replies(state))]
        # Table 6: answers from the intermediate concept sets C_1..C_T, judged like the final one.
        for t, reply in state.store.get(STEP_REPLIES, []):
            extra = _row(state, method, judge.name, reply, 0)
            extra.sa_iteration = t
            rows.append(extra)
        await asyncio.gather(*(judge_row(r, judge) for r in rows))
        main = [r for r in rows if r.sa_iteration is None]
        metadata: dict[str, Any] = {"samples": [r.to_dict() for r in rows]}
        trajectory = state.store.get(TRAJECTORY)
        if trajectory is not None:
            metadata["trajectory"] = trajectory
        return Score(
            value=score_value(main, kind),  # type: ignore[arg-type]
            answer=main[0].answer if main else None,
            explanation="; ".join(r.parse_error for r in main if r.parse_error) or None,
            metadata={"ccpt": metadata},
        )

    return score


@scorer(metrics={"correct": [defined_mean()], "parse_ok": [defined_mean()]})
def type_match(method: str) -> Scorer:
    """Task 3: the parsed property type against the gold type (a parse failure counts as wrong)."""

    async def score(state: TaskState, target: Target) -> Score:
        reply = _replies(state)[0]
        row = _row(state, method, "", reply, 0)
        parsed = TASK_SPECS[row.task].parse(reply)
        row.parse_ok, row.parse_error, row.answer, row.pred_type = parsed.ok, parsed.error, parsed.value, parsed.value
        correct = parsed.ok and parsed.value == target.text
        return Score(
            value={"correct": float(correct), "parse_ok": float(parsed.ok)},
            answer=parsed.value,
            explanation=parsed.error,
            metadata={"ccpt": {"samples": [row.to_dict()]}},
        )

    return score
