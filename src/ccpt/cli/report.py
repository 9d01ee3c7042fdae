"""`ccpt report PATH...`: paper tables (3, 5, 6, 7, failures) from Inspect logs and/or the authors' CSVs."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

from ccpt.cli.messages import say, warn
from ccpt.cli.options import (
    DIR,
    EXISTING_PATH,
    FILE,
    data_dir_option,
    defaulted,
    label_option,
    optional_dataset,
    prices_option,
    results_dir_option,
)
from ccpt.errors import CcptError, DataError

# Mirrors ccpt.report.FORMATS; kept literal so `ccpt --help` does not import pandas.
FORMATS = ("markdown", "latex", "csv", "json", "html")
STAT_HELP = (
    "Spread statistic: sem = standard error over seeds (default; paper with --paper), paper = population SD of the "
    "seed means (what the paper prints as ± 'SEM'), ci = 95% bootstrap CI over instances."
)


@click.command("report")
@click.argument("paths", nargs=-1, type=EXISTING_PATH)
@click.option(
    "--paper",
    is_flag=True,
    help="Report the authors' stored result files (the paper's models, judged by GPT-4o): Tables 3, 5, 6 and 7 "
    "with the Gold row, from --results-dir / $CCPT_RESULTS_DIR, else ccpt's verified copy, downloaded if absent.",
)
@click.option(
    "--beside-paper",
    is_flag=True,
    help="Put the paper's models beside PATHS in Table 3, ranked together, where one judge scored both: the "
    "stored GPT-4o verdicts beside a GPT-4o-judged run, the stored answers re-judged by the run's judge where "
    "ccpt has its scores (the default distilled judge; `ccpt judge paper-scores` for others); else one line.",
)
@results_dir_option()
@click.option("--stat", type=click.Choice(["sem", "paper", "ci"]), help=STAT_HELP)
@defaulted(
    "--oracle",
    type=click.Choice(["paper", "single"]),
    default="paper",
    help="Multi-Oracle: paper = best per column; single = all columns from the sample with the best E/C.",
)
@defaulted("--format", "fmt", type=click.Choice(FORMATS), default="markdown")
@click.option("--out", type=FILE, help="Write here (default: stdout).")
@data_dir_option(help="CCPT dataset directory: maps instances to dataset ids and adds the Gold row.")
@click.option("--figures", type=DIR, help="Also save PNG+SVG figures here.")
@click.option(
    "--judge-info",
    help="Text describing the judge, printed in the report. Default: each judge of the results with its "
    "measured agreement with human ratings (see `ccpt judge-agreement`).",
)
@click.option("--tidy", type=FILE, help="Also export the tidy per-sample table (.csv or .parquet).")
@prices_option
@label_option("Print model MODEL (its id in the results) as NAME, e.g. --label openai/gpt-4o=GPT-4o; repeatable.")
@click.option(
    "--strict",
    is_flag=True,
    help="Fail (exit 2, no report) when a log file cannot be read, instead of skipping it with a warning.",
)
def command(
    paths: tuple[Path, ...],
    fmt: str,
    out: Path | None,
    data_dir: Path | None,
    figures: Path | None,
    tidy: Path | None,
    strict: bool,
    prices: Path | None,
    labels: tuple[str, ...],
    paper: bool,
    beside_paper: bool,
    results_dir: Path | None,
    stat: str | None,
    **options: Any,
) -> None:
    """Tables 3/5/6/7 and failure counts from Inspect log dirs/files and/or the authors' result CSVs.

    Reproduce the paper from the authors' stored outputs: ccpt report --paper. Your run beside the paper's
    models, under your run's judge: ccpt report RUN --beside-paper.
    """
    import pandas as pd

    from ccpt.dataset import load_dataset
    from ccpt.io.outputs import atomic_write_text, ensure_writable_dir, ensure_writable_file, refuse_inputs
    from ccpt.io.sources import dataset_files, stored_result_files
    from ccpt.report import figures as figs
    from ccpt.report import render, report_from_paths
    from ccpt.report.names import parse_labels
    from ccpt.report.paper import beside_paper as beside_paper_rows
    from ccpt.report.paper import read_stored
    from ccpt.results import export, load_results, unreadable_line
    from ccpt.results.inspect_logs import LogCache
    from ccpt.results.load import input_files, read_from_dirs
    from ccpt.results.usage import load_prices

    if paper and (paths or beside_paper):
        raise click.UsageError(
            "--paper reports the stored files alone; beside results: ccpt report PATH... --beside-paper"
        )
    if not paper and not paths:
        raise click.UsageError(
            "no results to report: give result paths (Inspect logs, tidy or authors' files), or --paper"
        )
    if results_dir is not None and not (paper or beside_paper):
        raise click.BadParameter("the stored files are read with --paper or --beside-paper", param_hint="--results-dir")
    stored_files = stored_result_files(results_dir) if paper or beside_paper else []
    options["stat"] = stat or ("paper" if paper else "sem")
    # Before the (possibly long) report: a bad path is one line, not a lost run, and no input is overwritten —
    # a result file, the dataset, the price list.
    inputs = [*input_files(paths), *stored_files, *dataset_files(data_dir), *([prices] if prices else [])]
    for option, target in (("--out", out), ("--tidy", tidy)):
        refuse_inputs(target, inputs, option)
        if target is not None and (directory := read_from_dirs(target, paths)) is not None:
            raise CcptError(
                f"{option} {target}: inside the input directory {directory}, it would be read as a result file "
                "by the next report of that directory",
                "write it outside the directory",
            )
    if out is not None and tidy is not None and out.resolve() == tidy.resolve():
        raise CcptError(f"--out and --tidy are the same file ({out})", "give each its own file")
    ensure_writable_file(out, "--out")
    ensure_writable_file(tidy, "--tidy")
    if figures is not None:
        ensure_writable_dir(figures, "--figures")
    price_list = load_prices(prices) if prices else None
    # The paper's tables carry the Gold row: the dataset is fetched for them as the stored files are.
    dataset = load_dataset(data_dir) if paper else optional_dataset(data_dir)
    extra_notes: list[str] = []
    logs: LogCache = {}  # the Inspect logs read for the rows, read again by no other part of the report
    if paper:
        frame, extra_notes = read_stored(stored_files, dataset)
    else:
        frame = load_results(paths, dataset, cache=logs)
    if unreadable := frame.attrs.get("unreadable", []):
        if strict:
            raise DataError(unreadable_line(unreadable), "drop --strict to report the readable logs")
        warn(f"skipped {unreadable_line(unreadable)}")
    loaded = frame  # the tidy table holds the results read, not the paper's rows put beside them
    names: dict[str, str] = {}
    if beside_paper:
        stored, extra_notes = read_stored(stored_files, dataset)
        beside = beside_paper_rows(frame, stored)
        for line in beside.lines:
            say(line)
        extra_notes += [*beside.notes, *beside.lines]
        if not beside.frame.empty:
            names |= beside.labels
            attrs = frame.attrs  # what reading the run found (unreadable logs, notes): kept
            frame = pd.concat([frame, beside.frame], ignore_index=True)
            frame.attrs = attrs
    models = {str(m) for m in frame["model"].dropna()}
    names |= parse_labels(labels, models)
    # --stat, --oracle, --judge-info
    report = report_from_paths(
        paths,
        frame=frame,
        dataset=dataset,
        labels=names,
        prices=price_list,
        rank_scope="all" if beside_paper else "model",
        cache=logs,
        **options,
    )
    report.notes += extra_notes
    for warning in report.warnings:
        warn(warning)
    drawn = list(figs.report_figures(report)) if figures is not None or fmt == "html" else []
    embedded = [(caption, figs.png_data_uri(fig)) for _, caption, fig in drawn] if fmt == "html" else []
    text = render(report, fmt, embedded)  # type: ignore[arg-type]
    # Files are written once the report is rendered: an error exit leaves no output behind.
    for stem, _, fig in drawn:
        if figures is not None:
            figs.save(fig, figures, stem)
        fig.clear()  # frees memory sooner (no pyplot registry holds it)
    if tidy is not None:
        export(loaded, tidy)
    if out is None:
        click.echo(text, nl=False)
    else:
        atomic_write_text(out, text, "--out")
        click.echo(f"wrote {out}", err=True)
