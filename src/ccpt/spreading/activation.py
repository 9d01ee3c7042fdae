"""Spreading Activation (paper §4.1, Algorithm 1), written against ``async generate(prompt) -> str``.

Each step: C_{t+1} ← Filter(C_t ∪ Activate(C_t ∪ C_0), C_0) \\ C_0; Δ = Jaccard distance of C_t and C_{t+1} on
lemmatised forms; stop when Δ < ε or after T steps. docs/methods.md lists the choices made where the paper is open
(each has a regression test); the ``as-run`` protocol runs :func:`ccpt.spreading.as_run.spread_activation_as_run`.
"""

from __future__ import annotations

import asyncio
import json
import random
import re
import string
import tomllib
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from functools import cache, lru_cache, partial
from importlib import resources
from typing import Any, Literal

from ccpt.answers import extract_json_object, first_list_literal
from ccpt.graph import ConceptGraph, normalise_label
from ccpt.prompts import render_template, variant_name

Generate = Callable[[str], Awaitable[str]]
Source = Literal["llm", "graph"]
StopReason = Literal["converged", "max_iterations", "failed"]
SATask = Literal["property_induction", "noun_phrase_completion"]

_MAX_LABEL_CHARS = 64  # longer "concepts" in model output are sentences, not concepts
_WORD = re.compile(r"[a-z]+")


@dataclass(frozen=True)
class SAConfig:
    """Parameters of Algorithm 1 (paper defaults: T = 5, ε = 0.1). ``max_candidates``: a seeded uniform sample
    cap (None: no cap). ``as_run``: the authors' algorithm, with ``sample_size``, ``filter_view`` and
    ``graph_neighbours`` in place of ``neighbours_k`` and ``max_candidates``; ``view_of_sample``: the filter is
    shown the first ``filter_view`` of the step's random sample, not of the candidates (the authors' earlier code,
    GPT-4o's LLM-only runs)."""

    use_llm: bool
    use_graph: bool
    max_iterations: int = 5
    epsilon: float = 0.1
    use_filter: bool = True
    neighbours_k: int = 10
    max_candidates: int | None = None
    seed: int = 0
    prompt_variant: str | None = None
    as_run: bool = False
    sample_size: int = 10
    filter_view: int = 5
    graph_neighbours: int = 50
    view_of_sample: bool = False

    def __post_init__(self) -> None:
        if not (self.use_llm or self.use_graph):
            raise ValueError("SAConfig needs use_llm or use_graph (Activate would return nothing)")
        if self.max_iterations < 1 or self.neighbours_k < 1:
            raise ValueError("max_iterations and neighbours_k must be at least 1")
        if self.max_candidates is not None and self.max_candidates < 1:
            raise ValueError("max_candidates must be at least 1 (or None for no cap)")
        if min(self.sample_size, self.filter_view, self.graph_neighbours) < 1:
            raise ValueError("sample_size, filter_view and graph_neighbours must be at least 1")

    @property
    def sources(self) -> tuple[Source, ...]:
        """The activation sources this configuration uses, in merge order (as run: the graph's neighbours first, as
        the authors' cache held them; docs/methods.md, "Spreading Activation as run", point 2)."""
        sources: tuple[Source, ...] = (("llm",) if self.use_llm else ()) + (("graph",) if self.use_graph else ())
        return sources[::-1] if self.as_run else sources


@dataclass(frozen=True)
class Seeds:
    """C_0 and the objective O of one instance; ``authors_c0`` / ``authors_pair``: C_0 and O in the authors' order
    (head first; O = (head, modifier) for PI, (property, head) for NPC), empty = same as ``concepts``."""

    concepts: tuple[str, ...]
    objective: str
    authors_c0: tuple[str, ...] = ()
    authors_pair: tuple[str, ...] = ()

    @property
    def as_run_c0(self) -> tuple[str, ...]:
        """C_0 in the authors' order."""
        return self.authors_c0 or self.concepts

    @property
    def as_run_pair(self) -> tuple[str, ...]:
        """O as the authors' filter was shown it."""
        return self.authors_pair or self.concepts


def property_induction_seeds(modifier: str, head: str) -> Seeds:
    """C_0 = {modifier, head} with O = "find relationships between 'M' and 'H'" (paper §4.1)."""
    objective = _objective("property_induction").substitute(modifier=modifier, head=head)
    return Seeds((modifier, head), objective, (head, modifier), (head, modifier))


def noun_phrase_completion_seeds(head: str, property: str) -> Seeds:
    """C_0 = {head, property}: the modifier is what the model has to find."""
    objective = _objective("noun_phrase_completion").substitute(head=head, property=property)
    return Seeds((head, property), objective, (head, property), (property, head))


@dataclass(frozen=True)
class Step:
    """One expansion: C_t → C_{t+1} (``t`` is the index of the set produced)."""

    t: int
    concepts: tuple[str, ...]  # C_t after Filter (ccpt: and C_0 removal; as run: as the filter wrote it)
    delta: float  # Δ between C_{t-1} and C_t (as run: between C_t's lemmas and C_t itself)
    n_sources: int  # concepts activated (C_{t-1} ∪ C_0; as run: C_{t-1})
    n_activated: int  # new concepts activation added to C_{t-1}
    n_candidates: int  # candidates given to Filter (after the cap; as run: its view, or without it the sample)
    n_capped: int  # candidates dropped by max_candidates (as run: not in the view or the sample)
    activation_failures: int  # LLM activations used in this step whose output was unparsable
    filter_failed: bool  # Filter output unparsable: treated as an empty list
    filter_invented: int  # Filter output items that were not candidates (ignored by ccpt; kept as run)
    n_shown: int = 0  # candidates shown to Filter (all of them in ccpt's algorithm)

    @property
    def failed(self) -> bool:
        """An activation or the filter reply of this step could not be read."""
        return self.activation_failures > 0 or self.filter_failed


@dataclass
class Trajectory:
    """C_0 … C_T with Δ per step and why the run stopped; stored with each sample. ``as_run``: the authors' sets
    (seed words kept); ``final_with_seeds``: the final answer sees C_T itself, else C_T − C_0."""

    seeds: Seeds
    steps: list[Step] = field(default_factory=list)
    stop_reason: StopReason = "max_iterations"
    as_run: bool = False
    final_with_seeds: bool = False

    @property
    def final(self) -> tuple[str, ...]:
        """C_T as the final answer sees it."""
        last = self.steps[-1].concepts if self.steps else ()
        return self._without_seeds(last) if self.as_run and not self.final_with_seeds else last

    def at(self, t: int) -> tuple[str, ...]:
        """C_t as an answer from step t sees it (Table 6; past the last step, C_T). As run: C_t − C_0, an empty C_t
        replaced by the last non-empty set before it."""
        if t < 0:
            raise ValueError(f"t must be >= 0, got {t}")
        if t == 0:
            return () if self.as_run else self.seeds.concepts
        upto = self.steps[:t]
        if not self.as_run:
            return upto[-1].concepts if upto else ()
        nonempty = [step.concepts for step in upto if step.concepts]
        return self._without_seeds(nonempty[-1]) if nonempty else ()

    def _without_seeds(self, concepts: tuple[str, ...]) -> tuple[str, ...]:
        return tuple(c for c in concepts if c not in set(self.seeds.as_run_c0))

    @property
    def activation_failures(self) -> int:
        """Unparsable LLM activations over all steps."""
        return sum(step.activation_failures for step in self.steps)

    @property
    def filter_failures(self) -> int:
        """Steps whose Filter output was unparsable."""
        return sum(step.filter_failed for step in self.steps)

    @property
    def failed_steps(self) -> int:
        """Steps with an unparsable activation or filter reply."""
        return sum(step.failed for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record for the sample's log metadata."""
        return {
            "seeds": list(self.seeds.as_run_c0 if self.as_run else self.seeds.concepts),
            "objective": list(self.seeds.as_run_pair) if self.as_run else self.seeds.objective,
            "stop_reason": self.stop_reason,
            "final": list(self.final),
            "activation_failures": self.activation_failures,
            "filter_failures": self.filter_failures,
            "failed_steps": self.failed_steps,
            "steps": [{**asdict(step), "concepts": list(step.concepts)} for step in self.steps],
        }


def concept_key(label: str) -> str:
    """Comparison form of a concept: lower case, single spaces, each word's noun lemma ("apples" → "apple"; only
    noun inflection, so "peel" stays distinct from "peeled")."""
    words = " ".join(label.replace("_", " ").lower().split())
    return _WORD.sub(lambda m: noun_lemma(m.group()), words)


@lru_cache(maxsize=1 << 16)
def noun_lemma(word: str) -> str:
    """lemminflect's noun lemma of one lower-case word ("apples" → "apple"), the word itself if it has none."""
    from lemminflect import getLemma  # on first use: see ccpt.answers._word_forms

    # Words under 3 letters are left alone: lemminflect maps "as" → "a" and "s" → "".
    return (getLemma(word, upos="NOUN")[0] or word) if len(word) >= 3 else word


def parse_concept_list(text: str) -> list[str] | None:
    """The concept list in a model answer: the last ``{"concepts": [...]}`` object, else the last bare JSON list;
    None when neither is found; non-string items are skipped. Never evaluates the text."""
    found: Any = (extract_json_object(text) or {}).get("concepts")
    if not isinstance(found, list):
        found = _last_json_list(text)
    return None if found is None else [item for item in found if isinstance(item, str)]


def _last_json_list(text: str) -> list[Any] | None:
    decoder = json.JSONDecoder()
    found: list[Any] | None = None
    position = 0
    while (start := text.find("[", position)) != -1:
        try:
            value, position = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if isinstance(value, list):
            found = value
    return found


def _clean(items: Iterable[str], limit: int | None = None) -> tuple[str, ...]:
    """Normalised, de-duplicated labels (same normalisation as the graph), at most ``limit``."""
    labels = (normalise_label(item.strip(" \t\n\"'.,;:")) for item in items)
    return tuple(dict.fromkeys(x for x in labels if x is not None and len(x) <= _MAX_LABEL_CHARS))[:limit]


@cache
def _objective(task: SATask) -> string.Template:
    text = resources.files("ccpt.prompts").joinpath("sa_objectives.toml").read_text(encoding="utf-8")
    return string.Template(tomllib.loads(text)[task])


def filter_prompt(candidates: Sequence[str], seeds: Seeds, variant: str | None = None, *, as_run: bool = False) -> str:
    """p_fil: the candidates, the seed concepts C_0 (as run: the pair O, in the authors' order, written as their
    prompt wrote it: quoted, a comma and no space) and O."""
    named = seeds.as_run_pair if as_run else seeds.concepts
    return render_template(
        variant_name("sa_filter", variant),
        seeds=("," if as_run else ", ").join(f'"{seed}"' for seed in named),
        objective=seeds.objective,
        candidates=json.dumps(list(candidates), ensure_ascii=False),
    )


@dataclass(frozen=True)
class Activation:
    """A_c from one source; ``failed`` when the model's answer held no parsable concept list."""

    concepts: tuple[str, ...]
    failed: bool = False


class Activator:
    """Per-run memo of activations keyed by (source, concept); concurrent requests share the in-flight call.
    ``calls`` / ``hits`` count computations and memo hits per source; ``memoise=False`` computes every request."""

    def __init__(self, *, memoise: bool = True) -> None:
        self.memoise = memoise
        self._memo: dict[tuple[Source, str], asyncio.Future[Activation]] = {}
        self.calls: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()

    async def get(self, source: Source, concept: str, compute: Callable[[], Awaitable[Activation]]) -> Activation:
        """The memoised activation of ``concept`` by ``source`` (an error reaches every waiter, is not memoised)."""
        key = (source, concept)
        if self.memoise and key in self._memo:
            self.hits[source] += 1
            return await asyncio.shield(self._memo[key])
        self.calls[source] += 1
        if not self.memoise:
            return await compute()
        future = self._memo[key] = asyncio.ensure_future(compute())
        future.add_done_callback(partial(self._forget_failure, key))
        return await asyncio.shield(future)

    def _forget_failure(self, key: tuple[Source, str], future: asyncio.Future[Activation]) -> None:
        """A failed or cancelled activation is not memoised (a later call computes again), whoever awaited it."""
        if future.cancelled() or future.exception() is not None:
            self._memo.pop(key, None)


async def activate(
    concept: str, generate: Generate | None, graph: ConceptGraph | None, activator: Activator, config: SAConfig
) -> list[Activation]:
    """Activate(c): one Activation per source used (ccpt: at most ``neighbours_k``, cleaned; as run: the model's
    first bracketed list and up to ``graph_neighbours`` graph neighbours, as written)."""

    async def from_llm() -> Activation:
        assert generate is not None
        template = variant_name("sa_activate", config.prompt_variant)
        reply = await generate(render_template(template, concept=concept, k=config.neighbours_k))
        items = first_list_literal(reply) if config.as_run else parse_concept_list(reply)
        if items is None:
            return Activation((), failed=True)
        return Activation(tuple(items) if config.as_run else _clean(items, limit=config.neighbours_k))

    async def from_graph() -> Activation:
        assert graph is not None
        return Activation(graph.neighbours(concept, config.graph_neighbours if config.as_run else config.neighbours_k))

    compute = {"llm": from_llm, "graph": from_graph}
    return [await activator.get(source, concept, compute[source]) for source in config.sources]


def jaccard_distance(before: Iterable[str], after: Iterable[str], key: Callable[[str], str] = concept_key) -> float:
    """Δ = 1 − |A ∩ B| / |A ∪ B| on the ``key`` of each label (its lemmatised form); 0 when both sets are empty."""
    a, b = {key(c) for c in before}, {key(c) for c in after}
    union = a | b
    return 1.0 - len(a & b) / len(union) if union else 0.0


def _without(labels: Iterable[str], excluded: set[str]) -> tuple[str, ...]:
    """``labels`` de-duplicated on their lemmatised key, minus those whose key is in ``excluded``."""
    kept: dict[str, str] = {}
    for label in labels:
        key = concept_key(label)
        if key not in excluded:
            kept.setdefault(key, label)
    return tuple(kept.values())


def check_sources(config: SAConfig, generate: Generate | None, graph: ConceptGraph | None) -> None:
    """Refuse a configuration whose model or graph was not given (ValueError: a caller's bug, not user input)."""
    if (config.use_llm or config.use_filter) and generate is None:
        raise ValueError("SA with use_llm or use_filter needs a generate function")
    if config.use_graph and graph is None:
        raise ValueError("SA with use_graph needs a concept graph")


def record_step(trajectory: Trajectory, step: Step, epsilon: float) -> bool:
    """Record ``step``; True when the run stops on it (Δ < ε): "failed" if a reply was unreadable, else "converged"."""
    trajectory.steps.append(step)
    if step.delta >= epsilon:
        return False
    trajectory.stop_reason = "failed" if step.failed else "converged"
    return True


async def spread_activation(
    seeds: Seeds, *, generate: Generate | None, graph: ConceptGraph | None, activator: Activator, config: SAConfig
) -> Trajectory:
    """Run Algorithm 1 for one instance: its full trajectory (errors of ``generate`` propagate)."""
    check_sources(config, generate, graph)
    if config.as_run:  # that algorithm builds on this module, which cannot import it back
        raise ValueError("an as-run SAConfig runs with ccpt.spreading.as_run.spread_activation_as_run")
    seed_keys = {concept_key(c) for c in seeds.concepts}
    rng = random.Random(f"{config.seed}|{'|'.join(seeds.concepts)}")
    trajectory = Trajectory(seeds)
    current: tuple[str, ...] = seeds.concepts
    for t in range(1, config.max_iterations + 1):
        sources = tuple(dict.fromkeys(current + seeds.concepts))  # C_t ∪ C_0
        results = await asyncio.gather(*(activate(c, generate, graph, activator, config) for c in sources))
        activations = [a for per_concept in results for a in per_concept]
        previous = _without(current, seed_keys)  # C_0 itself at t = 1: removed here, as the algorithm says
        activated = [c for a in activations for c in a.concepts]
        candidates = _without([*previous, *activated], seed_keys)
        uncapped = len(candidates)
        if config.max_candidates is not None and len(candidates) > config.max_candidates:
            chosen = set(rng.sample(range(len(candidates)), config.max_candidates))
            candidates = tuple(c for i, c in enumerate(candidates) if i in chosen)
        filter_failed, invented, kept = False, 0, candidates
        if config.use_filter and candidates:  # Filter(C, C_0): the candidates it names; other items are invented
            assert generate is not None
            parsed = parse_concept_list(await generate(filter_prompt(candidates, seeds, config.prompt_variant)))
            by_key = {concept_key(c): c for c in candidates}
            found = [by_key.get(concept_key(item)) for item in parsed or ()]
            kept = tuple(dict.fromkeys(c for c in found if c is not None))
            filter_failed, invented = parsed is None, found.count(None)
        step = Step(
            t=t,
            concepts=kept,
            delta=jaccard_distance(current, kept),
            n_sources=len(sources),
            n_activated=len(_without(activated, seed_keys | {concept_key(c) for c in previous})),
            n_candidates=len(candidates),
            n_capped=uncapped - len(candidates),
            activation_failures=sum(a.failed for a in activations),
            filter_failed=filter_failed,
            filter_invented=invented,
            n_shown=len(candidates) if config.use_filter else 0,
        )
        current = kept
        if record_step(trajectory, step, config.epsilon):
            break
    return trajectory
