"""Schemas of the JSON files ccpt reads: the dataset's ``test_index.json`` and the judge-agreement store."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, Strict, create_model, model_validator

from ccpt.schemas.base import Count, FileFormat, Unique, _no_bool
from ccpt.spec import GENERATIVE_TASKS

# ------------------------------------------------------------------------------------------ test index

RowNumbers = Annotated[
    list[Annotated[int, Strict(), Field(ge=0)]],
    Unique,
    # An empty split has no instance to evaluate and no mean to report: a file with one is not a test index.
    Field(min_length=1, description="0-based row positions into the task's file, each once, at least one"),
]
TestIndex: type[BaseModel] = create_model(  # one key per generative task, spelled once in ccpt.spec
    "TestIndex",
    __config__=ConfigDict(extra="ignore"),
    __doc__="test_index.json: the test split of each generative task.",
    **{task: (RowNumbers, ...) for task in GENERATIVE_TASKS},  # type: ignore[call-overload]
)

TEST_INDEX = FileFormat(
    "test_index.json",
    TestIndex,
    "ccpt.load_dataset (every command that reads the dataset)",
    "The dataset's test splits: a JSON object with a list of row numbers per generative task (PI-emergent and "
    "NPC-emergent index ccpt_emergent.csv, PI-canceled ccpt_canceled.csv).",
    rules=("Every row number must be a row of the task's file.", "Other keys are ignored."),
)

# ------------------------------------------------------------------------------------- agreement store

# ``true`` is no correlation (pydantic would read it as 1.0: "r 1.00" quoted for a forged entry), nor is the text
# "0.5" (the store is JSON, its numbers are numbers; read as text it was an internal error in every report).
Correlation = Annotated[float, Strict(), Field(ge=-1, le=1, allow_inf_nan=False), BeforeValidator(_no_bool)]


class AgreementEntry(BaseModel):
    """One judge's measured agreement with the human ratings (``ccpt judge-agreement --judge MODEL``)."""

    model_config = ConfigDict(extra="allow")

    n: Count = Field(description="pairs the correlations are over")
    n_missing: Count = Field(0, description="pairs of the set without a judge score, left out of n")
    n_resamples: Count = Field(0, description="bootstrap resamples of the intervals")
    pearson: Correlation | None = Field(None, description="Pearson r with the mean human rating (null: undefined)")
    spearman: Correlation | None = Field(None, description="Spearman ρ (null: undefined)")
    pearson_ci: tuple[Correlation, Correlation] | None = Field(None, description="95% bootstrap CI of r")
    spearman_ci: tuple[Correlation, Correlation] | None = Field(None, description="95% bootstrap CI of ρ")
    pairs: str | None = Field(None, description="the pair set (test, paper300, all); reports quote test, paper300")
    rows: Count | None = Field(None, description="rows sampled from the pair set (absent: all of its rows)")
    mode: Literal["text", "expected"] | None = Field(None, description="how the judge's score was read")
    measured: str | None = Field(None, description="the date of the measurement")
    command: str | None = Field(None, description="the command that measured it")

    @model_validator(mode="after")
    def _interval_holds_estimate(self) -> AgreementEntry:
        # An interval that does not hold its estimate (inverted, or of another figure) was not measured with it.
        for name in ("pearson", "spearman"):
            value, interval = getattr(self, name), getattr(self, f"{name}_ci")
            if interval is not None and (value is None or not interval[0] <= value <= interval[1]):
                raise ValueError(f"{name}_ci {list(interval)} does not contain {name} {value}")
            # A correlation is defined over two pairs at least (before: "r 0.90 [0.85, 0.95]" quoted over n 0).
            if value is not None and self.n < 2:
                raise ValueError(f"{name} {value} over n {self.n} pairs: a correlation needs 2 at least")
        return self


AGREEMENT_STORE = FileFormat(
    "agreement store",
    AgreementEntry,
    "every report (the judge line), ccpt judge-agreement (which writes it)",
    "judge_agreement.json in $CCPT_HOME (or the platform data directory): a JSON object mapping each judge (its "
    "model name; for the distilled judge also its weights and scale, `ccpt-distilled/default@4d1ef41822ad`, so a "
    "figure is never quoted for other weights) to an object mapping each pair set it was measured on (`test`, "
    "`paper300`, `all`, or a sample such as `test/rows=40/seed=3`) to one entry below. A store of an older ccpt "
    "with one entry per judge is read with that entry under its `pairs` (under `all` when it has none: such entries "
    "were measured on every row). An entry that does not match is left out of reports, which say so; the store is "
    "rewritten atomically and an unreadable one is set aside, never overwritten.",
    rules=(
        "Each interval (pearson_ci, spearman_ci) must contain its estimate (low ≤ estimate ≤ high).",
        "A correlation (pearson, spearman) is over n ≥ 2 pairs.",
        "n + n_missing is at most the pairs of the set its key names: 3 per row of a sample (`rows=R`), 300 for "
        "`paper300`, 3 per test instance of the generative tasks for `test`; `rows` is its key's.",
        "mode is its judge key's: `expected` under a key ending ` (expected)`, else `text` (also when absent).",
    ),
)
