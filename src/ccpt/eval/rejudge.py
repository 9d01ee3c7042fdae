"""Re-judging stored answers with another judge (``ccpt rejudge``), through Inspect.

The generative answers of any run ccpt reads are grouped by (source, task, model, method, filter, protocol); each
group becomes one Inspect task whose samples carry the stored answers, judged by the ``grader`` role as a run's
scorer does, so the output holds ordinary Inspect logs. Nothing is re-parsed; Task-3 rows have no judge and are not
carried over. Resumable and failure handling as in ``ccpt run`` (:mod:`ccpt.eval.sweep`).
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import json
import math
import os
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from inspect_ai import Task, eval_set, task
from inspect_ai.dataset import MemoryDataset, Sample
from inspect_ai.model import get_model
from inspect_ai.scorer import Score, Scorer, Target, scorer
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ccpt.errors import CcptError, DataError, Interrupted, ModelError
from ccpt.eval import endpoints
from ccpt.eval.inspect_compat import final_status_held
from ccpt.eval.judge import JudgeMode, forget_formats
from ccpt.eval.scorers import HEADLINE, SEEDS, grader_judge, judge_answer, judge_metadata, judge_metrics, score_value
from ccpt.eval.sweep import eval_set_options, reopen_transient
from ccpt.io.outputs import atomic_write_text, ensure_writable_dir
from ccpt.results import load_results
from ccpt.results.inspect_logs import REJUDGED_JUDGE, SENT_SETTINGS, read_logs, samples_completed, task_of
from ccpt.rows import COLUMNS, SampleRow
from ccpt.spec import CANCELED, EMERGENT, TASK_SPECS, TYPE_PREDICTION

GROUP_KEY = ("source", "task", "model", "method", "sa_filter", "protocol", "variant")
ROWS_DIR = ".rejudge"  # inside the output directory: the stored answers each task reads


@dataclass(frozen=True)
class RejudgeSummary:
    """What a re-judge did: task runs, answers re-judged, and what was not carried over."""

    groups: int
    answers: int
    skipped_task3: int
    finished: bool
    unreadable: tuple[Any, ...] = ()  # source logs set aside when read (ccpt.results.inspect_logs.UnreadableLog)
    logs: tuple[str, ...] = ()  # this command's re-judge logs (an earlier command's in the directory are not)


def _plain(value: Any) -> Any:
    """A JSON-safe cell: NaN → None, numpy scalars → Python."""
    if isinstance(value, float) and math.isnan(value):
        return None
    return value.item() if hasattr(value, "item") else value


def answer_groups(frame: pd.DataFrame) -> list[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """(group key, rows) for every generative group of the tidy table, in a stable order."""
    rows = [{k: _plain(v) for k, v in row.items() if k in COLUMNS} for row in frame.to_dict("records")]
    generative = [r for r in rows if r.get("task") in TASK_SPECS and TASK_SPECS[r["task"]].generative]
    groups: dict[str, tuple[dict[str, Any], list[dict[str, Any]]]] = {}
    for row in generative:  # one group per run: one judge's answers (a file may hold several judges')
        key = {k: row.get(k) for k in (*GROUP_KEY, "judge")}
        groups.setdefault(json.dumps(key, sort_keys=True, default=str), (key, []))[1].append(row)
    return [groups[k] for k in sorted(groups)]


def write_group(out_dir: Path, key: dict[str, Any], rows: list[dict[str, Any]]) -> Path:
    """Store a group's rows as JSON (atomically) under ``out_dir``; the name is a digest of the content."""
    # The rows name their judge: the group's file is keyed as before it was, and an earlier re-judge resumes.
    payload = json.dumps({"key": {k: key[k] for k in GROUP_KEY}, "rows": rows}, sort_keys=True, default=str)
    digest = hashlib.sha256(payload.encode("utf-8")).hexdigest()[:16]
    path = out_dir / ROWS_DIR / f"{key['task']}-{digest}.json"
    if not path.is_file():
        atomic_write_text(path, payload)
    return path


@solver
def stored_answers() -> Solver:
    """Keep the stored answers: re-judging asks the evaluated model nothing."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        return state

    return solve


def _rejudged(protocol: str, judge_mode: JudgeMode = "text", judge_retries: int | None = None) -> Scorer:
    """Re-judge the stored answers of a sample with the ``grader`` role (one judge and memo per task)."""
    grader = functools.cache(lambda: grader_judge(protocol, judge_mode, judge_retries))  # created on first use

    async def score(state: TaskState, target: Target) -> Score:
        rows = await asyncio.gather(*(judge_answer(r, grader()) for r in state.metadata["rows"]))
        main = [SampleRow(**r) for r in rows if r.get("sa_iteration") is None] or [SampleRow(**r) for r in rows]
        kind = TASK_SPECS[state.metadata["task"]].kind
        # The judge's identity and negotiated reply format, as a run's scorer records them.
        meta = {"samples": list(rows), **judge_metadata(grader())}
        value = score_value(main, kind)
        # A sample is one (instance, seed): its seed's values, as a run's reducer keeps them for the cell metrics.
        seed = str(int(main[0].seed or 0))
        seeds = {key: {seed: cell} for key, cell in value.items()}
        return Score(value=value, metadata={"ccpt": meta, SEEDS: seeds})

    return score


# The same metrics as the run's own scorers (E or C first), so a re-judged log reads like the original.
rejudged_emergence = scorer(metrics=judge_metrics(HEADLINE[EMERGENT]), name="rejudged_emergence")(_rejudged)
rejudged_cancellation = scorer(metrics=judge_metrics(HEADLINE[CANCELED]), name="rejudged_cancellation")(_rejudged)


@task
def rejudge(rows_file: str, task: str, method: str, protocol: str, source: str, judge_mode: str = "text") -> Task:
    """The stored answers of one (source, task, model, method, protocol) group, judged again by the grader role."""
    payload = json.loads(Path(rows_file).read_text(encoding="utf-8"))
    by_sample: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for row in payload["rows"]:
        by_sample.setdefault((str(row["instance"]), int(row.get("seed") or 0)), []).append(row)
    samples = [
        Sample(input=f"re-judge {instance} seed {seed}", id=f"{instance}@{seed}", metadata={"task": task, "rows": rows})
        for (instance, seed), rows in by_sample.items()
    ]
    rejudged = rejudged_emergence if TASK_SPECS[task].kind == EMERGENT else rejudged_cancellation
    return Task(
        dataset=MemoryDataset(samples, name=source),
        solver=stored_answers(),
        scorer=rejudged(protocol, judge_mode),  # type: ignore[arg-type]
        name=f"rejudge_{task}",
        # The answers' model, never asked (Inspect's "none" provider): the log's header names it, as the run's did.
        model=get_model(f"none/{payload['key']['model']}"),
    )


def first_instances(rows: list[dict[str, Any]], limit: int | None) -> list[dict[str, Any]]:
    """The rows of the first ``limit`` instances (in the order the source lists them), every seed of each."""
    if not limit:
        return rows
    kept = set(list(dict.fromkeys(str(row["instance"]) for row in rows))[:limit])
    return [r for r in rows if str(r["instance"]) in kept]


def rejudge_tasks(
    frame: pd.DataFrame, out_dir: Path, judge_mode: str = "text", limit: int | None = None
) -> tuple[list[Task], int]:
    """One Inspect task per group of stored answers (rows written under ``out_dir``), and the answer count."""
    tasks, answers = [], 0
    for key, group in answer_groups(frame):
        rows = first_instances(group, limit)
        path = write_group(out_dir, key, rows)
        answers += len(rows)
        named = {name: str(key[name]) for name in ("task", "method", "protocol", "source")}
        tasks.append(rejudge(rows_file=str(path), **named, judge_mode=judge_mode))
        # What the answering model was sent, as its log recorded it: a re-judged ablation is warned about as the
        # source runs are (ccpt.results.identity.pooled_settings); and the judge of the answers, so their before and
        # after cells pair by run. Task metadata is no part of eval_set's task identity.
        tasks[-1].metadata = {REJUDGED_JUDGE: key["judge"]}
        if (sent := frame.attrs.get("sent", {}).get(str(key["source"]))) is not None:
            tasks[-1].metadata[SENT_SETTINGS] = sent
    return tasks, answers


def run_rejudge(
    sources: Iterable[str | Path],
    judge: str | Any,
    out_dir: Path,
    *,
    dataset: Any = None,
    judge_mode: str = "text",
    max_connections: int | None = None,
    display: str = "none",
    timeout: int = 120,
    max_retries: int = 3,
    limit: int | None = None,
) -> RejudgeSummary:
    """Re-judge every generative answer of ``sources`` with ``judge``; Inspect logs go to ``out_dir``; ``limit``
    keeps the first N instances of each task run. Raises :class:`~ccpt.errors.Interrupted` on Ctrl-C and a
    :class:`~ccpt.errors.ModelError` line when the judge stops answering."""
    frame = load_results(list(sources), dataset)
    task3 = int((frame["task"].astype(str) == TYPE_PREDICTION).sum()) if len(frame) else 0
    ensure_writable_dir(out_dir, "--out")  # a read-only or full directory: one line naming it
    tasks, answers = rejudge_tasks(frame, out_dir, judge_mode, limit)
    if not tasks:
        raise DataError("no generative answers to re-judge in the given runs", "Task-3 runs have no judge")
    reopen_transient(out_dir)  # an earlier re-judge's transient failures are asked again
    forget_formats()
    try:  # a judge that stops answering stops the re-judge (one line, see below)
        with endpoints.stop_on_outage(), final_status_held() as print_final_status:
            success, logs = eval_set(
                tasks=tasks,
                model="none",
                model_roles={"grader": judge},
                **eval_set_options(out_dir, timeout, max_retries, max_connections, display),
            )
    except KeyboardInterrupt:
        raise _stopped(out_dir, tasks) from None
    # Ctrl-C inside Inspect cancels the running tasks and returns normally (see ccpt.eval.sweep.run_sweep).
    if endpoints.stopped() or len(logs) < len(tasks) or any(log.status == "cancelled" for log in logs):
        raise _stopped(out_dir, tasks)
    retried = reopen_transient([log.location for log in logs])
    if success and not retried:
        print_final_status()  # Inspect's "Completed all tasks … successfully", held until it is so
    unreadable = tuple(frame.attrs.get("unreadable", []))  # never re-judged: the command names them
    mine = tuple(_path(log.location) for log in logs)
    return RejudgeSummary(len(tasks), answers, task3, bool(success) and not retried, unreadable, mine)


def _stopped(out_dir: Path, tasks: list[Task]) -> Exception:
    """Why the re-judge stopped before its end: a failure every rerun would repeat, or the judge stopped answering
    (one line each), else Ctrl-C."""
    if (fault := endpoints.fault()) is not None:
        return CcptError(
            f"{fault}; the re-judge stopped there, the answers judged so far are kept in {out_dir}",
            "fix the plug-in, then rerun the same command to resume",
        )
    gone = endpoints.gone()
    if not gone:
        return Interrupted(*_finished(out_dir, tasks), str(out_dir))
    reopen_transient(out_dir)
    where, reason = next(iter(gone.items()))
    return ModelError(
        f"{where} stopped answering during the re-judge ({reason}); the answers judged so far are kept in {out_dir}",
        "rerun the same command to resume once the judge is back",
    )


def _finished(out_dir: Path, tasks: list[Task]) -> tuple[int, int]:
    """(judged, planned) samples of this re-judge's task runs (the newest log of each)."""
    planned = sum(len(t.dataset) for t in tasks)
    names = {t.name for t in tasks}
    newest: dict[str, Any] = {}
    for log in read_logs([out_dir], header_only=True).logs:
        if task_of(log) in names:
            newest[str((log.eval.task_args or {}).get("rows_file"))] = log
    done = sum(samples_completed(log) for log in newest.values())
    return min(done, planned), planned


def _path(location: Any) -> str:
    """A log's location as an absolute path, for load_results (Inspect gives one as listed, the other as run)."""
    path = str(location).removeprefix("file://").removeprefix("file:")
    return path if "://" in path else os.path.abspath(path)


def rejudged_logs(out_dir: Path, judge: str, only: Collection[str] | None = None) -> dict[str | None, list[str]]:
    """The re-judge logs in ``out_dir`` of ``judge`` (its model name), by the judge of the answers they re-judged
    (None: a log made before re-judge logs named it); ``only``: of these log paths (one command's: a re-judge of
    other instances into the same directory, ``--limit 3`` then ``--limit 2``, is no part of its comparison)."""
    found: dict[str | None, list[str]] = {}
    for log in read_logs([out_dir], header_only=True).logs:
        grader = (log.eval.model_roles or {}).get("grader")
        if grader is None or str(grader.model) != judge or not task_of(log).startswith("rejudge_"):
            continue
        if only is not None and _path(log.location) not in only:
            continue
        original = (log.eval.metadata if isinstance(log.eval.metadata, dict) else {}).get(REJUDGED_JUDGE)
        found.setdefault(str(original) if original else None, []).append(_path(log.location))
    return found
