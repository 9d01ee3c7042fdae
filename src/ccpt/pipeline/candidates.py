"""Stage 4 (paper §3.2 Step 2): select emergent, canceled and component candidates for annotation.

Thresholds are :class:`CandidateParams` (the paper's by default; docs/pipeline.md). Sampling uses
``random.Random(seed)`` over rows in file order, so a rerun selects the same candidates.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from ccpt.graph import ConceptGraph, SqliteConceptGraph
from ccpt.pipeline.llm import JsonCaller, LLMOptions, as_bool, as_string_list
from ccpt.pipeline.manifest import StageResult, StageSpec, read_jsonl, run_stage, write_jsonl
from ccpt.pipeline.progress import gather_with_progress
from ccpt.pipeline.properties import PROPERTIES, PlausibilityOptions, combination_key, score_rows, scorer_fields
from ccpt.prompts import render_template
from ccpt.spec import CANCELED, COMPONENT, EMERGENT

CANDIDATES = "candidates.jsonl"
# The columns of a noun phrase's row that its canceled candidates keep.
_PHRASE_FIELDS = (
    *("doc_id", "start", "end", "sentence", "marker", "combination", "head", "modifier"),
    *("head_text", "modifier_text", "relation"),
)


@dataclass(frozen=True)
class CandidateParams:
    """Documented thresholds of stage 4 (defaults = the paper's)."""

    per_phrase: int = 5
    component_sample: int = 10_000
    canceled_phrases: int = 2_000
    head_properties: int = 10
    seed: int = 0


def cap_per_phrase(rows: list[dict[str, Any]], limit: int) -> list[dict[str, Any]]:
    """Keep at most ``limit`` rows per noun phrase, in order."""
    seen: Counter[tuple[str, str, str]] = Counter()
    kept = []
    for row in rows:
        key = combination_key(row)
        if seen[key] < limit:
            seen[key] += 1
            kept.append(row)
    return kept


async def _answered_no(
    rows: list[dict[str, Any]], caller: JsonCaller, template: str, keys: tuple[str, ...], unreadable: str
) -> list[dict[str, Any]]:
    """The rows whose LLM reply answers no to every yes/no question ``keys`` (unreadable answers counted)."""

    async def check(row: dict[str, Any]) -> bool:
        fields = ("combination", "head", "modifier", "property")
        reply = await caller.ask(render_template(template, **{field: row[field] for field in fields}))
        if reply.obj is None:
            return False
        answers = [as_bool(reply.obj.get(key)) for key in keys]
        if None in answers:
            caller.failures[unreadable] += 1
            return False
        return not any(answers)

    verdicts = await asyncio.gather(*(check(r) for r in rows))
    return [r for r, no in zip(rows, verdicts, strict=True) if no]


async def _select(
    rows: list[dict[str, Any]],
    graph: ConceptGraph,
    llm: LLMOptions,
    plaus: PlausibilityOptions,
    params: CandidateParams,
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    caller = JsonCaller(llm)
    scorer = plaus.build(llm, caller)
    rng = random.Random(params.seed)
    plausible = [r for r in rows if r.get("plausible")]
    keys = ("head_has_property", "modifier_has_property")  # emergent: neither H nor M has P
    chosen = await _answered_no(plausible, caller, "pipeline_emergent_check", keys, "emergent_check_unreadable")
    emergent = cap_per_phrase(
        [{**r, "type": EMERGENT, "property_source": "combination"} for r in chosen], params.per_phrase
    )
    taken = {(combination_key(r), r["property"]) for r in emergent}
    pool = [r for r in plausible if (combination_key(r), r["property"]) not in taken]
    component = [
        {**r, "type": COMPONENT, "property_source": None}
        for r in rng.sample(pool, min(params.component_sample, len(pool)))
    ]
    phrases = list({combination_key(r): r for r in rows}.values())
    sampled = rng.sample(phrases, min(params.canceled_phrases, len(phrases)))

    async def head_rows(phrase: dict[str, Any]) -> list[dict[str, Any]]:
        """A canceled candidate per property of the phrase's head H (ConceptNet's, then the LLM's)."""
        base = {k: phrase[k] for k in _PHRASE_FIELDS if k in phrase}
        from_graph = list(graph.has_property(phrase["head"], params.head_properties))
        reply = await caller.ask(
            render_template("pipeline_head_properties", concept=phrase["head"], count=str(params.head_properties))
        )
        from_llm = as_string_list(reply.obj.get("properties"), params.head_properties) if reply.obj else []
        # property → its first source: ConceptNet, else the LLM
        sources = dict.fromkeys(from_graph, "conceptnet") | {p: "llm" for p in from_llm if p not in from_graph}
        return [{**base, "property": p, "property_source": source} for p, source in sources.items()]

    nested = await gather_with_progress("candidates: noun phrases", (head_rows(p) for p in sampled))
    head_pairs = [r for group in nested for r in group]
    await score_rows(head_pairs, "head", scorer, plaus.threshold)
    keys = ("combination_has_property",)  # canceled: N no longer has P
    chosen = [r for r in head_pairs if r["plausible"]]
    chosen = await _answered_no(chosen, caller, "pipeline_canceled_check", keys, "canceled_check_unreadable")
    canceled = cap_per_phrase([{**r, "type": CANCELED} for r in chosen], params.per_phrase)
    counts = {
        "input_pairs": len(rows),
        "plausible_pairs": len(plausible),
        "unscored_pairs_excluded": sum(1 for r in rows if r.get("plausibility") is None),
        EMERGENT: len(emergent),
        COMPONENT: len(component),
        "canceled_phrases_sampled": len(sampled),
        CANCELED: len(canceled),
        "model_calls": caller.calls,
        "failures": dict(caller.failures),
        **scorer_fields(scorer),
    }
    return [*emergent, *canceled, *component], counts


def select_candidates(
    workdir: Path,
    conceptnet: Path,
    llm: LLMOptions,
    *,
    plausibility: PlausibilityOptions = PlausibilityOptions(),  # noqa: B008 - frozen
    params: CandidateParams = CandidateParams(),
    force: bool = False,
) -> StageResult:
    """Stage 4: ``properties.jsonl`` → ``candidates.jsonl`` (rows with ``type`` emergent/canceled/component)."""
    source, out = workdir / PROPERTIES, workdir / CANDIDATES
    recorded = {"llm": llm.describe(), "plausibility": plausibility.describe(), **asdict(params)}
    spec = StageSpec("candidates", workdir, (source, Path(conceptnet)), (out,), recorded)

    def work() -> dict[str, Any]:
        with contextlib.closing(SqliteConceptGraph(conceptnet)) as graph:
            rows, counts = asyncio.run(_select(list(read_jsonl(source)), graph, llm, plausibility, params))
        write_jsonl(out, rows)
        return counts

    return run_stage(spec, work, force=force)
