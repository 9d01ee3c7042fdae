"""Methods (paper §4.1) as Inspect solvers: Base, CoT, Multi-Oracle and Spreading Activation.

Every method builds the conversation from the templates in :mod:`ccpt.prompts` and stores the raw replies
under ``ccpt_replies`` in the sample store; the scorer parses and judges each one. Sampling follows the
paper (temperature 0.7, top_p 0.95) with an explicit, distinct seed per seed/epoch and per sample, so
seeds are independent draws (Inspect would otherwise send the same ``--seed`` to every epoch, and the
authors' three "seeds" were three slices of one call).
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

from inspect_ai.model import (
    CachePolicy,
    ChatMessage,
    ChatMessageSystem,
    ChatMessageUser,
    GenerateConfig,
    Model,
    ModelOutput,
    get_model,
)
from inspect_ai.solver import Generate, Solver, TaskState, solver

from ccpt.prompts import system_prompt, task_prompt
from ccpt.spec import BASE_TEMPLATE, GOLD, Method, TaskSpec

REPLIES = "ccpt_replies"
TRAJECTORY = "ccpt_trajectory"
STEP_REPLIES = "ccpt_step_replies"


@dataclass(frozen=True)
class Sampling:
    """Decoding parameters of the solver model (paper Appendix B.1 defaults)."""

    temperature: float = 0.7
    top_p: float = 0.95
    max_tokens: int = 512
    seed: int = 0

    def config(self, epoch: int, sample: int) -> GenerateConfig:
        """Config for one draw: seed = base + 1000·(epoch − 1) + sample, distinct per seed and sample."""
        return GenerateConfig(
            temperature=self.temperature,
            top_p=self.top_p,
            max_tokens=self.max_tokens,
            seed=self.seed + 1000 * (epoch - 1) + sample,
        )


def build_messages(task: TaskSpec, template: str, meta: dict, *, with_system: bool, concepts=None) -> list[ChatMessage]:
    """System prompt (Table 9, optional) + the task instruction for this instance (the task's inputs only)."""
    fields = task.prompt_fields(meta)
    user = ChatMessageUser(content=task_prompt(task.name, template, concepts=concepts, **fields))
    return [ChatMessageSystem(content=system_prompt()), user] if with_system else [user]


async def draw(model: Model, messages: list[ChatMessage], sampling: Sampling, epoch: int, n: int) -> list[ModelOutput]:
    """``n`` independent samples (distinct seeds), concurrently, through the model cache."""
    cache = CachePolicy(expiry=None)
    return list(
        await asyncio.gather(
            *(model.generate(messages, config=sampling.config(epoch, k), cache=cache) for k in range(n))
        )
    )


def finish(state: TaskState, messages: list[ChatMessage], outputs: list[ModelOutput]) -> TaskState:
    state.messages = [*messages, outputs[0].message]
    state.output = outputs[0]
    state.store.set(REPLIES, [o.completion for o in outputs])
    return state


@solver
def gold(task: TaskSpec) -> Solver:
    """Method ``gold``: answer with the annotated gold answer, so the run's own judge scores the dataset.

    The paper's Gold row uses GPT-4o's stored scores; judging the gold answers with the judge of the run
    gives the upper bound *under that judge*, which is the one to compare a run's rows with.
    """

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        reply = task.gold_answer(state.metadata)
        output = ModelOutput.from_content(model=GOLD, content=reply)
        messages = build_messages(task, BASE_TEMPLATE, state.metadata, with_system=False)
        return finish(state, messages, [output])

    return solve


@solver
def prompt_method(
    task: TaskSpec, method: Method, oracle_n: int = 5, system: bool = True, sampling: Sampling | None = None
) -> Solver:
    """Base, CoT or Multi-Oracle (``oracle_n`` Base samples per seed; the scorer takes the best)."""
    template = method.template
    n = oracle_n if method.oracle else 1
    params = sampling or Sampling()

    async def solve(state: TaskState, generate: Generate) -> TaskState:
        messages = build_messages(task, template, state.metadata, with_system=system)
        outputs = await draw(get_model(), messages, params, state.epoch, n)
        return finish(state, messages, outputs)

    return solve
