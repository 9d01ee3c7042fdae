"""The summary `ccpt run` prints when a sweep ends: the report layer on the sweep's own logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ccpt.dataset import load_dataset
from ccpt.errors import DataError
from ccpt.report import render_json, render_markdown, report_from_paths
from ccpt.results.usage import load_prices, timeout_note


def print_summary(
    log_dir: Path,
    *,
    stat: str = "sem",
    fmt: str = "text",
    data_dir: str | None = None,
    generation: Mapping[str, Any] | None = None,
    prices: Path | None = None,
    timeout: int | None = None,
) -> None:
    """Print the report of every log in ``log_dir``; a run whose attempts mostly timed out (``timeout``: the
    run's ``--timeout``) says so on stderr and in the report, with the fix."""
    try:
        dataset = load_dataset(data_dir)
    except DataError:
        dataset = None  # the Gold row needs the dataset; the rest of the summary does not
    price_list = load_prices(prices) if prices else None
    report = report_from_paths([log_dir], dataset=dataset, stat=stat, generation=generation, prices=price_list)  # type: ignore[arg-type]
    if slow := timeout_note(report.usage, timeout):
        report.notes.append(slow)
        click.echo(f"ccpt: warning: {slow}", err=True)
    click.echo(render_json(report) if fmt == "json" else render_markdown(report))
