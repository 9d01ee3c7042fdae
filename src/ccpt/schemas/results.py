"""Schemas of the result files ccpt reads into the tidy table: the authors' result CSVs and tidy tables."""

from __future__ import annotations

import functools
from typing import Annotated, Any, Literal, NotRequired

from pydantic import BeforeValidator, Field
from typing_extensions import TypedDict

from ccpt.schemas.base import (
    DERIVED,
    KEY,
    Blank,
    CellFlag,
    CellText,
    Count,
    Label,
    OptionalCount,
    OptionalLabel,
    OptionalText,
    Relevance,
    TableSchema,
    Text,
    column,
    role,
)
from ccpt.schemas.run import MAX_SAMPLES, MAX_SEEDS, ProtocolName
from ccpt.spec import TASKS


@functools.lru_cache(maxsize=64)
def _split_replies(text: str) -> tuple[str, ...] | None:
    """A cell's replies, decoded once: a row's samples share one cell of generations (five for Multi-Oracle)."""
    from ccpt.answers import split_reply_list

    items = split_reply_list(text)
    return None if items is None else tuple(items)


def _reply_list(value: Any) -> Any:
    if value is None:  # empty (or set aside)
        return None
    items = _split_replies(value) if isinstance(value, str) else None
    if items is None:
        raise ValueError('not a list of generations (a Python list of strings, e.g. [\'{"property": "red"}\'])')
    return list(items)


ReplyList = Annotated[list[str] | None, BeforeValidator(_reply_list), Blank]


# ------------------------------------------------------------------------------------- authors' files


class AuthorsRow(TypedDict):
    """The instance columns of a row of an authors' generative result file."""

    combination: Annotated[Text | None, column("combination", "the noun phrase N", nonempty=True)]
    root: Annotated[Text | None, column("root", "the head noun H", nonempty=True)]
    modifier: Annotated[Text | None, column("modifier", "the modifier M", nonempty=True)]
    property: Annotated[Text | None, column("property", "the property P", nonempty=True)]
    head_relevance: NotRequired[
        Annotated[
            Relevance,
            column("meta.root_<judge>_relevance", "NPC only: the stored judge relevance of (H, P), used as R_H,P"),
        ]
    ]


class AuthorsSample(TypedDict, total=False):
    """One sample of one run (``<run>`` = ``<model>_<method>_<seed>[_<sample>]``) of an authors' file."""

    generated_: Annotated[
        ReplyList,
        column("<model>_<method>_<seed>_generated_", "the raw replies of a seed, one per sample; not needed by "
               "the tables (only ``answer_raw`` and ``parse_ok`` come from it)"),
    ]  # fmt: skip
    answer: Annotated[OptionalText, column("<run>_property | <run>_combination", "the answer the authors judged")]
    answer_modifier: Annotated[OptionalText, column("<run>_modifier", "NPC: the modifier of the judged phrase")]
    combination_relevance: Annotated[Relevance, column("<run>_combination_relevance", "R_N,P")]
    root_relevance: Annotated[Relevance, column("<run>_root_relevance", "PI: R_H,P")]
    modifier_relevance: Annotated[Relevance, column("<run>_modifier_relevance", "R_M,P")]
    indiv_max: Annotated[Relevance, role(DERIVED, "R_H,M,P = max(R_H,P, R_M,P)", **{"x-column": "<run>_indiv_max"})]
    emergence: Annotated[Relevance, role(DERIVED, "E", **{"x-column": "<run>_emergence"})]
    cancellation: Annotated[Relevance, role(DERIVED, "C", **{"x-column": "<run>_cancellation"})]


class AuthorsTypeRow(TypedDict):
    """A row of the authors' Task-3 file (``tp_<model>_<method>.csv``)."""

    combination: Annotated[Text | None, column("combination", "the noun phrase N", nonempty=True)]
    property: Annotated[Text | None, column("property", "the property P", nonempty=True)]
    gold_type: Annotated[Label | None, column("human_label_majority", "the gold type (any case)", nonempty=True)]
    generated_: Annotated[ReplyList, column("<model>_generated_", "the raw reply, in a one-item list")]


AUTHORS_ROW = TableSchema(
    "authors' result file: instance columns",
    AuthorsRow,
    "ccpt report, ccpt compare, ccpt.load_results (a CSV that is not a tidy table)",
    "The test rows of a task with the dataset's columns, one row per instance. A rejected cell makes every "
    "sample of its row a counted failure (instance id by position when the row cannot be matched).",
    rules=(
        "Required columns: combination, root, modifier, property; NPC files also meta.root_<judge>_relevance.",
        "With --data-dir each row must be a row of the task's test split (matched on combination + property).",
    ),
)
AUTHORS_SAMPLE = TableSchema(
    "authors' result file: run columns",
    AuthorsSample,
    "ccpt report, ccpt compare, ccpt.load_results",
    "Per run and sample, in columns named <model>_<method>_<seed>[_<sample>]_<field> (the model name may hold "
    "any character). A rejected relevance makes that sample a counted failure; a rejected raw-reply cell only "
    "loses the raw text (the judged answer and relevances are intact); a rejected derived cell is ignored.",
    rules=(
        "Each run needs combination_relevance and modifier_relevance columns (PI also root_relevance) per sample.",
        "Stored indiv_max / emergence / cancellation are compared with the recomputed values; a mismatch is noted.",
    ),
)
AUTHORS_TYPE = TableSchema(
    "authors' Task-3 file",
    AuthorsTypeRow,
    "ccpt report, ccpt.load_results",
    "One row per Task-3 item and one raw-reply column per model. A rejected gold label or reply makes that "
    "sample a counted failure.",
    rules=("Required columns: combination, property, human_label_majority, and one <model>_generated_ column.",),
)

# ------------------------------------------------------------------------------------------ tidy table


class TidyRow(TypedDict):
    """One sample of the tidy table (docs/metrics.md, "Per-sample results")."""

    task: Annotated[Literal[TASKS], role(KEY, "the task")]  # type: ignore[valid-type]
    model: Annotated[Text, role(KEY, "the model answering")]
    method: Annotated[Text, role(KEY, "the method's base name")]
    method_raw: CellText
    # Bounded as `ccpt run` bounds --seeds and a method's samples: a huge seed was read as one more seed of the run.
    seed: Annotated[Count, Field(lt=MAX_SEEDS), role(KEY, f"the seed (below {MAX_SEEDS:,}, as --seeds)")]
    instance: Annotated[Text, role(KEY, "the instance id")]
    sample: Annotated[
        Count, Field(lt=MAX_SAMPLES), role(KEY, f"the Multi-Oracle member (0 otherwise; below {MAX_SAMPLES})")
    ]
    combination: CellText
    head: CellText
    modifier: CellText
    property: CellText
    answer_raw: CellText
    answer: CellText
    answer_modifier: CellText
    parse_ok: Annotated[CellFlag, column("parse_ok", "whether the reply parsed (empty or rejected = no)")]
    parse_error: CellText
    r_np: Annotated[Relevance, column("r_np", "R_N,P")]
    r_hp: Annotated[Relevance, column("r_hp", "R_H,P")]
    r_mp: Annotated[Relevance, column("r_mp", "R_M,P")]
    r_hmp: Annotated[Relevance, role(DERIVED, "R_H,M,P = max(r_hp, r_mp)")]
    score: Annotated[Relevance, role(DERIVED, "E or C of the task, from r_np and r_hmp")]
    judge: CellText
    # One per relevance the judge failed to give (ccpt.eval.scorers): a row has three pairs to judge.
    judge_failures: Annotated[Annotated[Count, Field(le=3)] | None, Blank, Field(description="failed pairs (≤ 3)")]
    gold_type: Annotated[OptionalLabel, column("gold_type", "Task 3: the gold type")]
    pred_type: Annotated[OptionalLabel, column("pred_type", "Task 3: the predicted type")]
    sa_iteration: Annotated[OptionalCount, role(KEY, "Table 6: the SA step the answer came from")]
    sa_filter: Annotated[CellFlag, role(KEY, "SA with (true) or without (false) Filter")]
    source: CellText
    protocol: Annotated[ProtocolName | None, Blank, role(KEY, "the protocol (empty in old tables: ccpt)")]
    invalid_cells: NotRequired[Annotated[OptionalCount, column("invalid_cells", "cells set aside when read")]]
    variant: NotRequired[
        Annotated[OptionalText, role(KEY, "the run's other number-changing arguments, as JSON (empty: unrecorded)")]
    ]
    sa_failed_steps: NotRequired[
        Annotated[OptionalCount, column("sa_failed_steps", "SA expansion steps with an unreadable model reply")]
    ]


TIDY = TableSchema(
    "tidy table",
    TidyRow,
    "ccpt report, ccpt compare, ccpt human export-ratings, ccpt.load_results (.csv with the tidy columns, .parquet, "
    "and the per-sample records ccpt's scorer stores in Inspect logs)",
    "What `ccpt report --tidy` and `ccpt human import-solver` write: one row per sample. A rejected value is "
    "set aside and counted in the sample's invalid_cells; a rejected key cell rejects the file. The records of an "
    "Inspect log are checked the same way (r_hmp and score are computed from the relevances, not read); a log whose "
    "record lacks a key (task, instance, seed, …), a log of another task than ccpt's, and a file in a directory "
    "that is not a regular file (a FIFO) are skipped and named; a FIFO or device given by name is refused.",
    # With the source file: the same sample read from two files (an SA per-step file and its main file, say) is
    # two rows of the table as it was exported; twice from one file, it would be counted twice.
    unique=(("source", "task", "model", "method", "sa_filter", "judge", "seed", "instance", "sample",
             "sa_iteration", "protocol", "variant"),),
    rules=(
        "Required columns: every column of docs/metrics.md \"Per-sample results\" (protocol, invalid_cells, "
        "sa_failed_steps and variant may be absent in tables written by older versions).",
        "r_hmp and score are recomputed from r_np, r_hp, r_mp; stored values that differ are reported.",
        "A Task-3 row with a rejected gold_type or pred_type is unscored (counted).",
    ),
)  # fmt: skip
