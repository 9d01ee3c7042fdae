"""Loading any mix of result files (the authors' CSVs, Inspect logs, tidy tables) and exporting the tidy table."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from ccpt.errors import DataError, require_pyarrow, require_regular_file
from ccpt.io.safe_csv import csv_header, read_text_frame, restore_frame
from ccpt.protocol import DEFAULT_PROTOCOL
from ccpt.results.authors import from_reference_csv
from ccpt.results.checks import (
    dataset_items,
    dataset_versions,
    method_problem,
    mixed_id_schemes,
    test_splits,
    variant_problem,
)
from ccpt.results.identity import adopt_variants, copied_seeds, deduplicate, fill_judges, one_spelling, pooled_settings
from ccpt.results.inspect_logs import (
    JUDGE_IDENTITIES,
    LOG_SUFFIXES,
    REPLY_FORMATS,
    LogCache,
    UnreadableLog,
    from_inspect_logs,
    reply_format_note,
    unreadable_line,
)
from ccpt.results.table import derived_note, missing_columns, recompute, tidy_frame
from ccpt.rows import COLUMNS, FLOAT_COLUMNS, RUN_IDENTITY

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset
    from ccpt.judges import JudgeIdentity


def load_results(
    paths: str | Path | Iterable[str | Path], dataset: CCPTDataset | None = None, *, cache: LogCache | None = None
) -> pd.DataFrame:
    """The tidy per-sample table of one path or many, mixed: the authors' CSVs, Inspect logs, directories of them,
    tables written by :func:`export`. ``dataset`` maps the authors' rows to record ids (else ids are positional);
    ``cache``: the Inspect logs the command has read already (:data:`ccpt.results.inspect_logs.LogCache`)."""
    if isinstance(paths, str | Path):
        paths = [paths]
    frames: list[pd.DataFrame] = []
    read_from: list[str] = []  # per row of ``frames``, the path given that it was read from
    notes: list[str] = []
    skipped: list[str] = []  # CSVs inside a directory that are no result file
    unreadable: list[UnreadableLog] = []
    settings: dict[tuple[str, ...], dict[str, str]] = {}  # Inspect logs' generation settings per run identity
    sent: dict[str, str] = {}  # Inspect log name → the generation settings its answers' model was sent
    judges: dict[str, JudgeIdentity] = {}  # each Inspect log's judge identity by its key
    formats: dict[str, set[str]] = {}  # each LLM judge's reply formats, over every path read
    authors: set[str] = set()  # the authors' files read (their reader checks their seeds itself)

    def authored(part: pd.DataFrame) -> pd.DataFrame:
        authors.update(part["source"].dropna().astype(str))
        return part

    for item in paths:
        path = Path(item)
        parts: list[pd.DataFrame] = []
        if not path.is_dir():  # a FIFO given by name is refused (inside a directory it is skipped and named)
            require_regular_file(path)
        if path.is_dir():
            csvs = sorted(path.glob("*.csv"))
            # A FIFO or a device named *.csv would block the reader (or never end): skipped and named.
            irregular = [UnreadableLog(str(p), "not a regular file (skipped)") for p in csvs if not p.is_file()]
            unreadable.extend(irregular)
            notes.extend(f"skipped {unreadable_line(irregular)}" for _ in irregular[:1])
            # A tidy Parquet table is read when named, not from a directory (an export beside its logs would be
            # read twice): named, never dropped unsaid.
            skipped.extend(f"skipped {p}: a Parquet table in a directory is not read (give it by name)"
                           for p in sorted(path.glob("*.parquet")))  # fmt: skip
            for csv_path in (p for p in csvs if p.is_file()):
                try:
                    parts.append(authored(from_reference_csv(csv_path, dataset)))
                except DataError as exc:  # one file the directory holds is not a result file: name it, read the rest
                    skipped.append(f"skipped {exc.message}")
            if any(p.suffix in LOG_SUFFIXES for p in path.rglob("*")):
                parts.append(from_inspect_logs(path, dataset, cache=cache))
            if not parts:
                raise DataError(
                    f"{path}: no result CSVs or Inspect logs inside" + (f" ({'; '.join(skipped)})" if skipped else "")
                )
        elif path.suffix == ".parquet" or (path.suffix == ".csv" and set(csv_header(path)) >= _TIDY_MARKERS):
            parts.append(from_tidy(path, dataset).assign(read_from=str(path)))  # read_from: the tidy file
        elif path.suffix == ".csv":
            parts.append(authored(from_reference_csv(path, dataset)))
        elif path.suffix in LOG_SUFFIXES:
            parts.append(from_inspect_logs(path, dataset, cache=cache))
        else:
            raise DataError(f"{path}: unknown result file type (expected .csv, .parquet, .eval or .json)")
        for part in parts:
            notes.extend(part.attrs.get("notes", []))
            skipped.extend(part.attrs.get("warnings", []))  # a log copied beside itself: read once
            unreadable.extend(part.attrs.get("unreadable", []))
            for key, lines in part.attrs.get("settings", {}).items():
                for line, source in lines.items():
                    settings.setdefault(key, {}).setdefault(line, source)
            sent |= part.attrs.get("sent", {})
            judges |= part.attrs.get(JUDGE_IDENTITIES, {})
            for judge, seen in part.attrs.get(REPLY_FORMATS, {}).items():  # two paths, one judge: one note
                formats.setdefault(judge, set()).update(seen)
        frames.extend(parts)
        read_from.extend(str(path) for part in parts for _ in range(len(part)))
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    if mixed := mixed_id_schemes(out.assign(source=read_from), [*RUN_IDENTITY, "seed"]):
        raise DataError(mixed, "read them apart, or export the tidy table again with --data-dir")
    # A file given twice, a directory holding a copy, a duplicated row: one answer, counted once (or refused).
    if "read_from" in out:
        out["read_from"] = out["read_from"].fillna(out["source"])
    out, repeats = deduplicate(adopt_variants(fill_judges(one_spelling(out), notes), notes))
    out = out.drop(columns="read_from", errors="ignore").reset_index(drop=True)
    out.attrs["notes"] = [*notes, *reply_format_note(formats)]
    out.attrs["warnings"] = [*skipped, *repeats, *pooled_settings(settings), *copied_seeds(out, authors)]
    out.attrs["unreadable"] = unreadable
    out.attrs["sent"] = sent
    out.attrs[JUDGE_IDENTITIES] = judges  # each Inspect log's judge by its key (the rows' judge)
    return out


def input_files(paths: Iterable[str | Path]) -> list[Path]:
    """The files :func:`load_results` reads for ``paths`` (a directory's CSVs and logs included)."""
    files: list[Path] = []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            files.extend(p for p in sorted(path.glob("*.csv")) if p.is_file())
            files.extend(p for p in sorted(path.rglob("*")) if p.suffix in LOG_SUFFIXES and p.is_file())
        elif path.is_file():
            files.append(path)
    return files


def read_from_dirs(path: str | Path, paths: Iterable[str | Path]) -> Path | None:
    """The input directory :func:`load_results` would read ``path`` back from as a result, or None."""
    target = Path(path).resolve()
    for item in paths:
        root = Path(item).resolve()
        inside = target.parent == root if target.suffix == ".csv" else target.suffix in LOG_SUFFIXES
        if root.is_dir() and target.is_relative_to(root) and inside:
            return Path(item)
    return None


# A CSV with these columns is a tidy table written by :func:`export` (not one of the authors' result files).
_TIDY_MARKERS = {"task", "model", "method", "seed", "instance", "r_np", "parse_ok"}


def from_tidy(path: str | Path, dataset: CCPTDataset | None = None) -> pd.DataFrame:
    """Read back a tidy table written by :func:`export`, every cell checked by the tidy-table schema (a rejected
    value set aside, a bad key cell one error line) and its rows against their methods and ``dataset``'s items
    (:func:`ccpt.results.checks.method_problem`); ``r_hmp`` and ``score`` recomputed, disagreements noted."""
    from ccpt.schemas.base import summary_line
    from ccpt.schemas.results import TIDY

    path = require_regular_file(path)
    if path.suffix == ".parquet":
        require_pyarrow(path)
        try:
            frame = pd.read_parquet(path)
        except (OSError, ValueError) as exc:
            raise DataError(f"{path}: cannot read as Parquet ({exc})") from None
        # A typed file: true/false where a number belongs would be read as 1/0 (a CSV's text is parsed by the schema).
        flags = (c for c in FLOAT_COLUMNS if c in frame and frame[c].map(type).eq(bool).any())
        if (column := next(flags, None)) is not None:
            raise DataError(f"{path}: column {column!r} holds true/false, not numbers")
    else:
        # Every cell as text: the schema parses numbers, flags and labels (ccpt.schemas.results.TIDY).
        frame = restore_frame(read_text_frame(path))
    if frame.empty:
        raise DataError(f"{path}: no result rows")
    # Tables exported before these columns existed: they ran ccpt's default protocol, counted neither, and recorded
    # no run arguments.
    older = {"protocol": DEFAULT_PROTOCOL, "invalid_cells": 0, "sa_failed_steps": None, "variant": None}
    for column, default in older.items():
        if column not in frame.columns:
            frame[column] = default
    if missing := missing_columns(frame.columns, COLUMNS):
        raise DataError(f"{path}: not a ccpt tidy table, missing column(s) {', '.join(missing)}")
    # Column by column, every empty cell (NaN, None, blank text) None: much faster than DataFrame.to_dict on 2.6M cells.
    values: list[list[Any]] = []
    for column in (frame[c] for c in COLUMNS):
        if pd.api.types.is_string_dtype(column):
            column = column.mask(column.str.strip() == "")
        values.append(column.astype(object).where(column.notna(), None).tolist())
    records = [dict(zip(COLUMNS, row, strict=True)) for row in zip(*values, strict=True)]
    checked = TIDY.check(records, path.name, empty_is_none=True)
    TIDY.check_unique(checked.rows, path.name)
    items = dataset_items(dataset) if dataset is not None else None
    splits = test_splits(dataset) if dataset is not None else None
    # Either would change a cell: the file is not what it says.
    if problem := method_problem(checked.rows, items) or variant_problem(checked.rows, items, splits):
        raise DataError(f"{path}: {problem}")
    notes = [f"{path.name}: {summary_line(checked.issues)}"] if checked.issues else []
    if dataset is not None and (other := dataset_versions(checked.rows, dataset)):  # as for a log (inspect_logs)
        notes.append(
            f"{path.name}: rows recording another dataset version than the given one ({dataset.sha256[:12]}), "
            f"scored against it (their items are its items under the same ids): {', '.join(sorted(other))}"
        )
    rows, mismatches = [], []
    for number, (values, bad) in enumerate(zip(checked.rows, checked.bad_cells(), strict=True)):
        row = {**values, "invalid_cells": (values.get("invalid_cells") or 0) + bad}
        mismatches.extend((delta, number, name) for delta, name in recompute(row))
        rows.append(row)
    if mismatches:
        notes.append(derived_note(path.name, mismatches, "r_hmp / score", "r_np, r_hp, r_mp"))
    out = tidy_frame(rows)
    out.attrs["notes"] = notes
    return out


def export(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the tidy table as CSV or Parquet (chosen by the suffix), atomically."""
    path = Path(path)
    if path.suffix == ".csv":  # opened by people in spreadsheets: model text must not become a formula
        from ccpt.io.safe_csv import write_sheet

        write_sheet(frame, path)
    elif path.suffix in (".parquet", ".pq"):
        from ccpt.io.outputs import atomic_path

        require_pyarrow(path)
        plain = frame.copy(deep=False)
        plain.attrs = {}  # the reader's notes and maps (keyed by tuples): pandas would write them as JSON metadata
        with atomic_path(path) as partial:
            plain.to_parquet(partial, index=False)
    else:
        raise DataError(f"{path}: unsupported export format (use .csv or .parquet)")
    return path
