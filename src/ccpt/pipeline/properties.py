"""Stage 3 (paper §3.2 Step 2): extract properties of each combination with an LLM, then filter them for
plausibility.

Each distinct combination (first sentence it was found in) gets one call asking for ``count`` (paper: 10)
properties in the context of its sentence. Every (combination, property) pair is then scored by the
plausibility filter on the statement "N is P" and marked plausible when the score reaches ``threshold``
(paper: VERA ≥ 0.7). Rows that could not be scored keep ``plausibility = null`` and are counted; nothing is
dropped silently. Inspect caches every call, so rerunning an interrupted stage repeats no call.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.pipeline.llm import JsonCaller, LLMOptions, as_string_list
from ccpt.pipeline.manifest import StageResult, StageSpec, read_jsonl, run_stage, write_jsonl
from ccpt.pipeline.mining import COMBINATIONS
from ccpt.pipeline.plausibility import VERA_THRESHOLD, PlausibilityScorer, make_scorer, statement
from ccpt.prompts import render_template

PROPERTIES = "properties.jsonl"
PROPERTIES_PER_COMBINATION = 10


@dataclass(frozen=True)
class PlausibilityOptions:
    """Which plausibility backend and threshold (paper: VERA-T5-XXL, 0.7)."""

    backend: str = "model"
    threshold: float = VERA_THRESHOLD
    vera_weights: str | None = None
    device: str | None = None

    def build(self, llm: LLMOptions, caller: JsonCaller) -> PlausibilityScorer:
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


async def _extract(
    combos: list[dict[str, Any]], llm: LLMOptions, plaus: PlausibilityOptions, count: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    caller = JsonCaller(llm)
    scorer = plaus.build(llm, caller)

    async def one(combo: dict[str, Any]) -> list[dict[str, Any]]:
        prompt = render_template(
            "pipeline_properties", combination=combo["combination"], sentence=combo["sentence"], count=str(count)
        )
        reply = await caller.ask(prompt)
        props = as_string_list(reply.obj.get("properties"), count) if reply.obj is not None else []
        if reply.obj is not None and not props:
            caller.failures["no_properties_in_reply"] += 1
        return [{**combo, "property": p, "rank": i} for i, p in enumerate(props)]

    nested = await asyncio.gather(*(one(c) for c in combos))
    rows = [r for group in nested for r in group]
    await score_rows(rows, "combination", scorer, plaus.threshold)
    counts = {
        "combinations": len(combos),
        "combinations_without_properties": sum(1 for g in nested if not g),
        "properties": len(rows),
        "plausible": sum(1 for r in rows if r["plausible"]),
        "unscored": sum(1 for r in rows if r["plausibility"] is None),
        "model_calls": caller.calls,
        "failures": dict(caller.failures),
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
    force: bool = False,
) -> StageResult:
    """Stage 3: ``combinations.jsonl`` → ``properties.jsonl`` (one row per combination × property)."""
    source, out = workdir / COMBINATIONS, workdir / PROPERTIES
    params = {"llm": llm.describe(), "plausibility": plausibility.describe(), "count": count, "limit": limit}
    spec = StageSpec("properties", workdir, (source,), (out,), params)

    def work() -> dict[str, Any]:
        combos: dict[tuple[str, str, str], dict[str, Any]] = {}
        for row in read_jsonl(source):
            combos.setdefault(combination_key(row), row)  # the first sentence a combination occurs in
        selected = list(combos.values())[:limit] if limit else list(combos.values())
        rows, counts = asyncio.run(_extract(selected, llm, plausibility, count))
        write_jsonl(out, rows)
        return counts

    return run_stage(spec, work, force=force)
