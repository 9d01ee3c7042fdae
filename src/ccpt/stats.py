"""Aggregation, agreement, correlation and paired comparison: NaN-safe wrappers over scipy.stats and
``krippendorff``. Undefined statistics are NaN (printed "undefined"). Definitions: docs/metrics.md."""

from __future__ import annotations

import itertools
import math
import warnings
from array import array
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

import numpy as np

Stat = Literal["paper", "sem", "ci"]
DEFAULT_BOOTSTRAP = 10_000

STAT_DESCRIPTIONS: dict[str, str] = {
    "paper": "± = population SD (ddof=0) of the per-seed means (paper convention, printed there as 'SEM')",
    "sem": "± = standard error of the mean over seeds: sample SD (ddof=1) of the per-seed means / √n_seeds",
    "ci": "[lo, hi] = 95% percentile bootstrap CI, resampling instances jointly across seeds",
}


@dataclass(frozen=True)
class Summary:
    """One table cell: mean over seeds of the per-seed instance means (failed cells excluded, counted in
    ``n_failed``); ``spread`` per :data:`STAT_DESCRIPTIONS` (NaN with one seed; None for "ci", whose interval is
    ``lo``, ``hi``); ``n_seeds`` counts seeds with at least one value."""

    mean: float
    spread: float | None
    stat: Stat
    n_seeds: int
    n_instances: int
    n_failed: int
    lo: float | None = None
    hi: float | None = None

    def scaled(self, factor: float) -> Summary:
        """The same summary with every number multiplied by ``factor`` (e.g. 100 for percent)."""
        values = {name: getattr(self, name) for name in ("mean", "spread", "lo", "hi")}
        return replace(self, **{name: None if v is None else v * factor for name, v in values.items()})


def seed_means(matrix: np.ndarray) -> np.ndarray:
    """Per-seed mean over instances, ignoring NaN; seeds with no value at all are dropped."""
    present = ~np.isnan(matrix)
    counts = present.sum(axis=0)
    sums = np.where(present, matrix, 0.0).sum(axis=0)  # not np.nanmean: its pairwise sum moves the last digits
    keep = counts > 0
    return sums[keep] / counts[keep]


def summarize(
    values: Sequence[Sequence[float | None]] | np.ndarray,
    stat: Stat = "sem",
    *,
    n_boot: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
) -> Summary:
    """Summarise an instances × seeds table (``None``/NaN = failed sample) into one :class:`Summary`."""
    if stat not in STAT_DESCRIPTIONS:
        raise ValueError(f"stat must be one of {tuple(STAT_DESCRIPTIONS)}, got {stat!r}")
    matrix = np.array(values, dtype=float)  # None → NaN
    if matrix.ndim != 2:
        raise ValueError("expected a 2-D instances × seeds table of values")
    n_instances = matrix.shape[0]
    n_failed = int(np.isnan(matrix).sum())
    means = seed_means(matrix)
    n_seeds = len(means)
    if n_seeds == 0:
        return Summary(float("nan"), None, stat, 0, n_instances, n_failed)
    mean = float(means.mean())
    if stat == "paper":
        return Summary(mean, float(means.std(ddof=0)), stat, n_seeds, n_instances, n_failed)
    if stat == "sem":
        sem = float(means.std(ddof=1) / math.sqrt(n_seeds)) if n_seeds > 1 else float("nan")
        return Summary(mean, sem, stat, n_seeds, n_instances, n_failed)
    # scipy needs two instances; every resample of one instance is that instance.
    lo, hi = _bootstrap_ci(matrix, n_boot=n_boot, seed=seed) if n_instances > 1 else (mean, mean)
    return Summary(mean, None, stat, n_seeds, n_instances, n_failed, lo=lo, hi=hi)


def _bootstrap_ci(matrix: np.ndarray, *, n_boot: int, seed: int, level: float = 0.95) -> tuple[float, float]:
    """Percentile bootstrap CI of the seed-averaged mean, resampling whole instances (rows) across seeds."""
    present = ~np.isnan(matrix)
    filled = np.where(present, matrix, 0.0)

    def seed_averaged(rows: np.ndarray, axis: int = -1) -> np.ndarray:
        counts, sums = present[rows].sum(axis=-2), filled[rows].sum(axis=-2)
        means = np.where(counts > 0, sums / np.maximum(counts, 1), np.nan)
        # A replicate whose drawn rows are all failed has no value: NaN, skipped by the quantiles below.
        return np.nanmean(means, axis=-1) if means.size else means.sum(axis=-1)

    replicates = bootstrap_replicates((np.arange(matrix.shape[0]),), seed_averaged, n_boot, seed)
    alpha = (1.0 - level) / 2.0
    lo, hi = np.nanquantile(replicates, [alpha, 1.0 - alpha])
    return float(lo), float(hi)


def bootstrap_replicates(
    data: tuple[np.ndarray, ...], statistic: Callable[..., np.ndarray], n_resamples: int, seed: int
) -> np.ndarray:
    """scipy's seeded bootstrap distribution of a vectorised ``statistic`` (last axis = replicates); callers take
    NaN-skipping percentiles of it, where scipy's own interval would be NaN. Batches of 1,000 bound memory."""
    from scipy import stats  # on first use, see _correlation

    with warnings.catch_warnings(), np.errstate(invalid="ignore", divide="ignore"):
        warnings.simplefilter("ignore")  # degenerate-interval warnings: the replicates are what is used
        result = stats.bootstrap(
            data,
            statistic,
            n_resamples=n_resamples,
            batch=1000,
            vectorized=True,
            paired=len(data) > 1,
            method="percentile",
            rng=np.random.default_rng(seed),
        )
    return np.asarray(result.bootstrap_distribution, dtype=float)


# ------------------------------------------------------------------------------------------ agreement


def fleiss_kappa(counts: Sequence[Sequence[int]]) -> float:
    """Fleiss' κ for ``counts[i][j]`` = raters assigning subject i to category j (the same number ≥ 2 of raters
    per subject); NaN when all ratings are in one category. Here because scipy has none."""
    table = np.asarray(counts, dtype=float)
    if table.ndim != 2 or table.shape[0] == 0 or (table < 0).any():
        raise ValueError("counts must be a non-empty subjects × categories table of non-negative counts")
    raters = table.sum(axis=1)
    if not np.all(raters == raters[0]) or raters[0] < 2:
        raise ValueError("every subject needs the same number (≥ 2) of raters")
    n = raters[0]
    p_j = table.sum(axis=0) / (table.shape[0] * n)  # share of all ratings in category j
    p_bar = (((table**2).sum(axis=1) - n) / (n * (n - 1))).mean()  # mean agreement per subject
    p_e = float((p_j**2).sum())
    return float("nan") if p_e == 1.0 else float((p_bar - p_e) / (1.0 - p_e))


def krippendorff_alpha_interval(ratings: Iterable[Sequence[float | None]]) -> float:
    """Krippendorff's α (interval metric) for ``ratings[unit][rater]`` (``None`` = not rated; any iterable of
    units); units with fewer than two ratings are ignored; NaN when nothing pairable varies."""
    units, values = array("q"), array("d")  # long form, read once: O(ratings) memory, no list per unit
    for number, unit in enumerate(ratings):
        for value in unit:  # None → NaN: not rated
            units.append(number)
            values.append(math.nan if value is None else float(value))
    return krippendorff_alpha_long(np.frombuffer(units, dtype=np.int64), np.frombuffer(values))


def krippendorff_alpha_long(units: np.ndarray, values: np.ndarray) -> float:
    """:func:`krippendorff_alpha_interval` in long form: ``values[i]`` rates unit ``units[i]`` (NaN = not rated).
    The package's coincidence matrix summed over chunks of units, as its ``alpha`` would take ~400 MB at once."""
    from krippendorff import krippendorff as kd

    values = np.asarray(values, dtype=float)
    rated = ~np.isnan(values)
    _, units = np.unique(np.asarray(units)[rated], return_inverse=True)
    values = values[rated]
    pairable = np.bincount(units)[units] >= 2  # an unpaired rating adds nothing, nor to the value domain
    domain, index = np.unique(values[pairable], return_inverse=True)
    if len(domain) < 2:
        return float("nan")
    v, n_units = len(domain), int(units.max()) + 1
    counts = np.bincount(units[pairable] * v + index, minlength=n_units * v).reshape(n_units, v)
    step = max(1, 250_000 // (v * v))  # units per chunk: its units × values × values arrays stay ~2 MB
    coincidences = sum(kd._coincidences(counts[first : first + step]) for first in range(0, n_units, step))
    n_v = coincidences.sum(axis=0)
    distances = kd._distances(domain, kd._distance_metric("interval"), n_v)
    expected = (kd._random_coincidences(n_v) * distances).sum()
    return float(1.0 - (coincidences * distances).sum() / expected) if expected > 0 else float("nan")


def _paired_arrays(x: Sequence[float], y: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError("x and y must be 1-D sequences of the same length")
    return a, b


def _correlation(name: str, x: Sequence[float], y: Sequence[float], **options: str) -> float:
    # scipy.stats is imported on first use: ~1.3 s and ~80 MB that most commands importing this module never need.
    from scipy import stats

    a, b = _paired_arrays(x, y)
    if len(a) < 2:
        return float("nan")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a constant input: scipy warns and returns NaN, which is the answer
        return float(getattr(stats, name)(a, b, **options).statistic)


def pearson(x: Sequence[float], y: Sequence[float]) -> float:
    """Pearson's r; NaN if fewer than 2 pairs or a constant input."""
    return _correlation("pearsonr", x, y)


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman's ρ (average ranks for ties); NaN if fewer than 2 pairs or a constant input."""
    return _correlation("spearmanr", x, y)


def kendall_tau_b(x: Sequence[float], y: Sequence[float]) -> float:
    """Kendall's τ-b (ties corrected); NaN if fewer than 2 pairs or a constant input."""
    return _correlation("kendalltau", x, y, variant="b")


# ---------------------------------------------------------------------------------------- comparison

Test = Literal["bootstrap", "permutation"]
EXACT_PERMUTATION_MAX_N = 16
_TIE = 1e-12  # float noise must not turn an equal statistic into a smaller one


@dataclass(frozen=True)
class PairedComparison:
    """A vs B on the same instances (d = a − b); CI and p-value from one method (docs/metrics.md, ccpt compare):
    ``permutation`` = the sign-flip test (exact for n ≤ 16) and its inversion (±inf when no δ is rejected),
    ``bootstrap`` = percentile CI of mean(d) and 2·min(P*(mean* ≤ 0), P*(mean* ≥ 0)). ``min_p``: the smallest
    p any exact paired test can give (2 / 2^nonzero, or 1/(resamples + 1)); ``effect_size``: Cohen's d_z."""

    mean_diff: float
    ci_low: float
    ci_high: float
    p_value: float
    effect_size: float
    n: int
    test: Test
    n_resamples: int
    level: float = 0.95
    min_p: float = 0.0
    n_nonzero: int = 0  # differences that are not exactly 0 (a zero difference has no sign to flip)

    @property
    def alpha(self) -> float:
        """The two-sided significance level 1 − ``level`` that the CI corresponds to."""
        return 1.0 - self.level

    @property
    def attainable(self) -> bool:
        """Whether a p-value at or below :attr:`alpha` is possible at all with these data (see ``min_p``)."""
        return self.min_p <= self.alpha + _TIE


def min_resamples(level: float) -> int:
    """The fewest resamples that give an honest CI at ``level``: 2 / (1 − level), e.g. 40 at 95% (with fewer, a
    tail holds no replicate, and a Monte-Carlo p of at least 1/(resamples + 1) could never reach 1 − level)."""
    return math.ceil(round(2.0 / (1.0 - level), 9))


def defined(value: float) -> float | None:
    """``value``, or None for NaN (an undefined statistic is null in JSON and 'undefined' in text)."""
    return None if math.isnan(value) else value


def paired_compare(
    a: Sequence[float],
    b: Sequence[float],
    *,
    test: Test = "permutation",
    n_resamples: int = DEFAULT_BOOTSTRAP,
    seed: int = 0,
    level: float = 0.95,
) -> PairedComparison:
    """Compare paired per-instance scores ``a`` and ``b`` (same instance order); see PairedComparison."""
    if test not in ("bootstrap", "permutation"):
        raise ValueError(f"test must be 'bootstrap' or 'permutation', got {test!r}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be between 0 and 1, got {level!r}")
    if n_resamples < min_resamples(level):
        raise ValueError(f"{n_resamples} resamples are too few for a {level:g} CI: at least {min_resamples(level)}")
    x, y = _paired_arrays(a, b)
    d = x - y
    n = len(d)
    if n < 2:
        raise ValueError("a paired comparison needs at least 2 instances")
    observed = float(d.mean())
    alpha = 1.0 - level
    nonzero = int(np.count_nonzero(d))
    exact_min = 2.0 ** (1 - nonzero) if nonzero else 1.0
    if test == "bootstrap":
        boot = bootstrap_replicates((d,), np.mean, n_resamples, seed)
        ci_low, ci_high = (float(q) for q in np.quantile(boot, [alpha / 2, 1 - alpha / 2]))
        p = min(1.0, 2.0 * min(float((boot <= 0).mean()), float((boot >= 0).mean())))
        used, min_p = n_resamples, exact_min
    else:
        p, ci_low, ci_high, used, exact = _sign_flips(d, n_resamples, seed, alpha)
        min_p = max(exact_min, 0.0 if exact else 1.0 / (used + 1))
    sd = float(d.std(ddof=1))
    effect = observed / sd if sd > 0 else (0.0 if observed == 0 else math.copysign(math.inf, observed))
    return PairedComparison(observed, ci_low, ci_high, p, effect, n, test, used, level, min_p, nonzero)


def _sign_flips(d: np.ndarray, n_resamples: int, seed: int, alpha: float) -> tuple[float, float, float, int, bool]:
    """The sign-flip test of "d is symmetric about δ" on one fixed set of sign patterns (all 2^n for n ≤ 16): p(0),
    the CI (every δ with p(δ) > ``alpha``; ±inf on a side where none is rejected), the patterns, exact?. Per pattern
    |mean(s·d) − δ·mean(s)| makes p(δ) fall monotonically away from mean(d): the CI bounds are bisected."""
    n = len(d)
    exact = n <= EXACT_PERMUTATION_MAX_N
    if exact:
        signs = np.array(list(itertools.product((1.0, -1.0), repeat=n)))
    else:
        signs = np.random.default_rng(seed).choice((1.0, -1.0), size=(n_resamples, n))
    count, mean, scale = len(signs), float(d.mean()), float(np.abs(d).max()) or 1.0
    a, b = signs @ d / n, signs.mean(axis=1)

    def p_value(delta: float) -> float:  # Monte Carlo: (1 + hits) / (1 + patterns)
        hits = int((np.abs(a - delta * b) >= abs(mean - delta) - _TIE).sum())
        return hits / count if exact else (1 + hits) / (1 + count)

    def bound(side: float) -> float:
        far = mean + side * scale
        while p_value(far) > alpha:  # p(δ) is constant beyond some finite δ: its limit decides
            if abs(far - mean) > 1e6 * scale:
                return side * math.inf
            far = mean + 2.0 * (far - mean)
        inside, outside = mean, far
        for _ in range(100):  # accepted at `inside`, rejected at `outside`
            middle = (inside + outside) / 2.0
            if middle in (inside, outside):
                break
            inside, outside = (middle, outside) if p_value(middle) > alpha else (inside, middle)
        return inside

    return p_value(0.0), bound(-1.0), bound(1.0), count, exact
