"""A monotone map from one judge's relevance to a reference judge's scale.

The distilled judge learns the human mean rating, whose scale is compressed relative to GPT-4o's, so E and C are
not on the paper's scale. A non-decreasing map (knots, linear interpolation, flat outside) fixes the scale keeping
the order: ``isotonic`` (PAV; shrinks noisy scores towards the mean), ``quantile`` (51 knots: the reference's
distribution, which table means depend on) or ``sharpened`` (the quantile map then ``sigmoid(slope · logit(y) +
offset)``: E and C are differences, which a less sure judge gets too small). :func:`choose_calibration` picks one.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

import numpy as np

from ccpt.scoring import Relevances


@dataclass(frozen=True)
class Calibration:
    """Knots of a non-decreasing piecewise-linear map on [0, 1], and what it was fitted on."""

    x: tuple[float, ...]
    y: tuple[float, ...]
    reference: str  # the judge whose scale the map targets
    fitted_on: str  # which pairs, for the judge note
    n: int

    def apply(self, values: Sequence[float]) -> list[float]:
        """Mapped values, clipped to [0, 1]."""
        mapped = np.interp(np.asarray(values, dtype=float), self.x, self.y)
        return [float(v) for v in np.clip(mapped, 0.0, 1.0)]

    def to_json(self) -> str:
        """Compact JSON (stored in a head file's metadata)."""
        return json.dumps(asdict(self), sort_keys=True, separators=(",", ":"))

    @classmethod
    def from_json(cls, text: str) -> Calibration:
        """Read :meth:`to_json`'s output back; ValueError if it is not a non-decreasing map."""
        raw = json.loads(text)
        x, y = tuple(float(v) for v in raw["x"]), tuple(float(v) for v in raw["y"])
        rising = all(b >= a for a, b in pairwise(x)) and all(b >= a for a, b in pairwise(y))
        if not x or len(x) != len(y) or not rising:
            raise ValueError("calibration knots are empty, unequal in number or not non-decreasing")
        # NaN fails both comparisons: a map of relevances maps relevances in [0, 1] to relevances in [0, 1].
        if not all(0.0 <= v <= 1.0 for v in (*x, *y)):
            raise ValueError(f"calibration knots outside [0, 1]: x {min(x)}..{max(x)}, y {min(y)}..{max(y)}")
        # A map whose knots all give one relevance scores every pair alike (a judge that says nothing).
        if max(y) == min(y):
            raise ValueError(f"calibration knots map every relevance to {y[0]}")
        return cls(x, y, str(raw["reference"]), str(raw["fitted_on"]), int(raw["n"]))


def isotonic_knots(x: Sequence[float], y: Sequence[float], decimals: int = 4) -> tuple[tuple[float, ...], ...]:
    """Pool-adjacent-violators fit of y on x: (knot x, knot y), both non-decreasing, rounded to ``decimals``; ties
    in x are pooled first (one block per distinct x), so the map is a function of x."""
    if len(x) != len(y) or not len(x):
        raise ValueError("isotonic fit needs equally many x and y values, at least one")
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    xs, ys = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=float)[order]
    blocks: list[np.ndarray] = []  # [sum x, sum y, count]
    for xv, yv in zip(xs, ys, strict=True):
        if blocks and blocks[-1][0] / blocks[-1][2] == xv:
            blocks[-1] = blocks[-1] + (xv, yv, 1.0)
        else:
            blocks.append(np.array([xv, yv, 1.0]))
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] > blocks[-1][1] / blocks[-1][2]:
            blocks[-2:] = [blocks[-2] + blocks[-1]]
    return _rising([round(b[0] / b[2], decimals) for b in blocks], [round(b[1] / b[2], decimals) for b in blocks])


def _rising(kx: list[float], ky: list[float]) -> tuple[tuple[float, ...], ...]:
    """The knots made non-decreasing (rounding can make neighbours equal or swap them by a last digit)."""
    return tuple(np.maximum.accumulate(kx).tolist()), tuple(np.maximum.accumulate(ky).tolist())


def quantile_knots(x: Sequence[float], y: Sequence[float], knots: int = 51) -> tuple[tuple[float, ...], ...]:
    """Quantile mapping: the ``knots`` evenly spaced quantiles of x against the same quantiles of y."""
    if not len(x) or not len(y):
        raise ValueError("quantile mapping needs values on both sides")
    q = np.linspace(0.0, 1.0, knots)
    kx, ky = ([round(float(v), 4) for v in np.quantile(np.asarray(side, dtype=float), q)] for side in (x, y))
    return _rising(kx, ky)


FITS = {"isotonic": isotonic_knots, "quantile": quantile_knots}
# The sharpened map's grid. Slopes stop at 2.5 because a steeper map approaches a threshold: on the shipped
# judge's validation rows, slope 3 cost 0.04 of Pearson with the human ratings against the plain quantile map
# (docs/judge.md).
SLOPES = (1.0, 1.5, 2.0, 2.5)
OFFSETS = (-0.5, -0.25, 0.0, 0.25, 0.5, 0.75, 1.0)


def sharpen(values: Sequence[float], slope: float, offset: float) -> tuple[float, ...]:
    """``sigmoid(slope · logit(v) + offset)`` for each value (clipped away from 0 and 1 first); non-decreasing."""
    v = np.clip(np.asarray(values, dtype=float), 1e-4, 1.0 - 1e-4)
    out = 1.0 / (1.0 + np.exp(-(slope * np.log(v / (1.0 - v)) + offset)))
    return tuple(round(float(t), 4) for t in out)


def fit_calibration(
    x: Sequence[float],
    y: Sequence[float],
    reference: str,
    fitted_on: str,
    method: str = "isotonic",
    sharpness: tuple[float, float] = (1.0, 0.0),
) -> Calibration:
    """Fit the monotone map from ``x`` (a judge's relevance) to ``y`` (the reference's); ``method``: a name of
    :data:`FITS`, or ``"sharpened"`` (the quantile map, then ``sharpness`` = (slope, offset) on its knots)."""
    kx, ky = FITS["quantile" if method == "sharpened" else method](x, y)
    if method == "sharpened":
        ky = sharpen(ky, *sharpness)
    return Calibration(kx, ky, reference, fitted_on, len(x))


@dataclass(frozen=True)
class CalibrationRow:
    """One rated row for choosing a map: its kind and its N, H, M scores by the judge and by the reference."""

    kind: str  # "emergent" (score E) or "canceled" (score C)
    judge: tuple[float, float, float]
    reference: tuple[float, float, float]


def _table_means(rows: Sequence[CalibrationRow], values: Sequence[tuple[float, float, float]]) -> list[float]:
    """Per kind: mean R_H,M,P, mean R_N,P and mean E or C (the paper's Table-3 cells), in points."""
    out: list[float] = []
    for kind in ("emergent", "canceled"):
        chosen = [Relevances(*v) for r, v in zip(rows, values, strict=True) if r.kind == kind]
        if chosen:
            columns = ([r.r_hmp for r in chosen], [r.r_np for r in chosen], [r.score(kind) for r in chosen])
            out += [100 * float(np.mean(column)) for column in columns]  # type: ignore[arg-type]
    return out


def table_gap(rows: Sequence[CalibrationRow], mapped: Sequence[tuple[float, float, float]]) -> float:
    """Mean absolute difference (points) between Table-3-style means of ``mapped`` and of the reference."""
    a, b = _table_means(rows, mapped), _table_means(rows, [r.reference for r in rows])
    return float(np.mean(np.abs(np.array(a) - np.array(b))))


def _fit_on(rows: Sequence[CalibrationRow], reference: str, fitted_on: str, method: str) -> tuple[Calibration, str]:
    """The ``method`` map fitted on ``rows`` (``sharpened``: the grid's best (slope, offset) on them) and its name."""
    x = [v for r in rows for v in r.judge]
    y = [v for r in rows for v in r.reference]
    if method != "sharpened":
        return fit_calibration(x, y, reference, fitted_on, method), method
    grid = [(slope, offset) for slope in SLOPES for offset in OFFSETS]
    candidates = [fit_calibration(x, y, reference, fitted_on, method, sharpness) for sharpness in grid]
    gaps = [table_gap(rows, [tuple(c.apply(r.judge)) for r in rows]) for c in candidates]  # type: ignore[misc]
    best = int(np.argmin(gaps))
    slope, offset = grid[best]
    return candidates[best], f"sharpened (slope {slope:g}, offset {offset:g})"


def choose_calibration(rows: Sequence[CalibrationRow], reference: str, fitted_on: str) -> tuple[Calibration, dict]:
    """Pick the fit whose map brings Table-3-style means of ``rows`` closest to the reference's (cross-fitted on two
    alternating halves), refitted on all rows; returns the map and the figures that chose it."""
    methods = (*FITS, "sharpened")
    figures: dict[str, float | str] = {"uncalibrated": round(table_gap(rows, [r.judge for r in rows]), 2)}
    halves = (rows[0::2], rows[1::2])
    for method in methods:
        fits = [_fit_on(half, reference, fitted_on, method)[0] for half in (halves[1], halves[0])]  # on the other half
        mapped = [tuple(cal.apply(r.judge)) for cal, half in zip(fits, halves, strict=True) for r in half]
        figures[method] = round(table_gap([*halves[0], *halves[1]], mapped), 2)  # type: ignore[arg-type]
    best = min(methods, key=lambda m: float(figures[m]))
    calibration, described = _fit_on(rows, reference, fitted_on, best)
    if best == "sharpened":
        figures["sharpened_on_all_rows"] = described
    return Calibration(calibration.x, calibration.y, reference, f"{described} fit, {fitted_on}", calibration.n), figures
