"""Methods (paper §4.1) as Inspect solvers: Base, CoT, Multi-Oracle and Spreading Activation.

Every method stores its raw replies under ``ccpt_replies`` for the scorer. Sampling defaults live in the task's
``GenerateConfig`` (:func:`task_config`), so Inspect's ``--temperature/--top-p/--max-tokens`` override them; per call
only the seed is set, distinct per epoch and sample (Inspect would send the same ``--seed`` to every epoch).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from inspect_ai.model import (
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ccpt.eval.inspect_compat import active_generate_config, cache_policy
from ccpt.prompts import system_prompt, task_prompt
from ccpt.protocol import CallSettings, Protocol, get_protocol
from ccpt.spec import BASE_TEMPLATE, GOLD, TaskSpec

if TYPE_CHECKING:
    from ccpt.methods import Method
    from ccpt.schemas.run import TaskOptions

REPLIES = "ccpt_replies"
TRAJECTORY = "ccpt_trajectory"
STEP_REPLIES = "ccpt_step_replies"


def settings_config(settings: CallSettings) -> GenerateConfig:
    """The sampling fields of ``settings`` as a GenerateConfig (``None`` fields are left unset, i.e. not sent)."""
    return GenerateConfig(temperature=settings.temperature, top_p=settings.top_p, max_tokens=settings.max_tokens)


def task_config(protocol: Protocol) -> GenerateConfig:
    """The task-level GenerateConfig: the protocol's sampling defaults when they do not depend on the provider."""
    return GenerateConfig() if protocol.provider_dependent else settings_config(protocol.calls["*"])


@dataclass(frozen=True)
class Sampling:
    """Per-call sampling of the solver model: the seed, plus the protocol's per-provider defaults if any."""

    seed: int = 0
    protocol: Protocol = field(default_factory=lambda: get_protocol(None))

    def config(self, epoch: int, sample: int, model: str = "") -> GenerateConfig:
        """Config for one draw: seed = base + 1000·(epoch − 1) + sample; for a provider-dependent protocol, also the
        provider's sampling where the active config (task and command line) leaves it unset."""
        config = GenerateConfig(seed=self.seed + 1000 * (epoch - 1) + sample)
        if self.protocol.provider_dependent:
            active = active_generate_config()
            wanted = settings_config(self.protocol.call_settings(model))
            for name in ("temperature", "top_p", "max_tokens"):
                if getattr(active, name) is None and getattr(wanted, name) is not None:
                    setattr(config, name, getattr(wanted, name))
        return config

    def with_system(self, model: str, requested: bool) -> bool:
        """Whether the system prompt is sent to ``model``: requested (``-T system_prompt``) and the protocol's."""
        return requested and self.protocol.call_settings(model).system_prompt


def build_messages(
    task: TaskSpec, template: str, meta: dict, *, with_system: bool, concepts=None, variant: str | None = None
) -> list[ChatMessage]:
    """System prompt (Table 9, optional) + the task instruction for this instance (the task's inputs only)."""
    fields = task.prompt_fields(meta)
    user = ChatMessageUser(content=task_prompt(task.name, template, concepts=concepts, variant=variant, **fields))
    return [ChatMessageSystem(content=system_prompt()), user] if with_system else [user]


async def draw(model: Model, messages: list[ChatMessage], sampling: Sampling, epoch: int, n: int) -> list[ModelOutput]:
    """``n`` independent samples (distinct seeds), concurrently, through the model cache; where the protocol asks,
    numbered as the authors' backend did (:func:`with_sequence`)."""
    cache = cache_policy(model)
    numbered = sampling.protocol.call_settings(str(model)).sequence_suffix
    requests = [with_sequence(messages, (epoch - 1) * n + k) if numbered else messages for k in range(n)]
    calls = (
        model.generate(m, config=sampling.config(epoch, k, str(model)), cache=cache) for k, m in enumerate(requests)
    )
    return list(await asyncio.gather(*calls))


def with_sequence(messages: list[ChatMessage], k: int) -> list[ChatMessage]:
    """``messages`` with " Sequence: k" appended to the last user turn (the authors' Anthropic seeds)."""
    out = list(messages)
    last = max(i for i, m in enumerate(out) if isinstance(m, ChatMessageUser))
    out[last] = ChatMessageUser(content=f"{out[last].text} Sequence: {k}")
    return out


def finish(state: TaskState, messages: list[ChatMessage], outputs: list[ModelOutput]) -> TaskState:
    # A reply with no choices (an endpoint answering `"choices": []`) is an empty answer: counted as a parse
    # failure by the scorer, not a crashed sample that no rerun can fix.
    state.messages = [*messages, outputs[0].message] if outputs[0].choices else list(messages)
    state.output = outputs[0]
    state.store.set(REPLIES, [o.completion for o in outputs])
    return state


@solver
def gold(task: TaskSpec) -> Solver:
    """Method ``gold``: answer with the annotated gold answer, so the run's own judge scores the dataset."""

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply = task.gold_answer(state.metadata)
        output = ModelOutput.from_content(model=GOLD, content=reply)
        messages = build_messages(task, BASE_TEMPLATE, state.metadata, with_system=False)
        return finish(state, messages, [output])

    return solve


@solver
def prompt_method(
    task: TaskSpec, template: str, n: int = 1, system: bool = True, sampling: Sampling | None = None
) -> Solver:
    """Ask ``template`` ``n`` times per instance and seed (distinct seeds); the scorer judges every reply."""
    params = sampling or Sampling()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        model = get_model()
        with_system = params.with_system(str(model), system)
        variant = params.protocol.prompt_variant
        messages = build_messages(task, template, state.metadata, with_system=with_system, variant=variant)
        outputs = await draw(model, messages, params, state.epoch, n)
        return finish(state, messages, outputs)

    return solve


# Solver factories of registered methods (ccpt.methods): (spec, method, options, protocol) -> Solver.


def prompt_solver(spec: TaskSpec, method: Method, options: TaskOptions, protocol: Protocol) -> Solver:
    """A method that asks its template ``method.samples`` times (Base, CoT, Multi-Oracle)."""
    n = method.sample_count(vars(options))
    sampling = Sampling(seed=options.seed, protocol=protocol)
    return prompt_method(spec, method.template, n=n, system=options.system_prompt, sampling=sampling)


def gold_solver(spec: TaskSpec, method: Method, options: TaskOptions, protocol: Protocol) -> Solver:
    """Method ``gold``: no model call, the annotated answer."""
    return gold(spec)
