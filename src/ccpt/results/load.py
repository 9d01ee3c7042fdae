"""Loading any mix of result files (the authors' CSVs, Inspect logs, tidy tables) and exporting the tidy table."""

from __future__ import annotations

import csv
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ccpt.errors import DataError, require_pyarrow
from ccpt.protocol import DEFAULT_PROTOCOL
from ccpt.results.authors import from_reference_csv
from ccpt.results.inspect_logs import UnreadableLog, from_inspect_logs
from ccpt.results.table import missing_columns, tidy_frame
from ccpt.rows import COLUMNS

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


LOG_SUFFIXES = (".eval", ".json")


def load_results(paths: str | Path | Iterable[str | Path], dataset: CCPTDataset | None = None) -> pd.DataFrame:
    """The tidy per-sample table (columns :data:`COLUMNS`) of one path or many: the authors' reference CSVs,
    Inspect log files and directories, tidy tables written by :func:`export` (mixed is fine).

    A directory is read as Inspect logs, plus any ``*.csv`` directly inside it as reference files.
    ``dataset`` maps the authors' files to dataset record ids (without it, ids are positional).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    unreadable: list[UnreadableLog] = []
    for item in paths:
        path = Path(item)
        if not path.exists():
            raise DataError(f"{path}: no such file or directory")
        parts: list[pd.DataFrame] = []
        if path.is_dir():
            parts.extend(from_reference_csv(p, dataset) for p in sorted(path.glob("*.csv")))
            if any(p.suffix in LOG_SUFFIXES for p in path.rglob("*")):
                parts.append(from_inspect_logs(path))
            if not parts:
                raise DataError(f"{path}: no result CSVs or Inspect logs inside")
        elif path.suffix == ".parquet" or (path.suffix == ".csv" and _is_tidy(path)):
            parts.append(from_tidy(path))
        elif path.suffix == ".csv":
            parts.append(from_reference_csv(path, dataset))
        elif path.suffix in LOG_SUFFIXES:
            parts.append(from_inspect_logs(path))
        else:
            raise DataError(f"{path}: unknown result file type (expected .csv, .eval or .json)")
        for part in parts:
            notes.extend(part.attrs.get("notes", []))
            unreadable.extend(part.attrs.get("unreadable", []))
        frames.extend(parts)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    out.attrs["notes"] = notes
    out.attrs["unreadable"] = unreadable
    return out


_TIDY_MARKERS = ("task", "model", "method", "seed", "instance", "r_np", "parse_ok")


def _is_tidy(path: Path) -> bool:
    """Whether a CSV is a tidy table written by :func:`export` (rather than one of the authors' result files)."""
    with path.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), [])
    return all(column in header for column in _TIDY_MARKERS)


def from_tidy(path: str | Path) -> pd.DataFrame:
    """Read back a tidy table written by :func:`export` (e.g. judged human answers from `ccpt human`)."""
    path = Path(path)
    if path.suffix == ".parquet":
        require_pyarrow(path)
        frame = pd.read_parquet(path)
    else:
        from ccpt.sheets import restore_frame

        frame = restore_frame(pd.read_csv(path, keep_default_na=True))
    # Columns added after the first exports: a table written before them gets what they meant then.
    for column, value in (("protocol", DEFAULT_PROTOCOL), ("sa_failed_steps", None)):
        if column not in frame.columns:  # (no protocol yet: ccpt's default; no count yet: not counted)
            frame[column] = value
    missing = missing_columns(frame.columns, COLUMNS)
    if missing:
        raise DataError(f"{path}: not a ccpt tidy table, missing column(s) {', '.join(missing)}")
    out = tidy_frame(frame[list(COLUMNS)].astype(object).where(frame[list(COLUMNS)].notna(), None).to_dict("records"))
    out.attrs["notes"] = []
    return out


def export(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the tidy table as CSV or Parquet (chosen by the suffix)."""
    path = Path(path)
    if path.suffix == ".csv":  # opened by people in spreadsheets: model text must not become a formula
        from ccpt.sheets import write_sheet

        write_sheet(frame, path)
    elif path.suffix in (".parquet", ".pq"):
        require_pyarrow(path)
        frame.to_parquet(path, index=False)
    else:
        raise DataError(f"{path}: unsupported export format (use .csv or .parquet)")
    return path
