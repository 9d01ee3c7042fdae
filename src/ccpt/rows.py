"""The per-sample record: one judged answer of one model to one instance (docs/metrics.md, "Per-sample results"),
stored by the Inspect scorer and read into the results table (:data:`COLUMNS`), with its declared identity
(:data:`RUN_IDENTITY`, :data:`SAMPLE_IDENTITY`; docs/metrics.md, "Identity")."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, fields
from typing import Any


@dataclass(kw_only=True)
class SampleRow:
    """One reply and everything measured on it. Relevances are in [0, 1]; None means "not available"."""

    task: str
    model: str
    method: str  # the method's base name (``sa_both`` for ``sa_both_nofilter``; see ``sa_filter``)
    method_raw: str | None = None  # the name as the source wrote it (authors' files: ``naive``, ``multi``)
    seed: int = 0
    instance: str
    sample: int = 0  # Multi-Oracle member (0 otherwise)
    combination: str | None = None
    head: str | None = None
    modifier: str | None = None
    property: str | None = None
    answer_raw: str | None = None
    answer: str | None = None
    answer_modifier: str | None = None
    parse_ok: bool = False
    parse_error: str | None = None
    r_np: float | None = None
    r_hp: float | None = None
    r_mp: float | None = None
    r_hmp: float | None = None
    score: float | None = None
    judge: str | None = None
    judge_failures: int = 0
    # Cells of the source file this sample was read from that its schema rejected (never used; ccpt.schemas).
    invalid_cells: int = 0
    gold_type: str | None = None
    pred_type: str | None = None
    sa_iteration: int | None = None  # Table 6: the intermediate concept set C_t the answer came from
    sa_filter: bool | None = None  # spreading activation with (True) or without (False) Filter
    sa_failed_steps: int | None = None  # spreading activation: expansion steps with an unreadable model reply
    source: str | None = None  # the log or result file the row was read from
    protocol: str | None = None  # the evaluation protocol that produced it (ccpt.protocol; set by the reader)
    # The run's other number-changing arguments, as JSON (ccpt.schemas.run.IDENTITY_ARGS; set by the log reader).
    variant: str | None = None
    judge_errors: list[str] = field(default_factory=list, metadata={"log_only": True})

    def to_dict(self) -> dict[str, Any]:
        """Every field, log-only ones included (what the scorer stores in the log)."""
        return asdict(self)


# What a run is, whatever file or log its rows came from (``judge``: ccpt.judges.JudgeIdentity.key: judges never pool).
RUN_IDENTITY: tuple[str, ...] = ("task", "model", "method", "sa_filter", "judge", "protocol", "variant")
# What one answer is: the run, the seed, the instance, the sample of a many-sample method and the SA step.
SAMPLE_IDENTITY: tuple[str, ...] = (*RUN_IDENTITY, "seed", "instance", "sample", "sa_iteration")
# What an answer says (besides its identity): two rows with one identity and these equal are one answer read twice.
SAMPLE_CONTENT: tuple[str, ...] = (
    "answer_raw", "answer", "answer_modifier", "parse_ok", "r_np", "r_hp", "r_mp", "gold_type", "pred_type",
)  # fmt: skip


# The key of the judge's structured identity (ccpt.judges.JudgeIdentity fields) in a sample's ccpt score metadata.
JUDGE_IDENTITY = "judge_identity"


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(SampleRow) if not f.metadata.get("log_only"))
FLOAT_COLUMNS: tuple[str, ...] = ("r_np", "r_hp", "r_mp", "r_hmp", "score")


def empty_row() -> dict[str, Any]:
    """A tidy-table row with every column present and unset (None)."""
    return dict.fromkeys(COLUMNS)
