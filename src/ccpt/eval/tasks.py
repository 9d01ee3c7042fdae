"""The four CCPT tasks as Inspect tasks (registered through the ``inspect_ai`` entry point).

    inspect eval ccpt/pi_emergent --model openai/gpt-4o --model-role grader=openai/gpt-4o -T method=cot

Task parameters (``-T name=value``): ``method`` (base, cot, multi_oracle, sa_llm, sa_conceptnet, sa_both;
suffix ``_nofilter`` for the SA filter ablation), ``seeds`` (independent samples per instance, reported
as mean ± spread; paper: 3), ``oracle_n`` (Multi-Oracle samples per seed; paper: 5), ``split``
(test/train), ``system_prompt`` (send Table 9's system prompt), ``data_dir``, ``judge_mode``
(text/expected), ``seed`` (base sampling seed), ``protocol`` (``ccpt``, the default, or ``as-run``: see
:mod:`ccpt.protocol`). Sampling defaults are the task's GenerateConfig, so ``--temperature``, ``--top-p`` and
``--max-tokens`` override them. The judge is the ``grader`` model role; without one the
evaluated model judges itself (say which in any report: the paper's judge is GPT-4o).
"""

from __future__ import annotations

from collections.abc import Callable

from inspect_ai import Epochs, Task, task
from inspect_ai.model import GenerateConfig

from ccpt.dataset import TaskName
from ccpt.errors import CcptError
from ccpt.eval.inspect_compat import user_error
from ccpt.eval.judge import JudgeMode
from ccpt.eval.samples import task_dataset
from ccpt.eval.scorers import ccpt_mean, relevance_judge, type_match
from ccpt.eval.solvers import SA_METHODS, Sampling, check_method, gold, prompt_method, task_config
from ccpt.protocol import Protocol, get_protocol


def _solver(task: TaskName, method: str, oracle_n: int, system_prompt: bool, sampling: Sampling, sa: dict):
    if method.removesuffix("_nofilter") in SA_METHODS:
        from ccpt.eval.spreading import spreading_activation  # only SA needs the concept graph

        return spreading_activation(task, method, system=system_prompt, sampling=sampling, **sa)
    if method == "gold":
        return gold(task)
    return prompt_method(task, method, oracle_n=oracle_n, system=system_prompt, sampling=sampling)


def ccpt_task(
    task: TaskName,
    *,
    method: str = "base",
    seeds: int = 3,
    oracle_n: int = 5,
    split: str = "test",
    system_prompt: bool = True,
    data_dir: str | None = None,
    exclude_toxic: bool = False,
    judge_mode: JudgeMode = "text",
    judge_retries: int = 2,
    seed: int = 0,
    sa: dict | None = None,
    protocol: str | Protocol | None = None,
) -> Task:
    """Build the Inspect task for one CCPT task and method under ``protocol`` (default: ``ccpt``)."""
    chosen = get_protocol(protocol)
    check_method(task, method)
    chosen.check_method(method)
    if method == "gold":
        seeds = 1  # a fixed answer and a deterministic judge: further seeds would repeat it exactly
    scorer = (
        type_match(method)
        if task == "type_prediction"
        else relevance_judge(method, judge_mode, judge_retries, protocol=chosen.name)
    )
    config: GenerateConfig = task_config(chosen)
    return Task(
        name=task,
        dataset=task_dataset(task, split=split, data_dir=data_dir, exclude_toxic=exclude_toxic, tp_seed=seed),
        solver=_solver(task, method, oracle_n, system_prompt, Sampling(seed=seed, protocol=chosen), sa or {}),
        scorer=scorer,
        epochs=Epochs(seeds, ccpt_mean()),
        config=config,
        metadata={
            "ccpt_task": task,
            "method": method,
            "seeds": seeds,
            "oracle_n": oracle_n,
            "split": split,
            "protocol": chosen.name,
        },
        version="1",
    )


def _generative(task: TaskName, params: dict) -> Task:
    """Shared body of the three generative tasks: their parameters are identical (see module docstring)."""
    sa = {
        "max_iterations": params["sa_max_iterations"],
        "epsilon": params["sa_epsilon"],
        "answer_every_step": params["sa_answer_every_step"],
        "max_candidates": params["sa_max_candidates"],
        "conceptnet": params["conceptnet"],
        "data_dir": params["data_dir"],
    }
    return ccpt_task(
        task,
        method=params["method"],
        seeds=params["seeds"],
        oracle_n=params["oracle_n"],
        split=params["split"],
        system_prompt=params["system_prompt"],
        data_dir=params["data_dir"],
        exclude_toxic=params["exclude_toxic"],
        judge_mode=params["judge_mode"],
        judge_retries=params["judge_retries"],
        seed=params["seed"],
        sa=sa,
        protocol=params["protocol"],
    )


def _for_inspect(build: Callable[[], Task]) -> Task:
    """Build a task; a user error (bad -T value, missing data) becomes Inspect's PrerequisiteError, which
    `inspect eval` prints as one line instead of a traceback (`ccpt run` turns it back into its own line)."""
    try:
        return build()
    except CcptError as exc:
        raise user_error(exc) from None


def _generative_task(name: TaskName, summary: str) -> Callable[..., Task]:
    """Define and register one generative task; the three share this one signature (module docstring)."""

    def generative(
        method: str = "base",
        seeds: int = 3,
        oracle_n: int = 5,
        split: str = "test",
        system_prompt: bool = True,
        data_dir: str | None = None,
        exclude_toxic: bool = False,
        judge_mode: str = "text",
        judge_retries: int = 2,
        seed: int = 0,
        sa_max_iterations: int = 5,
        sa_epsilon: float = 0.1,
        sa_answer_every_step: bool = False,
        sa_max_candidates: int | None = None,
        conceptnet: str | None = None,
        protocol: str = "ccpt",
    ) -> Task:
        params = dict(locals())
        return _for_inspect(lambda: _generative(name, params))

    generative.__name__ = generative.__qualname__ = name
    generative.__doc__ = summary
    return task(name=name)(generative)


pi_emergent = _generative_task(
    "pi_emergent", "Property Induction, emergent (N, T → P): a property the noun phrase has but neither word alone."
)
pi_canceled = _generative_task(
    "pi_canceled", "Property Induction, canceled (N, T → P): a property of the head or modifier the phrase loses."
)
npc_emergent = _generative_task(
    "npc_emergent", "Noun Phrase Completion, emergent (H, P, T → N): a modifier that gives the head the property."
)


@task
def type_prediction(
    seeds: int = 1,
    system_prompt: bool = True,
    data_dir: str | None = None,
    exclude_toxic: bool = False,
    seed: int = 0,
    method: str = "base",
    protocol: str = "ccpt",
) -> Task:
    """Property Type Prediction (N, P → T): emergent / component / canceled / others, 250 of each."""
    return _for_inspect(
        lambda: ccpt_task(
            "type_prediction",
            method=method,
            seeds=seeds,
            system_prompt=system_prompt,
            data_dir=data_dir,
            exclude_toxic=exclude_toxic,
            seed=seed,
            protocol=protocol,
        )
    )
