"""The four CCPT tasks as Inspect tasks (registered through the ``inspect_ai`` entry point).

    inspect eval ccpt/pi_emergent --model openai/gpt-4o --model-role grader=openai/gpt-4o -T method=cot

The judge is the ``grader`` model role (without one the distilled judge scores, never the evaluated model). A task's
parameters (``-T name=value``, in its Args) are gathered into one :class:`TaskOptions` and typed by the task
function's signature (:func:`typed_task_args`), so a bad ``-T`` value, like any user error, is one line.
"""

from __future__ import annotations

import importlib
import inspect
import typing
from collections.abc import Callable, Mapping
from dataclasses import fields, replace
from functools import cache
from typing import Any

from inspect_ai import Epochs, Task, task
from inspect_ai.solver import Solver

from ccpt import methods
from ccpt.benchmark import benchmark
from ccpt.errors import CcptError
from ccpt.eval.inspect_compat import user_error
from ccpt.eval.samples import task_dataset
from ccpt.eval.scorers import cancellation_judge, ccpt_mean, default_grader_roles, emergence_judge, type_match
from ccpt.eval.solvers import task_config
from ccpt.methods import Method
from ccpt.protocol import DEFAULT_PROTOCOL, Protocol, get_protocol
from ccpt.results.inspect_logs import DATASET_SHA256, GRAPH_SHA256
from ccpt.schemas.base import OptionalText
from ccpt.schemas.run import (
    ProtocolName,
    Seed,
    Seeds,
    Switch,
    TaskOptions,
    check,
)
from ccpt.spec import BASE, EMERGENT, NPC_EMERGENT, PI_CANCELED, PI_EMERGENT, TYPE_PREDICTION, TaskSpec, task_spec


def _solver(spec: TaskSpec, method: Method, options: TaskOptions, protocol: Protocol) -> Solver:
    """The method's solver, from the factory it names ("module:function"; see ccpt.methods)."""
    module, _, function = method.solver.partition(":")
    try:
        factory = getattr(importlib.import_module(module), function)
    except (ImportError, AttributeError) as exc:
        raise CcptError(f"method {method.base!r}: its solver {method.solver!r} does not load ({exc})") from None
    return factory(spec, method, options, protocol)


def ccpt_task(name: str, options: TaskOptions) -> Task:
    """Build the Inspect task for one CCPT task; the method and protocol are parsed and checked here, once. A user
    error (bad ``-T`` value, missing data) becomes Inspect's PrerequisiteError: one line under `inspect eval`."""
    try:
        typed = typed_task_args(TASK_FUNCTIONS[name], {f.name: getattr(options, f.name) for f in fields(options)})
        return _build(name, replace(options, **typed))
    except CcptError as exc:
        raise user_error(exc) from None


@cache
def _parameter_types(function: Callable[..., Any]) -> Mapping[str, Any]:
    """Each parameter's declared type (ccpt.schemas.run) as a pydantic adapter, read from the task signature."""
    from pydantic import TypeAdapter

    hints = typing.get_type_hints(function, include_extras=True)
    return {name: TypeAdapter(hint) for name, hint in hints.items() if name != "return"}


def typed_task_args(function: Callable[..., Any], args: Mapping[str, Any]) -> dict[str, Any]:
    """``-T`` values checked and typed by the task function's signature: a value its type refuses is one line naming
    the parameter; names the function does not take are left alone."""
    types = _parameter_types(function)
    several = "one value per -T; several methods: ccpt run --method a --method b"
    return {
        name: check(value, types[name], f"-T {name}", several if name == "method" and isinstance(value, list) else None)
        for name, value in args.items()
        if name in types
    }


def _build(name: str, options: TaskOptions) -> Task:
    spec = task_spec(name)
    method = methods.parse(options.method, spec.name)
    protocol = get_protocol(options.protocol)
    protocol.check_method(method.name)
    seeds = method.seeds or options.seeds
    if spec.generative:  # the judge scorer, its headline metric first: E or C (docs/metrics.md)
        judge_scorer = emergence_judge if spec.kind == EMERGENT else cancellation_judge
        scorer = judge_scorer(method.name, options.judge_mode, options.judge_retries, protocol.name)
    else:
        scorer = type_match(method.name)
    dataset, dataset_sha256 = task_dataset(
        spec,
        split=options.split,
        data_dir=options.data_dir,
        exclude_toxic=options.exclude_toxic,
        tp_seed=options.seed,
        others_from_sample=protocol.others_from_sample,
        stored_combinations=protocol.stored_combinations,
    )
    return Task(
        name=spec.name,
        dataset=dataset,
        solver=_solver(spec, method, options, protocol),
        scorer=scorer,
        epochs=Epochs(seeds, ccpt_mean()),
        config=task_config(protocol),
        model_roles=default_grader_roles() if spec.generative else None,
        metadata={
            "ccpt_task": spec.name,
            "method": method.name,
            "seeds": seeds,
            "oracle_n": options.oracle_n,
            "split": options.split,
            "protocol": protocol.name,
            DATASET_SHA256: dataset_sha256,  # the dataset's version: part of the run's identity
            **_graph_identity(method, options, protocol),
        },
        version=benchmark().version,  # the benchmark's comparability version (ccpt/benchmark.toml)
    )


def _graph_identity(method: Method, options: TaskOptions, protocol: Protocol) -> dict[str, str]:
    """The concept graph's digest for a method that expands over ConceptNet (part of the run's identity)."""
    if not (method.spreading and method.uses_graph):
        return {}
    from ccpt.spreading.solver import graph_sha256  # only an SA task needs it (as its solver is loaded: lazily)

    return {GRAPH_SHA256: graph_sha256(options.conceptnet, options.data_dir, as_run=protocol.sa.as_run)}


def _generative(summary: str | None = None) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    """Give a generative task function TaskOptions' fields as its parameters, in order (the signature Inspect reads
    ``-T`` names and logs from); with ``summary``, that docstring over pi_emergent's Args: the three share them."""

    def share(function: Callable[..., Task]) -> Callable[..., Task]:
        function.__signature__ = inspect.signature(TaskOptions).replace(return_annotation="Task")  # type: ignore[attr-defined]
        # Resolved types: their names live in TaskOptions' module (ccpt.schemas.run), not in this one.
        function.__annotations__ = {**typing.get_type_hints(TaskOptions, include_extras=True), "return": Task}
        if summary is not None:
            function.__doc__ = summary + "\n" + (pi_emergent.__doc__ or "").partition("\n")[2]
        return function

    return share


@task
@_generative()
def pi_emergent(*args: Any, **kwargs: Any) -> Task:
    """Property Induction, emergent (N, T → P): a property the noun phrase has but neither word alone.

    Args:
        method: base, cot, multi_oracle, sa_llm, sa_conceptnet, sa_both or gold (the annotated answer judged by
            this run's judge); an sa_* method with the suffix ``_nofilter`` runs the filter ablation.
        seeds: Independent samples per instance, reported as mean ± spread (paper: 3; at most 1,000: each seed
            answers every instance again).
        oracle_n: Multi-Oracle samples per seed (paper: 5; at most 100: each is one more answer).
        split: test or train.
        system_prompt: Send the paper's system prompt (Table 9).
        data_dir: Dataset directory (default: ``$CCPT_DATA_DIR`` or the pinned download).
        exclude_toxic: Leave out toxicity-flagged rows.
        judge_mode: text (parse the judge's score) or expected (probability-weighted score from log-probs).
        judge_retries: Judge calls retried when the reply has no valid score (default: 2; as-run: 3, the authors'
            4 attempts; at most 100: each retry is one more judge call per pair).
        seed: Base sampling seed.
        sa_max_iterations: Spreading activation: at most this many expansions T (paper: 5; at most 100: each step is
            one more model call per answer).
        sa_epsilon: Spreading activation: stop when the concept set changes less than this (in [0, 1]: the change
            is a Jaccard distance).
        sa_answer_every_step: Spreading activation: also answer from every C_t (Table 6).
        sa_max_candidates: Spreading activation: cap on candidate concepts per step (default: none; 100 without
            Filter; as-run: the size of the step's random sample, 10; at most 10,000: a step's neighbourhood holds
            hundreds).
        conceptnet: Concept graph (an index or cache file) for sa_conceptnet / sa_both.
        protocol: ccpt (the paper's method as printed, the default) or as-run (what the authors' code ran; see
            ccpt.protocol).
    """
    return ccpt_task(PI_EMERGENT, TaskOptions(*args, **kwargs))  # TaskOptions' fields are the signature, in order


@task
@_generative("Property Induction, canceled (N, T → P): a property of the head or modifier the phrase loses.")
def pi_canceled(*args: Any, **kwargs: Any) -> Task:
    return ccpt_task(PI_CANCELED, TaskOptions(*args, **kwargs))  # TaskOptions' fields are the signature, in order


@task
@_generative("Noun Phrase Completion, emergent (H, P, T → N): a modifier that gives the head the property.")
def npc_emergent(*args: Any, **kwargs: Any) -> Task:
    return ccpt_task(NPC_EMERGENT, TaskOptions(*args, **kwargs))  # TaskOptions' fields are the signature, in order


@task
def type_prediction(
    method: str = BASE,
    seeds: Seeds = 1,
    system_prompt: Switch = True,
    data_dir: OptionalText = None,
    exclude_toxic: Switch = False,
    seed: Seed = 0,
    protocol: ProtocolName = DEFAULT_PROTOCOL,
) -> Task:
    """Property Type Prediction (N, P → T): emergent / component / canceled / others, 250 of each.

    Args:
        method: base (the paper's single prompt), or a plug-in method that applies to Task 3 (its samples
            reduce to one predicted type the method's way, e.g. a majority vote).
        seeds: Independent samples per instance (at most 1,000: each seed answers every instance again).
        system_prompt: Send the paper's system prompt (Table 9).
        data_dir: Dataset directory (default: ``$CCPT_DATA_DIR`` or the pinned download).
        exclude_toxic: Leave out toxicity-flagged rows.
        seed: Seed of the balanced sample of 250 items per type, and base sampling seed.
        protocol: ccpt (the default) or as-run (the authors' messages and sampling per provider, and their
            "others" pairs drawn from the sampled typed rows; see ccpt.protocol).
    """
    return ccpt_task(TYPE_PREDICTION, TaskOptions(**locals()))  # the parameters, by name


# The task functions by name (what -T values are typed by).
TASK_FUNCTIONS: dict[str, Callable[..., Task]] = {
    PI_EMERGENT: pi_emergent,
    PI_CANCELED: pi_canceled,
    NPC_EMERGENT: npc_emergent,
    TYPE_PREDICTION: type_prediction,
}
