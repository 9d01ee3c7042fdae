"""Leave-one-model-out evaluation of a relevance judge against GPT-4o's stored verdicts on the authors' runs.

A held-out model's Table-3 runs (Base and the three SA methods) are re-judged with the judge's scores and compared
with GPT-4o's by the report's own code (:func:`ccpt.report.cross_judge.cross_judge`, ``paper`` statistic): ``mad``
(mean absolute cell difference, points, also per task), ``canceled_c`` (mean signed difference of PI-canceled's C),
``best_kept`` (columns whose best method is the same, with Kendall's τ-b) and ``pair_pearson`` (on teacher pairs).
"""

from __future__ import annotations

import math
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any

from ccpt.errors import DataError
from ccpt.judging.rated_pairs import pair_key
from ccpt.spec import GENERATIVE_TASKS, PI_CANCELED, TASK_SPECS

# It re-judges result files and compares them with the report's tables: the report layer (tests/test_layering.py).
__layer__ = "report"

if TYPE_CHECKING:
    import pandas as pd

    from ccpt.judging.calibration import Calibration
    from ccpt.judging.teacher_pairs import TeacherPair

# The authors' method names of the paper's Table 3 rows Base and Spreading Activation (LLM, ConceptNet, both).
TABLE3_METHODS = ("naive", "sa-llm", "sa-conceptnet", "sa-llm&conceptnet")


def table3_runs(frames: Iterable[pd.DataFrame]) -> dict[str, pd.DataFrame]:
    """Per model, the rows of its Table-3 Base/SA runs (per-step and no-filter files left out)."""
    import pandas as pd

    chosen: dict[str, list[pd.DataFrame]] = {}
    for frame in frames:
        if frame.empty:
            continue
        wanted = frame["method_raw"].isin(TABLE3_METHODS) & frame["task"].isin(GENERATIVE_TASKS)
        keep = frame[wanted & frame["sa_iteration"].isna()]
        for model, part in keep.groupby("model"):
            chosen.setdefault(str(model), []).append(part)
    return {m: pd.concat(parts, ignore_index=True) for m, parts in chosen.items()}


def _judged(row: Mapping[str, Any]) -> tuple[tuple[str, str, str], str] | None:
    """The row's three judged concepts and property, or None for an answer the re-judge would not judge."""
    from ccpt.judging.teacher_pairs import judged_concepts

    if not row.get("parse_ok") or (judged := judged_concepts(row)) is None:
        return None
    concepts, prop = judged
    return (str(concepts[0]), str(concepts[1]), str(concepts[2])), str(prop)


def needed_pairs(frames: Iterable[pd.DataFrame]) -> list[tuple[str, str]]:
    """Every distinct (concept, property) a re-judge of the frames asks about (whitespace collapsed)."""
    seen: dict[tuple[str, str], tuple[str, str]] = {}
    for frame in frames:
        for row in frame.to_dict("records"):
            concepts, prop = _judged(row) or ((), "")  # an answer not judged asks about no pair
            for concept in concepts:
                seen.setdefault(pair_key(concept, prop), (" ".join(concept.split()), " ".join(prop.split())))
    return list(seen.values())


def fit_runs_map(
    runs: Mapping[str, pd.DataFrame],
    score: Callable[[Sequence[tuple[str, str]]], list[float]],
    limit: int = 6000,
    seed: int = 0,
) -> tuple[Calibration, dict]:
    """A judge's calibration map chosen (:func:`choose_calibration`) on ``limit`` seeded rows of the stored runs with
    three numeric GPT-4o relevances, each distinct pair scored once with ``score`` (the judge's raw relevance)."""
    from ccpt.judging.calibration import CalibrationRow, choose_calibration

    candidates: list[tuple[str, tuple[str, str, str], str, tuple[float, float, float]]] = []
    for model in sorted(runs):
        for row in runs[model].to_dict("records"):
            judged = _judged(row)
            ref = [row.get(k) for k in ("r_np", "r_hp", "r_mp")]
            if judged is None or any(not isinstance(v, int | float) or not math.isfinite(v) for v in ref):
                continue
            kind = TASK_SPECS[row["task"]].kind
            candidates.append((kind, *judged, tuple(float(v) for v in ref)))  # type: ignore[arg-type]
    if not candidates:
        raise DataError("no judged sample row with GPT-4o's three stored relevances in the runs: nothing to fit on")
    random.Random(seed).shuffle(candidates)
    chosen = candidates[:limit]
    unique = {pair_key(c, prop): (" ".join(c.split()), " ".join(prop.split())) for _, cs, prop, _ in chosen for c in cs}
    scores = dict(zip(unique, score(list(unique.values())), strict=True))
    rows = [
        CalibrationRow(kind, tuple(scores[pair_key(c, prop)] for c in cs), ref)  # type: ignore[arg-type]
        for kind, cs, prop, ref in chosen
    ]
    where = f"{len(rows)} sample rows of the stored Table-3 runs of {', '.join(sorted(runs))}"
    return choose_calibration(rows, "GPT-4o's relevance stored in the authors' runs", where)


def rejudged(frame: pd.DataFrame, scores: Mapping[tuple[str, str], float], judge: str) -> pd.DataFrame:
    """The frame with every relevance (and R_H,M,P, E/C) replaced by ``scores``, as ``ccpt rejudge`` would."""
    from ccpt.results.table import set_scores, tidy_frame
    from ccpt.scoring import Relevances

    rows = []
    for row in frame.to_dict("records"):
        row = dict(row, judge=judge)
        judged = _judged(row)
        relevances = [None] * 3 if judged is None else [scores.get(pair_key(c, judged[1])) for c in judged[0]]
        set_scores(row, Relevances(*relevances))
        rows.append(row)
    return tidy_frame(rows)


@dataclass(frozen=True)
class Figures:
    """One held-out model's figures (see the module docstring)."""

    model: str
    cells: int
    mad: float
    mad_by_task: dict[str, float]
    canceled_c: float | None  # mean signed difference of PI-canceled's C over the Base/SA cells
    canceled_c_cells: dict[str, tuple[float, float]]  # method → (GPT-4o, judge) PI-canceled C
    best_kept: int
    columns: int
    taus: tuple[float | None, ...]
    pair_pearson: float | None
    pairs: int

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures."""
        return asdict(self) | {
            "mad": round(self.mad, 2),
            "mad_by_task": {k: round(v, 2) for k, v in self.mad_by_task.items()},
            "canceled_c": None if self.canceled_c is None else round(self.canceled_c, 2),
            "canceled_c_cells": {k: [round(a, 1), round(b, 1)] for k, (a, b) in self.canceled_c_cells.items()},
            "taus": [None if t is None else round(t, 2) for t in self.taus],
            "pair_pearson": None if self.pair_pearson is None else round(self.pair_pearson, 3),
        }


def figures(
    model: str,
    reference: pd.DataFrame,
    scores: Mapping[tuple[str, str], float],
    teacher: Sequence[TeacherPair],
    judge: str = "judge",
) -> Figures:
    """The held-out model's figures: its runs under GPT-4o's stored relevances against under ``scores``."""
    from ccpt.report.cross_judge import cross_judge
    from ccpt.stats import pearson

    view = cross_judge(reference, rejudged(reference, scores, judge), "gpt-4o", judge, stat="paper")
    cells = list(view.cells)
    by_task = {t: [abs(c.difference) for c in cells if c.task == t] for t in sorted({c.task for c in cells})}
    canceled = [c for c in cells if c.task == PI_CANCELED and c.metric == "score"]
    # Over the pairs of the compared runs (so every judge is measured on the same pairs, whatever else it scored).
    judged = {pair_key(c, p) for c, p in needed_pairs([reference])}
    own = [p for p in teacher if p.model == model and p.key in judged and p.key in scores]
    r = pearson([p.relevance for p in own], [scores[p.key] for p in own]) if len(own) > 2 else math.nan
    return Figures(
        model=model,
        cells=len(cells),
        mad=sum(abs(c.difference) for c in cells) / len(cells) if cells else math.nan,
        mad_by_task={t: sum(v) / len(v) for t, v in by_task.items()},
        canceled_c=sum(c.difference for c in canceled) / len(canceled) if canceled else None,
        canceled_c_cells={c.method: (c.a, c.b) for c in canceled},
        best_kept=sum(r.same_best for r in view.rankings),
        columns=len(view.rankings),
        taus=tuple(r.tau for r in view.rankings),
        pair_pearson=None if math.isnan(r) else r,
        pairs=len(own),
    )


def markdown(rows: Sequence[tuple[str, Figures]]) -> str:
    """A Markdown table: one line per (approach, held-out model)."""
    lines = [
        "| approach | held-out model | cells | MAD | PI-emergent | PI-canceled | NPC | PI-canceled C Δ | "
        "best kept | τ ≤ 0.33 | pair Pearson |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, f in rows:
        low = sum(t is not None and round(t, 2) <= 0.33 for t in f.taus)  # τ = 1/3 counts (as printed)
        task = [f.mad_by_task.get(t) for t in GENERATIVE_TASKS]
        lines.append(
            f"| {name} | {f.model} | {f.cells} | {f.mad:.1f} | "
            + " | ".join("–" if v is None else f"{v:.1f}" for v in task)
            + f" | {'–' if f.canceled_c is None else f'{f.canceled_c:+.1f}'} | {f.best_kept}/{f.columns} | "
            f"{low} | {'–' if f.pair_pearson is None else f'{f.pair_pearson:.3f}'} |"
        )
    return "\n".join(lines) + "\n"
