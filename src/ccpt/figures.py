"""Figures for reports (matplotlib, explicit Agg canvases): confusion heatmap, judge-vs-human scatter (paper Figure 4),
per-method bar chart with error bars. Sized for a paper column (3.3 in wide); saved as PNG and SVG.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from ccpt.report import GenerativeTable, score_name
from ccpt.scoring import Classification
from ccpt.spec import TASK_SPECS, method_label

COLUMN_WIDTH_IN = 3.3
JITTER_SD = 0.05


def new_figure(width_in: float, height_in: float, *, dpi: int = 200) -> tuple[Figure, Any]:
    """A figure with one axes on its own Agg canvas.

    The object API (no pyplot) leaves the process's matplotlib backend alone — importing ccpt in a notebook
    keeps the notebook's inline backend — and holds no global figure registry, so nothing needs closing.
    """
    fig = Figure(figsize=(width_in, height_in), dpi=dpi)
    FigureCanvasAgg(fig)
    return fig, fig.subplots()


def confusion_heatmap(cls: Classification, title: str = "") -> Figure:
    """Row-normalised confusion matrix (percent) in the paper's type order."""
    pct = cls.row_percent()
    fig, ax = new_figure(COLUMN_WIDTH_IN, COLUMN_WIDTH_IN * 0.85)
    ax.imshow(pct, cmap="Blues", vmin=0, vmax=100)
    labels = [label.capitalize() for label in cls.labels]
    ax.set_xticks(range(len(labels)), labels, fontsize=7, rotation=30)
    ax.set_yticks(range(len(labels)), labels, fontsize=7)
    ax.set_xlabel("Predicted type", fontsize=8)
    ax.set_ylabel("Actual type", fontsize=8)
    for i in range(pct.shape[0]):
        for j in range(pct.shape[1]):
            ax.text(
                j,
                i,
                f"{pct[i, j]:.1f}",
                ha="center",
                va="center",
                fontsize=7,
                color="white" if pct[i, j] > 50 else "black",
            )
    if title:
        ax.set_title(title, fontsize=8)
    fig.tight_layout()
    return fig


def judge_human_scatter(human: Sequence[float], judge: Sequence[float], *, seed: int = 0, title: str = "") -> Figure:
    """Figure 4: judge relevance vs mean human rating, both in [0, 1], with the least-squares line.

    The regression is fitted on the exact values; jitter from N(0, 0.05²) is added afterwards, only to the
    plotted points (as in the paper's caption).
    """
    x = np.asarray(human, dtype=float)
    y = np.asarray(judge, dtype=float)
    fig, ax = new_figure(COLUMN_WIDTH_IN, COLUMN_WIDTH_IN)
    if len(x) >= 2 and np.ptp(x) > 0:
        slope, intercept = np.polyfit(x, y, 1)
        grid = np.linspace(0, 1, 50)
        ax.plot(grid, slope * grid + intercept, color="tab:red", linewidth=1)
    rng = np.random.default_rng(seed)
    ax.scatter(x + rng.normal(0, JITTER_SD, len(x)), y + rng.normal(0, JITTER_SD, len(y)), s=4, alpha=0.5)
    ax.set_xlabel("Human rating (mean, rescaled to [0,1])", fontsize=7)
    ax.set_ylabel("LLM-as-a-judge relevance", fontsize=7)
    ax.tick_params(labelsize=7)
    if title:
        ax.set_title(title, fontsize=8)
    fig.tight_layout()
    return fig


def method_bars(table: GenerativeTable) -> Figure:
    """E / C per task (groups) and method (bars), with the table's spread (± or CI) as error bars."""
    score_cols = [c for c in table.columns if c.metric == "score"]
    rows = [r for r in table.rows if any((c.task, "score") in r.cells for c in score_cols)]
    fig, ax = new_figure(COLUMN_WIDTH_IN, 2.4)
    width = 0.8 / max(len(rows), 1)
    for k, row in enumerate(rows):
        means, low, high = [], [], []
        for col in score_cols:
            s = row.cells.get((col.task, "score"))
            mean = s.mean if s else np.nan
            if s and s.lo is not None and s.hi is not None:
                err = (mean - s.lo, s.hi - mean)
            elif s and s.spread is not None and s.n_seeds > 1 and not np.isnan(s.spread):
                err = (s.spread, s.spread)
            else:
                err = (0.0, 0.0)
            means.append(mean)
            low.append(err[0])
            high.append(err[1])
        positions = np.arange(len(score_cols)) + (k - (len(rows) - 1) / 2) * width
        label = row.label if row.kind != "run" else f"{row.model} {method_label(row.method)}"
        ax.bar(positions, means, width, yerr=[low, high], capsize=1.5, label=label, error_kw={"linewidth": 0.6})
    ax.set_xticks(
        range(len(score_cols)),
        [f"{TASK_SPECS[c.task].short} {score_name(c.task)}" for c in score_cols],
        fontsize=7,
    )
    ax.set_ylabel("Score (×100)", fontsize=7)
    ax.tick_params(labelsize=7)
    # Below the axes: inside, the legend hides the tallest bars.
    ax.legend(fontsize=5, ncols=2, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.12))
    fig.tight_layout()
    return fig


def save(fig: Figure, directory: str | Path, stem: str) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` into ``directory``; returns both paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    paths = [out / f"{stem}.png", out / f"{stem}.svg"]
    for path in paths:
        save_as(fig, path)
    return paths


FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def save_as(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (its format from the suffix: .png, .svg or .pdf), atomically."""
    from ccpt.outputs import atomic_path

    path = Path(path)
    with atomic_path(path) as partial:
        fig.savefig(partial, format=path.suffix.lstrip(".").lower(), bbox_inches="tight")
    return path


def png_data_uri(fig: Figure) -> str:
    """The figure as a ``data:image/png;base64,…`` URI for self-contained HTML."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def close(fig: Figure) -> None:
    """Release a figure's artists early (no pyplot registry holds it; this only frees memory sooner)."""
    fig.clear()
