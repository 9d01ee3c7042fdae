"""Schemas of the sheets people fill in (solver and rating sheets, annotation answers) and of judge-score pairs.

A rejected cell rejects a sheet (the person who filled it can fix it; guessing would put a number in their name).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, NotRequired

from pydantic import BeforeValidator, Field
from typing_extensions import TypedDict

from ccpt.schemas.base import KEY, Likert, OptionalText, Rating10, Relevance, TableSchema, Text, _no_bool, column, role
from ccpt.spec import GENERATIVE_TASKS, TASKS, TYPE_LABELS, PropertyType, ScoredType, type_label

# The judged pairs of a generative answer, by the tidy table's relevance column: (N, P), (H, P), (M, P).
JUDGED_ROLES: tuple[str, ...] = ("r_np", "r_hp", "r_mp")
# Appendix A.3, Q3 (where a component property comes from): options 1..5, with the released files' names.
SOURCE_OPTIONS: tuple[str, ...] = ("combination", "root", "modifier", "both", "nope")
_TRUE, _FALSE = ("1", "true", "yes", "on", "x"), ("", "0", "false", "no", "off")

Task = Literal[TASKS]  # type: ignore[valid-type]
Role = Literal[JUDGED_ROLES]  # type: ignore[valid-type]

# ------------------------------------------------------------------------------------------- solver sheet


class SolverRow(TypedDict):
    """A row of a filled solver sheet (``ccpt human export-solver``)."""

    id: Annotated[Text, role(KEY, "the item id, as exported")]
    task: Annotated[Task, role(KEY, "the task (one per sheet)")]
    question: NotRequired[OptionalText]
    answer: Annotated[OptionalText, column("answer", "the person's answer; empty = not answered (a counted failure)")]
    answer_modifier: NotRequired[Annotated[OptionalText, column("answer_modifier", "NPC: the modifier")]]
    rater: NotRequired[Annotated[OptionalText, role(KEY, "who answered (each rater is a seed)")]]


SOLVER = TableSchema(
    "solver sheet",
    SolverRow,
    "ccpt human import-solver",
    "A question sheet filled by people. Task 3 answers must be a type label (else a counted parse failure).",
    unique=(("rater", "id"),),
    rules=(
        "Every id must be an item of the sheet's task (the sheet was exported for it), and its question the one "
        "exported for it (case, spaces and line breaks aside).",
    ),
    tolerant=False,
)

# ------------------------------------------------------------------------------------------- rating sheets


class RatingKeyRow(TypedDict):
    """A row of a rating key (``key.csv`` of ``ccpt human export-ratings``): what each rated pair belongs to."""

    pair_id: Annotated[Text, role(KEY, "the pair, shared by identical (concept, property) pairs")]
    task: Annotated[Literal[GENERATIVE_TASKS], role(KEY, "the task of the answer")]  # type: ignore[valid-type]
    model: Annotated[Text, role(KEY, "the model that answered")]
    method: Annotated[Text, role(KEY, "its method")]
    instance: Annotated[Text, role(KEY, "the instance")]
    role: Annotated[Role, role(KEY, "which relevance of the answer the pair is")]
    concept: NotRequired[OptionalText]
    property: NotRequired[OptionalText]
    llm_judge: Annotated[Relevance, column("llm_judge", "the LLM judge's relevance of the pair")]


class RatingRow(TypedDict):
    """A row of a filled rating sheet (``rater_<k>.csv``)."""

    pair_id: Annotated[Text, role(KEY, "the pair (must be in the key)")]
    concept: NotRequired[OptionalText]
    property: NotRequired[OptionalText]
    rater: Annotated[Text, role(KEY, "who rated")]
    rating: Annotated[Rating10 | None, BeforeValidator(lambda v: None if v is None or not str(v).strip() else v)]


RATING_KEY = TableSchema(
    "rating key",
    RatingKeyRow,
    "ccpt human import-ratings --key",
    "Written by ccpt human export-ratings; keep it from the raters.",
    unique=(("task", "model", "method", "instance", "role"),),
    tolerant=False,
)
RATINGS = TableSchema(
    "rating sheet",
    RatingRow,
    "ccpt human import-ratings",
    "A Figure-8 sheet filled by one rater: rating 1-10, empty = not rated.",
    unique=(("rater", "pair_id"),),
    rules=(
        "Each rater × pair may appear once across all the sheets given (a repeated row, or two sheets under "
        "one rater's name, would count a rating twice).",
        "Every pair_id must be in the key, with the key's concept and property (case and outer spaces aside): "
        "sheets of another export number their pairs alike.",
    ),
    tolerant=False,
)

# ------------------------------------------------------------------------------------- annotation answers


def _answer_label(value: Any) -> Any:
    text = str(value).strip().lower() if value is not None else ""
    if text in ("0", "1", "2"):
        return text  # a form's option code, mapped per form by the reader
    label = type_label(text)
    if label is None:
        raise ValueError(f"not a label ({', '.join(TYPE_LABELS)} or 0-2)")
    return label


def _toxic(value: Any) -> Any:
    text = str(value).strip().lower() if value is not None else ""
    if text in _TRUE or text in _FALSE:
        return text in _TRUE
    raise ValueError("toxic must be true/false (1/0, yes/no, x or empty)")


def _source(value: Any) -> Any:
    text = str(value).strip().lower() if value is not None else ""
    if not text:
        return None
    if text.isdigit() and 1 <= int(text) <= len(SOURCE_OPTIONS):
        return SOURCE_OPTIONS[int(text) - 1]
    if text in SOURCE_OPTIONS:
        return text
    raise ValueError(f"source must be 1-5 or one of {', '.join(SOURCE_OPTIONS)}")


class AnswerRow(TypedDict):
    """One annotator's answer to one HIT (our template, or a platform's ``Input.``/``Answer.`` batch results)."""

    hit_id: Annotated[Text, role(KEY, "the HIT (must be in hits.csv)")]
    worker_id: Annotated[OptionalText, role(KEY, "the annotator (WorkerId); empty = one per line")]
    label: Annotated[str, BeforeValidator(_answer_label), column("label", "a label of the HIT's form, or 0-2")]
    combination_relevance: Annotated[Likert, column("combination_relevance", "Q1-1, 1-5")]
    root_relevance: Annotated[Likert, column("root_relevance", "Q1-2, 1-5")]
    modifier_relevance: Annotated[Likert, column("modifier_relevance", "Q1-3, 1-5")]
    toxic: Annotated[bool, BeforeValidator(_toxic), column("toxic", "true/false, 1/0, yes/no, x; empty = no")]
    source: NotRequired[
        Annotated[str | None, BeforeValidator(_source), column("source", "component HITs: 1-5 or a name")]
    ]


ANSWERS = TableSchema(
    "annotation answers",
    AnswerRow,
    "ccpt pipeline annotate-import, [annotate] answers",
    "One row per assignment; rows with an empty label are unanswered assignments (counted).",
    unique=(("hit_id", "worker_id"),),
    rules=(
        "A HIT may have at most as many answers as it has assignments (hits.csv).",
        "A row showing its HIT's root, modifier, combination or property (the template's and the app's combination "
        "and property columns, a platform's Input.<name>) must show the HIT's in hits.csv (case and spaces aside): "
        "every export numbers its HITs alike.",
        "The label must be an option of the HIT's form (emergent form: emergent, component, others; canceled "
        "form: canceled, component, others; or the option code 0-2).",
    ),
    tolerant=False,
)

# ------------------------------------------------------------------------------------------ exported sheets


class HitRow(TypedDict):
    """A row of ``hits.csv`` (``ccpt pipeline annotate-export``): one HIT to annotate."""

    hit_id: Annotated[Text, role(KEY, "the HIT")]
    form: Annotated[ScoredType, column("form", "the annotation form it is asked on")]
    candidate_type: Annotated[PropertyType, column("candidate_type", "the candidate's type when mined")]
    assignments: Annotated[int, Field(ge=1), BeforeValidator(_no_bool), column("assignments", "annotators asked")]
    root: Annotated[Text, column("root", "the head noun H")]
    modifier: Annotated[Text, column("modifier", "the modifier M")]
    combination: Annotated[Text, column("combination", "the noun phrase N")]
    property: NotRequired[Annotated[OptionalText, column("property", "the property P")]]


HITS = TableSchema(
    "annotation HITs",
    HitRow,
    "ccpt pipeline annotate-import, ccpt human serve (the annotation study)",
    "hits.csv as ccpt pipeline annotate-export writes it; other columns (sentence, question, …) are kept as text.",
    unique=(("hit_id",),),
    tolerant=False,
)


class QuestionRow(TypedDict):
    """A row of an exported solver sheet as the web app reads it: what the page shows."""

    id: Annotated[Text, role(KEY, "the item id")]
    task: Annotated[Task, role(KEY, "the task (the file is <task>_sheet.csv)")]
    combination: OptionalText
    head: OptionalText
    modifier: OptionalText
    property: OptionalText
    question: Annotated[Text, column("question", "the question as the page shows it")]


QUESTIONS = TableSchema(
    "solver question sheet",
    QuestionRow,
    "ccpt human serve (the solver study)",
    "<task>_sheet.csv as ccpt human export-solver writes it; only its display columns are read (no gold answer).",
    unique=(("id",),),
    rules=("Every row's task is the one the file is named after.",),
    tolerant=False,
)

# ---------------------------------------------------------------------------------------- judge-score pairs


class PairRow(TypedDict):
    """A pair to judge (``ccpt judge score``); every other column is kept as it is."""

    concept: Annotated[Text | None, column("concept", "the concept (noun phrase, head or modifier)", nonempty=True)]
    property: Annotated[Text | None, column("property", "the property", nonempty=True)]


PAIRS = TableSchema(
    "judge-score pairs",
    PairRow,
    "ccpt judge score",
    "Any CSV with concept and property columns. A pair with an empty concept or property is not judged: its "
    "relevance is empty and it is counted; the rest are scored.",
    rules=(
        "Each header appears once (a repeated concept column would score the wrong one).",
        "No relevance column yet (it is what the command adds).",
    ),
)
