"""The values of a run, declared once: each argument's type and range (the task signatures' ``-T`` values and
:data:`RUN_OPTIONS`, read by `ccpt run`'s options and :meth:`ccpt.eval.sweep.Sweep.validate`)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BeforeValidator, Field, Strict, TypeAdapter, ValidationError

from ccpt.errors import CcptError
from ccpt.protocol import PROTOCOLS
from ccpt.schemas.base import Count, UnitFloat, _no_bool, _reason, shown
from ccpt.spec import MULTI_ORACLE, SA_METHODS

AtLeastOne = Annotated[int, Field(ge=1), BeforeValidator(_no_bool)]
NonNegative = Annotated[float, Field(ge=0, allow_inf_nan=False)]  # NaN or inf would fail every request, locally
Positive = Annotated[float, Field(gt=0, allow_inf_nan=False)]  # e.g. an ensemble member's weight
Seed = Annotated[int, Field(ge=0, le=2**32 - 1), BeforeValidator(_no_bool)]  # NumPy refuses others
Switch = Annotated[bool, Strict()]  # strict: `flase`, `1` or `yes` is not spelled true/false
Split = Literal["test", "train"]
JudgeMode = Literal["text", "expected"]  # how a judge's score is read (ccpt.eval.judge)
ProtocolName = Literal[tuple(PROTOCOLS)]  # type: ignore[valid-type]

# `ccpt run`'s options that are Sweep fields or sampling settings (the task arguments' types are the signatures').
RUN_OPTIONS: dict[str, Any] = {
    "seeds": AtLeastOne,
    "oracle_n": AtLeastOne,
    "limit": Count,  # 0: all
    "max_connections": AtLeastOne,
    "max_retries": Count,
    "timeout": AtLeastOne,
    "max_tokens": AtLeastOne,
    "temperature": NonNegative,
    "top_p": UnitFloat,
}

# A run's identity is every argument that changes a number (docs/metrics.md, "Identity"): besides its task, model,
# method, judge and protocol, these task arguments (each → the methods whose numbers it changes; None: every
# method's), the instance set (`--limit`), the model's -M arguments but those in PLAIN_MODEL_ARGS, the dataset's
# version (its files' digest) and the benchmark's. ccpt.results.inspect_logs.run_variant reads them from a log.
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
