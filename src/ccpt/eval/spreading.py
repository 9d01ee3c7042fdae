"""Spreading Activation (paper §4.1, Algorithm 1) as an Inspect solver: sa_llm, sa_conceptnet, sa_both.

The algorithm itself is :mod:`ccpt.activation` (pure, tested against scripted models); this module gives
it a ``generate`` backed by the evaluated model and a concept graph, then asks for the final answer with
the SA template (Tables 12, 15) and the concept set C_T.

Choices (documented in docs/methods.md): the expansion — activation and filter prompts — runs at
temperature 0 through Inspect's cache with a per-run memo, so it is the same for every seed of an
instance and a concept shared by many instances is activated once; seeds vary the final answer, sampled
like every other method. ``answer_every_step`` also answers from every intermediate C_t (Table 6) without
re-running the expansion; ``_nofilter`` methods skip Filter (Table 7).
"""

from __future__ import annotations

from pathlib import Path

from inspect_ai.model import CachePolicy, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ccpt.activation import (
    Activator,
    SAConfig,
    Seeds,
    noun_phrase_completion_seeds,
    property_induction_seeds,
    spread_activation,
)
from ccpt.errors import CcptError
from ccpt.eval.solvers import STEP_REPLIES, TRAJECTORY, Sampling, build_messages, draw, finish
from ccpt.graph import ConceptGraph
from ccpt.spec import SA_TEMPLATE, Method, TaskSpec

# Without Filter the candidate set grows about tenfold per step; a seeded uniform cap keeps prompts bounded.
NOFILTER_DEFAULT_CAP = 100
# The expansion is greedy (the same for every seed of an instance). The as-run filter reasons before its list, so
# a protocol that shows a reasoning filter gets more room.
EXPANSION_CONFIG = GenerateConfig(temperature=0.0, max_tokens=256)
REASONING_EXPANSION_CONFIG = GenerateConfig(temperature=0.0, max_tokens=1024)


def _seeds(task: TaskSpec, meta: dict) -> Seeds:
    """C_0 and the objective: NPC looks for the modifier of the head, PI for what joins modifier and head."""
    if task.completes_phrase:
        return noun_phrase_completion_seeds(meta["head"], meta["property"])
    return property_induction_seeds(meta["modifier"], meta["head"])


def load_graph(conceptnet: str | None, data_dir: str | None) -> ConceptGraph:
    """The concept graph for SA: an index or cache file given by ``conceptnet``, else the default graph."""
    from ccpt.sources import resolve_graph  # lazy: may download the neighbourhood cache

    path = Path(conceptnet) if conceptnet else None
    if path is not None and not path.exists():
        raise CcptError(f"concept graph {path} does not exist", "build one with: ccpt conceptnet index DUMP")
    db = path if path is not None and path.suffix in (".sqlite", ".db") else None
    cache = path if path is not None and db is None else None
    return resolve_graph(db, cache, Path(data_dir) if data_dir else None)


@solver
def spreading_activation(
    task: TaskSpec,
    method: Method,
    *,
    system: bool = True,
    sampling: Sampling | None = None,
    max_iterations: int = 5,
    epsilon: float = 0.1,
    max_candidates: int | None = None,
    neighbours_k: int = 10,
    answer_every_step: bool = False,
    conceptnet: str | None = None,
    data_dir: str | None = None,
) -> Solver:
    """Expand C_0 with Algorithm 1, then answer with the SA template filled with C_T."""
    if not task.generative or not method.spreading:
        raise CcptError(f"spreading activation applies to the generative tasks only, not {task.name}/{method.name}")
    params = sampling or Sampling()
    sa = params.protocol.sa
    if max_candidates is None:
        max_candidates = sa.sample_candidates
    if max_candidates is None and not method.filter:
        max_candidates = NOFILTER_DEFAULT_CAP
    config = SAConfig(
        use_llm=method.uses_llm,
        use_graph=method.uses_graph,
        max_iterations=max_iterations,
        epsilon=float(epsilon),
        use_filter=method.filter,
        neighbours_k=neighbours_k,
        max_candidates=max_candidates,
        remove_seeds_each_step=sa.remove_seeds_each_step,
        filter_shown=sa.filter_shown,
        keep_invented=sa.keep_invented,
        frozen_convergence=sa.frozen_convergence,
        empty_fallback=sa.empty_fallback,
        prompt_variant=sa.prompt_variant,
    )
    expansion_config = REASONING_EXPANSION_CONFIG if sa.reasoning_filter else EXPANSION_CONFIG
    graph = load_graph(conceptnet, data_dir) if method.uses_graph else None
    activator = Activator()  # one per task run: shared by every instance and seed
    variant = params.protocol.prompt_variant

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        with_system = params.with_system(str(model), system)

        async def expand(prompt: str) -> str:
            output = await model.generate(
                [ChatMessageUser(content=prompt)],
                config=expansion_config,
                cache=CachePolicy(expiry=None, per_epoch=False),
            )
            return output.completion

        trajectory = await spread_activation(
            _seeds(task, state.metadata), generate=expand, graph=graph, activator=activator, config=config
        )
        messages = build_messages(
            task, SA_TEMPLATE, state.metadata, with_system=with_system, concepts=list(trajectory.final), variant=variant
        )
        outputs = await draw(model, messages, params, state.epoch, 1)
        state = finish(state, messages, outputs)
        state.store.set(TRAJECTORY, trajectory.to_dict())
        if answer_every_step:
            steps = []
            for t in range(1, max_iterations + 1):
                concepts = trajectory.at(t)
                if concepts == trajectory.final:
                    steps.append((t, outputs[0].completion))  # C_t = C_T: the same answer, no new call
                    continue
                step_messages = build_messages(
                    task, SA_TEMPLATE, state.metadata, with_system=with_system, concepts=list(concepts), variant=variant
                )
                step_output = (await draw(model, step_messages, params, state.epoch, 1))[0]
                steps.append((t, step_output.completion))
            state.store.set(STEP_REPLIES, steps)
        return state

    return solve
