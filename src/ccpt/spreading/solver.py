"""Spreading Activation (paper §4.1, Algorithm 1) as an Inspect solver: sa_llm, sa_conceptnet, sa_both.

The algorithm is :mod:`ccpt.spreading.activation`; here it gets a ``generate`` backed by the evaluated model and a
concept graph, then the final answer is asked with the SA template and C_T. The expansion runs once per instance,
shared by its seeds (docs/methods.md); ``answer_every_step`` also answers from every C_t (Table 6).
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Awaitable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from inspect_ai.model import ChatMessage, ChatMessageUser, GenerateConfig, get_model
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ccpt.errors import CcptError
from ccpt.eval.inspect_compat import cache_policy
from ccpt.eval.solvers import STEP_REPLIES, TRAJECTORY, Sampling, build_messages, draw, finish, settings_config
from ccpt.graph import ConceptGraph
from ccpt.methods import Method
from ccpt.protocol import Protocol
from ccpt.spec import SA_TEMPLATE, TaskSpec
from ccpt.spreading.activation import (
    Activator,
    SAConfig,
    Seeds,
    Trajectory,
    noun_phrase_completion_seeds,
    property_induction_seeds,
    spread_activation,
)
from ccpt.spreading.as_run import AuthorsNeighbourCache, spread_activation_as_run

__layer__ = "eval"  # the Inspect solver of a core package (tests/test_layering.py)

if TYPE_CHECKING:
    from ccpt.schemas.run import TaskOptions

# Without Filter the candidate set grows about tenfold per step; a seeded uniform cap keeps prompts bounded.
NOFILTER_DEFAULT_CAP = 100
# ccpt's expansion is greedy (the same for every seed of an instance) and its replies are short JSON.
EXPANSION_CONFIG = GenerateConfig(temperature=0.0, max_tokens=256)


def _seeds(task: TaskSpec, meta: dict) -> Seeds:
    """C_0 and the objective: NPC looks for the modifier of the head, PI for what joins modifier and head."""
    if task.completes_phrase:
        return noun_phrase_completion_seeds(meta["head"], meta["property"])
    return property_induction_seeds(meta["modifier"], meta["head"])


def graph_file(conceptnet: str | None, data_dir: str | None, *, as_run: bool = False) -> Path:
    """The file :func:`load_graph` reads: ``conceptnet``, else (but as run) the built default index, else the
    dataset's neighbourhood cache."""
    from ccpt.graph import default_index_path
    from ccpt.io.sources import graph_cache_file  # lazy: may download the neighbourhood cache

    if conceptnet:
        if not (path := Path(conceptnet)).exists():
            raise CcptError(f"concept graph {path} does not exist", "build one with: ccpt conceptnet index DUMP")
        return path
    if not as_run and default_index_path().is_file():
        return default_index_path()
    return graph_cache_file(Path(data_dir) if data_dir else None)


def graph_sha256(conceptnet: str | None, data_dir: str | None, *, as_run: bool = False) -> str:
    """The SHA-256 of the graph file :func:`load_graph` reads: which graph a run expanded C_0 over is part of its
    identity (a built index and the neighbourhood cache give other numbers under the same arguments)."""
    path = graph_file(conceptnet, data_dir, as_run=as_run).resolve()
    found = path.stat()
    return _file_sha256(str(path), found.st_size, found.st_mtime_ns)


@functools.lru_cache(maxsize=8)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    """A file's SHA-256, hashed once per process while its size and modification time stay (an index is GBs)."""
    from ccpt.io.download import sha256_file

    return sha256_file(Path(path))


def load_graph(conceptnet: str | None, data_dir: str | None, *, as_run: bool = False) -> ConceptGraph:
    """The concept graph for SA: an index or cache file given by ``conceptnet``, else the default graph; ``as_run``:
    the graph as the authors' code read it, their neighbourhood cache file (a SQLite index is used as it is)."""
    from ccpt.graph import SqliteConceptGraph, default_index_path, open_graph

    path = graph_file(conceptnet, data_dir, as_run=as_run)
    if path.suffix in (".sqlite", ".db") or (not conceptnet and path == default_index_path()):
        return SqliteConceptGraph(path)
    return AuthorsNeighbourCache.load(path) if as_run else open_graph(path)


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
    answer_every_step: bool = False,
    conceptnet: str | None = None,
    data_dir: str | None = None,
) -> Solver:
    """Expand C_0 with Algorithm 1, then answer with the SA template filled with C_T."""
    if not task.generative or not method.spreading:
        raise CcptError(f"spreading activation applies to the generative tasks only, not {task.name}/{method.name}")
    params = sampling or Sampling()
    sa = params.protocol.sa
    if max_candidates is None and not method.filter and not sa.as_run:
        max_candidates = NOFILTER_DEFAULT_CAP
    # As run, the candidates of a step are a random sample of 10: ``max_candidates`` changes that size.
    sample_size = {"sample_size": max_candidates} if sa.as_run and max_candidates else {}
    config = SAConfig(
        use_llm=method.uses_llm,
        use_graph=method.uses_graph,
        max_iterations=max_iterations,
        epsilon=float(epsilon),
        use_filter=method.filter,
        max_candidates=max_candidates,
        seed=params.seed,
        prompt_variant=sa.prompt_variant,
        as_run=sa.as_run,
        **sample_size,
    )
    if sa.as_run:
        from ccpt.answers import spacy_pipeline

        spacy_pipeline()  # the as-run stop test needs spaCy: one line now, not a failure per sample later
    # As run, the open models' runs had both sources for every method (CallSettings.sa_union): the graph is loaded
    # when a model that needs it first asks.
    graph_of = functools.cache(lambda: load_graph(conceptnet, data_dir, as_run=sa.as_run))
    graph = graph_of() if method.uses_graph else None
    activator = Activator()  # one per task run: shared by every instance and seed
    # One expansion per instance for the task run, awaited by all its seeds (a failed one is not kept).
    trajectories: dict[str, asyncio.Future[Trajectory]] = {}
    variant = params.protocol.prompt_variant

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        with_system = params.with_system(str(model), system)
        settings = params.protocol.call_settings(str(model))
        # As run, the provider's own settings; never a system prompt (the authors sent the user turn alone).
        expansion_config = settings_config(settings) if sa.provider_sampling else EXPANSION_CONFIG
        run_config, run_graph = config, graph
        if sa.as_run and settings.sa_union:
            run_config, run_graph = replace(config, use_llm=True, use_graph=True), graph_of()
        elif sa.as_run and config.use_llm and not config.use_graph:
            # GPT-4o's LLM-only runs (an earlier code version): the filter saw the step's whole sample.
            run_config = replace(config, view_of_sample=True, filter_view=config.sample_size)

        async def expand(prompt: str) -> str:
            output = await model.generate(
                [ChatMessageUser(content=prompt)],
                config=expansion_config,
                cache=cache_policy(model, per_epoch=False),
            )
            return output.completion

        def compute() -> Awaitable[Trajectory]:
            seeds = _seeds(task, state.metadata)
            run = spread_activation_as_run if config.as_run else spread_activation
            return run(seeds, generate=expand, graph=run_graph, activator=activator, config=run_config)

        instance = str(state.metadata["instance"])
        running = trajectories.get(instance)
        if running is None or (running.done() and (running.cancelled() or running.exception() is not None)):
            running = trajectories[instance] = asyncio.ensure_future(compute())
        trajectory = await asyncio.shield(running)

        def answer_messages(concepts: Iterable[str]) -> list[ChatMessage]:
            return build_messages(
                task, SA_TEMPLATE, state.metadata, with_system=with_system, concepts=list(concepts), variant=variant
            )

        messages = answer_messages(trajectory.final)
        outputs = await draw(model, messages, params, state.epoch, 1)
        state = finish(state, messages, outputs)
        state.store.set(TRAJECTORY, trajectory.to_dict())
        if answer_every_step:
            steps = []
            for t in range(1, max_iterations + 1):
                concepts = trajectory.at(t)
                same = concepts == trajectory.final  # C_t = C_T: the same answer, no new call
                step = outputs if same else await draw(model, answer_messages(concepts), params, state.epoch, 1)
                steps.append((t, step[0].completion))
            state.store.set(STEP_REPLIES, steps)
        return state

    return solve


def sa_solver(spec: TaskSpec, method: Method, options: TaskOptions, protocol: Protocol) -> Solver:
    """The solver factory of the registered spreading-activation methods (ccpt.methods.spreading)."""
    return spreading_activation(
        spec,
        method,
        system=options.system_prompt,
        sampling=Sampling(seed=options.seed, protocol=protocol),
        max_iterations=options.sa_max_iterations,
        epsilon=options.sa_epsilon,
        answer_every_step=options.sa_answer_every_step,
        max_candidates=options.sa_max_candidates,
        conceptnet=options.conceptnet,
        data_dir=options.data_dir,
    )
