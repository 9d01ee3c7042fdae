"""The summary `ccpt run` prints when a sweep ends: the report layer on the sweep's own logs."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from ccpt.agreement_store import judge_note
from ccpt.dataset import load_dataset
from ccpt.errors import DataError
from ccpt.report import build_report, frame_provenance, render_json, render_markdown
from ccpt.results import load_results
from ccpt.results.usage import load_prices, read_usage, timeout_note


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
    """Print Table 3 / Table 5 / failure counts for every log in ``log_dir``, with the judge's agreement.

    ``generation`` (the sweep's sampling settings) goes into the report's provenance block; ``prices`` (a TOML
    price list) adds the cost to the token table. A run whose attempts mostly timed out (``timeout``: the
    run's ``--timeout``) says so on stderr and in the report, with the fix.
    """
    frame = load_results([log_dir])
    judges = sorted({j for j in frame["judge"].dropna().unique() if j})
    try:
        dataset = load_dataset(data_dir)
    except DataError:
        dataset = None  # the Gold row needs the dataset; the rest of the summary does not
    block = frame_provenance(frame, dataset)
    if generation:
        block["generation"] = dict(generation)
    report = build_report(frame, stat=stat, dataset=dataset, judge_info=judge_note(judges), provenance=block)  # type: ignore[arg-type]
    report.usage = read_usage([log_dir], load_prices(prices) if prices else None)
    slow = timeout_note(report.usage, timeout)
    if slow:
        report.notes.append(slow)
        click.echo(f"ccpt: warning: {slow}", err=True)
    click.echo(render_json(report) if fmt == "json" else render_markdown(report))
