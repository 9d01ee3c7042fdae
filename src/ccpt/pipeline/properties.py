"""Stage 3 (paper §3.2 Step 2): properties of each combination from an LLM, filtered for plausibility.

One call per distinct combination asks for ``count`` properties; each "N is P" is scored and plausible from
``threshold``. Unscored rows keep ``plausibility = null`` and are counted, never dropped.
"""

from __future__ import annotations

import asyncio
import functools
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.answers import extract_json_object
from ccpt.pipeline.batch import REPLIES, BatchOptions, request_id, run_batch
from ccpt.pipeline.llm import JsonCaller, LLMOptions, as_string_list
from ccpt.pipeline.manifest import StageResult, StageSpec, read_jsonl, run_stage, write_jsonl
from ccpt.pipeline.mining import COMBINATIONS
from ccpt.pipeline.plausibility import VERA_THRESHOLD, PlausibilityScorer, make_scorer, statement
from ccpt.pipeline.progress import gather_with_progress
from ccpt.prompts import render_template

PROPERTIES = "properties.jsonl"
PROPERTIES_PER_COMBINATION = 10
Replies = list[dict[str, Any] | None]  # one parsed JSON reply per prompt; None: failed or unparsable
BatchReplies = tuple[Replies, Counter[str], int]  # replies, failures, requests sent


@dataclass(frozen=True)
class PlausibilityOptions:
    """Which plausibility backend and threshold (paper: VERA-T5-XXL, 0.7)."""

    backend: str = "model"
    threshold: float = VERA_THRESHOLD
    vera_weights: str | None = None
    device: str | None = None

    def build(self, llm: LLMOptions, caller: JsonCaller | None = None) -> PlausibilityScorer:
        return make_scorer(self.backend, options=llm, caller=caller, vera_weights=self.vera_weights, device=self.device)

    def describe(self) -> dict[str, Any]:
        return {"backend": self.backend, "threshold": self.threshold, "vera_weights": self.vera_weights}


def combination_key(row: dict[str, Any]) -> tuple[str, str, str]:
    """Identity of a combination across sentences: (lower-cased phrase, head, modifier)."""
    return (row["combination"].lower(), row["head"], row["modifier"])


def scorer_fields(scorer: PlausibilityScorer) -> dict[str, Any]:
    """The columns that label every scored row with the scorer that produced it."""
    return {"scorer": scorer.name, "scorer_calibrated": scorer.calibrated, "scorer_note": scorer.note}


async def score_rows(rows: list[dict[str, Any]], subject: str, scorer: PlausibilityScorer, threshold: float) -> None:
    """Add ``plausibility`` and ``plausible`` to each row, scoring "<row[subject]> is <row['property']>"."""
    scores = await scorer.score([statement(r[subject], r["property"]) for r in rows])
    for row, score in zip(rows, scores, strict=True):
        row["plausibility"] = score
        row["plausible"] = None if score is None else score >= threshold
        row.update(scorer_fields(scorer))


def _batch_replies(prompts: list[str], llm: LLMOptions, batch: BatchOptions, replies_path: Path) -> BatchReplies:
    ids = [request_id(p, llm, batch) for p in prompts]
    replies, failures, sent = run_batch(dict(zip(ids, prompts, strict=True)), llm, batch, replies_path)
    objs: Replies = [extract_json_object(replies[rid]) if rid in replies else None for rid in ids]
    unparsable = sum(1 for rid, obj in zip(ids, objs, strict=True) if rid in replies and obj is None)
    if unparsable:
        failures["unparsable_reply"] += unparsable  # counted as on the Inspect path
    return objs, failures, sent


async def _extract(
    combos: list[dict[str, Any]],
    prompts: list[str],
    llm: LLMOptions,
    plaus: PlausibilityOptions,
    count: int,
    batch_replies: BatchReplies | None,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    caller: JsonCaller | None = None
    if batch_replies is None:
        caller = JsonCaller(llm)
        replies = await gather_with_progress("properties: combinations", (caller.ask(p) for p in prompts))
        objs = [r.obj for r in replies]
        failures, calls = caller.failures, caller.calls
    else:
        objs, failures, calls = batch_replies

    nested: list[list[dict[str, Any]]] = []
    for combo, obj in zip(combos, objs, strict=True):
        props = as_string_list(obj.get("properties"), count) if obj is not None else []
        if obj is not None and not props:
            failures["no_properties_in_reply"] += 1
        nested.append([{**combo, "property": p, "rank": i} for i, p in enumerate(props)])
    rows = [r for group in nested for r in group]
    scorer = plaus.build(llm, caller)
    await score_rows(rows, "combination", scorer, plaus.threshold)
    judge = getattr(scorer, "caller", None)
    if judge is not None and judge is not caller:  # the plausibility model's own failures (batch mode)
        failures.update(judge.failures)
    counts = {
        "combinations": len(combos),
        "combinations_without_properties": sum(1 for g in nested if not g),
        "properties": len(rows),
        "plausible": sum(1 for r in rows if r["plausible"]),
        "unscored": sum(1 for r in rows if r["plausibility"] is None),
        "model_calls" if batch_replies is None else "batch_requests": calls,
        "failures": dict(failures),
        **scorer_fields(scorer),
    }
    return rows, counts


def extract_properties(
    workdir: Path,
    llm: LLMOptions,
    *,
    plausibility: PlausibilityOptions = PlausibilityOptions(),
    count: int = PROPERTIES_PER_COMBINATION,
    limit: int | None = None,
    batch: BatchOptions | None = None,
    force: bool = False,
) -> StageResult:
    """Stage 3: ``combinations.jsonl`` → ``properties.jsonl``; ``batch``: calls as a Ray Data batch job."""
    source, out = workdir / COMBINATIONS, workdir / PROPERTIES
    params = {
        "llm": llm.describe(),
        "plausibility": plausibility.describe(),
        "count": count,
        "limit": limit,
        # Only when set: manifests written before batch jobs existed stay valid.
        **({"batch": batch.describe()} if batch else {}),
    }
    spec = StageSpec("properties", workdir, (source,), (out,), params)

    def work() -> dict[str, Any]:
        combos: dict[tuple[str, str, str], dict[str, Any]] = {}
        for row in read_jsonl(source):
            combos.setdefault(combination_key(row), row)  # the first sentence a combination occurs in
        selected = list(combos.values())[:limit] if limit else list(combos.values())
        render = functools.partial(render_template, "pipeline_properties", count=str(count))
        prompts = [render(combination=c["combination"], sentence=c["sentence"]) for c in selected]
        # Ray runs from the main thread: its local cluster dies with the thread that started it.
        replies = _batch_replies(prompts, llm, batch, workdir / REPLIES) if batch else None
        rows, counts = asyncio.run(_extract(selected, prompts, llm, plausibility, count, replies))
        write_jsonl(out, rows)
        return counts

    return run_stage(spec, work, force=force)
