"""Teacher pairs: every (concept, property) pair the paper's GPT-4o judge rated in the authors' result files.

Read by :func:`ccpt.results.authors.from_reference_csv` and taken by :meth:`ccpt.spec.TaskSpec.judged_pairs`, so a
teacher pair is exactly a pair ``ccpt rejudge`` asks about. Per model, one pair per normalised (concept, property)
with the mean of GPT-4o's stored relevances (GPT-4o at temperature 0 is not deterministic). Spreading Activation
per-step files are skipped unless asked for: some carry score columns copied from the main file (data/README.md).
"""

from __future__ import annotations

import csv
import random
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ccpt.errors import DataError, require_regular_file
from ccpt.judging.rated_pairs import pair_key

# It reads the authors' result files with their reader: the results layer (tests/test_layering.py).
__layer__ = "results"

if TYPE_CHECKING:
    import pandas as pd

    from ccpt.dataset import CCPTDataset

GPT4O = "gpt-4o"  # the paper's judge, as the authors' files name it (meta.combination_gpt-4o_relevance)
_RELEVANCE = {"combination": "r_np", "head": "r_hp", "modifier": "r_mp"}
_TEXT = ("model", "task", "method", "instance", "role", "concept", "property")  # fields written as they are
COLUMNS = (*_TEXT, "relevance", "occurrences", "spread", "methods", "source")
# A pair occurs once per answer that names it: the authors' files hold thousands; a larger count is a slip or a forged
# file, and each occurrence is held in memory (1e11 would never finish).
MAX_OCCURRENCES = 1_000_000


@dataclass
class TeacherPair:
    """One deduplicated (concept, property) pair of one model's answers, with GPT-4o's mean stored relevance."""

    model: str
    task: str
    method: str
    instance: str
    role: str  # combination / head / modifier: which of the judged concepts (N, H, M) it is
    concept: str
    property: str
    values: list[float] = field(default_factory=list)
    methods: set[str] = field(default_factory=set)
    source: str = ""

    @property
    def relevance(self) -> float:
        """GPT-4o's stored relevance in [0, 1], averaged over the pair's occurrences."""
        return sum(self.values) / len(self.values)

    @property
    def key(self) -> tuple[str, str]:
        """The normalised pair (whitespace collapsed, case-folded)."""
        return pair_key(self.concept, self.property)

    def row(self) -> dict[str, str]:
        """The CSV row (``COLUMNS``)."""
        return {k: getattr(self, k) for k in _TEXT} | {
            "relevance": f"{self.relevance:.6f}",
            "occurrences": str(len(self.values)),
            "spread": f"{max(self.values) - min(self.values):.6f}",
            "methods": ";".join(sorted(self.methods)),
            "source": self.source,
        }


def judged_concepts(row: Mapping[str, Any]) -> tuple[Sequence[Any], Any] | None:
    """The tidy row's judged concepts (N, H, M) and property, or None for a sample with no generative answer."""
    from ccpt.results.table import optional
    from ccpt.spec import TASK_SPECS

    spec = TASK_SPECS.get(row["task"])
    answer = optional(row.get("answer"), str)
    if spec is None or not spec.generative or not answer:
        return None
    return spec.judged_pairs(row, answer, optional(row.get("answer_modifier"), str))


def read_frames(
    files: Sequence[Path],
    dataset: CCPTDataset | None = None,
    skipped: list[str] | None = None,
    warnings: list[str] | None = None,
) -> list[pd.DataFrame]:
    """Each authors' file as a tidy table. A missing file, one that is not an authors' result file, a generative one
    whose metadata names a judge other than GPT-4o (its relevances are not GPT-4o's verdicts) or a copy of a file
    read before (same content, any name: read once) is a DataError naming it, unless ``skipped`` is given: its
    one-line reason is appended there instead. Rows are keyed on their identity as reports key them
    (:func:`ccpt.results.identity.deduplicate`): a row read twice (a file given twice, a re-saved or reordered copy
    under another name) is counted once, said in ``warnings``, as are cells the schema rejected (they give no pair);
    two files holding different answers under one identity are a DataError naming both."""
    from ccpt.io.download import sha256_file
    from ccpt.results.authors import from_reference_csv
    from ccpt.results.identity import deduplicate

    frames = []
    seen: dict[str, Path] = {}  # content sha256 → the file read with it
    for path in files:
        try:
            require_regular_file(path)
            if (first := seen.setdefault(sha256_file(Path(path)), Path(path))) != Path(path):
                raise DataError(f"{path}: a copy of {first} (the same content): read once")
            frame = from_reference_csv(path, dataset)
            judges = frame.attrs.get("judges", [GPT4O])
            if not frame.empty and frame["judge"].notna().any() and [j.lower() for j in judges] != [GPT4O]:
                named = f"judge {', '.join(judges)}" if judges else "no judge"
                raise DataError(f"{path}: its metadata names {named}, not {GPT4O}: not GPT-4o's verdicts")
            frames.append(frame)
            # A cell the schema rejected (a relevance 1.5, "true") gives no pair: said, as reports say it.
            rejected = int(frame["invalid_cells"].fillna(0).sum()) if "invalid_cells" in frame else 0
            if rejected and warnings is not None:
                warnings.append(
                    f"{path}: {rejected} cell(s) the result-file schema rejected give no pair "
                    f"(`ccpt report {path}` names each)"
                )
        except DataError as exc:
            if skipped is None:
                raise
            skipped.append(str(exc).splitlines()[0])
    if len(frames) < 2:
        return frames
    import pandas as pd

    kept, repeated = deduplicate(pd.concat(frames, ignore_index=True))
    if warnings is not None:
        warnings.extend(repeated)
    if not repeated:
        return frames
    return [part.reset_index(drop=True) for _, part in kept.groupby("source", sort=False, dropna=False)]


def teacher_pairs(frames: Iterable[pd.DataFrame], include_steps: bool = False) -> list[TeacherPair]:
    """Deduplicated teacher pairs of tidy authors' tables, in first-occurrence order (per model); none from a sample
    the authors did not parse, or whose relevance cell is empty or rejected."""
    from ccpt.results.table import optional

    pairs: dict[tuple[str, str, str], TeacherPair] = {}
    for frame in frames:
        if not include_steps and "sa_iteration" in frame:
            frame = frame[frame["sa_iteration"].isna()]
        for row in frame.to_dict("records"):
            if (judged := judged_concepts(row)) is None:
                continue
            concepts, prop = judged
            for role, concept in zip(_RELEVANCE, concepts, strict=True):  # N, H, M
                value = optional(row.get(_RELEVANCE[role]), float)
                if value is None or value != value or not concept or concept == "None" or not prop:
                    continue
                text = (" ".join(str(concept).split()), " ".join(str(prop).split()))
                key = (str(row["model"]), *pair_key(*text))
                if key not in pairs:
                    tags = (str(row["task"]), str(row["method_raw"]), str(row["instance"]), role)
                    pairs[key] = TeacherPair(key[0], *tags, *text, source=str(row["source"]))
                pairs[key].values.append(float(value))
                pairs[key].methods.add(str(row["method_raw"]))
    return list(pairs.values())


def write_pairs(pairs: Sequence[TeacherPair], out: Path) -> None:
    """Write teacher pairs as CSV (``COLUMNS``), atomically."""
    from ccpt.io.outputs import atomic_path
    from ccpt.io.safe_csv import neutralise

    with atomic_path(out) as partial, partial.open("w", newline="", encoding="utf-8") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(COLUMNS))
        writer.writeheader()
        for pair in pairs:
            writer.writerow({k: neutralise(v) if k in ("concept", "property") else v for k, v in pair.row().items()})


def read_pairs_csv(path: Path) -> list[TeacherPair]:
    """Teacher pairs from a CSV written by :func:`write_pairs` (DataError on a missing column or bad number)."""
    from ccpt.io.safe_csv import restore

    require_regular_file(path)
    try:
        with path.open(newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            if reader.fieldnames is None:
                raise DataError(f"{path}: empty file (no header row)", "write it with `ccpt judge pairs`")
            missing = [c for c in COLUMNS if c not in reader.fieldnames]
            if missing:
                raise DataError(f"{path}: not a teacher-pairs CSV; missing column(s): {', '.join(missing)}")
            out = []
            seen: dict[tuple[str, tuple[str, str]], int] = {}  # (model, pair) → its line
            for number, line in enumerate(reader, start=2):
                if any(v is None for v in line.values()) or None in line:
                    raise DataError(f"{path}: line {number}: {len(COLUMNS)} cells expected (a short or long row)")
                try:
                    value, n = float(line["relevance"]), int(line["occurrences"])
                except ValueError:
                    raise DataError(f"{path}: line {number}: relevance/occurrences are not numbers") from None
                if not (0.0 <= value <= 1.0) or not 1 <= n <= MAX_OCCURRENCES:  # NaN fails the range too
                    raise DataError(
                        f"{path}: line {number}: relevance must be in [0, 1], occurrences in [1, {MAX_OCCURRENCES:,}]"
                    )
                line = {k: restore(v) if k in ("concept", "property") else v for k, v in line.items()}
                methods = set(line["methods"].split(";"))
                pair = TeacherPair(*(line[k] for k in _TEXT), [value] * n, methods, line["source"])
                # One row per model and pair (write_pairs): a second would add its values to the pair's mean target.
                if (first := seen.setdefault((pair.model, pair.key), number)) != number:
                    raise DataError(
                        f"{path}: line {number} repeats the pair of line {first} ({pair.model}: "
                        f"{pair.concept!r}, {pair.property!r}); a teacher file has one row per model and pair"
                    )
                out.append(pair)
            return out
    except (OSError, UnicodeDecodeError) as exc:
        raise DataError(f"{path}: cannot read ({exc})") from None


def training_sample(
    pairs: Sequence[TeacherPair], exclude: set[tuple[str, str]], cap: int = 12000, seed: int = 0
) -> tuple[list[tuple[str, str]], list[float]]:
    """(texts, targets) to fine-tune a judge on: distinct normalised pairs (any model) outside ``exclude``, each
    with the mean of all its stored relevances; sorted, shuffled with ``seed`` and cut at ``cap`` (docs/judge.md)."""
    values: dict[tuple[str, str], list[float]] = {}
    text: dict[tuple[str, str], tuple[str, str]] = {}
    for pair in [p for p in pairs if p.key not in exclude]:
        values.setdefault(pair.key, []).extend(pair.values)
        text.setdefault(pair.key, (pair.concept, pair.property))
    keys = sorted(values)
    random.Random(seed).shuffle(keys)
    keys = keys[:cap]
    return [text[k] for k in keys], [sum(values[k]) / len(values[k]) for k in keys]
