"""The tidy results table, one row per (task, model, method, seed, instance, sample), columns
:data:`ccpt.rows.COLUMNS`: from the authors' files (:func:`from_reference_csv`), Inspect logs
(:func:`from_inspect_logs`) or any mix with exported tables (:func:`load_results`); notes in ``df.attrs["notes"]``."""

from __future__ import annotations

from ccpt.results.authors import from_reference_csv
from ccpt.results.inspect_logs import LOG_SUFFIXES, from_inspect_logs, unreadable_line
from ccpt.results.load import export, from_tidy, load_results
from ccpt.results.table import optional, set_scores, tidy_frame
from ccpt.rows import COLUMNS

__layer__ = "results"  # reading result files into the tidy table (tests/test_layering.py)

__all__ = [
    "COLUMNS",
    "LOG_SUFFIXES",
    "export",
    "from_inspect_logs",
    "from_reference_csv",
    "from_tidy",
    "load_results",
    "optional",
    "set_scores",
    "tidy_frame",
    "unreadable_line",
]
