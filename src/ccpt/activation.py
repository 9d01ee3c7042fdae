"""Spreading Activation (paper §4.1, Algorithm 1), written against ``async generate(prompt) -> str``.

For t = 0 .. T-1::

    C_{t+1} ← C_t ∪ ⋃_{c ∈ C_t ∪ C_0} Activate(c)
    C_{t+1} ← Filter(C_{t+1}, C_0) \\ C_0
    Δ = 1 − |C_t ∩ C_{t+1}| / |C_t ∪ C_{t+1}|      (on lemmatised forms)
    stop when Δ < ε

``Activate`` asks the model (prompt ``sa_activate.txt``) and/or the concept graph; ``Filter`` asks the
model (prompt ``sa_filter.txt``) to keep the candidates related to both seeds and drop redundant ones.
Choices the paper leaves open, and defects of the authors' code this module avoids (each has a regression
test):

* T = 5 means at most five expansions, C_1 … C_5 (the paper's Table 6 reports C_1 … C_5).
* Δ compares C_t with C_{t+1} (not C_{t+1} with its own lemmatisation, which froze every instance after
  one step).
* C_0 is removed from every C_{t+1} (also inflected forms: "apples" when C_0 has "apple"), so C_T is never
  just the seed words. Because of that, Δ at the first step is 1 unless C_1 is empty.
* Each source has its own memo entry (``("llm", c)`` / ``("graph", c)``): an LLM-only run never sees graph
  neighbours. Activation prompts depend on the concept only, so one activation serves every instance of a run.
* The filter sees every candidate and both seeds. A cap on the candidate set is opt-in
  (``SAConfig.max_candidates``) and is a seeded uniform sample.
* An empty C_{t+1} does not stop the run (as printed, and so that one bad Filter answer does not end it): the
  next step activates C_0 again. If the set stays empty, Δ = 0 and the run converges with C_T = ∅.
* Unparsable model output is counted in the trajectory (``activation_failures``, ``filter_failed``),
  treated as an empty list, and never raises; the run continues.

The ``as-run`` protocol (:mod:`ccpt.protocol`) switches on, through :class:`SAConfig`, what the authors' code
did instead: C_0 stays in the set during the expansion and only C_T − C_0 reaches the answer
(``remove_seeds_each_step=False``); a random sample of at most ``max_candidates`` (10) candidates per step; the
filter shown a random sample of at most ``filter_shown`` (5) of the first ones, and its answer taken as given
(``keep_invented``); Δ computed as their code did, i.e. 0, so every instance stops after one step
(``frozen_convergence``); an empty set replaced by the previous one for the answer (``empty_fallback``).
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
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Literal

from lemminflect import getLemma

from ccpt.answers import extract_json_object
from ccpt.graph import ConceptGraph, normalise_label
from ccpt.prompts import render_template, variant_name

Generate = Callable[[str], Awaitable[str]]
Source = Literal["llm", "graph"]
StopReason = Literal["converged", "max_iterations"]
SATask = Literal["property_induction", "noun_phrase_completion"]

_MAX_LABEL_CHARS = 64  # longer "concepts" in model output are sentences, not concepts
_WORD = re.compile(r"[a-z]+")
_JSON_START = re.compile(r"[\[{]")


# ----------------------------------------------------------------------------------------------------
# Configuration, seeds and the recorded trajectory


@dataclass(frozen=True)
class SAConfig:
    """Parameters of Algorithm 1 (paper defaults: T = 5, ε = 0.1).

    ``max_candidates``: if set, a candidate set larger than this is cut to a uniform sample of that size,
    seeded by ``seed`` and the instance's seeds (reproducible). None (default) gives the filter every
    candidate.
    """

    use_llm: bool
    use_graph: bool
    max_iterations: int = 5
    epsilon: float = 0.1
    use_filter: bool = True
    neighbours_k: int = 10
    max_candidates: int | None = None
    seed: int = 0
    remove_seeds_each_step: bool = True
    filter_shown: int | None = None
    keep_invented: bool = False
    frozen_convergence: bool = False
    empty_fallback: bool = False
    prompt_variant: str | None = None

    def __post_init__(self) -> None:
        if not (self.use_llm or self.use_graph):
            raise ValueError("SAConfig needs use_llm or use_graph (Activate would return nothing)")
        if self.max_iterations < 1 or self.neighbours_k < 1:
            raise ValueError("max_iterations and neighbours_k must be at least 1")
        if self.max_candidates is not None and self.max_candidates < 1:
            raise ValueError("max_candidates must be at least 1 (or None for no cap)")
        if self.filter_shown is not None and self.filter_shown < 1:
            raise ValueError("filter_shown must be at least 1 (or None to show every candidate)")

    @property
    def sources(self) -> tuple[Source, ...]:
        """The activation sources this configuration uses, in merge order."""
        return (("llm",) if self.use_llm else ()) + (("graph",) if self.use_graph else ())


@dataclass(frozen=True)
class Seeds:
    """The initial concept set C_0 and the objective O of one instance."""

    concepts: tuple[str, ...]
    objective: str


def property_induction_seeds(modifier: str, head: str) -> Seeds:
    """C_0 = {modifier, head} with O = "find relationships between 'M' and 'H'" (paper §4.1)."""
    objective = _objective("property_induction").substitute(modifier=modifier, head=head)
    return Seeds((modifier, head), objective)


def noun_phrase_completion_seeds(head: str, property: str) -> Seeds:
    """C_0 = {head, property}: the modifier is what the model has to find."""
    objective = _objective("noun_phrase_completion").substitute(head=head, property=property)
    return Seeds((head, property), objective)


@dataclass(frozen=True)
class Step:
    """One expansion: C_t → C_{t+1} (``t`` is the index of the set produced)."""

    t: int
    concepts: tuple[str, ...]  # C_t after Filter and C_0 removal
    delta: float  # Δ between C_{t-1} and C_t
    n_sources: int  # concepts activated (C_{t-1} ∪ C_0)
    n_activated: int  # new concepts activation added to C_{t-1}
    n_candidates: int  # candidates given to Filter (after the cap)
    n_capped: int  # candidates dropped by max_candidates
    activation_failures: int  # LLM activations used in this step whose output was unparsable
    filter_failed: bool  # Filter output unparsable: treated as an empty list
    filter_invented: int  # Filter output items that were not candidates (ignored unless keep_invented)
    n_shown: int = 0  # candidates shown to Filter (all of them unless filter_shown)


@dataclass
class Trajectory:
    """C_0 … C_T with Δ per step and why the run stopped; stored with each sample."""

    seeds: Seeds
    steps: list[Step] = field(default_factory=list)
    stop_reason: StopReason = "max_iterations"
    empty_fallback: bool = False  # as run: an empty C_t is answered from C_{t-1}
    subtract_seeds: bool = False  # as run: the answer sees C_t − C_0 (exact labels)

    @property
    def final(self) -> tuple[str, ...]:
        """C_T, the set the final answer is generated from."""
        return self._answer_set(len(self.steps)) if self.steps else ()

    def at(self, t: int) -> tuple[str, ...]:
        """C_t; past the last step the run had stopped, so C_t = C_T (what a run with T = t would give)."""
        if t < 0:
            raise ValueError(f"t must be >= 0, got {t}")
        if t == 0:
            return self.seeds.concepts
        return self._answer_set(min(t, len(self.steps)))

    def _answer_set(self, t: int) -> tuple[str, ...]:
        concepts = self.steps[t - 1].concepts
        while self.empty_fallback and not concepts and t > 1:
            t -= 1
            concepts = self.steps[t - 1].concepts
        if self.empty_fallback and not concepts:
            concepts = self.seeds.concepts  # C_1 empty: C_0, which the subtraction below then empties
        if self.subtract_seeds:
            concepts = tuple(c for c in concepts if c not in set(self.seeds.concepts))
        return concepts

    @property
    def activation_failures(self) -> int:
        """Unparsable LLM activations over all steps."""
        return sum(step.activation_failures for step in self.steps)

    @property
    def filter_failures(self) -> int:
        """Steps whose Filter output was unparsable."""
        return sum(step.filter_failed for step in self.steps)

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready record for the sample's log metadata."""
        return {
            "seeds": list(self.seeds.concepts),
            "objective": self.seeds.objective,
            "stop_reason": self.stop_reason,
            "final": list(self.final),
            "activation_failures": self.activation_failures,
            "filter_failures": self.filter_failures,
            "steps": [{**asdict(step), "concepts": list(step.concepts)} for step in self.steps],
        }


# ----------------------------------------------------------------------------------------------------
# Normalisation and parsing


def concept_key(label: str) -> str:
    """Comparison form of a concept: lower case, single spaces, each word's noun lemma ("apples" → "apple").

    Only noun inflection is undone: "peel" stays distinct from the seed "peeled", which it should not replace.
    """
    words = " ".join(label.replace("_", " ").lower().split())
    return _WORD.sub(lambda m: _noun_lemma(m.group()), words)


@lru_cache(maxsize=1 << 16)
def _noun_lemma(word: str) -> str:
    # Words under 3 letters are left alone: lemminflect maps "as" → "a" and "s" → "".
    return (getLemma(word, upos="NOUN")[0] or word) if len(word) >= 3 else word


def parse_concept_list(text: str) -> list[str] | None:
    """The concept list in a model answer: the last ``{"concepts": [...]}`` object, else a bare JSON list.

    The object is found by :func:`ccpt.answers.extract_json_object` (prose, code fences and loose quoting
    tolerated); a bare list such as ``["a", "b"]`` is read with ``json``. Returns None when neither is found;
    non-string items are skipped. Never evaluates the text.
    """
    obj = extract_json_object(text)
    found: Any = obj.get("concepts") if obj is not None else None
    if not isinstance(found, list):
        found = _last_json_list(text)
    if found is None:
        return None
    return [item for item in found if isinstance(item, str)]


def _last_json_list(text: str) -> list[Any] | None:
    decoder = json.JSONDecoder()
    found: list[Any] | None = None
    position = 0
    while (start := text.find("[", position)) != -1:
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            position = start + 1
            continue
        if isinstance(value, list):
            found = value
        position = end
    return found


def _clean(items: Iterable[str], limit: int | None = None) -> tuple[str, ...]:
    """Normalised, de-duplicated labels (same normalisation as the graph), at most ``limit``."""
    labels: dict[str, None] = {}
    for item in items:
        label = normalise_label(item.strip(" \t\n\"'.,;:"))
        if label is not None and len(label) <= _MAX_LABEL_CHARS:
            labels.setdefault(label, None)
    return tuple(labels)[:limit]


@cache
def _objective(task: SATask) -> string.Template:
    text = resources.files("ccpt.prompts").joinpath("sa_objectives.toml").read_text(encoding="utf-8")
    return string.Template(tomllib.loads(text)[task])


def activation_prompt(concept: str, k: int, variant: str | None = None) -> str:
    """p_act for one concept (independent of the instance, so it can be shared and cached)."""
    return render_template(variant_name("sa_activate", variant), concept=concept, k=k)


def filter_prompt(candidates: Sequence[str], seeds: Seeds, variant: str | None = None) -> str:
    """p_fil: the candidates, the seed concepts C_0 and the objective O."""
    return render_template(
        variant_name("sa_filter", variant),
        seeds=", ".join(f'"{seed}"' for seed in seeds.concepts),
        objective=seeds.objective,
        candidates=json.dumps(list(candidates), ensure_ascii=False),
    )


# ----------------------------------------------------------------------------------------------------
# Activation with a per-run memo


@dataclass(frozen=True)
class Activation:
    """A_c from one source; ``failed`` when the model's answer held no parsable concept list."""

    concepts: tuple[str, ...]
    failed: bool = False


class Activator:
    """Per-run memo of activations keyed by (source, concept), safe under asyncio concurrency.

    Use one instance per run (one model, one graph, one ``neighbours_k``): a concept reached by many
    instances is activated once; two instances asking at the same time share the in-flight call.
    ``calls`` / ``hits`` count computations and memo hits per source. With ``memoise=False`` every request
    is computed (for benchmarks).
    """

    def __init__(self, *, memoise: bool = True) -> None:
        self.memoise = memoise
        self._done: dict[tuple[Source, str], Activation] = {}
        self._running: dict[tuple[Source, str], asyncio.Future[Activation]] = {}
        self.calls: Counter[str] = Counter()
        self.hits: Counter[str] = Counter()

    async def get(self, source: Source, concept: str, compute: Callable[[], Awaitable[Activation]]) -> Activation:
        """The memoised activation of ``concept`` by ``source``; ``compute`` runs at most once per key.

        If ``compute`` raises, the error reaches every waiter and the key is not memoised (a later call
        retries).
        """
        key = (source, concept)
        if not self.memoise:
            self.calls[source] += 1
            return await compute()
        if key in self._done:
            self.hits[source] += 1
            return self._done[key]
        if key in self._running:
            self.hits[source] += 1
            return await asyncio.shield(self._running[key])
        self.calls[source] += 1
        future = asyncio.ensure_future(compute())
        self._running[key] = future
        try:
            result = await asyncio.shield(future)
        finally:
            self._running.pop(key, None)
        self._done[key] = result
        return result


async def _activate(
    concept: str,
    generate: Generate | None,
    graph: ConceptGraph | None,
    activator: Activator,
    config: SAConfig,
) -> list[Activation]:
    """Activate(c): the model's and/or the graph's concepts for ``c``, one Activation per source used."""

    async def from_llm() -> Activation:
        assert generate is not None
        parsed = parse_concept_list(
            await generate(activation_prompt(concept, config.neighbours_k, config.prompt_variant))
        )
        if parsed is None:
            return Activation((), failed=True)
        return Activation(_clean(parsed, limit=config.neighbours_k))

    async def from_graph() -> Activation:
        assert graph is not None
        return Activation(graph.neighbours(concept, config.neighbours_k))

    compute = {"llm": from_llm, "graph": from_graph}
    return [await activator.get(source, concept, compute[source]) for source in config.sources]


# ----------------------------------------------------------------------------------------------------
# Algorithm 1


def jaccard_distance(before: Iterable[str], after: Iterable[str]) -> float:
    """Δ = 1 − |A ∩ B| / |A ∪ B| on lemmatised forms; 0 when both sets are empty."""
    a, b = {concept_key(c) for c in before}, {concept_key(c) for c in after}
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


async def _filter(
    candidates: tuple[str, ...], seeds: Seeds, generate: Generate, config: SAConfig
) -> tuple[tuple[str, ...], bool, int]:
    """Filter(C, C_0) → (kept candidates, output unparsable?, number of output items not among candidates)."""
    parsed = parse_concept_list(await generate(filter_prompt(candidates, seeds, config.prompt_variant)))
    if parsed is None:
        return (), True, 0
    by_key = {concept_key(c): c for c in candidates}
    kept: dict[str, None] = {}
    invented = 0
    for item in parsed:
        original = by_key.get(concept_key(item))
        if original is None:
            invented += 1
            if config.keep_invented and (label := _clean([item])):
                kept.setdefault(label[0], None)  # as run: the filter's answer is the new set, as written
        else:
            kept.setdefault(original, None)
    return tuple(kept), False, invented


def _check(config: SAConfig, generate: Generate | None, graph: ConceptGraph | None) -> None:
    if (config.use_llm or config.use_filter) and generate is None:
        raise ValueError("SA with use_llm or use_filter needs a generate function")
    if config.use_graph and graph is None:
        raise ValueError("SA with use_graph needs a concept graph")


async def spread_activation(
    seeds: Seeds,
    *,
    generate: Generate | None,
    graph: ConceptGraph | None,
    activator: Activator,
    config: SAConfig,
) -> Trajectory:
    """Run Algorithm 1 for one instance and return its full trajectory (C_T is ``trajectory.final``).

    ``generate`` may be None only for graph-only runs without the filter; ``graph`` only when ``use_graph`` is
    false (it is then never queried). Errors raised by ``generate`` propagate; unparsable output does not.
    """
    _check(config, generate, graph)
    # As run, C_0 stays in the set while it spreads (only C_T − C_0 reaches the answer): nothing is excluded.
    seed_keys = {concept_key(c) for c in seeds.concepts} if config.remove_seeds_each_step else set()
    rng = random.Random(f"{config.seed}|{'|'.join(seeds.concepts)}")
    trajectory = Trajectory(
        seeds, empty_fallback=config.empty_fallback, subtract_seeds=not config.remove_seeds_each_step
    )
    current: tuple[str, ...] = seeds.concepts
    for t in range(1, config.max_iterations + 1):
        # Printed: activate C_t ∪ C_0. As run: the current set only (it still holds C_0 unless the filter dropped it).
        sources = tuple(dict.fromkeys(current + (seeds.concepts if config.remove_seeds_each_step else ())))
        results = await asyncio.gather(*(_activate(c, generate, graph, activator, config) for c in sources))
        activations = [a for per_concept in results for a in per_concept]
        previous = _without(current, seed_keys)  # C_0 itself at t = 1: removed here, as the algorithm says
        activated = [c for a in activations for c in a.concepts]
        candidates = _without([*previous, *activated], seed_keys)
        n_capped = 0
        if config.max_candidates is not None and len(candidates) > config.max_candidates:
            chosen = set(rng.sample(range(len(candidates)), config.max_candidates))
            n_capped = len(candidates) - len(chosen)
            candidates = tuple(c for i, c in enumerate(candidates) if i in chosen)
        shown = candidates
        if config.filter_shown is not None:
            # As run: a random sample of at most filter_shown of the first filter_shown candidates.
            first = candidates[: config.filter_shown]
            shown = tuple(rng.sample(first, len(first)))
        filter_failed, invented = False, 0
        if config.use_filter and shown:
            assert generate is not None
            kept, filter_failed, invented = await _filter(shown, seeds, generate, config)
        else:
            kept = candidates if not config.use_filter else shown
        # As run, Δ compared the new set with its own lemmatisation (always 0): the first step always "converges".
        delta = 0.0 if config.frozen_convergence else jaccard_distance(current, kept)
        step = Step(
            t=t,
            concepts=kept,
            delta=delta,
            n_sources=len(sources),
            n_activated=len(_without(activated, seed_keys | _keys(previous))),
            n_candidates=len(candidates),
            n_capped=n_capped,
            activation_failures=sum(a.failed for a in activations),
            filter_failed=filter_failed,
            filter_invented=invented,
            n_shown=len(shown) if config.use_filter else 0,
        )
        trajectory.steps.append(step)
        current = kept
        if step.delta < config.epsilon:
            trajectory.stop_reason = "converged"
            break
    return trajectory


def _keys(labels: Iterable[str]) -> set[str]:
    return {concept_key(c) for c in labels}
