"""Measured judge–human agreement, so every report can say how far to trust its judge.

Measurements come from `ccpt judge-agreement --judge MODEL` (saved in the user's data directory) and from
the measurements shipped with ccpt for its default embedded judge (``ccpt/data/judge_agreement.json``,
with the command that produced them). The paper's own GPT-4o judge figure (§6.1) is quoted as such.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir

from ccpt.jsonout import dumps
from ccpt.outputs import atomic_write_text

PAPER_NOTE = "paper's GPT-4o judge: Pearson 0.85, Spearman 0.83 on 300 human-rated pairs (§6.1)"


def user_store() -> Path:
    """Where `ccpt judge-agreement` saves its measurements ($CCPT_HOME or the platform data dir)."""
    return Path(os.environ.get("CCPT_HOME") or user_data_dir("ccpt")) / "judge_agreement.json"


@dataclass(frozen=True)
class Store:
    """The entries of an agreement store that match its schema, and one line per one that does not."""

    entries: dict[str, dict[str, Any]]
    problems: dict[str | None, str]  # judge (None: the whole store) → why it was left out


def _raw(path: Path) -> dict[str, Any] | str:
    """The store's JSON object, or why it is not one (a missing store is an empty one)."""
    if not path.is_file():
        return {}
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ValueError, RecursionError) as exc:
        return f"{path}: not readable as JSON ({type(exc).__name__}: {str(exc)[:80]})"
    return data if isinstance(data, dict) else f"{path}: not a JSON object of judge → measurement"


def read_store(path: Path) -> Store:
    """Read one store, checking every entry against its schema (docs/schemas.md, "agreement store")."""
    from pydantic import ValidationError

    from ccpt.schemas.base import one_line
    from ccpt.schemas.stores import AgreementEntry

    raw = _raw(path)
    if isinstance(raw, str):
        return Store({}, {None: f"{raw}; ignored"})
    entries: dict[str, dict[str, Any]] = {}
    problems: dict[str | None, str] = {}
    for judge, entry in raw.items():
        try:
            AgreementEntry.model_validate(entry)
        except ValidationError as exc:
            problems[judge] = f"{one_line(f'{path}: entry {judge!r}', exc)}; ignored"
            continue
        entries[judge] = entry
    return Store(entries, problems)


def _shipped() -> Path:
    return Path(str(resources.files("ccpt").joinpath("data/judge_agreement.json")))


def measurements() -> dict[str, dict[str, Any]]:
    """All known measurements keyed by judge model name (user measurements override shipped ones); entries
    that do not match the schema are left out (see :func:`store_problems`)."""
    return {**read_store(_shipped()).entries, **read_store(user_store()).entries}


def store_problems(judges: list[str]) -> list[str]:
    """One line per store, or entry of one of ``judges``, left out because it does not match the schema."""
    problems = {**read_store(_shipped()).problems, **read_store(user_store()).problems}
    return [line for judge, line in problems.items() if judge is None or judge in judges]


def save_measurement(judge: str, entry: dict[str, Any]) -> Path:
    """Record one measurement for ``judge`` in the user store (atomically); returns the file written.

    Other entries are kept as they are (even ones reports leave out); a store that is not a JSON object is
    set aside as ``judge_agreement.json.unreadable`` first, never overwritten.
    """
    path = user_store()
    raw = _raw(path)
    if isinstance(raw, str):
        path.replace(path.with_name(path.name + ".unreadable"))
        raw = {}
    raw[judge] = entry
    atomic_write_text(path, dumps(raw, sort_keys=True))
    return path


def _two(value: Any) -> str:
    # A stored correlation is null when it was undefined (e.g. a constant judge).
    return "undefined" if value is None else f"{value:.2f}"


def _ci(interval: Any) -> str:
    """`` [low, high]`` (95% bootstrap CI) when the measurement has one, else nothing."""
    if isinstance(interval, list | tuple) and len(interval) == 2:
        return f" [95% CI {interval[0]:.2f}, {interval[1]:.2f}]"
    return ""


def judge_note(judges: list[str]) -> str:
    """One line per judge: its measured agreement with human ratings, or how to measure it."""
    known = measurements()
    parts = [f"agreement store {line}" for line in store_problems(judges)]
    for judge in judges:
        m = known.get(judge)
        if m:
            parts.append(
                f"{judge}: Pearson {_two(m.get('pearson'))}{_ci(m.get('pearson_ci'))}, "
                f"Spearman {_two(m.get('spearman'))}{_ci(m.get('spearman_ci'))} against the mean human rating on "
                f"{m['n']} "
                + (f"held-out {m['pairs']} " if m.get("pairs") else "")
                + f"dataset pairs ({m.get('mode', 'text')} mode, measured {m.get('measured', '?')})"
            )
        else:
            parts.append(
                f"{judge}: agreement with human ratings not measured (run `ccpt judge-agreement --judge {judge}`)"
            )
    parts.append(PAPER_NOTE)
    return "; ".join(parts)
