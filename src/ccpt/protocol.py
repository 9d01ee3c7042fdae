"""Evaluation protocols (docs/methods.md, "Protocols"): ``ccpt``, the paper's method as printed with the authors'
code defects fixed, and ``as-run``, what the authors' code did. Everything that differs between them is a field of
:class:`Protocol`; no other module compares protocol names.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import pandas as pd

from ccpt.errors import CcptError
from ccpt.spec import (
    BASE,
    COT,
    DEFAULT_PROTOCOL,
    GENERATIVE_TASKS,
    GOLD,
    MULTI_ORACLE,
    NOFILTER_SUFFIX,
    SA_BOTH,
    SA_CONCEPTNET,
    SA_LLM,
)


@dataclass(frozen=True)
class CallSettings:
    """How one provider family is called (``None``: not sent, the provider's default applies); ``sequence_suffix``:
    one request per seed, the k-th with " Sequence: k" appended (the authors' Anthropic backend); ``total_length``:
    the authors' token limit counted the prompt too (recorded in a run's provenance; docs/methods.md);
    ``sa_union``: every Spreading Activation method activates a concept with both sources, the graph's neighbours
    first, then the model's list (the authors' open-model runs: their code loaded the ConceptNet cache for every
    method and a concept's candidates were the union of every source held for it; docs/methods.md)."""

    system_prompt: bool = True
    temperature: float | None = 0.7
    top_p: float | None = 0.95
    max_tokens: int | None = 2048  # reasoning models write long replies; a cut one cannot be parsed and is dropped
    sequence_suffix: bool = False
    total_length: bool = False
    sa_union: bool = False


@dataclass(frozen=True)
class SASettings:
    """Spreading Activation behaviour (see :mod:`ccpt.spreading.activation` for the algorithm)."""

    as_run: bool = False  # the authors' algorithm: ccpt.spreading.as_run.spread_activation_as_run
    # The activation and filter calls: ccpt's are greedy (temperature 0); as run they used the provider's
    # settings (the backend default: 0.7 for GPT-4o). Either way one expansion serves every seed of an instance.
    provider_sampling: bool = False
    prompt_variant: str | None = None  # activation/filter prompt files: sa_activate[_<variant>].txt


@dataclass(frozen=True)
class Protocol:
    """One evaluation protocol; the two instances are :data:`PROTOCOLS` (the defaults are ccpt's)."""

    name: str
    summary: str
    calls: Mapping[str, CallSettings]  # provider family → settings; key "*" is every other provider
    prompt_variant: str | None = None  # task prompt files <task>_<method>_<variant>.txt override the default ones
    sa: SASettings = SASettings()
    judge_template: str = "judge"  # prompt file of the judge
    judge_capitalise: bool = False  # the concept's first letter is upper-cased in the judge prompt
    judge_lowercase_reply: bool = False  # the reply is lower-cased before it is parsed
    judge_retry_temperature: float = 0.7  # a retry's temperature (each retry has a new seed: never a cached repeat)
    judge_retries: int = 2  # further judge attempts after an unparsable reply, unless -T judge_retries says
    judge_schema: bool | None = None  # constrain the judge to JSON where the provider can (None: where supported)
    fill_failures: bool = False  # the report fills a failed sample from another seed (counted in the Failures table)
    npc_as_run: bool = False  # NPC: the authors' modifier (spaCy lemma), answers without the head noun judged
    # Task 3: "others" pairs mix the combinations and properties of the 750 sampled typed rows, unchecked (as run:
    # 3 of the authors' 250 are annotated pairs) instead of any dataset rows with annotated pairs rejected.
    others_from_sample: bool = False
    stored_combinations: bool = False  # combinations as the dataset's files wrote them, trailing punctuation kept
    methods: tuple[str, ...] | None = None  # methods the protocol describes; None: all
    provider_dependent: bool = False  # call settings differ per provider (decided per call)

    def call_settings(self, model: str) -> CallSettings:
        """The settings for ``model`` (an Inspect model name such as ``openai/gpt-4o``)."""
        provider = model.split("/", 1)[0]
        family = "openai" if provider == "azureai" else provider  # the authors' backend for Inspect's provider
        if family == "openai" and model.split("/")[-1].startswith(("o1", "o3", "o4")):  # reasoning models
            family = "openai-reasoning"
        return self.calls.get(family, self.calls["*"])

    def check_method(self, method: str) -> None:
        """Raise a CcptError (one line) for a method this protocol does not describe."""
        if self.methods is not None and method not in self.methods:
            raise CcptError(
                f"protocol {self.name!r} has no method {method!r}: the authors never ran it; "
                f"choose one of {', '.join(self.methods)} or use --protocol ccpt"
            )


CCPT = Protocol(
    name="ccpt",
    summary="the paper's method as printed, with the authors' code defects fixed and independent seeds",
    calls=MappingProxyType({"*": CallSettings()}),
)

AS_RUN = Protocol(
    name="as-run",
    summary="what the authors' released code ran to produce the paper's tables",
    calls=MappingProxyType(
        {
            # OpenAI: the system prompt was built but never sent; top_p never sent; 1024 new tokens.
            "openai": CallSettings(system_prompt=False, temperature=0.7, top_p=None, max_tokens=1024),
            # o1 / o-series: the API defaults and no token cap (a cap also counts their reasoning tokens).
            "openai-reasoning": CallSettings(system_prompt=False, temperature=None, top_p=None, max_tokens=None),
            # Anthropic: the backend's default temperature 1.0 (callers passed none), 2048 tokens, one request per
            # seed with " Sequence: k" appended.
            "anthropic": CallSettings(
                system_prompt=True, temperature=1.0, top_p=None, max_tokens=2048, sequence_suffix=True
            ),
            # Ollama's native API (most Qwen2.5-72B cells): user turn only, nothing passed, so the server's defaults
            # applied. Inspect's ollama provider speaks the OpenAI-compatible /v1, which fills 1.0 for what is not
            # sent: ccpt sends Ollama's native defaults instead (an estimate: docs/methods.md, "Qwen's backend").
            "ollama": CallSettings(system_prompt=False, temperature=0.8, top_p=0.9, max_tokens=None, sa_union=True),
            # Local models (transformers: Llama-3.1-70B, two Qwen files): chat template with the system prompt,
            # 0.7 + 0.01, the model's own top_p, max_length 2048 counting the prompt (sent as an answer cap).
            "*": CallSettings(
                system_prompt=True, temperature=0.71, top_p=None, max_tokens=2048, total_length=True, sa_union=True
            ),
        }
    ),
    prompt_variant="asrun",
    sa=SASettings(as_run=True, provider_sampling=True, prompt_variant="asrun"),
    judge_template="judge_asrun",
    judge_capitalise=True,
    judge_lowercase_reply=True,
    judge_retry_temperature=0.0,  # the authors retried at 0 (GPT-4o is not deterministic at 0)
    judge_retries=3,  # the authors' judge made 4 attempts
    judge_schema=False,  # the authors read the integer from free text
    fill_failures=True,
    npc_as_run=True,
    others_from_sample=True,
    stored_combinations=True,  # the authors' prompts and judge had "a beaten dog,", "old ivory," as written
    # The paper's methods (Table 3) and its filter ablation, which it ran with ConceptNet only (Table 7);
    # gold is the annotated answers under the run's judge (the paper's Gold row).
    methods=(BASE, COT, MULTI_ORACLE, SA_LLM, SA_CONCEPTNET, SA_BOTH, SA_CONCEPTNET + NOFILTER_SUFFIX, GOLD),
    provider_dependent=True,
)

PROTOCOLS: Mapping[str, Protocol] = MappingProxyType({p.name: p for p in (CCPT, AS_RUN)})


def get_protocol(name: str | Protocol | None) -> Protocol:
    """The protocol called ``name`` (None: the default); a CcptError naming the choices otherwise."""
    if isinstance(name, Protocol):
        return name
    try:
        return PROTOCOLS[DEFAULT_PROTOCOL if name is None else str(name)]
    except KeyError:
        raise CcptError(f"unknown protocol {name!r}; choose one of {', '.join(PROTOCOLS)}") from None


# Per-answer fields a filled sample takes over from the seed it is filled from.
_FILLED_FIELDS = ("answer", "answer_modifier", "r_np", "r_hp", "r_mp", "r_hmp", "score")
# One answer slot across seeds: everything that identifies a sample except the seed.
_SLOT = ("task", "model", "method", "sa_filter", "judge", "instance", "sample", "sa_iteration", "protocol")
FILLED = "filled_from_seed"


def fill_failed_samples(frame: pd.DataFrame) -> pd.DataFrame:
    """Fill, for protocols with ``fill_failures`` (as-run), each unscored generative sample from the first seed
    with a score, as the authors' pipeline did; the row stays a failure, its donor seed in :data:`FILLED`."""
    out = frame.copy()
    out[FILLED] = pd.array([pd.NA] * len(out), dtype="Int64")
    if out.empty or "protocol" not in out:
        return out
    fills = out["protocol"].map(lambda p: isinstance(p, str) and p in PROTOCOLS and PROTOCOLS[p].fill_failures)
    mask = (fills.astype(bool) & out["task"].isin(GENERATIVE_TASKS)).to_numpy()
    candidates = out[mask].assign(_row=np.flatnonzero(mask))  # positions: the index need not be unique
    if candidates.empty:
        return out
    # Each slot's donor is its scored sample of the lowest seed; merge matches missing keys (no SA step) to each
    # other, as the slot grouping does. One merge, not a Python loop over slots (a stored paper's 45k rows).
    keys = list(_SLOT)
    scored = candidates[candidates["score"].notna()].sort_values("seed", kind="stable")
    donors = scored.drop_duplicates(keys)[[*keys, "seed", *_FILLED_FIELDS]]
    failed = candidates.loc[candidates["score"].isna(), [*keys, "_row"]]
    filled = failed.merge(donors, on=keys, how="inner", validate="many_to_one")
    rows = filled["_row"].to_numpy()
    for name in _FILLED_FIELDS:
        out.iloc[rows, out.columns.get_loc(name)] = filled[name].to_numpy()
    out.iloc[rows, out.columns.get_loc(FILLED)] = pd.array(filled["seed"], dtype="Int64")
    return out
