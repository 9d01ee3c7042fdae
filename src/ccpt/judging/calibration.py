"""A monotone map from one judge's relevance to a reference judge's scale (isotonic regression).

The distilled judge learns the human mean rating, whose scale is compressed relative to GPT-4o's (GPT-4o
gives 1 or 10 where people average 2 or 4), so E and C computed with it are not on the paper's scale.
A non-decreasing map fitted on (distilled relevance, GPT-4o relevance) pairs moves the scores onto GPT-4o's
scale without changing their order, so agreement by rank (Spearman) is untouched.

Fitting is pool-adjacent-violators on the points sorted by x; the result is stored as knots (block mean x,
block mean y) and applied by linear interpolation between knots, flat outside them. Pure: numpy only.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from itertools import pairwise

import numpy as np


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
        return cls(x, y, str(raw["reference"]), str(raw["fitted_on"]), int(raw["n"]))


def isotonic_knots(x: Sequence[float], y: Sequence[float], decimals: int = 4) -> tuple[tuple[float, ...], ...]:
    """Pool-adjacent-violators fit of y on x: (knot x, knot y), both non-decreasing, rounded to ``decimals``.

    Ties in x are pooled first (one block per distinct x), so the map is a function of x.
    """
    if len(x) != len(y) or not len(x):
        raise ValueError("isotonic fit needs equally many x and y values, at least one")
    order = np.argsort(np.asarray(x, dtype=float), kind="stable")
    xs, ys = np.asarray(x, dtype=float)[order], np.asarray(y, dtype=float)[order]
    # blocks: [sum x, sum y, count]
    blocks: list[list[float]] = []
    for xv, yv in zip(xs, ys, strict=True):
        if blocks and blocks[-1][0] / blocks[-1][2] == xv:
            blocks[-1] = [blocks[-1][0] + xv, blocks[-1][1] + yv, blocks[-1][2] + 1]
        else:
            blocks.append([xv, yv, 1.0])
        while len(blocks) > 1 and blocks[-2][1] / blocks[-2][2] > blocks[-1][1] / blocks[-1][2]:
            last = blocks.pop()
            blocks[-1] = [blocks[-1][0] + last[0], blocks[-1][1] + last[1], blocks[-1][2] + last[2]]
    kx = [round(b[0] / b[2], decimals) for b in blocks]
    ky = [round(b[1] / b[2], decimals) for b in blocks]
    # Rounding can make neighbouring knots equal or swap by a last digit: keep the map non-decreasing.
    for i in range(1, len(kx)):
        kx[i], ky[i] = max(kx[i], kx[i - 1]), max(ky[i], ky[i - 1])
    return tuple(kx), tuple(ky)


def fit_calibration(x: Sequence[float], y: Sequence[float], reference: str, fitted_on: str) -> Calibration:
    """Fit the monotone map from ``x`` (a judge's relevance) to ``y`` (the reference judge's relevance)."""
    kx, ky = isotonic_knots(x, y)
    return Calibration(kx, ky, reference, fitted_on, len(x))
