"""The CCPT dataset (paper §3): each CSV row, checked by :mod:`ccpt.schemas.dataset`, is a :class:`Record`.

Quirks handled (measured on the files at the pinned commit):
- ``sentence`` is empty in some rows → ``None``.
- ``combination`` can keep trailing punctuation ("a maddening dog,") → stripped.
- 77 emergent rows hold a raw code ``2`` among ``meta.human_labels``: the emergent form offered (0) emergent,
  (1) component, (2) others (Figure 5), and "others" is never spelled out in that file, so ``2`` is ``others``.
- ``ccpt_canceled.csv`` carries a legacy ``meta.modifier_gpt4o_relevance`` (185 empty cells, values off the 1..10
  grid) next to the current ``meta.modifier_gpt-4o_relevance``, which is used.
"""

from __future__ import annotations

import csv
import functools
import io
import random
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.benchmark import dataset_digest
from ccpt.errors import DataError
from ccpt.io.download import sha256_bytes
from ccpt.io.sources import resolve_data_dir
from ccpt.spec import GENERATIVE_TASKS, TASK_SPECS, TASKS, PropertyType, TaskName, TypeLabel

# Which file each generative task's test split indexes into (test_index.json).
TASK_FILE: dict[TaskName, str] = {n: s.data_file for n, s in TASK_SPECS.items() if s.data_file}  # type: ignore[misc]

BASE_COLUMNS: tuple[str, ...] = (
    "sentence", "combination", "root", "modifier", "property", "human_label_majority", "meta.human_labels",
    "meta.combination_human_relevance", "meta.root_human_relevance", "meta.modifier_human_relevance", "meta.toxicity",
)  # fmt: skip
_ANNOTATION_COLUMNS = BASE_COLUMNS[:-1]  # everything up to the human relevance ratings
_JUDGE_COLUMNS = ("meta.combination_gpt-4o_relevance", "meta.root_gpt-4o_relevance")
# Exact headers of the released files, column order and the canceled file's legacy column included: what the
# data-construction pipeline writes so that downstream tools see no difference.
RELEASED_HEADERS: dict[str, tuple[str, ...]] = {
    "ccpt_emergent": (*_ANNOTATION_COLUMNS, "meta.gpt-4o_emergence", *_JUDGE_COLUMNS,
                      "meta.modifier_gpt-4o_relevance", "meta.toxicity", "meta.gpt-4o_indiv_max"),
    "ccpt_canceled": (*_ANNOTATION_COLUMNS, "meta.gpt-4o_cancellation", *_JUDGE_COLUMNS,
                      "meta.modifier_gpt4o_relevance", "meta.toxicity", "meta.modifier_gpt-4o_relevance",
                      "meta.gpt-4o_indiv_max"),
    "ccpt_component": (*BASE_COLUMNS, "meta.property_source"),
    "add_ccpt_emergent": (*BASE_COLUMNS, "meta.property_source"),
}  # fmt: skip
# file stem -> (property type, extra required columns)
INDEX = "test_index.json"  # the generative tasks' test splits
FILE_SPECS: dict[str, tuple[PropertyType, tuple[str, ...]]] = {
    "ccpt_emergent": ("emergent", ("meta.gpt-4o_emergence", *_JUDGE_COLUMNS, "meta.modifier_gpt-4o_relevance")),
    "ccpt_canceled": ("canceled", ("meta.gpt-4o_cancellation", *_JUDGE_COLUMNS, "meta.modifier_gpt-4o_relevance")),
    "ccpt_component": ("component", ("meta.property_source",)),
    "add_ccpt_emergent": ("emergent", ("meta.property_source",)),
}

_TRAILING_PUNCT = re.compile(r"[\s,.;:!?]+$")


@dataclass(frozen=True)
class Record:
    """One annotated triplet (N(H, M), P, T) with its human annotations."""

    file: str
    row: int
    sentence: str | None
    combination: str
    head: str
    modifier: str
    property: str
    type: PropertyType
    human_label: str
    human_labels: tuple[str, ...]
    combination_ratings: tuple[int, ...]
    head_ratings: tuple[int, ...]
    modifier_ratings: tuple[int, ...]
    toxic: bool
    judge_combination: float | None = None
    judge_head: float | None = None
    judge_modifier: float | None = None
    judge_score: float | None = None
    property_source: str | None = None
    stored_combination: str | None = None  # the file's text when cleaning changed it ("a beaten dog,"): as run

    @property
    def id(self) -> str:
        """Stable instance id: ``<file>:<row>`` (row is the 0-based position used by test_index.json)."""
        return f"{self.file}:{self.row}"


@dataclass(frozen=True)
class TypeItem:
    """One Task-3 (property type prediction) item: a (noun phrase, property) pair and its gold type."""

    combination: str
    head: str
    modifier: str
    property: str
    gold: TypeLabel
    source: str  # Record.id of the combination's row (for "others", the row whose combination is used)
    property_source: str | None = None  # for "others": Record.id of the row the property was taken from

    @property
    def id(self) -> str:
        return f"{self.gold}:{self.source}" + (f"+{self.property_source}" if self.property_source else "")


# ---------------------------------------------------------------------------------------------- parsing


def clean_combination(text: str) -> str:
    """Strip surrounding whitespace and trailing punctuation ("a maddening dog," → "a maddening dog")."""
    return _TRAILING_PUNCT.sub("", text.strip())


def _record(stem: str, index: int, row: dict[str, Any]) -> Record:
    """A row the dataset schema accepted, as a record."""
    return Record(
        file=stem,
        row=index,
        sentence=(row.get("sentence") or "").strip() or None,
        combination=clean_combination(row["combination"]),
        stored_combination=row["combination"] if clean_combination(row["combination"]) != row["combination"] else None,
        head=row["root"],
        modifier=row["modifier"],
        property=row["property"],
        type=FILE_SPECS[stem][0],
        human_label=row["human_label_majority"],
        **{key: tuple(row[key]) for key in ("human_labels", "combination_ratings", "head_ratings", "modifier_ratings")},
        toxic=row["toxic"],
        **{key: row.get(key) for key in ("judge_combination", "judge_head", "judge_modifier", "judge_score")},
        property_source=(row.get("property_source") or "").strip() or None,
    )


def read_records(path: Path, stem: str | None = None, *, data: bytes | None = None) -> list[Record]:
    """Parse one CCPT CSV file into records (``data``: its bytes, already read); the first rejected cell is one
    :class:`DataError` line."""
    from ccpt.schemas.dataset import DATASET, DATASET_COLUMNS, SCORE_COLUMN

    stem = stem or path.stem
    if stem not in FILE_SPECS:
        raise DataError(f"{path}: not a CCPT file name (expected one of {', '.join(FILE_SPECS)})")
    if data is None:
        data = _file_bytes(path)
    columns = {**DATASET_COLUMNS, **({"judge_score": SCORE_COLUMN[stem]} if stem in SCORE_COLUMN else {})}
    rows: list[dict[str, Any]] = []
    try:
        # utf-8-sig: a spreadsheet's byte-order mark is not part of the first column's name.
        with io.StringIO(data.decode("utf-8-sig"), newline="") as fh:
            reader = csv.reader(fh, strict=True)
            header = next(reader, [])
            if repeated := sorted({c for c in header if header.count(c) > 1}):  # the last would be read, silently
                named = ", ".join(map(repr, repeated))
                raise DataError(f"{path}: column(s) {named} appear more than once in the header")
            if missing := [c for c in BASE_COLUMNS + FILE_SPECS[stem][1] if c not in header]:
                raise DataError(f"{path}: missing column(s) {', '.join(missing)}", "is this a CCPT file?")
            present = {name: col for name, col in columns.items() if col in header}
            for index, values in enumerate(v for v in reader if v):  # blank lines skipped
                if len(values) != len(header):
                    raise DataError(
                        f"{path}: row {index} (line {index + 2}) has {len(values)} fields, expected {len(header)}",
                        "the file looks truncated or corrupt; re-download it",
                    )
                row = dict(zip(header, values, strict=True))
                rows.append({name: row[col] for name, col in present.items()})
    except csv.Error as exc:
        raise DataError(f"{path}: malformed CSV: {exc}", "the file looks truncated or corrupt") from None
    except UnicodeDecodeError as exc:
        raise DataError(f"{path}: not UTF-8 text ({exc.reason})") from None
    checked = DATASET.check(rows, str(path), headers=present)  # raises at the first rejected cell
    return [_record(stem, index, row) for index, row in enumerate(checked.rows)]


def _file_bytes(path: Path) -> bytes:
    if not path.is_file():
        raise DataError(f"missing dataset file {path}", "run `ccpt data download` or check --data-dir")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise DataError(f"{path}: cannot read ({exc.strerror or exc})") from None


def read_test_index(path: Path, *, data: bytes | None = None) -> dict[TaskName, tuple[int, ...]]:
    """Parse test_index.json (``data``: its bytes, already read): task → 0-based row positions (schema:
    docs/schemas.md, "test_index.json")."""
    from pydantic import ValidationError

    from ccpt.schemas.base import one_line
    from ccpt.schemas.stores import TestIndex

    try:
        # pydantic parses the JSON itself: invalid UTF-8, invalid JSON and 100K nested brackets are one error.
        index = TestIndex.model_validate_json(_file_bytes(path) if data is None else data)
    except ValidationError as exc:
        raise DataError(one_line(path, exc), "re-download it") from None
    return {task: tuple(getattr(index, task)) for task in GENERATIVE_TASKS}


# ---------------------------------------------------------------------------------------------- dataset


@dataclass
class CCPTDataset:
    """The four CCPT files and the test index, as records."""

    emergent: list[Record]
    canceled: list[Record]
    component: list[Record]
    extra_emergent: list[Record]
    test_index: dict[TaskName, tuple[int, ...]]
    source: str = ""
    excluded_toxic: int = 0
    sha256: str = ""  # the files' digest (ccpt.benchmark.dataset_digest): the pinned one, or another version's

    def records(self, stem: str) -> list[Record]:
        """All records of one file."""
        files = (self.emergent, self.canceled, self.component, self.extra_emergent)  # in FILE_SPECS order
        return dict(zip(FILE_SPECS, files, strict=True))[stem]

    @property
    def paper_records(self) -> list[Record]:
        """The paper's dataset: emergent + canceled + component (``add_ccpt_emergent`` is not part of it)."""
        return [*self.emergent, *self.canceled, *self.component]

    def test(self, task: TaskName) -> list[Record]:
        """The test split of a generative task, in test_index.json order."""
        _check_task(task, generative=True)
        by_row = {r.row: r for r in self.records(TASK_FILE[task])}
        return [by_row[row] for row in self.test_index[task] if row in by_row]

    def train(self, task: TaskName) -> list[Record]:
        """Every row of the task's file that is not in its test split (the pool for few-shot / SFT)."""
        _check_task(task, generative=True)
        held_out = set(self.test_index[task])
        return [r for r in self.records(TASK_FILE[task]) if r.row not in held_out]

    def held_out_rows(self) -> set[str]:
        """Record ids in any generative test split (to keep them out of training data)."""
        return {r.id for task in GENERATIVE_TASKS for r in self.test(task)}

    def type_prediction_set(self, per_type: int = 250, seed: int = 0) -> list[TypeItem]:
        """Task 3 evaluation set: a seeded sample of ``per_type`` items per type. An *others* item joins a
        combination with another row's property, never an annotated pair (the authors did not check this)."""
        rng = random.Random(seed)
        items: list[TypeItem] = []
        for gold, pool in (("emergent", self.emergent), ("component", self.component), ("canceled", self.canceled)):
            if len(pool) < per_type:
                raise DataError(f"only {len(pool)} {gold} rows, cannot sample {per_type}")
            chosen = rng.sample(pool, per_type)
            items += [TypeItem(r.combination, r.head, r.modifier, r.property, gold, r.id) for r in chosen]  # type: ignore[arg-type]
        items.extend(self._others(per_type, rng))
        # Interleave the types so that any prefix (e.g. `--limit 20`) still covers all four.
        rng.shuffle(items)
        return items

    def _others(self, n: int, rng: random.Random) -> list[TypeItem]:
        pool = self.paper_records
        annotated = {(r.combination.lower(), r.property.lower()) for r in pool}
        seen: set[tuple[str, str]] = set()
        out: list[TypeItem] = []
        attempts = 0
        while len(out) < n:
            attempts += 1
            if attempts > 100 * n:
                raise DataError("could not draw enough 'others' pairs; the dataset is too small")
            a, b = rng.choice(pool), rng.choice(pool)
            key = (a.combination.lower(), b.property.lower())
            if a is b or key in annotated or key in seen:
                continue
            seen.add(key)
            out.append(TypeItem(a.combination, a.head, a.modifier, b.property, "others", a.id, b.id))
        return out


def _check_task(task: str, *, generative: bool = False) -> None:
    allowed = GENERATIVE_TASKS if generative else TASKS
    if task not in allowed:
        raise DataError(f"unknown task {task!r}; choose one of {', '.join(allowed)}")


@functools.lru_cache(maxsize=4)
def _parse(
    root: str, blobs: tuple[bytes, ...]
) -> tuple[tuple[tuple[Record, ...], ...], tuple[tuple[TaskName, tuple[int, ...]], ...]]:
    """The records of each file and the test index, parsed from the files' bytes. A memo keyed by the bytes
    themselves: the same content always parses to the same (frozen) records, and a process that loads the dataset
    again (a run's plan, then each of its tasks) parses it once; an edited file is other bytes, parsed anew."""
    files = tuple(
        tuple(read_records(Path(root) / f"{stem}.csv", stem, data=blob))
        for stem, blob in zip(FILE_SPECS, blobs[:-1], strict=True)
    )
    return files, tuple(read_test_index(Path(root) / INDEX, data=blobs[-1]).items())


def load_dataset(data_dir: str | Path | None = None, *, exclude_toxic: bool = False) -> CCPTDataset:
    """Load CCPT from a local directory, ``$CCPT_DATA_DIR``, or the pinned download (fetched on first use);
    ``exclude_toxic`` drops toxicity-flagged rows (the test splits shrink)."""
    root = resolve_data_dir(data_dir)
    paths = (*(root / f"{stem}.csv" for stem in FILE_SPECS), root / INDEX)
    blobs = tuple(_file_bytes(path) for path in paths)  # read once: parsed and hashed from the same bytes
    parsed, index = _parse(str(root), blobs)
    files = {stem: list(records) for stem, records in zip(FILE_SPECS, parsed, strict=True)}  # the caller's own lists
    test_index = dict(index)
    for task, rows in test_index.items():
        size = len(files[TASK_FILE[task]])
        if bad := [r for r in rows if r >= size]:
            raise DataError(f"test_index.json: {task} refers to row {bad[0]} but the file has {size} rows")
    rows = sum(map(len, files.values()))
    if exclude_toxic:
        files = {stem: [r for r in recs if not r.toxic] for stem, recs in files.items()}
    excluded = rows - sum(map(len, files.values()))
    # Hashed as read (a --data-dir copy with other content is another dataset version: a run's identity).
    digest = dataset_digest({p.name: sha256_bytes(blob) for p, blob in zip(paths, blobs, strict=True)})
    # The dataset's first four fields are the files in FILE_SPECS order.
    return CCPTDataset(*files.values(), test_index=test_index, source=str(root), excluded_toxic=excluded, sha256=digest)


def instances(ds: CCPTDataset, task: TaskName, split: str = "test", *, seed: int = 0) -> Sequence[Record | TypeItem]:
    """Instances of ``task`` for ``split`` ("test" or "train"; Task 3 has only its sampled evaluation set)."""
    _check_task(task)
    if not TASK_SPECS[task].generative:
        return ds.type_prediction_set(seed=seed)
    if split not in ("test", "train"):
        raise DataError(f"unknown split {split!r}; choose test or train")
    return ds.test(task) if split == "test" else ds.train(task)


def unique_concepts(records: Iterable[Record]) -> dict[str, int]:
    """Counts of distinct heads, modifiers, unigram concepts (heads ∪ modifiers), combinations and properties."""
    recs = list(records)
    heads = {r.head.lower() for r in recs}
    modifiers = {r.modifier.lower() for r in recs}
    return {
        "heads": len(heads),
        "modifiers": len(modifiers),
        "unigram_concepts": len(heads | modifiers),
        "combinations": len({r.combination.lower() for r in recs}),
        "properties": len({r.property.lower() for r in recs}),
    }
