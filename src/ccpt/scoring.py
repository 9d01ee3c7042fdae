"""The CCPT metric (paper §4.3, docs/metrics.md): relevance, emergence E, cancellation C, Multi-Oracle, Task 3.

``None`` means "not available" (judge call failed, answer unparsable); a metric that needs a missing input is
``None`` too — never a default value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from ccpt.spec import CANCELED, COMPONENT, EMERGENT, OTHERS, SCORED_TYPES, TYPE_LABELS, ScoredType

SCORE_MIN, SCORE_MAX = 1, 10


def relevance_from_score(score: float) -> float:
    """Map a judge score on the 1–10 scale to a relevance in [0, 1]: (s − 1) / 9."""
    if not SCORE_MIN <= score <= SCORE_MAX:
        raise ValueError(f"judge score {score!r} outside {SCORE_MIN}..{SCORE_MAX}")
    return (score - SCORE_MIN) / (SCORE_MAX - SCORE_MIN)


def score_from_relevance(relevance: float) -> float:
    """Inverse of :func:`relevance_from_score` (for display): 1 + 9 r."""
    if not 0.0 <= relevance <= 1.0:
        raise ValueError(f"relevance {relevance!r} outside [0, 1]")
    return SCORE_MIN + relevance * (SCORE_MAX - SCORE_MIN)


def _check_kind(kind: str) -> ScoredType:
    if kind not in SCORED_TYPES:
        raise ValueError(f"kind must be one of {SCORED_TYPES}, got {kind!r}")
    return kind  # type: ignore[return-value]


@dataclass(frozen=True)
class Relevances:
    """The three judged relevances of one answer: N ↔ P, H ↔ P and M ↔ P."""

    r_np: float | None
    r_hp: float | None
    r_mp: float | None

    @property
    def r_hmp(self) -> float | None:
        """Eq. (1): R_H,M,P = max(R_H,P, R_M,P); ``None`` if either is missing (no half-judged maxima)."""
        return None if self.r_hp is None or self.r_mp is None else max(self.r_hp, self.r_mp)

    @property
    def emergence(self) -> float | None:
        """Eq. (2): E = max(R_N,P − R_H,M,P, 0)."""
        return None if self.r_np is None or self.r_hmp is None else max(self.r_np - self.r_hmp, 0.0)

    @property
    def cancellation(self) -> float | None:
        """Eq. (3): C = max(R_H,M,P − R_N,P, 0)."""
        return None if self.r_np is None or self.r_hmp is None else max(self.r_hmp - self.r_np, 0.0)

    def score(self, kind: ScoredType) -> float | None:
        """E for ``kind="emergent"``, C for ``kind="canceled"``."""
        return self.emergence if _check_kind(kind) == EMERGENT else self.cancellation


@dataclass(frozen=True)
class OracleScores:
    """Multi-Oracle result for one instance and seed: the three Table-3 columns, the samples with a score and
    offered, and the chosen sample's index (single-best only)."""

    r_hmp: float | None
    r_np: float | None
    score: float | None
    n_valid: int
    n_samples: int
    sample: int | None = None


def _best(values: Sequence[float | None], maximise: bool) -> float | None:
    return (max if maximise else min)((v for v in values if v is not None), default=None)


def oracle_per_column(samples: Sequence[Relevances], kind: ScoredType) -> OracleScores:
    """Multi-Oracle as printed in paper Table 3: each column takes its own best sample (an upper bound per
    column). Emergent: R_N,P max, R_H,M,P min, E max; canceled: R_N,P min, R_H,M,P max, C max."""
    emergent = _check_kind(kind) == EMERGENT
    scores = [s.score(kind) for s in samples]
    return OracleScores(
        r_hmp=_best([s.r_hmp for s in samples], maximise=not emergent),
        r_np=_best([s.r_np for s in samples], maximise=emergent),
        score=_best(scores, maximise=True),
        n_valid=sum(v is not None for v in scores),
        n_samples=len(samples),
    )


def oracle_single_best(samples: Sequence[Relevances], kind: ScoredType) -> OracleScores:
    """Consistent Multi-Oracle: all three columns from the one sample with the best E (or C); ties go to the
    better R_N,P, then the better R_H,M,P, then the lowest sample index."""
    sign = 1.0 if _check_kind(kind) == EMERGENT else -1.0
    # score is not None implies r_np and r_hmp are not None.
    keys = [
        (s.score(kind), sign * s.r_np, -sign * s.r_hmp, -index)  # type: ignore[operator]
        for index, s in enumerate(samples)
        if s.score(kind) is not None
    ]
    if not keys:
        return OracleScores(None, None, None, n_valid=0, n_samples=len(samples))
    best = -max(keys)[3]
    chosen = samples[best]
    return OracleScores(chosen.r_hmp, chosen.r_np, chosen.score(kind), len(keys), len(samples), sample=best)


# ---------------------------------------------------------------------------------------------- Task 3


@dataclass(frozen=True)
class Classification:
    """Property-type prediction results (paper Table 5): ``counts[i, j]`` of actual ``labels[i]`` predicted as
    ``labels[j]``; ``unparsed[i]``, no usable prediction, count as wrong and stay in every denominator."""

    labels: tuple[str, ...]
    counts: np.ndarray
    unparsed: np.ndarray

    @property
    def n(self) -> int:
        """Number of instances."""
        return int(self.counts.sum() + self.unparsed.sum())

    def row_totals(self) -> np.ndarray:
        """Instances per actual type (including unparsed)."""
        return self.counts.sum(axis=1) + self.unparsed

    def row_percent(self) -> np.ndarray:
        """Row-normalised confusion matrix in percent (Table 5 cells)."""
        totals = self.row_totals().astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            return 100.0 * self.counts / totals[:, None]

    @property
    def accuracy(self) -> float:
        """Share of instances whose predicted type equals the gold type (Table 5: 56.4%)."""
        return float(np.trace(self.counts) / self.n) if self.n else float("nan")

    def group_accuracy(self, group: frozenset[str]) -> float:
        """Among instances whose gold type is in ``group``, the share predicted inside ``group``."""
        idx = [i for i, label in enumerate(self.labels) if label in group]
        total = self.row_totals()[idx].sum()
        hit = self.counts[np.ix_(idx, idx)].sum()
        return float(hit / total) if total else float("nan")

    @property
    def has_property_accuracy(self) -> float:
        """Green cells of Table 5: gold ∈ {emergent, component} predicted ∈ {emergent, component} (95.6%)."""
        return self.group_accuracy(frozenset({EMERGENT, COMPONENT}))

    @property
    def lacks_property_accuracy(self) -> float:
        """Red cells of Table 5: gold ∈ {canceled, others} predicted ∈ {canceled, others} (69.6%)."""
        return self.group_accuracy(frozenset({CANCELED, OTHERS}))

    @property
    def binary_accuracy(self) -> float:
        """Mean of has- and lacks-property accuracy: the paper's "(95.6% + 69.6%) ÷ 2 = 82.6%"."""
        return (self.has_property_accuracy + self.lacks_property_accuracy) / 2.0


def classify(
    gold: Sequence[str], predicted: Sequence[str | None], labels: Sequence[str] = TYPE_LABELS
) -> Classification:
    """The Task-3 :class:`Classification` of gold and predicted labels (outside ``labels`` or None: unparsed)."""
    if len(gold) != len(predicted):
        raise ValueError(f"{len(gold)} gold labels but {len(predicted)} predictions")
    index = {label: i for i, label in enumerate(labels)}
    counts = np.zeros((len(labels), len(labels)), dtype=int)
    unparsed = np.zeros(len(labels), dtype=int)
    for g, p in zip(gold, predicted, strict=True):
        if g not in index:
            raise ValueError(f"gold label {g!r} not in {tuple(labels)}")
        if p in index:
            counts[index[g], index[p]] += 1  # type: ignore[index]
        else:
            unparsed[index[g]] += 1
    return Classification(labels=tuple(labels), counts=counts, unparsed=unparsed)
