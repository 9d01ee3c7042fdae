"""The benchmark's vocabulary, each name defined once: the four tasks, the methods and the property types.

Methods are named here and defined, one module each, in :mod:`ccpt.methods`; other modules read these names
instead of comparing strings.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from ccpt.errors import CcptError

# The protocol a run follows when none is named (the protocols themselves are defined in ccpt.protocol).
DEFAULT_PROTOCOL = "ccpt"

# ----------------------------------------------------------------------------------------- property types

# The type of a property in a noun phrase (paper §3.1); the dataset keeps one file per type.
PropertyType = Literal["emergent", "component", "canceled"]
# A Task-3 label: a property type, or "others" (the property is none of the three for that phrase).
TypeLabel = Literal[PropertyType, "others"]
EMERGENT: PropertyType = "emergent"
COMPONENT: PropertyType = "component"
CANCELED: PropertyType = "canceled"
OTHERS: TypeLabel = "others"
# Paper order of Table 5's rows and columns (and of the Task-3 answer options).
TYPE_LABELS: tuple[TypeLabel, ...] = (EMERGENT, COMPONENT, CANCELED, OTHERS)
# Spellings of a type label that people, models and the released files use besides the canonical one.
TYPE_ALIASES: dict[str, TypeLabel] = {"cancelled": CANCELED, "other": OTHERS}


def type_label(text: str) -> TypeLabel | None:
    """The canonical type label of ``text`` (any case, aliases accepted), or None if it is not one."""
    label = text.strip().lower()
    label = TYPE_ALIASES.get(label, label)
    return label if label in TYPE_LABELS else None  # type: ignore[return-value]


# The property type a generative task asks for, which decides its score: emergence E or cancellation C (§4.3).
ScoredType = Literal["emergent", "canceled"]
SCORED_TYPES: tuple[ScoredType, ...] = (EMERGENT, CANCELED)

# ------------------------------------------------------------------------------------------------- tasks

TaskName = Literal["pi_emergent", "pi_canceled", "npc_emergent", "type_prediction"]
PI_EMERGENT: TaskName = "pi_emergent"
PI_CANCELED: TaskName = "pi_canceled"
NPC_EMERGENT: TaskName = "npc_emergent"
TYPE_PREDICTION: TaskName = "type_prediction"

# Prompt template names per method (``<task>_<template>.txt`` in ccpt.prompts).
BASE_TEMPLATE = "base"
COT_TEMPLATE = "cot"
SA_TEMPLATE = "sa"

# What the model answers: a property (PI), a noun phrase with its modifier (NPC) or a property type (Task 3).
Answer = Literal["property", "phrase", "type"]


@dataclass(frozen=True)
class TaskSpec:
    """One CCPT task: what the model sees and answers, and how the answer is checked."""

    name: TaskName
    kind: ScoredType | None  # the property type a generative task asks for (its score E or C); None for Task 3
    answer: Answer
    inputs: tuple[str, ...]  # instance fields shown to the model (never the gold answer)
    gold_field: str  # the instance field holding the gold answer
    data_file: str | None  # released file its test split indexes into (Task 3 samples all files)
    label: str  # display name in reports
    short: str  # column-header abbreviation
    paper_test_size: int | None  # test instances in the paper's split (the data pipeline's default)
    templates: tuple[str, ...] = (BASE_TEMPLATE, COT_TEMPLATE, SA_TEMPLATE)  # prompt templates the task has

    @property
    def generative(self) -> bool:
        """Whether the model generates an answer that the relevance judge rates (Tasks 1 and 2)."""
        return self.kind is not None

    @property
    def completes_phrase(self) -> bool:
        """Noun Phrase Completion: the answer is a noun phrase, judged with the gold property."""
        return self.answer == "phrase"

    def prompt_fields(self, meta: Mapping[str, Any]) -> dict[str, str]:
        """The instance fields the prompt may show (NPC never sees the gold combination/modifier)."""
        return {name: meta[name] for name in self.inputs}

    def gold_fields(self, meta: Mapping[str, Any]) -> dict[str, str]:
        """The annotated answer as the JSON object the model is asked for."""
        if self.answer == "phrase":
            return {"combination": meta["combination"], "modifier": meta["modifier"]}
        if self.answer == "property":
            return {"property": meta["property"]}
        return {"property_type": meta["gold_type"]}

    def gold_answer(self, meta: Mapping[str, Any]) -> str:
        """The annotated answer as a reply text (method ``gold``)."""
        return json.dumps(self.gold_fields(meta))

    def judged_pairs(
        self, meta: Mapping[str, Any], answer: str, modifier: str | None
    ) -> tuple[tuple[str, str, str], str]:
        """The three concepts (N, H, M) whose relevance to the property the judge rates, and that property (NPC:
        the answered phrase and modifier with the gold property; PI: the instance's concepts, the answered one)."""
        if self.completes_phrase:
            return (answer, meta["head"], str(modifier)), meta["property"]
        return (meta["combination"], meta["head"], meta["modifier"]), answer


_PI_INPUTS = ("combination", "head", "modifier")
TASK_SPECS: dict[str, TaskSpec] = {spec.name: spec for spec in (
    TaskSpec(name=PI_EMERGENT, kind=EMERGENT, answer="property", inputs=_PI_INPUTS, gold_field="property",
             data_file="ccpt_emergent", label="PI (1) Emergent", short="PI-Eme.", paper_test_size=200),
    TaskSpec(name=PI_CANCELED, kind=CANCELED, answer="property", inputs=_PI_INPUTS, gold_field="property",
             data_file="ccpt_canceled", label="PI (2) Canceled", short="PI-Can.", paper_test_size=167),
    # NPC is never shown the gold combination or modifier.
    TaskSpec(name=NPC_EMERGENT, kind=EMERGENT, answer="phrase", inputs=("head", "property"), gold_field="combination",
             data_file="ccpt_emergent", label="NPC (3) Emergent", short="NPC-Eme.", paper_test_size=167),
    TaskSpec(name=TYPE_PREDICTION, kind=None, answer="type", inputs=(*_PI_INPUTS, "property"), gold_field="gold_type",
             templates=(BASE_TEMPLATE,), data_file=None, label="Type prediction", short="Type", paper_test_size=None),
)}  # fmt: skip
TASKS: tuple[TaskName, ...] = tuple(TASK_SPECS)  # type: ignore[arg-type]
GENERATIVE_TASKS: tuple[TaskName, ...] = tuple(s.name for s in TASK_SPECS.values() if s.generative)


def task_spec(name: str) -> TaskSpec:
    """The spec of task ``name``; one CcptError line for an unknown name."""
    try:
        return TASK_SPECS[name]
    except KeyError:
        raise CcptError(f"unknown task {name!r}; choose one of {', '.join(TASKS)}") from None


# ----------------------------------------------------------------------------------------------- methods

BASE = "base"
COT = "cot"
MULTI_ORACLE = "multi_oracle"
SA_LLM = "sa_llm"
SA_CONCEPTNET = "sa_conceptnet"
SA_BOTH = "sa_both"
GOLD = "gold"
# The Gold row of a report computed from the dataset's stored GPT-4o judge scores (no run behind it).
GOLD_STORED = "gold_stored"
GOLD_STORED_LABEL = "Gold (stored GPT-4o judge)"  # its label in reports (no method may print under it)
# Spreading activation without Filter (Table 7's ablation) is ``<sa method>_nofilter``.
NOFILTER_SUFFIX = "_nofilter"

Source = Literal["llm", "conceptnet", "both"]
# Where each spreading-activation method takes its related concepts from (paper §4.1).
SA_SOURCES: dict[str, Source] = {SA_LLM: "llm", SA_CONCEPTNET: "conceptnet", SA_BOTH: "both"}
SA_METHODS: tuple[str, ...] = tuple(SA_SOURCES)
# Method names in the authors' result files → ccpt method names. Their Spreading Activation files name the
# source ("sa-llm&conceptnet" is both); the filter ablation puts REFERENCE_NOFILTER after "sa-"
# ("sa-nf-conceptnet"), and a per-step file (Table 6) ends its *file* name in "-<t>" (its columns do not say).
REFERENCE_METHODS: dict[str, str] = {
    "naive": BASE,
    "multi": MULTI_ORACLE,
    "cot": COT,
    "sa-llm": SA_LLM,
    "sa-conceptnet": SA_CONCEPTNET,
    "sa-llm&conceptnet": SA_BOTH,
}
REFERENCE_NOFILTER = "nf-"


def reference_method(raw: str) -> tuple[str, bool | None]:
    """``(ccpt method, sa_filter)`` of a method name in the authors' files, any case; unknown names pass through:
    ``sa-nf-conceptnet`` → (``sa_conceptnet``, False); ``naive`` → (``base``, None)."""
    head, sep, rest = raw.strip().lower().partition("-")
    sa_filter = not rest.startswith(REFERENCE_NOFILTER)
    method = REFERENCE_METHODS.get(head + sep + rest.removeprefix(REFERENCE_NOFILTER))
    if method is None or (not sa_filter and method not in SA_SOURCES):
        return raw, None
    return method, sa_filter if method in SA_SOURCES else None


def method_name(base: str, sa_filter: object) -> str:
    """The run name of a method from the tidy table's ``method`` and ``sa_filter`` columns."""
    return base + NOFILTER_SUFFIX if sa_filter is False else base


def split_method(name: str) -> tuple[str, bool | None]:
    """``(base, sa_filter)`` of a method name as stored in logs: ``sa_both_nofilter`` → (``sa_both``, False);
    ``sa_filter`` is None for a method without spreading activation (unknown names pass through)."""
    if name.endswith(NOFILTER_SUFFIX):
        return name.removesuffix(NOFILTER_SUFFIX), False
    return name, True if name in SA_SOURCES else None


# ------------------------------------------------------------------------------------------ test items

# What the SFT export (ccpt.export) keeps out of training data, rule by rule, in the order they are applied (a
# removed row is counted under the first rule it breaks). The first four guard the generative tasks' test items;
# the last two Task 3's, which are drawn from every row of the three files (a train row teaching N → P as an
# emergent or canceled property tells the type of the Task-3 pair (N, P)).
SFT_RULES: tuple[str, ...] = ("test row", "test (N, P)", "test (H, P)", "test N", "Task-3 row", "Task-3 (N, P)")
SFT_EXCLUDES = (
    "no test row of a generative task, no train row sharing a test item's (noun phrase, property), (head, "
    "property) or noun phrase, and no row that is a Task-3 item or shares a Task-3 item's (noun phrase, property)"
)
