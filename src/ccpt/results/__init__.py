"""The tidy results table: one row per (task, model, method, seed, instance, sample).

Readers: :func:`from_reference_csv` (:mod:`~ccpt.results.authors`), the authors' stored result files;
:func:`from_inspect_logs` (:mod:`~ccpt.results.inspect_logs`, whose :func:`read_logs` is the one reader of log
files, also for token accounting and the sweep), Inspect logs written by ccpt's tasks; :func:`load_results`
(:mod:`~ccpt.results.load`), any mix of the two and of exported tidy tables.

Columns are :data:`ccpt.rows.COLUMNS` (docs/metrics.md, "Per-sample results"). Relevances are in [0, 1]; ``r_hmp``
and ``score`` are always (re)computed with :mod:`ccpt.scoring`. Notes about the import (e.g. how instance ids were
assigned) are kept in ``df.attrs["notes"]``.
"""

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
