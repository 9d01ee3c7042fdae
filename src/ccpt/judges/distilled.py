"""The distilled judge (docs/judge.md) as a registered judge: cross-encoders trained on the dataset's human ratings,
scoring in-process. Its variant is the head (``default``: the shipped ensemble, or a head file or manifest path), its
version the loaded file's sha256, its scale ``raw`` when ``calibrated=false``."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ccpt.errors import ModelError
from ccpt.judges.definition import Judge, Scoring

_FLAGS = {"true": True, "1": True, "yes": True, "false": False, "0": False, "no": False}


def load(variant: str, args: Mapping[str, Any]) -> Scoring:
    """The distilled judge of head ``variant`` (checked in full), calibrated unless ``calibrated=false``."""
    from ccpt.judging.distilled import load_judge

    if unknown := sorted(set(args) - {"calibrated"}):
        raise ModelError(f"ccpt-distilled: unknown model argument(s) {', '.join(unknown)}", "use calibrated")
    calibrated = args.get("calibrated", True)
    flag = calibrated if isinstance(calibrated, bool) else _FLAGS.get(str(calibrated).strip().lower())
    if flag is None:
        raise ModelError(f"ccpt-distilled: calibrated must be true or false, got {calibrated!r}")
    judge = load_judge(None if variant in ("default", "") else Path(variant), calibrated=flag)
    raw = not judge.applies_calibration and judge.calibration is not None
    weights = ",".join(head.encoder.weights_sha256[:16] for head in judge.heads)
    return Scoring(judge.score, judge.sha256, "raw" if raw else None, f"weights-sha256:{weights}")


JUDGE = Judge("distilled", "Distilled judge", load=load, model="ccpt-distilled/default")
