"""The paper's stored answers re-judged by a judge other than the authors' GPT-4o: one relevance per judged
(concept, property) pair, keyed by the judge's identity, so that a run under that judge can stand beside the paper's
models (``ccpt report RUN --beside-paper``) without re-judging 22K pairs each time.

A store is a gzipped JSON file: ``{"format", "judge", "files": {name: sha256}, "pairs": [[concept, property,
relevance], ...]}``. The one shipped with ccpt holds the default distilled judge's scores of every stored file
ccpt pins (its sha256 is pinned here too); ``ccpt judge paper-scores`` writes one for any judge and any stored
files a user fetched, into ``$CCPT_HOME/paper-scores``.
"""

from __future__ import annotations

import gzip
import hashlib
import json
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import pandas as pd

from ccpt.errors import DataError
from ccpt.io.outputs import atomic_path
from ccpt.results.table import set_scores
from ccpt.scoring import Relevances
from ccpt.spec import TASK_SPECS

FORMAT = "ccpt-paper-scores/1"
SHIPPED_NAME = "paper_scores.json.gz"
# sha256 of the shipped store: a damaged or replaced file is refused, never read (regenerate: docs/judges.md).
SHIPPED_SHA256 = "29c8123b19f0360767a7a68f09eeb7c1d4c089ee1b59f23722cacf9b4ea7f15b"

Pair = tuple[str, str]


def pair_key(concept: str, prop: str) -> Pair:
    """A judged pair as every judge reads it: whitespace collapsed (as the LLM judge's prompt and the distilled
    judge normalise it)."""
    return " ".join(str(concept).split()), " ".join(str(prop).split())


@dataclass(frozen=True)
class PaperScores:
    """One judge's relevances of the stored answers: ``files`` (name → sha256) are the stored files scored."""

    judge: str
    files: dict[str, str]
    pairs: dict[Pair, float]
    path: Path

    def to_json(self) -> bytes:
        """The store's bytes (gzip of canonical JSON: the same scores give the same file)."""
        body = {
            "format": FORMAT,
            "judge": self.judge,
            "files": dict(sorted(self.files.items())),
            "pairs": [[c, p, round(v, 6)] for (c, p), v in sorted(self.pairs.items())],
        }
        return gzip.compress(json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode(), mtime=0)


def shipped_store() -> Path:
    """The store shipped with ccpt (the default distilled judge)."""
    return Path(str(resources.files("ccpt").joinpath(f"data/{SHIPPED_NAME}")))


def user_dir() -> Path:
    """Where ``ccpt judge paper-scores`` writes stores ($CCPT_HOME or the platform data dir)."""
    from platformdirs import user_data_dir

    return Path(os.environ.get("CCPT_HOME") or user_data_dir("ccpt")) / "paper-scores"


def read_store(path: Path, expected_sha256: str | None = None) -> PaperScores:
    """Read one store, checked (its pinned sha256 if given, its format, every relevance a number in [0, 1])."""
    if not path.is_file():
        raise DataError(f"{path}: not a regular file", "give a paper-scores store (.json.gz)")
    raw = path.read_bytes()
    if expected_sha256 and hashlib.sha256(raw).hexdigest() != expected_sha256:
        raise DataError(f"{path}: sha256 differs from the pinned one (damaged or replaced)", "reinstall ccpt")
    try:
        body = json.loads(gzip.decompress(raw))
        if not isinstance(body, dict) or body.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} file")
        pairs: dict[Pair, float] = {}
        for concept, prop, value in body["pairs"]:
            if isinstance(value, bool) or not isinstance(value, int | float) or not 0 <= value <= 1:
                raise ValueError(f"relevance {value!r} of ({concept!r}, {prop!r}) is not a number in [0, 1]")
            pairs[pair_key(concept, prop)] = float(value)
        files = {str(k): str(v) for k, v in body["files"].items()}
        return PaperScores(str(body["judge"]), files, pairs, path)
    except (OSError, EOFError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise DataError(f"{path}: not a readable paper-scores store ({exc})", "regenerate it") from None


def find_scores(judge: str) -> PaperScores | None:
    """The store of ``judge`` (its identity as the run's rows record it): the user's own first, then the shipped."""
    candidates = sorted(user_dir().glob("*.json.gz")) if user_dir().is_dir() else []
    for path in candidates:
        store = read_store(path)
        if store.judge == judge:
            return store
    shipped = shipped_store()
    if shipped.is_file():
        store = read_store(shipped, SHIPPED_SHA256)
        if store.judge == judge:
            return store
    return None


def store_path(judge: str) -> Path:
    """Where ``ccpt judge paper-scores`` keeps ``judge``'s store (one file per judge identity)."""
    digest = hashlib.sha256(judge.encode()).hexdigest()[:16]
    return user_dir() / f"{digest}.json.gz"


def write_store(scores: PaperScores, path: Path) -> Path:
    """Write ``scores`` atomically (nothing half-written on failure)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        tmp.write_bytes(scores.to_json())
    return path


def judged_pairs(row: Mapping[str, Any]) -> list[Pair] | None:
    """The pairs a judge is asked about for one stored answer (None: nothing to judge, an unparsed answer)."""
    if not row.get("parse_ok") or not isinstance(row.get("answer"), str) or not row["answer"]:
        return None
    modifier = row["answer_modifier"] if isinstance(row.get("answer_modifier"), str) else None
    concepts, prop = TASK_SPECS[row["task"]].judged_pairs(row, row["answer"], modifier)
    return [pair_key(c, prop) for c in concepts]


def pairs_of(frame: pd.DataFrame) -> list[Pair]:
    """Every distinct judged pair of the generative rows of ``frame``, sorted."""
    rows = frame[frame["task"].map(lambda t: TASK_SPECS[t].generative)].to_dict("records")
    return sorted({key for row in rows for key in judged_pairs(row) or ()})


def rescore(frame: pd.DataFrame, scores: PaperScores) -> tuple[pd.DataFrame, int]:
    """``frame``'s generative rows with the store's relevances in place of the stored ones, judge set to the
    store's; returns the rows and how many answers the store has no score for (their relevances are left empty,
    counted by the report as never judged — never the old judge's value)."""
    out, missing = [], 0
    for row in frame.to_dict("records"):
        new = dict(row)
        if TASK_SPECS[row["task"]].generative:
            keys = judged_pairs(row)
            values = [scores.pairs.get(k) for k in keys] if keys else None
            if keys and any(v is None for v in values or ()):
                missing += 1
                values = None
            set_scores(new, Relevances(*values) if values else Relevances(None, None, None))
            new["judge"] = scores.judge
        out.append(new)
    return pd.DataFrame(out, columns=frame.columns).astype(frame.dtypes.to_dict(), errors="ignore"), missing


def score_pairs(pairs: Sequence[Pair], score: Any, batch: int = 512, judge: str = "judge") -> dict[Pair, float]:
    """Score ``pairs`` with ``score(list_of_pairs) -> list_of_relevances`` in batches; a pair the judge gives None
    is left out (a failure: its answers count as never judged); anything but a relevance in [0, 1] is refused (a
    judge that misbehaves is named, not stored: ``True`` or ``"0.5"`` were stored as 1.0 and 0.5)."""
    from ccpt.judges import relevance, scored

    out: dict[Pair, float] = {}
    for start in range(0, len(pairs), batch):
        chunk = list(pairs[start : start + batch])
        for key, value in zip(chunk, scored(judge, score, chunk), strict=True):
            if value is not None and not relevance(value):
                raise DataError(f"{judge} gave {value!r} for {key}: not a relevance in [0, 1]")
            if value is not None:
                out[key] = float(value)  # type: ignore[arg-type]
    return out


def file_hashes(paths: Iterable[Path]) -> dict[str, str]:
    """name → sha256 of each stored file scored."""
    from ccpt.io.download import sha256_file

    return {p.name: sha256_file(p) for p in paths}
