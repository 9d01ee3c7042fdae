"""Spreadsheet-safe CSV cells (the OWASP CSV-injection rule), reversible so ccpt reads its own sheets back.

A spreadsheet treats a cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return as a
formula, so a model answer such as ``=HYPERLINK(…)`` would run when a rater opens the sheet. Such cells are
written with a leading apostrophe, which spreadsheets show as text. To stay reversible, a cell that is one or
more apostrophes followed by such a character gets one more apostrophe; reading strips exactly one.
"""

from __future__ import annotations

import csv
from pathlib import Path
from typing import Any

import pandas as pd

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs_quote(text: str) -> bool:
    stripped = text.lstrip("'")
    return stripped.startswith(FORMULA_STARTS)


def neutralise(value: Any) -> Any:
    """``value`` with a leading apostrophe if a spreadsheet would read it as a formula; non-strings unchanged."""
    if isinstance(value, str) and _needs_quote(value):
        return "'" + value
    return value


def restore(value: Any) -> Any:
    """The inverse of :func:`neutralise`: the text as the model (or person) wrote it."""
    if isinstance(value, str) and value.startswith("'") and _needs_quote(value[1:]):
        return value[1:]
    return value


def neutralise_row(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of one CSV row (column → value) with every text cell neutralised."""
    return {key: neutralise(value) for key, value in row.items()}


def restore_row(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of one CSV row with every text cell restored (see :func:`restore`)."""
    return {key: restore(value) for key, value in row.items()}


def neutralise_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell neutralised (numbers stay numbers)."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):  # text may be object or a string dtype
            out[column] = out[column].map(neutralise)
    return out


def restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell restored (see :func:`restore`)."""
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):
            out[column] = out[column].map(restore)
    return out


def write_sheet(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` as a CSV meant to be opened by people: text cells neutralised, no index."""
    path = Path(path)
    # Quote every text cell: pandas leaves a lone carriage return unquoted, which splits the row on reading.
    neutralise_frame(frame).to_csv(path, index=False, quoting=csv.QUOTE_NONNUMERIC)
    return path
