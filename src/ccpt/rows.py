"""The per-sample record: one judged answer of one model to one instance (docs/metrics.md, "Per-sample results"),
stored by the Inspect scorer and read into the results table (:data:`COLUMNS`), with its declared identity
(:data:`RUN_IDENTITY`, :data:`SAMPLE_IDENTITY`; docs/metrics.md, "Identity")."""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, field, fields
from typing import Any, get_args


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


# What a run is, whatever file or log its rows came from (``judge``: :func:`judge_identity`, so judges never pool).
RUN_IDENTITY: tuple[str, ...] = ("task", "model", "method", "sa_filter", "judge", "protocol", "variant")
# What one answer is: the run, the seed, the instance, the sample of a many-sample method and the SA step.
SAMPLE_IDENTITY: tuple[str, ...] = (*RUN_IDENTITY, "seed", "instance", "sample", "sa_iteration")
# What an answer says (besides its identity): two rows with one identity and these equal are one answer read twice.
SAMPLE_CONTENT: tuple[str, ...] = (
    "answer_raw", "answer", "answer_modifier", "parse_ok", "r_np", "r_hp", "r_mp", "gold_type", "pred_type",
)  # fmt: skip


def judge_identity(
    model: str,
    *,
    head_sha256: str | None = None,
    raw: bool = False,
    reply_format: str | None = None,
    mode: str = "text",
) -> str:
    """A judge as its scores depend on it: model, distilled weights (``@sha``) and scale (``+raw``), negotiated reply
    format and reading mode: ``openai/gpt-4o (json_schema)``, ``ccpt-distilled/default@813ec7b5a1c2``."""
    name = model + (f"@{head_sha256[:12]}" if head_sha256 else "") + ("+raw" if raw else "")
    qualifiers = [q for q in (reply_format if not head_sha256 else None, None if mode == "text" else mode) if q]
    return f"{name} ({', '.join(qualifiers)})" if qualifiers else name


_QUALIFIERS = re.compile(r"(@[0-9a-f]{12})?(\+raw)?( \([^()]*\))?$")


def judge_model(identity: str) -> str:
    """The model of a judge identity (:func:`judge_identity`): ``ccpt-distilled/default@813ec7b5a1c2`` → its name."""
    return _QUALIFIERS.sub("", identity, count=1)


_QUALIFIED = re.compile(r"^(.*) \(([^()]*)\)$")


def scored_judge(identity: str) -> str:
    """A judge identity without the negotiated reply format: what its agreement with human ratings is stored under
    (``gguf/qwen2.5-1.5b (expected)``)."""
    from ccpt.schemas.run import JudgeMode

    if not (found := _QUALIFIED.match(identity)):
        return identity
    modes = [q for q in found.group(2).split(", ") if q in get_args(JudgeMode) and q != "text"]
    return f"{found.group(1)} ({', '.join(modes)})" if modes else found.group(1)


COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(SampleRow) if not f.metadata.get("log_only"))
FLOAT_COLUMNS: tuple[str, ...] = ("r_np", "r_hp", "r_mp", "r_hmp", "score")


def empty_row() -> dict[str, Any]:
    """A tidy-table row with every column present and unset (None)."""
    return dict.fromkeys(COLUMNS)
