"""Spreading Activation as the authors' code ran it for the paper's tables: the ``as-run`` protocol.

:func:`spread_activation_as_run` replaces :func:`ccpt.spreading.activation.spread_activation`: C_0 stays in the
set, each step shows the filter its first 5 candidates (without the filter: a random sample of at most 10 is the
next set), whose first bracketed list (never evaluated) is the next set, and the stop test compares the set's
lemmas with the set itself. docs/methods.md lists each choice and its evidence.
"""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable, Sequence
from pathlib import Path

from ccpt.answers import first_list_literal, spacy_lemma
from ccpt.graph import ConceptGraph, NeighbourCache, read_neighbour_json
from ccpt.spreading.activation import (
    Activator,
    Generate,
    SAConfig,
    Seeds,
    Step,
    Trajectory,
    activate,
    check_sources,
    filter_prompt,
    jaccard_distance,
    record_step,
)


class AuthorsNeighbourCache(NeighbourCache):
    """The authors' ConceptNet neighbourhood cache as their code read it: exact spelling, labels as stored
    (uncleaned, unlike :class:`ccpt.graph.NeighbourCache`), strongest first."""

    @classmethod
    def load(cls, path: str | Path) -> AuthorsNeighbourCache:
        """Read a ``conceptnet_adjacent.json``-style file; one DataError line if it is not one."""
        table = {key: tuple(labels) for key, labels in read_neighbour_json(Path(path)).items()}
        return cls(table, name=f"conceptnet-cache (as stored):{Path(path).name}")

    def neighbours(self, concept: str, k: int = 50) -> tuple[str, ...]:
        """The first ``k`` stored labels of ``concept`` (exact key); () if it has none."""
        return self._table.get(concept, ())[:k]


def as_run_delta(concepts: Sequence[str], lemma: Callable[[str], str]) -> float:
    """The authors' stop test: 1 − Jaccard between the set's lemmas and the set itself (0 for an empty set)."""
    raw = set(concepts)
    return jaccard_distance(raw, {lemma(c) for c in raw}, key=str)


async def spread_activation_as_run(
    seeds: Seeds,
    *,
    generate: Generate | None,
    graph: ConceptGraph | None,
    activator: Activator,
    config: SAConfig,
    lemma: Callable[[str], str] | None = None,
) -> Trajectory:
    """Spreading Activation as the authors' code ran it, seeded; ``lemma``: the stop test's lemmatiser."""
    check_sources(config, generate, graph)
    lemma = lemma or spacy_lemma
    rng = random.Random(f"as-run|{config.seed}|{'|'.join(seeds.as_run_c0)}")
    trajectory = Trajectory(seeds, as_run=True, final_with_seeds=config.use_filter)
    current: tuple[str, ...] = seeds.as_run_c0
    for t in range(1, config.max_iterations + 1):
        results = await asyncio.gather(*(activate(c, generate, graph, activator, config) for c in current))
        activations = [a for per_concept in results for a in per_concept]
        activated = [c for a in activations for c in a.concepts]
        candidates = [*current, *activated]  # duplicates kept: a concept reached twice is twice as likely
        if config.use_filter and not config.view_of_sample:
            # The filter sees the first five candidates (the set, then each concept's activations in order): in
            # the stored runs every ConceptNet neighbour of a step-1 set is among the head's first three.
            sample = candidates[: config.filter_view]
        else:  # a random sample of at most 10, in random order
            sample = rng.sample(candidates, min(config.sample_size, len(candidates)))
        filter_failed, invented, view = False, 0, []
        if config.use_filter:
            first = sample[: config.filter_view]
            view = rng.sample(first, len(first))  # shown in random order
            kept: tuple[str, ...] = ()
            if view:
                assert generate is not None
                # The authors' filter: its reply's first bracketed list is the next set, as written.
                reply = await generate(filter_prompt(view, seeds, config.prompt_variant, as_run=True))
                items = first_list_literal(reply)
                filter_failed = items is None
                kept = tuple(dict.fromkeys(items or ()))
                invented = sum(item not in view for item in kept)
        else:
            kept = tuple(dict.fromkeys(sample))
        step = Step(
            t=t,
            concepts=kept,
            delta=as_run_delta(kept, lemma),
            n_sources=len(current),
            n_activated=len(set(activated) - set(current)),
            n_candidates=len(sample),
            n_capped=len(candidates) - len(sample),
            activation_failures=sum(a.failed for a in activations),
            filter_failed=filter_failed,
            filter_invented=invented,
            n_shown=len(view),
        )
        current = kept
        if record_step(trajectory, step, config.epsilon):
            break
    return trajectory
