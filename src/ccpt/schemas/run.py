"""The values of a run, declared once: each argument's type and range (the task signatures' ``-T`` values and
:data:`RUN_OPTIONS`, read by `ccpt run`'s options and :meth:`ccpt.eval.sweep.Sweep.validate`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Strict, TypeAdapter, ValidationError

from ccpt.errors import CcptError
from ccpt.protocol import DEFAULT_PROTOCOL, PROTOCOLS
from ccpt.schemas.base import Blank, OptionalText, Temperature, UnitFloat, _no_bool, _reason, shown
from ccpt.spec import BASE, MULTI_ORACLE, SA_METHODS

AtLeastOne = Annotated[int, Field(ge=1), BeforeValidator(_no_bool)]


def at_most(high: int, low: int = 1) -> Any:
    """An integer in [``low``, ``high``], true/false refused: the upper bound stops a slip (an extra digit) that would
    run away in memory or time; each option's help gives its reason."""
    return Annotated[int, Field(ge=low, le=high), BeforeValidator(_no_bool)]


MAX_SEEDS, MAX_SAMPLES = 1000, 100  # also bound a method plug-in's declared seeds and samples (ccpt.methods)
Seeds = at_most(MAX_SEEDS)  # each seed answers every instance again (the paper: 3)
OracleN = at_most(MAX_SAMPLES)  # each member is one more answer per instance and seed (the paper: 5)
SAIterations = at_most(100)  # each step is one more model call and judging round per answer (the paper: 5)
JudgeRetries = Annotated[at_most(100, low=0) | None, Blank]  # each retry: one more judge call per pair
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # NaN or inf would fail every request, locally
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # e.g. an ensemble member's weight
# Δ, the change of the concept set a step stops on, is a Jaccard distance in [0, 1]: a larger ε stops every run at
# its first step, as 1 does, under another label.
Epsilon = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
Candidates = at_most(10_000)  # a step's neighbourhood holds hundreds of concepts; each one is judged by the filter
Seed = Annotated[int, Field(ge=0, le=2**32 - 1), BeforeValidator(_no_bool)]  # NumPy refuses others
Switch = Annotated[bool, Strict()]  # strict: `flase`, `1` or `yes` is not spelled true/false
Split = Literal["test", "train"]
JudgeMode = Literal["text", "expected"]  # how a judge's score is read (ccpt.eval.judge)
ProtocolName = Literal[tuple(PROTOCOLS)]  # type: ignore[valid-type]


@dataclass(frozen=True)
class TaskOptions:
    """The parameters of a task (``-T name=value``) with the generative tasks' defaults; see the task Args."""

    method: str = BASE
    seeds: Seeds = 3
    oracle_n: OracleN = 5
    split: Split = "test"
    system_prompt: Switch = True
    data_dir: OptionalText = None
    exclude_toxic: Switch = False
    judge_mode: JudgeMode = "text"
    judge_retries: JudgeRetries = None  # None: the protocol's (ccpt 2, as-run 3)
    seed: Seed = 0
    sa_max_iterations: SAIterations = 5
    sa_epsilon: Epsilon = 0.1
    sa_answer_every_step: Switch = False
    sa_max_candidates: Candidates | None = None
    conceptnet: OptionalText = None
    protocol: ProtocolName = DEFAULT_PROTOCOL


# `ccpt run`'s options that are Sweep fields or sampling settings (the task arguments' types are the signatures').
RUN_OPTIONS: dict[str, Any] = {
    "seeds": Seeds,
    "oracle_n": OracleN,
    "limit": at_most(1_000_000, low=0),  # 0: all; a split holds at most thousands of instances
    "max_connections": at_most(10_000),  # more concurrent requests than any server accepts
    "max_retries": at_most(100, low=0),  # each retry waits longer (exponential backoff)
    "timeout": at_most(86_400),  # a day per request
    "max_tokens": at_most(1_000_000),  # past every model's context window
    "temperature": Temperature,
    "top_p": UnitFloat,
}

# A run's identity is every argument that changes a number (docs/metrics.md, "Identity"): besides its task, model,
# method, judge and protocol, these task arguments (each → the methods whose numbers it changes; None: every
# method's), the instance set (`--limit`), the model's -M arguments but those in PLAIN_MODEL_ARGS, the dataset's
# version (its files' digest), the concept graph's (SA over ConceptNet) and the benchmark's.
# ccpt.results.inspect_logs.run_variant reads them from a log.
IDENTITY_ARGS: dict[str, tuple[str, ...] | None] = {
    "split": None,
    "exclude_toxic": None,
    "system_prompt": None,
    "seed": None,  # the base sampling seed; Task 3: the seed of its sampled items
    "judge_retries": None,
    "oracle_n": (MULTI_ORACLE,),
    "sa_max_iterations": SA_METHODS,
    "sa_epsilon": SA_METHODS,
    "sa_max_candidates": SA_METHODS,
}
# -M arguments that never change an answer: where the model is and how it is reached or billed (the endpoint is
# an identity of its own), and the scripted test model's pacing and call log.
PLAIN_MODEL_ARGS = frozenset({"base_url", "api_key", "timeout", "max_retries", "calls_file", "latency"})


def check(value: Any, declared: Any, name: str, hint: str | None = None) -> Any:
    """``value`` validated (and converted) by its ``declared`` type; else a CcptError line ``NAME=VALUE: why``."""
    adapter = declared if isinstance(declared, TypeAdapter) else TypeAdapter(declared)
    try:
        return adapter.validate_python(value)
    except ValidationError as exc:
        raise CcptError(f"{name}={shown(value)}: {_reason(exc.errors()[0])}", hint) from None
