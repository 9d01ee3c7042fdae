"""Human-rated (concept, property) pairs of the dataset: the distilled judge's training pool and test sets.

Each annotated row gives three rated pairs (N, H, M with the property), the target being the mean Likert rating
rescaled to [0, 1]. The test pairs are those of every generative task's test rows; the training pool excludes test
rows and any pair equal to a test pair once normalised (heads like "apple" recur and would leak a test rating).
"""

from __future__ import annotations

import random
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ccpt.errors import DataError
from ccpt.spec import GENERATIVE_TASKS

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset, PropertyType, Record

Role = Literal["combination", "head", "modifier"]
ROLES: tuple[Role, ...] = ("combination", "head", "modifier")
LIKERT_MIN, LIKERT_MAX = 1, 5

PairSet = Literal["test", "paper300", "all"]
PAIR_SETS: tuple[PairSet, ...] = ("test", "paper300", "all")
# The sets with no pair of the distilled judge's training pool: the only ones a report quotes as a judge's
# agreement. ``all`` holds training rows, so for the distilled judge it is an in-sample figure.
HELDOUT_PAIR_SETS: tuple[PairSet, ...] = ("test", "paper300")
PAPER_ROWS = 100  # the paper's 50 emergent + 50 canceled rows → 300 pairs (§6.1)


@dataclass(frozen=True)
class RatedPair:
    """One (concept, property) pair with its human ratings; ``role`` says which part of the row it is."""

    concept: str
    property: str
    role: Role
    kind: PropertyType  # the row's property type (emergent / canceled / component)
    source: str  # Record.id
    ratings: tuple[int, ...]

    @property
    def human(self) -> float:
        """Mean Likert rating (1–5)."""
        return sum(self.ratings) / len(self.ratings)

    @property
    def target(self) -> float:
        """Mean rating rescaled to [0, 1]: (m − 1) / 4."""
        return (self.human - LIKERT_MIN) / (LIKERT_MAX - LIKERT_MIN)


def pair_key(concept: str, prop: str) -> tuple[str, str]:
    """Normalised pair identity: whitespace collapsed (as the LLM judge's memo key) and case-folded (which makes
    the exclusion of test pairs from training stricter than the judge's own key)."""
    return " ".join(concept.split()).casefold(), " ".join(prop.split()).casefold()


def record_rated_pairs(record: Record) -> list[RatedPair]:
    """The N, H and M pairs of one row (a role without ratings is skipped)."""
    return [
        RatedPair(getattr(record, role), record.property, role, record.type, record.id, ratings)
        for role in ROLES
        if (ratings := getattr(record, f"{role}_ratings"))
    ]


def _pairs(records: Iterable[Record]) -> list[RatedPair]:
    return [pair for record in records for pair in record_rated_pairs(record)]


def heldout_records(ds: CCPTDataset) -> list[Record]:
    """The test rows of every generative task, each row once (PI- and NPC-emergent share a file)."""
    return list({record.id: record for task in GENERATIVE_TASKS for record in ds.test(task)}.values())


def heldout_pairs(ds: CCPTDataset) -> list[RatedPair]:
    """Measure 1's pairs: N, H and M pairs of all test rows."""
    return _pairs(heldout_records(ds))


def sample_rows(rows: Sequence[Record], n: int, seed: int = 0) -> list[Record]:
    """``n`` of ``rows`` drawn as the paper drew its sample: half emergent, half canceled (the odd one emergent),
    seeded; fewer when a type has fewer rows. The one sampler of rated pairs."""
    rng = random.Random(seed)
    emergent = [r for r in rows if r.type == "emergent"]
    canceled = [r for r in rows if r.type == "canceled"]
    return rng.sample(emergent, min(n // 2 + n % 2, len(emergent))) + rng.sample(canceled, min(n // 2, len(canceled)))


def paper300_pairs(ds: CCPTDataset, seed: int = 0) -> list[RatedPair]:
    """The paper-sized sample drawn from test rows only: 50 emergent + 50 canceled test rows → 300 pairs."""
    return _pairs(sample_rows(heldout_records(ds), PAPER_ROWS, seed))


def pair_set(ds: CCPTDataset, name: str, seed: int = 0, rows: int | None = None) -> list[RatedPair]:
    """The pairs of one named set (``test``, ``paper300``, ``all``), or of a sample of ``rows`` of its rows."""
    if name not in PAIR_SETS:
        raise DataError(f"unknown pair set {name!r}; choose one of {', '.join(PAIR_SETS)}")
    if rows is None and name == "paper300":
        return paper300_pairs(ds, seed)
    records = heldout_records(ds) if name in HELDOUT_PAIR_SETS else ds.paper_records
    if rows is None:
        return _pairs(records)
    # A sample larger than its set would be stored and quoted as "a sample of 5000 rows" of a set of hundreds.
    sampled = sample_rows(records, rows, seed)
    held = PAPER_ROWS if name == "paper300" else len(records)
    if rows > held or len(sampled) < rows:
        raise DataError(
            f"--n {rows}: the pair set {name!r} holds {held} rows, {_halves(records)} (a sample is half emergent, "
            "half canceled)",
            f"give --n {min(held, len(sampled))} at most",
        )
    return _pairs(sampled)


def _halves(records: Sequence[Record]) -> str:
    emergent = sum(r.type == "emergent" for r in records)
    return f"{emergent} emergent and {sum(r.type == 'canceled' for r in records)} canceled to draw from"


def sample_id(name: str, rows: int | None, seed: int) -> str:
    """A pair set's identity in the agreement store: its name, plus the sample of rows if one was drawn."""
    if rows is None:
        return name if name != "paper300" or seed == 0 else f"{name}/seed={seed}"
    return f"{name}/rows={rows}/seed={seed}"


def training_pairs(ds: CCPTDataset) -> list[RatedPair]:
    """The training pool: rated pairs of non-test rows whose normalised pair is not a test pair."""
    held_rows = {r.id for r in heldout_records(ds)}
    held_keys = {pair_key(p.concept, p.property) for p in heldout_pairs(ds)}
    pairs = _pairs(ds.paper_records)
    return [p for p in pairs if p.source not in held_rows and pair_key(p.concept, p.property) not in held_keys]


def folds(pairs: Sequence[RatedPair], k: int, seed: int = 0) -> list[int]:
    """A fold id per pair for k-fold cross-validation, grouped by row: a row's N/H/M pairs share the property, so
    splitting them would let the model see a row's rating pattern in training and be tested on the same row."""
    rows = sorted({p.source for p in pairs})
    random.Random(seed).shuffle(rows)
    fold_of = {row: i % k for i, row in enumerate(rows)}
    return [fold_of[p.source] for p in pairs]


def stored_gpt4o(ds: CCPTDataset, pairs: Sequence[RatedPair]) -> list[float | None]:
    """GPT-4o's relevance stored in the dataset for each pair (None where the file has none: component rows)."""
    by_id = {r.id: r for r in ds.paper_records}
    return [getattr(by_id[p.source], f"judge_{p.role}") for p in pairs]
