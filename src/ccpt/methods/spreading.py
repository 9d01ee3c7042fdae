"""Spreading Activation (paper §4.1, Algorithm 1): sa_llm, sa_conceptnet and sa_both differ in their source;
``<name>_nofilter`` is the Filter ablation (Table 7)."""

from ccpt.methods.definition import Method, Plan, Range, answer_calls
from ccpt.protocol import get_protocol
from ccpt.spec import SA_BOTH, SA_CONCEPTNET, SA_LLM, SA_SOURCES, SA_TEMPLATE

NEIGHBOURS = 10  # activations per concept asked of the LLM at most (SAConfig.neighbours_k)
SEED_CONCEPTS = 2  # |C_0|: the modifier and head (PI), the head and property (NPC)
DEFAULT_ITERATIONS = 5


def calls(method: Method, plan: Plan) -> tuple[Range, Range]:
    """The answers' calls plus the expansion: one to ``sa_max_iterations`` steps of activations and a filter
    call; with ``sa_answer_every_step`` one more answer per step and seed (judged too)."""
    (answers, _), (judge_low, judge_high) = answer_calls(method, plan)
    instances = len(plan.instances)
    steps = int(plan.options.get("sa_max_iterations", DEFAULT_ITERATIONS))
    # As run, an open model's every method asks it for activations too (CallSettings.sa_union).
    union = get_protocol(plan.protocol).call_settings(plan.model).sa_union if plan.model else False
    low = instances * (SEED_CONCEPTS * int(method.uses_llm or union) + int(method.filter))
    high = instances * steps * (NEIGHBOURS * int(method.uses_llm or union) + int(method.filter))
    every = instances * plan.seeds * steps if plan.options.get("sa_answer_every_step") else 0
    return (answers + low, answers + high + every), (judge_low, judge_high + 3 * every)


METHODS = tuple(
    Method(name, label, "ccpt.spreading.solver:sa_solver", template=SA_TEMPLATE, calls=calls, source=SA_SOURCES[name])
    for name, label in ((SA_LLM, "S.A.w/ LLM"), (SA_CONCEPTNET, "S.A.w/ ConceptNet"), (SA_BOTH, "S.A.w/ Both"))
)
