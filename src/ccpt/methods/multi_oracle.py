"""Multi-Oracle (paper §4.1): ``oracle_n`` Base samples per instance and seed, the best one counted (per column
as in the paper, or ``ccpt report --oracle single``: the sample with the best E or C)."""

from collections.abc import Mapping, Sequence
from typing import Any

from ccpt.methods.definition import Cell, Judged, Method
from ccpt.scoring import oracle_per_column, oracle_single_best
from ccpt.spec import MULTI_ORACLE, ScoredType

DEFAULT_N = 5  # the paper's samples per seed


def samples(options: Mapping[str, Any]) -> int:
    """``oracle_n`` samples per instance and seed."""
    return int(options.get("oracle_n", DEFAULT_N))


def best(samples: Sequence[Judged], kind: ScoredType, oracle: str = "paper") -> Cell:
    """The paper's per-column best (``oracle="paper"``) or the single best sample (``"single"``)."""
    reduce = oracle_per_column if oracle == "paper" else oracle_single_best
    scores = reduce([s.relevances for s in samples], kind)
    return Cell(scores.r_hmp, scores.r_np, scores.score)


METHOD = Method(MULTI_ORACLE, "Multi-Oracle", solver="ccpt.eval.solvers:prompt_solver", samples=samples, reduce=best)
