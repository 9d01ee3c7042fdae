"""Scorers: the relevance judge for the generative tasks and exact-match for Task 3.

Each scored sample carries ``metadata["ccpt"] = {"samples": [row, ...], "judge_identity": {...}, "judge_format":
...}`` (one :class:`ccpt.rows.SampleRow` per reply, what :mod:`ccpt.results` reads back, and the judge's structured
identity); the Score *value* holds the same numbers reduced for Inspect's display, the headline (E, C or accuracy)
first. ``ccpt report`` recomputes from the rows.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import math
from dataclasses import replace
from typing import Any

import pandas as pd
from inspect_ai.model import GenerateConfig, Model, get_model, model_roles
from inspect_ai.scorer import Metric, SampleScore, Score, Scorer, Target, metric, score_reducer, scorer, stderr
from inspect_ai.solver import TaskState

from ccpt import methods
from ccpt.answers import parse_answer
from ccpt.errors import PluginError
from ccpt.eval import endpoints
from ccpt.eval.inspect_compat import active_generate_config
from ccpt.eval.judge import Judge, JudgeMode
from ccpt.eval.solvers import REPLIES, STEP_REPLIES, TRAJECTORY
from ccpt.judges.distilled import JUDGE as DISTILLED
from ccpt.methods import Cell, Judged
from ccpt.protocol import FILLED, fill_failed_samples, get_protocol
from ccpt.results.table import optional
from ccpt.rows import JUDGE_IDENTITY, SampleRow
from ccpt.scoring import Relevances
from ccpt.spec import CANCELED, EMERGENT, TASK_SPECS, ScoredType
from ccpt.stats import Stat, Summary, summarize

logger = logging.getLogger(__name__)

GRADER = "grader"  # Inspect's model role of the judge
# With no grader role, the judge is the offline distilled judge, never the evaluated model (which Inspect's
# role fallback would pick): self-judging must be asked for by naming the model as the grader.
DEFAULT_GRADER = DISTILLED.model_name
HEADLINE: dict[ScoredType, str] = {EMERGENT: "E", CANCELED: "C"}  # the metric names of docs/metrics.md
ACCURACY = "accuracy"
R_NP, R_HMP, PARSE_OK = "R_NP", "R_HMP", "parse_ok"


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def _mean_defined(values: list[Any]) -> float:
    present = [float(v) for v in values if v is not None and not _is_nan(v)]
    return sum(present) / len(present) if present else float("nan")


@metric(name="mean")
def defined_mean() -> Metric:
    """Mean over instances that have a value (failed answers are counted in ``parse_ok``, not averaged as 0)."""

    def compute(scores: list[SampleScore]) -> float:
        return _mean_defined([s.score.value for s in scores])

    return compute


@metric(name="stderr")
def defined_stderr() -> Metric:
    """Inspect's ``stderr`` over the instances that have a value (NaN with fewer than two)."""
    inspect_stderr = stderr()

    def compute(scores: list[SampleScore]) -> float:
        defined = [s for s in scores if s.score.value is not None and not _is_nan(s.score.value)]
        return float(inspect_stderr(defined)) if len(defined) > 1 else float("nan")  # type: ignore[arg-type]

    return compute


SEEDS = "seeds"  # reduced Score metadata: per key, the value of each seed ({key: {seed: value}})


def _paper_cell(scores: list[SampleScore], key: str, stat: Stat = "sem") -> Summary | None:
    """The report's cell of one key (×100), from the instances × seeds values the reducer kept; None without any."""
    per_instance = [(s.score.metadata or {}).get(SEEDS, {}).get(key, {}) for s in scores]
    seeds = sorted({seed for values in per_instance for seed in values}, key=int)
    matrix = [[values.get(seed) for seed in seeds] for values in per_instance]
    return summarize(matrix, stat).scaled(100.0) if matrix and matrix[0] else None


@metric(name="cell")
def paper_cell(key: str) -> Metric:
    """The report's cell (×100): the mean over seeds of the per-seed instance means (:func:`ccpt.stats.summarize`)."""

    def compute(scores: list[SampleScore]) -> float:
        cell = _paper_cell(scores, key)
        return cell.mean if cell is not None else float("nan")

    return compute


@metric(name="cell_sem")
def paper_cell_sem(key: str) -> Metric:
    """The report's ± (×100): the standard error over seeds of the per-seed means (NaN with one seed)."""

    def compute(scores: list[SampleScore]) -> float:
        cell = _paper_cell(scores, key)
        return float("nan") if cell is None or cell.spread is None else cell.spread

    return compute


@metric(name="cell_sd")
def paper_cell_sd(key: str) -> Metric:
    """The paper's ± (×100): the population standard deviation (ddof 0) of the per-seed means (``--stat paper``)."""

    def compute(scores: list[SampleScore]) -> float:
        cell = _paper_cell(scores, key, "paper")
        return float("nan") if cell is None or cell.spread is None else cell.spread

    return compute


def cell_metrics(key: str) -> list[Metric]:
    """A key's metrics: the report's cell and ± first (what ``ccpt report`` prints), the paper's ±, the instance
    mean and stderr."""
    return [paper_cell(key), paper_cell_sem(key), paper_cell_sd(key), defined_mean(), defined_stderr()]


def judge_metrics(headline: str) -> dict[str, list[Metric]]:
    """The metrics of a judged task: its headline (E or C), R_N,P and R_H,M,P with stderr, and the parse rate."""
    return {**{key: cell_metrics(key) for key in (headline, R_NP, R_HMP)}, PARSE_OK: [defined_mean()]}


def _seed_of(score: Score, default: int) -> str:
    """The seed a score belongs to (its row's), as text (a JSON key)."""
    meta = (score.metadata or {}).get("ccpt")
    samples = meta.get("samples") if isinstance(meta, dict) else None
    seed = samples[0].get("seed") if samples and isinstance(samples[0], dict) else None
    return str(int(seed) if seed is not None else default)


def _main_rows(score: Score) -> list[dict[str, Any]]:
    """The rows of a score's final answers (the per-step answers of Table 6 left out)."""
    meta = (score.metadata or {}).get("ccpt")
    samples = meta.get("samples") if isinstance(meta, dict) else None
    return [r for r in samples or () if isinstance(r, dict) and r.get("sa_iteration") is None]


def _filled_values(scores: list[Score]) -> list[Any]:
    """Each seed's score value with its protocol's fill of failed samples applied as ``ccpt report`` applies it
    (as-run: :func:`ccpt.protocol.fill_failed_samples`), so the cells below are the report's cells."""
    values = [s.value for s in scores]
    rows = [r for s in scores for r in _main_rows(s)]
    task = TASK_SPECS.get(str(rows[0].get("task"))) if rows else None
    if task is None or task.kind is None or all(r.get("score") is not None for r in rows):
        return values
    filled = fill_failed_samples(pd.DataFrame(rows))
    if filled[FILLED].isna().all():
        return values
    wanted = ("task", "model", "method", "instance", "seed", "sample", "answer", "parse_ok", "r_np", "r_hp", "r_mp")
    by_seed = {
        int(seed): [SampleRow(**{k: None if pd.isna(v) else v for k, v in r.items()}) for r in part.to_dict("records")]
        for seed, part in filled[list(wanted)].groupby("seed")
    }
    out = []
    for score, value in zip(scores, values, strict=True):
        own = _main_rows(score)
        seed_rows = by_seed.get(int(own[0]["seed"])) if own else None
        out.append(score_value(seed_rows, task.kind) if seed_rows else value)
    return out


@score_reducer(name="ccpt_mean")
def ccpt_mean():  # type: ignore[no-untyped-def]
    """Epoch (seed) reducer: per key, the mean of the seeds that have a value (``None`` if none has); each seed's
    value kept in the metadata for the report's cells, failed samples filled where the protocol fills them."""

    def reduce(scores: list[Score]) -> Score:
        first = scores[0]
        if not isinstance(first.value, dict):
            return Score(value=_mean_defined([s.value for s in scores]))
        keys = first.value.keys()
        values = _filled_values(scores)
        means = {key: _mean_defined([v.get(key) for v in values]) for key in keys}
        value = {key: None if mean != mean else mean for key, mean in means.items()}  # NaN → None
        pairs = list(enumerate(zip(scores, values, strict=True)))
        seeds = {key: {_seed_of(s, k): v.get(key) for k, (s, v) in pairs} for key in keys}
        return Score(value=value, answer=first.answer, metadata={"epochs": len(scores), SEEDS: seeds})

    return reduce


def default_grader_roles() -> dict[str, str | Model] | None:
    """The task's own model roles: the distilled judge as ``grader`` unless the eval binds one already; when it
    cannot load the task is still built (scoring without a grader role then fails with that reason)."""
    if GRADER in model_roles():
        return None
    try:
        default = get_model(DEFAULT_GRADER)
    except Exception as exc:  # any load failure: the eval may still bind a grader
        logger.warning("no %r model role given and %s cannot load (%s)", GRADER, DEFAULT_GRADER, exc)
        return None
    logger.warning(
        "no %r model role given: %s judges (pass --model-role grader=MODEL to choose the judge)", GRADER, DEFAULT_GRADER
    )
    return {GRADER: default}


def make_judge(
    model: Model,
    mode: JudgeMode = "text",
    retries: int | None = None,
    protocol: str = "ccpt",
    request: GenerateConfig | None = None,
) -> Judge:
    """The judge of ``protocol`` (its prompt surface, reply format and, unless ``retries`` is given, its retries) on
    ``model``; ``request`` adds call limits."""
    surface = get_protocol(protocol)
    return Judge(
        model,
        mode=mode,
        retries=surface.judge_retries if retries is None else retries,
        template=surface.judge_template,
        capitalise=surface.judge_capitalise,
        lowercase_reply=surface.judge_lowercase_reply,
        retry_temperature=surface.judge_retry_temperature,
        use_schema=surface.judge_schema,
        request=request or GenerateConfig(),
    )


def _row(
    state: TaskState, method: str, judge_name: str | None, reply: str, sample: int, protocol: str | None = None
) -> SampleRow:
    meta = state.metadata
    given = {k: meta[k] for k in ("task", "instance", "combination", "head", "modifier", "property")}
    return SampleRow(
        **given,
        model=str(state.model),
        method=method,
        seed=state.epoch - 1,
        sample=sample,
        answer_raw=reply,
        judge=judge_name,
        gold_type=meta.get("gold_type"),
        protocol=protocol,
    )


def _replies(state: TaskState) -> list[str]:
    """The replies to score: ccpt's solvers store them; any other solver (Inspect's ``--solver``) left its output."""
    return state.store.get(REPLIES) or [state.output.completion if state.output else ""]


async def judge_row(row: SampleRow, judge: Judge, *, as_run: bool = False) -> SampleRow:
    """Parse the reply in ``row`` and fill its relevances, R_H,M,P and E/C (in place; returns the row); ``as_run``:
    NPC replies are read with the authors' rule."""
    task = TASK_SPECS[row.task]
    parsed = parse_answer(task, str(row.answer_raw), row.head, as_run=as_run)
    row.parse_ok, row.parse_error = parsed.ok, parsed.error
    if parsed.ok and task.completes_phrase and not parsed.modifier:
        row.parse_ok, row.parse_error = False, "no modifier"  # nothing to judge R_M,P on
    if not row.parse_ok or parsed.value is None:
        return row
    row.answer, row.answer_modifier = parsed.value, parsed.modifier
    vars(row).update(await judge_answer(vars(row), judge))
    return row


async def judge_answer(row: dict[str, Any], judge: Judge) -> dict[str, Any]:
    """The row (a dict) with the relevances, R_H,M,P and E/C of its parsed answer judged by ``judge`` (a new dict); a
    parse failure stays one (``ccpt rejudge`` judges stored answers with it, never parsing them again)."""
    out = dict(row, r_np=None, r_hp=None, r_mp=None, r_hmp=None, score=None, judge=judge.name, judge_failures=0)
    spec = TASK_SPECS[row["task"]]
    answer = optional(row.get("answer"), str)
    if not row.get("parse_ok") or not answer:
        return out
    concepts, prop = spec.judged_pairs(row, answer, optional(row.get("answer_modifier"), str))
    judged = await asyncio.gather(*(judge.relevance(str(c), str(prop)) for c in concepts))
    rel = Relevances(*(j.relevance for j in judged))
    failed = [j for j in judged if j.relevance is None]
    out.update(r_np=rel.r_np, r_hp=rel.r_hp, r_mp=rel.r_mp, r_hmp=rel.r_hmp, score=rel.score(spec.kind))
    out.update(judge_failures=len(failed), judge_errors=[f"{j.concept!r}/{j.property!r}: {j.error}" for j in failed])
    return out


def _number(value: float | None) -> str:
    return "judge failed" if value is None else f"{value:.2f}"


def explain(row: SampleRow) -> str:
    """One line a reader of ``inspect view`` understands: the answer, each judged pair's relevance, the score."""
    task = TASK_SPECS[row.task]
    if not row.parse_ok or row.answer is None:
        return f"{row.answer_raw!r:.80}: not scored ({row.parse_error})"
    concepts, prop = task.judged_pairs(vars(row), row.answer, row.answer_modifier)
    pairs = ", ".join(
        f"R_{label},P({concept!r}, {prop!r}) = {_number(value)}"
        for label, concept, value in zip(("N", "H", "M"), concepts, (row.r_np, row.r_hp, row.r_mp), strict=True)
    )
    headline = HEADLINE[task.kind] if task.kind else "score"
    return f"{row.answer!r}: {pairs}; R_H,M,P = {_number(row.r_hmp)}, {headline} = {_number(row.score)}"


def score_value(rows: list[SampleRow], kind: ScoredType) -> dict[str, Any]:
    """A sample's score value: its answers' cells, reduced the way their method reduces them (ccpt.methods)."""
    parse_ok = sum(r.parse_ok for r in rows) / len(rows)
    judged = [Judged(r.answer, Relevances(r.r_np, r.r_hp, r.r_mp)) for r in rows]
    cell = _reduced(rows[0].method, judged, kind)
    return {HEADLINE[kind]: cell.score, R_NP: cell.r_np, R_HMP: cell.r_hmp, PARSE_OK: parse_ok}


def _reduced(method: str, samples: list[Judged], kind: ScoredType | None) -> Cell:
    """The cell ``method``'s reduction makes of ``samples``; a plug-in's bad result stops the run (every sample after
    it would fail the same way): one line naming the method, no traceback on the terminal."""
    try:
        return methods.reduction(method)(samples, kind, "paper")
    except PluginError as exc:
        endpoints.mark_fault(str(exc))
        raise


def judge_metadata(judge: Judge) -> dict[str, Any]:
    """What a scored sample records of its judge: its structured identity (the fields reports key on,
    :class:`ccpt.judges.JudgeIdentity`) and how its reply format was negotiated."""
    return {JUDGE_IDENTITY: judge.identity.fields(), "judge_format": judge.format_note()}


def grader_judge(protocol: str, judge_mode: JudgeMode = "text", judge_retries: int | None = None) -> Judge:
    """The judge of ``protocol`` on the ``grader`` model role (the distilled judge when no role is bound); its
    requests carry the eval's ``attempt_timeout``, which Inspect does not hand a role model."""
    attempt_timeout = active_generate_config().attempt_timeout
    request = GenerateConfig(attempt_timeout=attempt_timeout) if attempt_timeout else None
    return make_judge(get_model(role=GRADER, default=DEFAULT_GRADER), judge_mode, judge_retries, protocol, request)


def _relevance_judge(
    method: str, judge_mode: JudgeMode = "text", judge_retries: int | None = None, protocol: str = "ccpt"
) -> Scorer:
    """Judge every reply of a generative task with the ``grader`` role (default: the distilled judge)."""
    # One judge (and memo) per scorer instance, created on first use.
    grader = functools.cache(lambda: grader_judge(protocol, judge_mode, judge_retries))
    surface = get_protocol(protocol)

    async def score(state: TaskState, target: Target) -> Score:
        judge = grader()
        kind = TASK_SPECS[state.metadata["task"]].kind
        rows = [_row(state, method, judge.name, reply, k, protocol) for k, reply in enumerate(_replies(state))]
        # Table 6: answers from the intermediate concept sets C_1..C_T, judged like the final one.
        steps = state.store.get(STEP_REPLIES, [])
        rows += [replace(_row(state, method, judge.name, reply, 0, protocol), sa_iteration=t) for t, reply in steps]
        await asyncio.gather(*(judge_row(r, judge, as_run=surface.npc_as_run) for r in rows))
        main = [r for r in rows if r.sa_iteration is None]
        trajectory = state.store.get(TRAJECTORY)
        if trajectory is not None:  # SA: steps whose replies could not be read, counted on every row
            for r in rows:
                r.sa_failed_steps = int(trajectory.get("failed_steps", 0))
        metadata: dict[str, Any] = {"samples": [r.to_dict() for r in rows], **judge_metadata(judge)}
        metadata |= {"trajectory": trajectory} if trajectory is not None else {}
        lines = [explain(r) for r in main]
        explanation = "\n".join(f"sample {k}: {line}" for k, line in enumerate(lines)) if len(lines) > 1 else lines[0]
        return Score(
            value=score_value(main, kind),  # type: ignore[arg-type]
            answer=main[0].answer if main else None,
            explanation=explanation,
            metadata={"ccpt": metadata},
        )

    return score


# The judge scorers of the emergent tasks and of PI-canceled: the same scorer, its headline metric (E or C) first.
emergence_judge = scorer(metrics=judge_metrics(HEADLINE[EMERGENT]), name="emergence_judge")(_relevance_judge)
cancellation_judge = scorer(metrics=judge_metrics(HEADLINE[CANCELED]), name="cancellation_judge")(_relevance_judge)


@scorer(metrics={ACCURACY: cell_metrics(ACCURACY), PARSE_OK: [defined_mean()]})
def type_match(method: str) -> Scorer:
    """Task 3: each reply's parsed property type; the one the method's reduction counts (Base: its one reply; a
    vote: the winner) against the gold type (none parsed counts as wrong)."""

    async def score(state: TaskState, target: Target) -> Score:
        rows = [_row(state, method, "", reply, k) for k, reply in enumerate(_replies(state))]
        for row in rows:
            parsed = parse_answer(TASK_SPECS[row.task], str(row.answer_raw))
            row.parse_ok, row.parse_error = parsed.ok, parsed.error
            row.answer = row.pred_type = parsed.value
        counted = _reduced(method, [Judged(r.answer) for r in rows], None).answer
        lines = [f"predicted {r.answer}" if r.parse_ok else f"not parsed ({r.parse_error})" for r in rows]
        predicted = lines[0] if len(rows) == 1 else f"{'; '.join(lines)}; counted {counted}"
        return Score(
            value={ACCURACY: float(counted == target.text), PARSE_OK: sum(r.parse_ok for r in rows) / len(rows)},
            answer=counted,
            explanation=f"{predicted}, gold {target.text}",
            metadata={"ccpt": {"samples": [r.to_dict() for r in rows]}},
        )

    return score
