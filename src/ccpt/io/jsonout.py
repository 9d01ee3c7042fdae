"""Strict JSON for every ccpt output, and the provenance block that says what produced it.

Strict parsers (JavaScript, jq) reject the ``NaN`` and ``Infinity`` Python's ``json`` writes: an undefined statistic
is written as ``null``. Text formats carry the provenance block as a short comment (:func:`provenance_lines`).
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime as dt
import json
import math
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

from ccpt import __version__
from ccpt.io.download import CHECKSUMS, PINNED_COMMIT, REQUIRED_FILES, sha256_file
from ccpt.spec import DEFAULT_PROTOCOL


def strict(value: Any) -> Any:
    """``value`` as plain JSON types: non-finite floats become None, numpy scalars/arrays, tuples, sets,
    paths and dataclasses become their JSON counterparts, mapping keys become strings."""
    if value is None or isinstance(value, bool | str | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return strict(dataclasses.asdict(value))
    if isinstance(value, Mapping):
        return {str(k): strict(v) for k, v in value.items()}
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list | tuple | set | frozenset):
        items = sorted(value, key=str) if isinstance(value, set | frozenset) else value
        return [strict(v) for v in items]
    if type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing markers, without importing pandas here
        return None
    if hasattr(value, "tolist"):  # numpy scalars and arrays, without importing numpy here
        return strict(value.tolist())
    if hasattr(value, "isoformat"):
        return value.isoformat()
    raise TypeError(f"not JSON-serialisable: {type(value).__name__}")


def dumps(value: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """Strict JSON text of ``value`` (see :func:`strict`); never contains NaN or Infinity."""
    return json.dumps(strict(value), indent=indent, sort_keys=sort_keys, ensure_ascii=False, allow_nan=False)


def provenance(
    *,
    protocol: str = DEFAULT_PROTOCOL,
    models: Iterable[str] = (),
    judges: Iterable[str] = (),
    generation: Mapping[str, Any] | None = None,
    data_dir: str | Path | None = None,
    now: dt.datetime | None = None,
) -> dict[str, Any]:
    """The provenance block of one output (unknown fields are ``None``, never guessed); with ``data_dir``, each
    dataset file's sha256 and whether all match the pin."""
    dataset: dict[str, Any] = {"commit": PINNED_COMMIT}
    if data_dir is not None:
        root = Path(data_dir)
        files = {name: sha256_file(root / name) for name in REQUIRED_FILES if (root / name).is_file()}
        matches = files == {name: CHECKSUMS[name] for name in REQUIRED_FILES}
        dataset |= {"dir": str(root), "sha256": files, "matches_pinned": matches}
    stamp = (now or dt.datetime.now(dt.UTC)).astimezone(dt.UTC).replace(microsecond=0)
    inspect_version = None
    with contextlib.suppress(metadata.PackageNotFoundError):  # the distribution's metadata: Inspect is not imported
        inspect_version = metadata.version("inspect-ai")
    return {
        "ccpt_version": __version__,
        "inspect_version": inspect_version,
        "protocol": protocol,
        "dataset": dataset,
        "models": sorted({m for m in models if m}),
        "judges": sorted({j for j in judges if j}),
        "generation": dict(generation) if generation else None,
        "created_utc": stamp.isoformat().replace("+00:00", "Z"),
    }


def _settings(settings: Any) -> str:
    """``key=value, …`` for a mapping; anything else as it reads."""
    if isinstance(settings, Mapping):
        return ", ".join(f"{k}={v}" for k, v in settings.items()) or "none"
    return str(settings)


def provenance_lines(block: Mapping[str, Any]) -> list[str]:
    """The provenance block as short ``key: value`` lines, for a comment in a text report."""
    dataset = block.get("dataset") or {}
    data = f"commit {str(dataset.get('commit', '?'))[:12]}"
    if "matches_pinned" in dataset:
        data += ", files match the pinned sha256" if dataset["matches_pinned"] else ", files DIFFER from the pin"
    lines = [
        f"ccpt {block.get('ccpt_version')}, Inspect {block.get('inspect_version') or 'not installed'}, "
        f"protocol {block.get('protocol')}",
        f"dataset: {data}",
        f"models: {', '.join(block.get('models') or []) or 'n/a'}; "
        f"judges: {', '.join(block.get('judges') or []) or 'n/a'}",
    ]
    generation = dict(block.get("generation") or {})
    # `ccpt report`: what each model's logs say it was sent (None: its result files do not say).
    for model, sent in (generation.pop("sent", None) or {}).items():
        lines.append(f"generation ({model}): {' | '.join(sent) if sent else 'not recorded by its result files'}")
    # `ccpt run`: what each model was sent, then the run's own settings.
    for model, settings in (generation.pop("models", None) or {}).items():
        lines.append(f"generation ({model}): {_settings(settings)}")
    if generation:
        lines.append(f"run: {_settings(generation)}")
    lines.append(f"created: {block.get('created_utc')}")
    return lines
