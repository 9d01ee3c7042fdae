"""Gold: the annotated answer, judged by the run's own judge (the upper bound under that judge); one seed, since
further seeds would repeat it exactly."""

from collections.abc import Mapping
from typing import Any

from ccpt.answers import parse_answer
from ccpt.methods.definition import Method, Plan, Range
from ccpt.spec import GOLD, TaskSpec


def gold_pairs(spec: TaskSpec, meta: Mapping[str, Any]) -> set[tuple[str, str]]:
    """The (concept, property) pairs the judge rates for the gold answer of one instance."""
    parsed = parse_answer(spec, spec.gold_answer(meta), meta.get("head"))
    concepts, prop = spec.judged_pairs(meta, parsed.value or "", parsed.modifier)
    return {(" ".join(c.split()), " ".join(prop.split())) for c in concepts}


def calls(method: Method, plan: Plan) -> tuple[Range, Range]:
    """No solver call; exactly one judge call per distinct gold pair (the judge memoises pairs)."""
    pairs = set().union(*(gold_pairs(plan.spec, meta) for meta in plan.instances)) if plan.spec.generative else set()
    return (0, 0), (len(pairs), len(pairs))


METHOD = Method(GOLD, "Gold (this judge)", solver="ccpt.eval.solvers:gold_solver", calls=calls, seeds=1)
