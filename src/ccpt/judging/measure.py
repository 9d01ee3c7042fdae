"""Judge–human agreement with bootstrap confidence intervals (docs/judge.md, measures 1–3).

Pearson and Spearman between a judge's relevance and the mean human rating over pairs; each with a 95%
percentile bootstrap interval over pairs (pairs resampled with replacement, ``n_resamples`` times, seeded).
Pairs the judge failed on (relevance ``None``) are counted in ``n_missing`` and left out, never filled in.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ccpt.stats import average_ranks, pearson, spearman


@dataclass(frozen=True)
class AgreementCI:
    """Pearson r and Spearman ρ over ``n`` scored pairs, each with a 95% bootstrap interval."""

    pearson: float
    pearson_ci: tuple[float, float]
    spearman: float
    spearman_ci: tuple[float, float]
    n: int
    n_missing: int
    n_resamples: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    def line(self) -> str:
        """``Pearson 0.71 [0.68, 0.74], Spearman …`` for notes under tables."""
        return (
            f"Pearson {self.pearson:.2f} [{self.pearson_ci[0]:.2f}, {self.pearson_ci[1]:.2f}], "
            f"Spearman {self.spearman:.2f} [{self.spearman_ci[0]:.2f}, {self.spearman_ci[1]:.2f}]"
        )


def _rowwise_pearson(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    da = a - a.mean(axis=1, keepdims=True)
    db = b - b.mean(axis=1, keepdims=True)
    denom = np.sqrt((da**2).sum(axis=1) * (db**2).sum(axis=1))
    with np.errstate(invalid="ignore", divide="ignore"):
        return (da * db).sum(axis=1) / denom


def _interval(values: np.ndarray) -> tuple[float, float]:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return (math.nan, math.nan)
    low, high = np.percentile(finite, [2.5, 97.5])
    return (float(low), float(high))


def agreement_ci(
    human: Sequence[float], judge: Sequence[float | None], n_resamples: int = 1000, seed: int = 0
) -> AgreementCI:
    """Agreement of ``judge`` with ``human`` (same order); ``None`` judge values are missing, not zero."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human ratings but {len(judge)} judge scores")
    kept = [(h, j) for h, j in zip(human, judge, strict=True) if j is not None]
    h = np.array([k[0] for k in kept], dtype=float)
    j = np.array([k[1] for k in kept], dtype=float)
    n = len(kept)
    if n < 2:
        return AgreementCI(math.nan, (math.nan, math.nan), math.nan, (math.nan, math.nan), n, len(human) - n, 0)
    rng = np.random.default_rng(seed)
    idx = rng.integers(0, n, size=(n_resamples, n))
    boot_pearson = _rowwise_pearson(h[idx], j[idx])
    # Ranks are recomputed inside each resample (Spearman of the resample, ties averaged).
    rh = np.stack([average_ranks(h[row]) for row in idx])
    rj = np.stack([average_ranks(j[row]) for row in idx])
    boot_spearman = _rowwise_pearson(rh, rj)
    return AgreementCI(
        pearson(list(h), list(j)),
        _interval(boot_pearson),
        spearman(list(h), list(j)),
        _interval(boot_spearman),
        n,
        len(human) - n,
        n_resamples,
    )
