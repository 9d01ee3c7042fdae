"""The machinery every file schema shares: cell types, row checking, one-line rejections, config loading.

A table's row is a ``TypedDict`` (validated straight into dicts, the fastest route), a configuration file a
``BaseModel``. A column's role (``x-role``): a rejected ``key`` cell rejects the file; ``derived`` is recomputed,
never trusted; a rejected value is set aside in a row-per-sample file (never used, counted for its sample).
"""

from __future__ import annotations

import math
import tomllib
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, BeforeValidator, Field, TypeAdapter, ValidationError

from ccpt.errors import DataError, require_regular_file
from ccpt.spec import TYPE_LABELS, type_label

KEY = "key"
DERIVED = "derived"
ROLE = "x-role"


def is_missing(value: Any) -> bool:
    """Whether a cell is empty: None, NaN (how pandas stores an empty cell) or blank text."""
    return (
        value is None
        or (isinstance(value, float) and math.isnan(value))
        or (isinstance(value, str) and not value.strip())
    )


def _no_bool(value: Any) -> Any:
    # bool is an int in Python (and in pydantic's lax mode): `True` is not a count or a seed.
    if isinstance(value, bool):
        raise ValueError("a number is expected, not true/false")
    return value


def _label(value: Any, also: str = "") -> Any:
    label = type_label(value) if isinstance(value, str) else None
    if label is None:
        raise ValueError(f"not a type label ({', '.join(TYPE_LABELS)}{also})")
    return label


Blank = BeforeValidator(lambda value: None if is_missing(value) else value)

# ------------------------------------------------------------------------------------------ cell types
# Optional types take an empty cell as "missing" (None). TableSchema.check has already turned every empty cell
# into None, so the common types need no Python callback per cell (a tidy table has millions of cells).

UnitFloat = Annotated[float, Field(ge=0, le=1, allow_inf_nan=False)]
# Sampling temperature: hosted APIs accept at most 1 or 2 and local engines sample almost uniformly well before 10,
# so a larger value is a slip (an extra digit: 7 for 0.7 still passes, 70 does not).
Temperature = Annotated[float, Field(ge=0, le=10, allow_inf_nan=False)]
Relevance = Annotated[UnitFloat | None, Field(description="relevance in [0, 1]; empty = not judged")]
Count = Annotated[int, Field(ge=0), BeforeValidator(_no_bool)]
OptionalCount = Annotated[Count | None, Blank]


def _as_text(value: Any) -> Any:
    # A number in a text column (pandas, parquet) is still text.
    return str(value) if isinstance(value, int | float) and not isinstance(value, bool) else value


def _required_text(value: Any) -> Any:
    if type(value) is str and value and not value.isspace():
        return value.strip()  # the common case, first: this runs for every key cell of a table
    if is_missing(value):
        raise ValueError("empty")
    value = _as_text(value)
    return value.strip() if isinstance(value, str) else value


REQUIRED_TEXT = "non-empty text"
NONEMPTY = "x-nonempty"
Text = Annotated[str, BeforeValidator(_required_text), Field(json_schema_extra={"x-type": REQUIRED_TEXT})]
OptionalText = Annotated[str | None, BeforeValidator(_as_text), Blank]  # Blank runs first
CellText = str | None  # a text cell of a table (already normalised by TableSchema.check)
Label = Annotated[Literal[TYPE_LABELS], BeforeValidator(_label)]  # type: ignore[valid-type]
OptionalLabel = Annotated[Label | None, Blank]
Likert = Annotated[int, Field(ge=1, le=5), BeforeValidator(_no_bool)]
Rating10 = Annotated[int, Field(ge=1, le=10), BeforeValidator(_no_bool)]
Flag = Annotated[bool, BeforeValidator(lambda v: v.strip() if isinstance(v, str) else v)]
CellFlag = bool | None  # a true/false cell of a table (already normalised)


def role(kind: str, description: str | None = None, **extra: Any) -> Any:
    """``Field`` metadata marking a column's role (``key`` or ``derived``) for the checker and the docs."""
    return Field(description=description, json_schema_extra={ROLE: kind, **extra})


def column(name: str, description: str | None = None, *, nonempty: bool = False) -> Any:
    """``Field`` metadata naming a column whose header is not a Python name (e.g. ``meta.root_…``); with
    ``nonempty`` an empty cell is rejected (set aside and counted) rather than read as missing."""
    extra = {"x-column": name, NONEMPTY: True} if nonempty else {"x-column": name}
    return Field(description=description, json_schema_extra=extra)


def unique(values: Iterable[Any]) -> Any:
    """An ``AfterValidator`` callable refusing repeated items in a list."""
    values = list(values)
    if repeated := [v for v, n in Counter(values).items() if n > 1]:
        raise ValueError(f"lists {sorted(set(repeated))[:5]} more than once")
    return values


Unique = AfterValidator(unique)

# ---------------------------------------------------------------------------------------------- issues


def shown(value: Any) -> str:
    """A cell as a message shows it: repr, shortened to 40 characters."""
    text = repr(value)
    return text if len(text) <= 40 else text[:39] + "…"


@dataclass(frozen=True)
class CellIssue:
    """One cell a schema rejected."""

    file: str
    row: int | None  # 0-based data row (after the header); None for a file-level value
    column: str
    value: Any
    reason: str
    position: int | None = field(default=None, compare=False)  # index among the rows checked together

    def __str__(self) -> str:
        return f"{self.file}: {self.cell()}"

    def cell(self) -> str:
        """Where and why, without the file name: ``row 3, column 'r_np': … (got '5.0')``."""
        where = f"row {self.row}, " if self.row is not None else ""
        return f"{where}column {self.column!r}: {self.reason} (got {shown(self.value)})"


def _reason(error: Mapping[str, Any]) -> str:
    if error.get("type") == "extra_forbidden":
        return "unknown key (a typo?)"
    return str(error.get("msg", "invalid")).removeprefix("Value error, ").removeprefix("Input ").rstrip(".")


def summary_line(issues: Sequence[CellIssue]) -> str:
    """``N invalid cells … (never used, counted per sample): first, second, third``."""
    n = len(issues)
    head = "; ".join(i.cell() for i in issues[:3]) + (f"; … {n - 3} more" if n > 3 else "")
    return f"{n} invalid cell{'s' if n != 1 else ''} set aside (never used, counted in the Failures table): {head}"


# ---------------------------------------------------------------------------------------- file formats


@dataclass(frozen=True)
class Checked:
    """Rows that passed a table schema (a set-aside cell is None), and every cell it set aside."""

    rows: list[dict[str, Any]]
    issues: list[CellIssue]

    def bad_cells(self) -> list[int]:
        """Per row, how many of its cells were set aside."""
        counts = Counter(issue.position or 0 for issue in self.issues)
        return [counts[index] for index in range(len(self.rows))]


def _empty_to_none(row: Mapping[str, Any]) -> dict[str, Any]:
    """A row with every empty cell (None, NaN, blank text) as None: what "missing" means for every column."""
    return {
        k: None if v is None or (type(v) is float and v != v) or (type(v) is str and (not v or v.isspace())) else v
        for k, v in row.items()
    }


@dataclass(frozen=True)
class FileFormat:
    """A file with one declared type: ``model``, the pydantic model of a configuration or record file (TOML, JSON);
    ``rules``, the rules the type does not say, in words."""

    name: str
    model: type[BaseModel] | Any
    read_by: str
    summary: str
    rules: tuple[str, ...] = ()

    @cached_property
    def json_schema(self) -> dict[str, Any]:
        """The declared type's JSON schema (properties, required)."""
        return TypeAdapter(self.model).json_schema()


@dataclass(frozen=True)
class TableSchema(FileFormat):
    """The schema of a file with one record per row: ``model`` a ``TypedDict`` of the columns it checks (others
    are ignored), ``unique`` the column tuples no two rows may share."""

    unique: tuple[tuple[str, ...], ...] = ()
    tolerant: bool = True  # a rejected value cell is set aside and counted (row-per-sample files)

    @cached_property
    def _adapter(self) -> TypeAdapter[Any]:
        return TypeAdapter(list[self.model])  # type: ignore[name-defined]

    @cached_property
    def nonempty(self) -> frozenset[str]:
        """Value fields whose empty cell is a rejected cell (set aside and counted), not a missing one."""
        return frozenset(name for name, spec in self.json_schema.get("properties", {}).items() if spec.get(NONEMPTY))

    @cached_property
    def keys(self) -> frozenset[str]:
        """Fields whose role is ``key``: a rejected one rejects the file."""
        return frozenset(name for name, spec in self.json_schema.get("properties", {}).items() if spec.get(ROLE) == KEY)

    def header(self, name: str) -> str:
        """The column header of a field."""
        spec = self.json_schema.get("properties", {}).get(name, {})
        return spec.get("x-column") or name

    def check(
        self,
        rows: Sequence[Mapping[str, Any]],
        file: str,
        *,
        row_numbers: Sequence[int] | None = None,
        headers: Sequence[Mapping[str, str]] | Mapping[str, str] | None = None,
        empty_is_none: bool = False,
    ) -> Checked:
        """Validate ``rows``; raise a one-line :class:`DataError` for a bad key cell (any bad cell when the schema
        is not tolerant); set aside every other bad cell (None) and report it. ``row_numbers``/``headers``: each
        row's number and field → column names (per row or for all); ``empty_is_none``: empty cells are None already.
        """
        numbers = list(row_numbers) if row_numbers is not None else list(range(len(rows)))
        given = rows
        rows = list(rows) if empty_is_none else [_empty_to_none(row) for row in rows]
        bad: dict[int, dict[str, Mapping[str, Any]]] = {}
        try:
            valid = self._adapter.validate_python(rows)
        except ValidationError as exc:
            for error in exc.errors(include_url=False):
                loc = error["loc"]
                index, name = int(loc[0]), str(loc[1]) if len(loc) > 1 else ""
                bad.setdefault(index, {}).setdefault(name, error)
            valid = None
        for index, row in enumerate(rows if self.nonempty else ()):  # an empty cell of a nonempty field: None already
            for name in self.nonempty & row.keys():
                if row[name] is None:
                    bad.setdefault(index, {})[name] = {"type": "empty", "msg": "empty", "input": given[index][name]}
        issues: list[CellIssue] = []
        for index, fields in sorted(bad.items()):
            names = headers[index] if isinstance(headers, Sequence) else headers or {}
            for name, error in fields.items():
                value = error.get("input") if name else None
                column = names.get(name) or self.header(name)
                issue = CellIssue(file, numbers[index], column, value, _reason(error), position=index)
                if not self.tolerant or name in self.keys or error["type"] == "missing":
                    raise DataError(
                        str(issue), f'the {self.name} format is described in docs/schemas.md, "{self.name}"'
                    )
                issues.append(issue)
        if self.nonempty:
            issues.sort(key=lambda i: (i.position or 0, i.column))
        if valid is None:  # a set-aside cell is None, which every value type accepts
            cleaned = [
                {**row, **dict.fromkeys(bad.get(i, {}), None)} if i in bad else row for i, row in enumerate(rows)
            ]
            valid = self._adapter.validate_python(cleaned)
        return Checked(valid, issues)

    def check_unique(
        self, rows: Sequence[Mapping[str, Any]], file: str, row_numbers: Sequence[int] | None = None
    ) -> None:
        """Raise one line naming the first repeated key of every ``unique`` column tuple."""
        numbers = list(row_numbers) if row_numbers is not None else list(range(len(rows)))
        for columns in self.unique:
            first: dict[tuple[Any, ...], int] = {}
            for number, row in zip(numbers, rows, strict=True):
                key = tuple(row.get(c) for c in columns)
                if key in first:
                    names = " × ".join(self.header(c) for c in columns)
                    raise DataError(
                        f"{file}: row {number} repeats row {first[key]} ({names} = "
                        f"{', '.join(shown(k) for k in key)}): each {names} may appear once",
                        "remove the duplicated row: which of the two counts would be a guess",
                    )
                first[key] = number


# ----------------------------------------------------------------------------------------- config files


def location(loc: Sequence[Any]) -> str:
    """A pydantic error location as a TOML/JSON path: ``[llm] max_connections``, ``pi_emergent[3]``."""
    parts = [str(p) for p in loc]
    if not parts:
        return "(top level)"
    return parts[0] + "".join(f"[{part}]" if part.isdigit() else f".{part}" for part in parts[1:])


def one_line(path: Path | str, exc: ValidationError, describe: Callable[[Sequence[Any]], str] = location) -> str:
    """The first error of a config file's validation as one line naming the file and the key."""
    errors = exc.errors(include_url=False)
    first = errors[0]
    more = f" (and {len(errors) - 1} more problem{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    quiet = ("missing", "extra_forbidden", "json_invalid", "json_type")  # the input is absent or the whole file
    value = "" if first["type"] in quiet else f" (got {shown(first.get('input'))})"
    return f"{path}: {describe(first['loc'])}: {_reason(first)}{value}{more}"


def read_toml(path: Path) -> dict[str, Any]:
    """A TOML file's table; one line for a missing, non-UTF-8 or invalid file."""
    require_regular_file(path)
    try:
        with Path(path).open("rb") as file:
            return tomllib.load(file)  # it decodes the bytes as UTF-8
    except FileNotFoundError:
        raise DataError(f"{path}: file not found") from None
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason})", "save it as UTF-8") from None
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{path}: invalid TOML ({exc})") from None
