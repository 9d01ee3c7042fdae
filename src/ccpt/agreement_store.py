"""Measured judge–human agreement, so every report can say how far to trust its judge.

Measurements come from `ccpt judge-agreement --judge MODEL` (saved in the user's data directory) and from
the measurements shipped with ccpt for its default embedded judge (``ccpt/data/judge_agreement.json``,
with the command that produced them). The paper's own GPT-4o judge figure (§6.1) is quoted as such.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

from platformdirs import user_data_dir

from ccpt.jsonout import dumps

PAPER_NOTE = "paper's GPT-4o judge: Pearson 0.85, Spearman 0.83 on 300 human-rated pairs (§6.1)"


def user_store() -> Path:
    """Where `ccpt judge-agreement` saves its measurements ($CCPT_HOME or the platform data dir)."""
    return Path(os.environ.get("CCPT_HOME") or user_data_dir("ccpt")) / "judge_agreement.json"


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def measurements() -> dict[str, dict[str, Any]]:
    """All known measurements keyed by judge model name (user measurements override shipped ones)."""
    shipped = _read(Path(str(resources.files("ccpt").joinpath("data/judge_agreement.json"))))
    return {**shipped, **_read(user_store())}


def save_measurement(judge: str, entry: dict[str, Any]) -> Path:
    """Record one measurement for ``judge`` in the user store; returns the file written."""
    path = user_store()
    data = _read(path)
    data[judge] = entry
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(dumps(data, sort_keys=True), encoding="utf-8")
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
    parts = []
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
