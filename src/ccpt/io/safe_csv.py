"""Spreadsheet-safe CSV cells (the OWASP CSV-injection rule), reversible so ccpt reads its own sheets back.

A cell a spreadsheet would run as a formula (``=HYPERLINK(…)``) is written with a leading apostrophe; a cell of
apostrophes followed by such a character gets one more, and reading strips exactly one.
"""

from __future__ import annotations

import csv
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ccpt.errors import DataError, require_regular_file

if TYPE_CHECKING:
    from ccpt.schemas.base import TableSchema

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _needs_quote(text: str) -> bool:
    return text.lstrip("'").startswith(FORMULA_STARTS)


def neutralise(value: Any) -> Any:
    """``value`` with a leading apostrophe if a spreadsheet would read it as a formula; non-strings unchanged."""
    return "'" + value if isinstance(value, str) and _needs_quote(value) else value


def restore(value: Any) -> Any:
    """The inverse of :func:`neutralise`: the text as the model (or person) wrote it."""
    return value[1:] if isinstance(value, str) and value.startswith("'") and _needs_quote(value[1:]) else value


def neutralise_row(row: dict[str, Any]) -> dict[str, Any]:
    """A copy of one CSV row (column → value) with every text cell neutralised."""
    return {key: neutralise(value) for key, value in row.items()}


def restore_frame(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``frame`` with every text cell restored (see :func:`restore`)."""
    out = frame.copy()
    for column in out.columns:
        if pd.api.types.is_numeric_dtype(out[column]):
            continue
        if pd.api.types.is_string_dtype(out[column]):
            quoted = out[column].str.startswith("'").fillna(False).astype(bool)
        else:  # mixed values (object dtype): only their strings can be quoted
            quoted = out[column].map(lambda v: isinstance(v, str) and v.startswith("'")).astype(bool)
        if quoted.any():  # only cells that start with an apostrophe can need restoring
            out[column] = out[column].astype(object)
            out.loc[quoted, column] = out.loc[quoted, column].map(restore)
    return out


def write_sheet(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write ``frame`` as a CSV meant to be opened by people (atomically): text cells neutralised, no index."""
    from ccpt.io.outputs import atomic_path

    path = Path(path)
    out = frame.copy()
    for column in out.columns:
        if not pd.api.types.is_numeric_dtype(out[column]):  # text may be object or a string dtype
            out[column] = out[column].map(neutralise)
    with atomic_path(path) as partial:
        # Quote every text cell: pandas leaves a lone carriage return unquoted, which splits the row on reading.
        out.to_csv(partial, index=False, quoting=csv.QUOTE_NONNUMERIC)
    return path


def check_header(path: str | Path, header: Sequence[str]) -> None:
    """Refuse a header naming a column twice: which of the two a reader takes is an accident of the reader."""
    if repeated := sorted({h for h in header if header.count(h) > 1}):
        raise DataError(f"{path}: column(s) {', '.join(map(repr, repeated))} appear more than once in the header")


def csv_header(path: Path) -> list[str]:
    """The header row of a CSV (empty when the file has none or is not readable as UTF-8 text)."""
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:
            return next(csv.reader(fh), [])
    except (OSError, UnicodeDecodeError, csv.Error):
        return []


_CELL_LIMIT = 2**31 - 1  # the largest the csv module takes on every platform


def _text_rows(path: Path, rename: Callable[[str], str]) -> tuple[list[str], list[tuple[int, list[str]]]]:
    """A CSV's header (names through ``rename``) and its non-blank rows with their numbers (0 = first after the
    header), every cell as text. What a lenient reader would take silently is one error line: a column named twice
    (pandas renames the second ``name.1``) and a row with more or fewer fields than the header (pandas pads a short
    one, as a truncated file ends)."""
    # A reply can exceed the csv module's default 128 KiB cell (pandas has no such limit); raised, never lowered.
    csv.field_size_limit(max(csv.field_size_limit(), _CELL_LIMIT))
    try:
        with path.open(newline="", encoding="utf-8-sig") as fh:  # -sig: a spreadsheet's byte-order mark
            reader = csv.reader(fh, strict=True)
            header = [rename(h) for h in next(reader, [])]
            check_header(path, header)
            rows = []
            for number, values in enumerate(reader):
                if not any(v.strip() for v in values):
                    continue  # a blank line (spreadsheets add them)
                if len(values) != len(header):
                    other = len(header) == 1 and next((d for d in ";\t|" if d in header[0]), None)
                    raise DataError(
                        f"{path}: row {number} has {len(values)} fields, the header {len(header)}",
                        f"the file is separated by {other!r}, not commas"
                        if other
                        else "the file looks truncated or was edited by hand",
                    )
                rows.append((number, values))
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})", "save it as UTF-8") from None
    except csv.Error as exc:
        raise DataError(f"{path}: malformed CSV ({exc})") from None
    return header, rows


def read_text_frame(path: Path) -> pd.DataFrame:
    """Every cell of a CSV as text (an answer ``"NA"`` stays text), checked as :func:`_text_rows` checks it."""
    header, rows = _text_rows(path, str)
    if not header:
        raise DataError(f"{path}: empty file (no CSV header)")
    return pd.DataFrame([values for _, values in rows], columns=header, dtype=str)


@dataclass(frozen=True)
class Sheet:
    """A CSV sheet read as text: its header, its non-blank rows and each row's number (0 = first after the header)."""

    header: list[str]
    rows: list[dict[str, str]]
    numbers: list[int]


def read_sheet_rows(path: str | Path, required: Sequence[str], rename: Callable[[str], str] | None = None) -> Sheet:
    """The rows of a CSV sheet, every cell as text and restored (see :func:`restore`); ``rename`` normalises
    header names (e.g. a platform's ``Answer.`` prefixes). A bad file is one :class:`~ccpt.errors.DataError` line.
    """
    path = require_regular_file(path)
    header, numbered = _text_rows(path, rename or str.strip)
    if missing := [c for c in required if c not in header]:
        raise DataError(f"{path}: missing column(s) {', '.join(missing)}", f"needs {', '.join(required)}")
    rows = [{key: restore(value) for key, value in zip(header, values, strict=True)} for _, values in numbered]
    return Sheet(header, rows, [number for number, _ in numbered])


def read_checked_sheet(path: Path, schema: TableSchema) -> tuple[list[dict[str, Any]], Sheet]:
    """A filled sheet's rows checked by its schema (one line naming the file, row and column otherwise), and the
    sheet as read (every column as text, each row's number)."""
    sheet = read_sheet_rows(path, list(schema.json_schema.get("required", [])))
    checked = schema.check(sheet.rows, str(path), row_numbers=sheet.numbers)
    schema.check_unique(checked.rows, str(path), sheet.numbers)
    return checked.rows, sheet
