"""Schema of the dataset's CSV files: one annotated triplet per row; the first rejected cell rejects the file."""

from __future__ import annotations

from typing import Annotated, Any, NotRequired

from pydantic import BeforeValidator, Field
from typing_extensions import TypedDict

from ccpt.schemas.base import Flag, Likert, OptionalText, Relevance, TableSchema, Text, _label, column
from ccpt.spec import OTHERS


def _dataset_label(value: Any) -> Any:
    # A type label in any case, or the emergent file's raw code 2, "others" (ccpt.dataset's docstring).
    return OTHERS if isinstance(value, str) and value.strip() == "2" else _label(value, ", or the raw code 2")


def _tuple_items(value: Any) -> Any:
    """Items of a stringified Python tuple such as ``"(5, 5, 3)"`` or ``"(component, )"``."""
    if not isinstance(value, str):
        return value
    text = value.strip()
    if not (text.startswith("(") and text.endswith(")")):
        raise ValueError("not a tuple like '(a, b, c)'")
    return [item.strip().strip("'\"") for item in text[1:-1].split(",") if item.strip()]


DatasetLabel = Annotated[str, BeforeValidator(_dataset_label), Field(json_schema_extra={"x-type": "type label or 2"})]
Labels = Annotated[
    list[DatasetLabel],
    BeforeValidator(_tuple_items),
    Field(min_length=1, json_schema_extra={"x-type": "tuple of type labels, e.g. (emergent, 2, emergent)"}),
]
Ratings = Annotated[
    list[Likert],
    BeforeValidator(_tuple_items),
    Field(min_length=1, json_schema_extra={"x-type": "tuple of integers 1–5, e.g. (5, 5, 3)"}),
]


class DatasetRow(TypedDict):
    """A row of a dataset CSV, by field name (:data:`DATASET_COLUMNS` maps each to its header)."""

    sentence: Annotated[OptionalText, column("sentence", "the annotators' example sentence (empty in some rows)")]
    combination: Annotated[Text, column("combination", "the noun phrase N (trailing punctuation is stripped)")]
    root: Annotated[Text, column("root", "the head noun H")]
    modifier: Annotated[Text, column("modifier", "the modifier M")]
    property: Annotated[Text, column("property", "the property P")]
    human_label_majority: Annotated[DatasetLabel, column("human_label_majority", "the majority type")]
    human_labels: Annotated[Labels, column("meta.human_labels", "each annotator's type")]
    combination_ratings: Annotated[Ratings, column("meta.combination_human_relevance", "human relevance of (N, P)")]
    head_ratings: Annotated[Ratings, column("meta.root_human_relevance", "human relevance of (H, P)")]
    modifier_ratings: Annotated[Ratings, column("meta.modifier_human_relevance", "human relevance of (M, P)")]
    toxic: Annotated[Flag, column("meta.toxicity", "flagged toxic (True/False)")]
    judge_combination: NotRequired[
        Annotated[Relevance, column("meta.combination_gpt-4o_relevance", "emergent/canceled: GPT-4o's R_N,P")]
    ]  # fmt: skip
    judge_head: NotRequired[
        Annotated[Relevance, column("meta.root_gpt-4o_relevance", "emergent/canceled: GPT-4o's R_H,P")]
    ]
    judge_modifier: NotRequired[
        Annotated[Relevance, column("meta.modifier_gpt-4o_relevance", "emergent/canceled: GPT-4o's R_M,P")]
    ]  # fmt: skip
    judge_score: NotRequired[
        Annotated[Relevance, column("meta.gpt-4o_emergence | meta.gpt-4o_cancellation",
                                    "emergent: GPT-4o's E; canceled: its C")]
    ]  # fmt: skip
    property_source: NotRequired[
        Annotated[OptionalText, column("meta.property_source", "component rows: where the property comes from")]
    ]


SCORE_COLUMN: dict[str, str] = {"ccpt_emergent": "meta.gpt-4o_emergence", "ccpt_canceled": "meta.gpt-4o_cancellation"}

DATASET = TableSchema(
    "dataset CSV",
    DatasetRow,
    "ccpt.load_dataset (every command that reads the dataset)",
    "ccpt_emergent.csv, ccpt_canceled.csv, ccpt_component.csv and add_ccpt_emergent.csv: one annotated triplet "
    "per row. The stored GPT-4o relevances are the Gold row's answers and the reference of judge agreement, so "
    "none can be set aside: the first rejected cell rejects the file.",
    rules=(
        "Emergent and canceled files need the four GPT-4o columns (relevances of N, H, M and E or C); an empty "
        "cell is not judged (the data-construction pipeline writes its rows so); component files need "
        "meta.property_source.",
        "The canceled file's legacy column meta.modifier_gpt4o_relevance (185 empty cells) is not read.",
    ),
    tolerant=False,
)
# field -> header in the files, as declared above (judge_score's header depends on the file: SCORE_COLUMN)
DATASET_COLUMNS: dict[str, str] = {n: DATASET.header(n) for n in DatasetRow.__annotations__ if n != "judge_score"}
