"""Judge–human agreement (paper §6.1, Figure 4): correlation between an LLM judge's relevance and the mean
human rating on (concept, property) pairs from the dataset's emergent and canceled rows.

Every such row yields three pairs: (combination N, P), (head H, P), (modifier M, P), each with three
1–5 Likert ratings. With no live judge the GPT-4o scores stored in the dataset are used (offline).
Pure core: no pandas.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Literal

from ccpt.stats import pearson, spearman

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset, Record

Role = Literal["combination", "head", "modifier"]
LIKERT_MIN, LIKERT_MAX = 1, 5


@dataclass(frozen=True)
class Pair:
    """One judged pair: ``human`` is the mean Likert rating (1–5); ``judge`` a relevance in [0, 1] or None."""

    concept: str
    property: str
    role: Role
    source: str  # Record.id
    human: float
    judge: float | None

    @property
    def human_relevance(self) -> float:
        """The mean human rating rescaled to [0, 1]: (m − 1) / 4 (for plotting next to the judge)."""
        return (self.human - LIKERT_MIN) / (LIKERT_MAX - LIKERT_MIN)


@dataclass(frozen=True)
class Agreement:
    """Pearson and Spearman correlation between mean human rating and judge over ``n`` pairs.

    ``n_missing`` pairs had no judge score (failed judge call) and are not in ``n``. A correlation is
    ``None`` when undefined (fewer than two pairs, or a constant judge or human side).
    """

    pearson: float | None
    spearman: float | None
    n: int
    n_missing: int = 0


def _mean(values: Sequence[int]) -> float:
    return sum(values) / len(values)


def record_pairs(record: Record) -> list[Pair]:
    """The three (concept, property) pairs of one annotated row, with the stored judge relevances."""
    return [
        Pair(
            record.combination,
            record.property,
            "combination",
            record.id,
            _mean(record.combination_ratings),
            record.judge_combination,
        ),
        Pair(record.head, record.property, "head", record.id, _mean(record.head_ratings), record.judge_head),
        Pair(
            record.modifier,
            record.property,
            "modifier",
            record.id,
            _mean(record.modifier_ratings),
            record.judge_modifier,
        ),
    ]


def pairs_from_dataset(ds: CCPTDataset, n: int | None = None, seed: int = 0) -> list[Pair]:
    """Pairs from the emergent and canceled rows (3 per row).

    ``n`` = number of rows to draw (seeded, half emergent and half canceled, as the paper's 50 + 50 rows →
    300 pairs); ``None`` = every row. Rows without three ratings per role are skipped.
    """
    pools = [list(ds.emergent), list(ds.canceled)]
    if n is not None:
        rng = random.Random(seed)
        half = [n // 2 + n % 2, n // 2]
        pools = [rng.sample(pool, min(k, len(pool))) for pool, k in zip(pools, half, strict=True)]
    return [
        pair
        for pool in pools
        for record in pool
        if record.combination_ratings and record.head_ratings and record.modifier_ratings
        for pair in record_pairs(record)
    ]


def with_judge_scores(pairs: Sequence[Pair], scores: Sequence[float | None]) -> list[Pair]:
    """The same pairs with the judge relevance replaced by ``scores`` (e.g. from a live judge)."""
    if len(pairs) != len(scores):
        raise ValueError(f"{len(pairs)} pairs but {len(scores)} scores")
    return [replace(p, judge=s) for p, s in zip(pairs, scores, strict=True)]


def agreement(pairs: Sequence[Pair]) -> Agreement:
    """Pearson and Spearman between mean human rating and judge relevance (pairs without a judge excluded)."""
    scored = [p for p in pairs if p.judge is not None]
    human = [p.human for p in scored]
    judge = [float(p.judge) for p in scored]  # type: ignore[arg-type]
    return Agreement(
        defined(pearson(human, judge)), defined(spearman(human, judge)), len(scored), len(pairs) - len(scored)
    )


def defined(value: float) -> float | None:
    """``value``, or None for NaN (an undefined statistic is null in JSON and 'undefined' in text)."""
    return None if math.isnan(value) else value


def format_correlation(value: float | None, digits: int = 3) -> str:
    """A correlation for text output; an undefined one says why instead of printing 'nan' or '-0.000'."""
    return "undefined (constant scores or < 2 pairs)" if value is None else f"{value:.{digits}f}"
