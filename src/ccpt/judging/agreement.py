"""Judge–human agreement (paper §6.1, Figure 4; docs/judge.md): measuring it, storing it, quoting it.

Pearson and Spearman against the mean human rating with 95% bootstrap intervals, stored keyed by (judge, pair set):
a figure over ``all`` pairs is in-sample for the distilled judge, kept but never quoted. Pairs a judge failed on
(relevance ``None``) are counted in ``n_missing``, never filled in.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import date
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from ccpt.io.jsonout import dumps
from ccpt.io.outputs import atomic_write_text
from ccpt.judges import JudgeIdentity
from ccpt.judging.rated_pairs import HELDOUT_PAIR_SETS, PAPER_ROWS, ROLES, PairSet, RatedPair, sample_id
from ccpt.spec import GENERATIVE_TASKS
from ccpt.stats import bootstrap_replicates, defined, pearson, spearman

PAPER_NOTE = "paper's GPT-4o judge: Pearson 0.85, Spearman 0.83 on 300 human-rated pairs (§6.1)"
# What each pair set measures, as every judge note names it (docs/judges.md): the test rows are what a CCPT run
# judges, but the distilled judge's teacher head learnt GPT-4o's verdicts on answers to them, so for that judge they
# are not independent; its figure on rows it never trained on is its manifest's validation figure.
PAIR_SET_LABELS: dict[str, str] = {
    "test": "the benchmark's test concepts (the pairs of every test row)",
    "paper300": "a paper-sized sample of the benchmark's test concepts",
    "all": "every rated row, training rows included (in-sample for the distilled judge)",
}
DISTILLED_MANIFEST = "data/distilled_judge.json"


@dataclass(frozen=True)
class AgreementCI:
    """Pearson r and Spearman ρ over ``n`` scored pairs, each with a 95% percentile bootstrap interval (both None
    when undefined: fewer than two scored pairs, or a constant side); ``n_missing`` pairs had no judge score."""

    pearson: float | None
    pearson_ci: tuple[float, float] | None
    spearman: float | None
    spearman_ci: tuple[float, float] | None
    n: int
    n_missing: int
    n_resamples: int

    def as_dict(self) -> dict[str, Any]:
        """Plain JSON values (intervals as lists)."""
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()}

    def line(self) -> str:
        """``Pearson 0.71 [0.68, 0.74], Spearman …`` for notes under tables."""
        r, rho = _with_ci(self.pearson, self.pearson_ci), _with_ci(self.spearman, self.spearman_ci)
        return f"Pearson {r}, Spearman {rho}"


def _with_ci(value: float | None, interval: Sequence[float] | None) -> str:
    if value is None:
        return "undefined"
    return f"{value:.2f}" + (f" [{interval[0]:.2f}, {interval[1]:.2f}]" if interval else "")


def _interval(values: np.ndarray) -> tuple[float, float] | None:
    finite = values[np.isfinite(values)]
    if not len(finite):
        return None
    low, high = np.percentile(finite, [2.5, 97.5])
    return (float(low), float(high))


def agreement_ci(
    human: Sequence[float], judge: Sequence[float | None], n_resamples: int = 1000, seed: int = 0
) -> AgreementCI:
    """Agreement of ``judge`` with ``human`` (same order); ``None`` judge values are missing, not zero. Seeded
    bootstrap over pairs, Spearman's ranks (ties averaged) recomputed inside each resample."""
    if len(human) != len(judge):
        raise ValueError(f"{len(human)} human ratings but {len(judge)} judge scores")
    kept = [(h, j) for h, j in zip(human, judge, strict=True) if j is not None]
    h, j = np.array(kept, dtype=float).reshape(-1, 2).T
    n = len(kept)
    r, rho = defined(pearson(list(h), list(j))), defined(spearman(list(h), list(j)))
    if r is None or rho is None:
        return AgreementCI(r, None, rho, None, n, len(human) - n, 0)
    from scipy.stats import pearsonr, rankdata  # on first use, as in ccpt.stats

    def both(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
        rx, ry = rankdata(x, axis=axis), rankdata(y, axis=axis)
        return np.stack([pearsonr(x, y, axis=axis).statistic, pearsonr(rx, ry, axis=axis).statistic])

    boot_pearson, boot_spearman = bootstrap_replicates((h, j), both, n_resamples, seed)
    return AgreementCI(r, _interval(boot_pearson), rho, _interval(boot_spearman), n, len(human) - n, n_resamples)


@dataclass(frozen=True)
class Measurement:
    """One judge's agreement on one pair set, with how it was made (what the store keeps, one per key)."""

    judge: str  # the judge's identity without reply format (ccpt.judges.JudgeIdentity.scored), by its key
    pairs: PairSet
    result: AgreementCI
    mode: str = "text"
    rows: int | None = None  # rows sampled from the pair set (None: all of its rows)
    seed: int = 0
    seconds: float | None = None
    measured: str = field(default_factory=lambda: date.today().isoformat())
    command: str | None = None
    note: str | None = None

    @property
    def pair_set_id(self) -> str:
        """The store key's second half: the pair set, and the sample of its rows if one was drawn."""
        return sample_id(self.pairs, self.rows, self.seed)

    @property
    def held_out(self) -> bool:
        """Whether every pair is outside the distilled judge's human training pool (so the figure may be quoted, named
        by its set: the test rows are not independent of its teacher data, :data:`PAIR_SET_LABELS`)."""
        return self.pairs in HELDOUT_PAIR_SETS

    def entry(self) -> dict[str, Any]:
        """The store entry (docs/schemas.md, "agreement store"), figures rounded to 4 decimals, intervals as lists."""
        result = {
            k: [round(x, 4) for x in v] if isinstance(v, tuple) else v if v is None else round(v, 4)
            for k, v in asdict(self.result).items()
        }
        own = ("pairs", "mode", "rows", "seed", "seconds", "measured", "command", "note")
        return result | {k: getattr(self, k) for k in own if getattr(self, k) is not None}

    def text(self) -> str:
        """The measurement as a judge-note line, its pair set named by what it measures."""
        sample = f"a sample of {self.rows} rows (seed {self.seed}) of " if self.rows else ""
        return (
            f"{self.judge}: {self.result.line()} against the mean human rating on {self.result.n} pairs of "
            f"{sample}{PAIR_SET_LABELS.get(self.pairs, self.pairs)} (pair set {self.pairs!r}; {self.mode} mode, "
            f"measured {self.measured})"
        )


def measure(
    judge: str, pairs_name: PairSet, pairs: Sequence[RatedPair], scores: Sequence[float | None], **how: Any
) -> Measurement:
    """The measurement of ``judge``'s ``scores`` on ``pairs`` (drawn from the pair set ``pairs_name``); ``how``:
    the other :class:`Measurement` fields (mode, rows, seed, seconds, command, note)."""
    result = agreement_ci([p.human for p in pairs], scores, seed=how.get("seed", 0))
    return Measurement(judge, pairs_name, result, **how)


def user_store() -> Path:
    """Where `ccpt judge-agreement` saves its measurements ($CCPT_HOME or the platform data dir)."""
    from platformdirs import user_data_dir

    return Path(os.environ.get("CCPT_HOME") or user_data_dir("ccpt")) / "judge_agreement.json"


def shipped_store() -> Path:
    """The measurements shipped with ccpt (its default judges), each with the command that made it."""
    return Path(str(resources.files("ccpt").joinpath("data/judge_agreement.json")))


Key = tuple[str, str]  # (judge, pair set id)
_FLAT_MARKERS = frozenset({"n", "pearson", "spearman", "pairs", "mode", "measured"})  # fields of one entry


@dataclass(frozen=True)
class Store:
    """The measurements of one store that match its schema, and one line per entry that does not."""

    entries: dict[Key, Measurement]
    problems: dict[str | None, str]  # judge (None: the whole store) → why it was left out


def _raw(path: Path) -> dict[str, Any] | str:
    """The store's JSON object, or why it is not one (a missing store is an empty one)."""
    if not path.exists() and not path.is_symlink():
        return {}
    if not path.is_file():  # a FIFO would block the reader, a directory or a dangling link holds no measurement
        return f"{path}: not a regular file"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path}: not readable as JSON ({type(exc).__name__}: {str(exc)[:80]})"
    return data if isinstance(data, dict) else f"{path}: not a JSON object of judge → pair set → measurement"


def _by_pair_set(value: Any) -> dict[str, Any]:
    """A judge's entries keyed by pair set id. An older store's flat entry (one per judge) is read under its own
    ``pairs`` field, or under ``all`` without one (such entries were measured on every row, training rows included)."""
    if isinstance(value, dict) and _FLAT_MARKERS & set(value):
        return {str(value.get("pairs") or "all"): value}
    return value if isinstance(value, dict) else {"?": value}


def _measurement(judge: str, entry: dict[str, Any], checked: Any, pair_set_key: str) -> Measurement:
    # The figures as the schema read them (``checked``): the entry's text "0.5" is the number 0.5, 300.0 is 300.
    names = ("pearson", "spearman", "pearson_ci", "spearman_ci", "n_missing", "n_resamples", "n")
    result = AgreementCI(**{k: getattr(checked, k) for k in names})
    how = {k: entry.get(k) for k in ("rows", "seconds", "command", "note")}
    mode, measured = entry.get("mode") or "text", entry.get("measured") or "?"
    pairs = entry.get("pairs") or pair_set_key
    return Measurement(judge, pairs, result, mode, seed=entry.get("seed", 0), measured=measured, **how)


def read_store(path: Path) -> Store:
    """Read one store, checking every entry against its schema (docs/schemas.md, "agreement store")."""
    from pydantic import ValidationError

    from ccpt.schemas.base import one_line
    from ccpt.schemas.stores import AgreementEntry

    raw = _raw(path)
    if isinstance(raw, str):
        return Store({}, {None: f"{raw}; ignored"})
    entries: dict[Key, Measurement] = {}
    problems: dict[str | None, str] = {}
    for judge, value in raw.items():
        for pair_set_key, entry in _by_pair_set(value).items():
            try:
                checked = AgreementEntry.model_validate(entry)
            except ValidationError as exc:
                problems[judge] = f"{one_line(f'{path}: entry {judge!r} / {pair_set_key!r}', exc)}; ignored"
                continue
            # A figure of another pair set than its key (`test`, or `test/rows=10/seed=0`) would be quoted as
            # the key's: the entry contradicts its place.
            if (said := entry.get("pairs")) is not None and str(said) != pair_set_key.split("/", 1)[0]:
                problems[judge] = f"{path}: entry {judge!r} / {pair_set_key!r} says pairs {said!r}; ignored"
                continue
            # Its mode is its key's too: a judge read as text is keyed without "(expected)" (JudgeIdentity.key).
            keyed_mode = "expected" if str(judge).endswith(" (expected)") else "text"
            if (checked.mode or "text") != keyed_mode:
                problems[judge] = (
                    f"{path}: entry {judge!r} / {pair_set_key!r} says mode {checked.mode or 'text'!r}, "
                    f"its key {keyed_mode!r}; ignored"
                )
                continue
            if problem := _size_problem(checked.n + checked.n_missing, checked.rows, pair_set_key, entry.get("seed")):
                problems[judge] = f"{path}: entry {judge!r} / {pair_set_key!r}: {problem}; ignored"
                continue
            entries[(judge, pair_set_key)] = _measurement(judge, entry, checked, pair_set_key)
    return Store(entries, problems)


def _size_problem(counted: int, rows: int | None, pair_set_key: str, seed: object = None) -> str | None:
    """How an entry's pairs (``counted``: n and n_missing), ``rows`` and ``seed`` contradict the pair set its key
    names, or None: more pairs than a sample of its rows holds (3 a row), or than ``paper300`` (300) or ``test`` (3
    per test instance of every generative task, at most) hold; a ``rows`` or ``seed`` other than its key's. Quoted,
    it would read "on 5000 pairs" of the paper-sized sample, or "seed 7" of the sample drawn with seed 3."""
    from ccpt.benchmark import benchmark

    name, _, sample = pair_set_key.partition("/")
    keyed = dict(part.split("=", 1) for part in sample.split("/") if "=" in part)
    sampled = int(keyed["rows"]) if keyed.get("rows", "").isdigit() else None
    if rows is not None and rows != sampled:
        return f"says rows {rows} where its key says {sampled}"
    if seed is not None and (isinstance(seed, bool) or str(seed) != keyed.get("seed", "0")):
        return f"says seed {seed!r} where its key says {keyed.get('seed', '0')}"
    test_rows = sum(benchmark().test_sizes[task] for task in GENERATIVE_TASKS)
    held = {"paper300": PAPER_ROWS, "test": test_rows}.get(name) if sampled is None else sampled
    if held is not None and counted > len(ROLES) * held:
        return f"{counted} pairs (n and n_missing) where its pair set holds {len(ROLES) * held} at most"
    return None


def measurements() -> dict[Key, Measurement]:
    """Every known measurement keyed by (judge, pair set id); a user's measurement replaces a shipped one only
    under the same key. Entries that do not match the schema are left out (:func:`judge_note` names them)."""
    return {**read_store(shipped_store()).entries, **read_store(user_store()).entries}


def writable_store() -> Path:
    """The user store, refused in one line when it is there but no regular file (a FIFO, a directory): checked
    before a measurement is made, so no judge call is spent on a figure that cannot be saved."""
    path = user_store()
    if (path.exists() or path.is_symlink()) and not path.is_file():
        from ccpt.errors import DataError

        raise DataError(f"{path}: the agreement store is not a regular file", "move it away ($CCPT_HOME)")
    return path


def save(measurement: Measurement) -> Path:
    """Record ``measurement`` in the user store under (judge, pair set id), atomically; returns the file. A store that
    is not a JSON object is set aside as ``judge_agreement.json.unreadable``, never overwritten."""
    path = writable_store()
    raw = _raw(path)
    if isinstance(raw, str):
        path.replace(path.with_name(path.name + ".unreadable"))
        raw = {}
    new = {measurement.pair_set_id: measurement.entry()}
    raw[measurement.judge] = _by_pair_set(raw.get(measurement.judge, {})) | new
    atomic_write_text(path, dumps(raw, sort_keys=True))
    return path


def unseen_rows_note(judge: JudgeIdentity) -> str | None:
    """For the shipped distilled judge (its manifest's sha256 its version): its figure on rows it never trained on,
    and why its test-concept figure is not independent; None for any other judge."""
    data = resources.files("ccpt").joinpath(DISTILLED_MANIFEST).read_bytes()
    if judge.version is None or not hashlib.sha256(data).hexdigest().startswith(judge.version):
        return None
    figures = json.loads(data).get("validation") or {}
    pearson_, spearman_, n = (figures.get(k) for k in ("pearson_3rater", "spearman_3rater", "n_3rater"))
    if not isinstance(pearson_, float) or not isinstance(spearman_, float) or not isinstance(n, int):
        return None
    return (
        f"on rows in none of its training or teacher data (validation fold 0 of the training pool, {n:,} three-rater "
        f"pairs; the uncalibrated ensemble, whose member weights were chosen on these rows): Pearson {pearson_:.3f}, "
        f"Spearman {spearman_:.3f}, the figure to expect on new data; its test-concept figure is not independent "
        "(its teacher-tuned head learnt GPT-4o's verdicts on model answers to the test rows)"
    )


def judge_note(judges: Sequence[JudgeIdentity]) -> str:
    """One line per judge identity without its reply format (:attr:`JudgeIdentity.scored`: the model and, for an
    in-process judge, its version and scale, and the reading mode): its agreement with human ratings on the
    benchmark's test concepts (and, for the shipped distilled judge, on rows it never trained on), never one measured
    on another version or scale, or how to measure it."""
    shipped, user = read_store(shipped_store()), read_store(user_store())
    known = shipped.entries | user.entries
    scored = list(dict.fromkeys(j.scored for j in judges))
    problems = shipped.problems | user.problems  # entries left out: they do not match the schema
    keys = {j.key for j in scored}
    parts = [f"agreement store {line}" for key, line in problems.items() if key is None or key in keys]
    for judge in scored:
        # Quoted: the judge's measurement on test concepts over the most pairs, never an in-sample one (set ``all``).
        held = [m for (key, _), m in known.items() if key == judge.key and m.held_out and m.result.pearson is not None]
        unseen = unseen_rows_note(judge)
        if (found := max(held, key=lambda m: (m.result.n, m.measured), default=None)) is not None:
            parts.append(found.text() + (f"; {unseen}" if unseen else ""))
            continue
        mode = " --judge-mode expected" if judge.mode == "expected" else ""
        raw = " --judge-arg calibrated=false" if judge.scale == "raw" else ""
        if any(c.isspace() or c == "@" for c in judge.name):  # a file's judge text (a key), not a model name to run
            how = f"run `ccpt judge-agreement --judge MODEL --pairs test` with the judge {judge.name!r} names"
        else:
            command = f"`ccpt judge-agreement --judge {judge.name}{mode}{raw} --pairs test`"
            how = f"run {command}" + (" with this version" if judge.version else "")
        parts.append(f"{judge.key}: agreement with human ratings on the benchmark's test concepts not measured ({how})")
    parts.append(PAPER_NOTE)
    return "; ".join(parts)


def format_correlation(value: float | None, digits: int = 3) -> str:
    """A correlation for text output; an undefined one says why instead of printing 'nan' or '-0.000'."""
    return "undefined (constant scores or < 2 pairs)" if value is None or math.isnan(value) else f"{value:.{digits}f}"
