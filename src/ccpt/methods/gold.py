"""Gold: the annotated answer, judged by the run's own judge (the upper bound under that judge); one seed, since
further seeds would repeat it exactly."""

from ccpt.answers import parse_answer
from ccpt.methods.definition import Method, Plan, Range
from ccpt.spec import GOLD


def calls(method: Method, plan: Plan) -> tuple[Range, Range]:
    """No solver call; exactly one judge call per distinct (concept, property) pair the judge rates for the gold
    answers (the judge memoises pairs)."""
    pairs: set[tuple[str, str]] = set()
    for meta in plan.instances if plan.spec.generative else ():
        parsed = parse_answer(plan.spec, plan.spec.gold_answer(meta), meta.get("head"))
        concepts, prop = plan.spec.judged_pairs(meta, parsed.value or "", parsed.modifier)
        pairs |= {(" ".join(c.split()), " ".join(prop.split())) for c in concepts}
    return (0, 0), (len(pairs), len(pairs))


METHOD = Method(GOLD, "Gold (this judge)", solver="ccpt.eval.solvers:gold_solver", calls=calls, seeds=1)
