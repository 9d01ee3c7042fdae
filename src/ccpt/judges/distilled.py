"""The distilled judge (docs/judge.md) as a registered judge: cross-encoders trained on the dataset's human ratings,
scoring in-process. Its variant is the head (``default``: the shipped ensemble, or a head file or manifest path), its
version the loaded file's sha256, its scale ``raw`` when ``calibrated=false``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccpt.errors import ModelError, path_problem
from ccpt.judges.definition import Judge, Scoring

_FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def _head(variant: str) -> Path | None:
    """The head file or manifest ``variant`` names (None: the shipped judge)."""
    return None if variant in ("default", "") else Path(variant)


def check(variant: str, args: Mapping[str, Any]) -> bool:
    """Whether the head is calibrated: its arguments known and its head file present (nothing loaded, for
    `--dry-run`); else a one-line ModelError."""
    if unknown := sorted(set(args) - {"calibrated"}):
        raise ModelError(f"ccpt-distilled: unknown model argument(s) {', '.join(unknown)}", "use calibrated")
    calibrated = args.get("calibrated", True)
    flag = calibrated if isinstance(calibrated, bool) else _FLAGS.get(str(calibrated).strip().lower())
    if flag is None:
        raise ModelError(f"ccpt-distilled: calibrated must be true or false, got {calibrated!r}")
    if (head := _head(variant)) is not None and (problem := path_problem(head, directory=False)) is not None:
        raise ModelError(f"ccpt-distilled: head {head}: {problem}", "give a head file or manifest, or 'default'")
    return flag


def load(variant: str, args: Mapping[str, Any]) -> Scoring:
    """The distilled judge of head ``variant`` (checked in full), calibrated unless ``calibrated=false``."""
    from ccpt.judging.distilled import load_judge

    judge = load_judge(_head(variant), calibrated=check(variant, args))
    raw = not judge.applies_calibration and judge.calibration is not None
    weights = ",".join(head.encoder.weights_sha256[:16] for head in judge.heads)
    return Scoring(judge.score, judge.sha256, "raw" if raw else None, f"weights-sha256:{weights}")


JUDGE = Judge(
    "distilled",
    "Distilled judge",
    load=load,
    model="ccpt-distilled/default",
    check=check,
    recorded_args=frozenset({"calibrated"}),  # calibrated=false: the scale `raw`, part of the judge's identity
)
