"""Figures for reports (matplotlib on Agg canvases, a paper column wide): confusion heatmap, judge-vs-human scatter
(paper Figure 4), per-method bars with error bars, one panel per judge."""

from __future__ import annotations

import base64
import io
import math
import textwrap
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
from matplotlib import colormaps
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure
from matplotlib.transforms import offset_copy

from ccpt.methods import method_label
from ccpt.report.build import Report
from ccpt.report.display import sample_size
from ccpt.report.names import file_stem, model_text, unique_name
from ccpt.report.tables import GenerativeTable, Row, rows_by_judge, score_name
from ccpt.scoring import Classification
from ccpt.spec import GOLD_STORED, TASK_SPECS
from ccpt.stats import Summary

COLUMN_WIDTH_IN = 3.3
JITTER_SD = 0.05


def literal(text: str) -> str:
    """``text`` drawn as written: every "$" escaped, as matplotlib reads "$…$" as math."""
    return text.replace("$", r"\$")


def new_figure(width_in: float, height_in: float, **subplots: Any) -> tuple[Figure, Any]:
    """A figure on its own Agg canvas and its axes; no pyplot, so the process's backend stays as it is."""
    fig = Figure(figsize=(width_in, height_in), dpi=200)
    FigureCanvasAgg(fig)
    return fig, fig.subplots(**subplots)


def confusion_heatmap(cls: Classification, instances: Sequence[int] = ()) -> Figure:
    """Row-normalised confusion matrix (percent, paper order): an empty row grey with "—", an "Unparsed" column
    when some predictions were, each row labelled with its n from ``instances``."""
    pct = cls.row_percent()
    columns = [label.capitalize() for label in cls.labels]
    if cls.unparsed.any():
        totals = cls.row_totals().astype(float)
        with np.errstate(invalid="ignore", divide="ignore"):
            pct = np.column_stack([pct, 100.0 * cls.unparsed / totals])
        columns.append("Unparsed")
    fig, ax = new_figure(COLUMN_WIDTH_IN * len(columns) / 4, COLUMN_WIDTH_IN * 0.85)
    cmap = colormaps["Blues"].with_extremes(bad="#e6e6e6")  # a copy: the registered map stays as it is
    ax.imshow(np.ma.masked_invalid(pct), cmap=cmap, vmin=0, vmax=100)
    labels = [label.capitalize() for label in cls.labels]
    rows = [f"{label}\n(n={n})" for label, n in zip(labels, instances, strict=True)] if instances else labels
    ax.set_xticks(range(len(columns)), columns, fontsize=7, rotation=30)
    ax.set_yticks(range(len(labels)), rows, fontsize=7)
    ax.set_xlabel("Predicted type", fontsize=8)
    ax.set_ylabel("Actual type", fontsize=8)
    for (i, j), value in np.ndenumerate(pct):
        text = "—" if math.isnan(value) else f"{value:.1f}"
        color = "white" if not math.isnan(value) and value > 50 else "black"
        ax.text(j, i, text, ha="center", va="center", fontsize=7, color=color)
    fig.tight_layout()
    return fig


def judge_human_scatter(human: Sequence[float], judge: Sequence[float], *, seed: int = 0) -> Figure:
    """Figure 4: judge relevance vs mean human rating in [0, 1], with the least-squares line of the exact values
    (jitter N(0, 0.05²) only on the plotted points)."""
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
    fig.tight_layout()
    return fig


def bar_of(summary: Summary | None) -> tuple[float, tuple[float, float] | None]:
    """The bar for one table cell: its mean and its error below and above the mean, from its CI or its ± with two
    or more seeds; None (no error bar at all) otherwise: one seed, or Gold."""
    if summary is None or math.isnan(summary.mean):
        return math.nan, None
    mean = summary.mean
    if summary.lo is not None and summary.hi is not None and summary.hi > summary.lo:
        return mean, (mean - summary.lo, summary.hi - mean)
    if summary.spread is not None and summary.n_seeds > 1 and not math.isnan(summary.spread):
        return mean, (summary.spread, summary.spread)
    return mean, None


# What an error bar is, under each panel (the table prints the same spread; docs/metrics.md, "Table cells").
ERROR_BARS = {"sem": "±1 SEM over seeds", "paper": "± population SD of the seed means", "ci": "95% bootstrap CI"}
HEADROOM = 1.3  # the y-range's top over the highest bar or error bar: room for the marks above the bars


def method_bars(table: GenerativeTable, labels: Mapping[str, str] | None = None) -> Figure:
    """E / C per task and row with the table's spread as error bars, a panel per judge; the panels share one
    y-range computed from every panel's bars and error bars, so no bar is cut. Above a bar: "0" when it is zero,
    "1 seed" without a spread, "n/a" where the row has no such cell; each row's n in the legend under its panel."""
    score_cols = [c for c in table.columns if c.metric == "score"]
    rows = [r for r in table.rows if any((c.task, "score") in r.cells for c in score_cols)]
    panels = rows_by_judge(rows, "judge unknown")  # one panel per judge
    bars = {id(row): [bar_of(row.cells.get((col.task, "score"))) for col in score_cols] for row in rows}
    ends = [(mean - (e[0] if e else 0.0), mean + (e[1] if e else 0.0)) for b in bars.values() for mean, e in b]
    ends = [end for end in ends if not math.isnan(end[0])]
    low = min([0.0, *(lo for lo, _ in ends)])
    high = max([0.0, *(hi for _, hi in ends)])
    ratios = [max(len(members), 1) for members in panels.values()]
    width_in = COLUMN_WIDTH_IN if len(panels) == 1 else 2 * COLUMN_WIDTH_IN
    fig, axes = new_figure(
        width_in, 2.6, ncols=len(panels), sharey=True, squeeze=False, gridspec_kw={"width_ratios": ratios}
    )
    axes = axes[0]
    colours = {id(row): f"C{k % 10}" for k, row in enumerate(rows)}
    for ax, ratio, (judge, members) in zip(axes, ratios, panels.items(), strict=True):
        # A legend line as wide as its panel at most (5-pt text, ~0.6 em a character): else it runs under the next.
        chars = max(24, int(width_in * 72 * ratio / sum(ratios) / 3))
        _draw_panel(ax, members, score_cols, [bars[id(row)] for row in members], colours, labels, chars)
        ax.set_title(f"Judge: {literal(judge)}", fontsize=6)
        ax.set_xlabel(f"Error bars: {ERROR_BARS[table.stat]}", fontsize=5)
    # One range for all panels (sharey: set once, never per panel, where the last would win).
    axes[0].set_ylim(low * HEADROOM, max(high * HEADROOM, 1.0))
    axes[0].set_ylabel("Score (×100)", fontsize=7)
    fig.tight_layout()
    return fig


def _draw_panel(
    ax: Any,
    rows: Sequence[Row],
    score_cols: Sequence[Any],
    bars: Sequence[Sequence[tuple[float, tuple[float, float] | None]]],
    colours: Mapping[int, str],
    labels: Any,
    chars: int,
) -> None:
    """One judge's bars on ``ax``: error bars where the table prints a spread, marks where a bar says too little;
    legend lines of ``chars`` characters at most (a longer word is kept whole)."""
    width = 0.8 / max(len(rows), 1)
    for k, (row, row_bars) in enumerate(zip(rows, bars, strict=True)):
        positions = np.arange(len(score_cols)) + (k - (len(rows) - 1) / 2) * width
        cells = [(task, summary) for (task, metric), summary in row.cells.items() if metric == "score"]  # the drawn
        name = f"{literal(row.name(labels))} (n = {sample_size(cells, seeds=row.kind != GOLD_STORED)})"
        name = textwrap.fill(name, chars, break_long_words=False, break_on_hyphens=False)
        ax.bar(positions, [0.0 if math.isnan(m) else m for m, _ in row_bars], width, label=name, color=colours[id(row)])
        spread = [(x, mean, error) for x, (mean, error) in zip(positions, row_bars, strict=True) if error]
        if spread:
            xs, means, errors = zip(*spread, strict=True)
            yerr = [[low for low, _ in errors], [high for _, high in errors]]
            ax.errorbar(xs, means, yerr=yerr, fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5)
        for x, (mean, error) in zip(positions, row_bars, strict=True):
            _mark(ax, x, mean, colour=colours[id(row)], one_seed=not error and row.kind != GOLD_STORED)
    ax.set_xticks(
        range(len(score_cols)), [f"{TASK_SPECS[c.task].short} {score_name(c.task)}" for c in score_cols], fontsize=7
    )
    ax.tick_params(labelsize=7)
    # Below the axes: inside, the legend hides the tallest bars.
    ax.legend(fontsize=5, ncols=1, frameon=False, loc="upper center", bbox_to_anchor=(0.5, -0.2))


def _mark(ax: Any, x: float, mean: float, *, colour: str, one_seed: bool) -> None:
    """What a bar alone would not say: "n/a" for a missing cell and "0" for a zero bar (both drawn as nothing),
    "1 seed" above a bar without a spread (the stored-judge Gold row has no seeds). Clipped to the axes: a mark
    never grows the figure."""
    style: dict[str, Any] = {"ha": "center", "va": "bottom", "clip_on": True}
    if math.isnan(mean):
        ax.text(x, 0.0, "n/a", fontsize=5, color="dimgrey", **style)
        return
    if mean == 0:
        ax.text(x, 0.0, "0", fontsize=6, color=colour, fontweight="bold", **style)
    if one_seed:  # above the "0" of a zero bar, else on the bar's top
        above = offset_copy(ax.transData, fig=ax.figure, y=8 if mean == 0 else 0, units="points")
        ax.text(x, mean, "1 seed", fontsize=4.5, rotation=90, transform=above, **style)


def report_figures(report: Report) -> list[tuple[str, str, Figure]]:
    """Every figure of a report as (file stem, caption, figure): the E/C bars, a confusion matrix per Task-3 run."""
    made: list[tuple[str, str, Figure]] = []
    stems: set[str] = set()
    if report.generative is not None:
        caption = "E / C per task and row (error bars: the table's spread; one panel per judge, all on one y-range)"
        made.append(("scores_by_method", caption, method_bars(report.generative, report.labels)))
    for res in report.types:
        name = f"{model_text(res.model, report.labels)} / {method_label(res.method)}"
        stem = unique_name(file_stem(f"confusion_{res.model}_{res.method}"), stems)
        caption = f"Table 5 confusion matrix (percent of each actual type): {name}"
        made.append((stem, caption, confusion_heatmap(res.classification, instances=res.type_instances)))
    return made


def save(fig: Figure, directory: str | Path, stem: str) -> list[Path]:
    """Write ``stem.png`` and ``stem.svg`` into ``directory``; returns both paths."""
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    return [save_as(fig, out / f"{stem}.{suffix}") for suffix in ("png", "svg")]


FIGURE_SUFFIXES = (".png", ".svg", ".pdf")


def save_as(fig: Figure, path: str | Path) -> Path:
    """Write ``fig`` to ``path`` (its format from the suffix: .png, .svg or .pdf), atomically."""
    from ccpt.io.outputs import atomic_path

    path = Path(path)
    with atomic_path(path) as partial:
        fig.savefig(partial, format=path.suffix.lstrip(".").lower(), bbox_inches="tight")
    return path


def png_data_uri(fig: Figure) -> str:
    """The figure as a ``data:image/png;base64,…`` URI for self-contained HTML."""
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", bbox_inches="tight")
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")
