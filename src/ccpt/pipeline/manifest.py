"""Resumable stages: atomic outputs and a manifest per finished stage.

``<workdir>/.manifests/<stage>.json`` holds the fingerprints of a stage's inputs and outputs, its parameters and
counts, written only after the stage succeeded; a later run skips the stage while it matches. Fingerprints are
sha256 up to :data:`HASH_LIMIT` bytes, size + mtime above (hashing a huge corpus every run costs more than it saves).
"""

from __future__ import annotations

import contextlib
import gzip
import hashlib
import json
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

from ccpt import __version__
from ccpt.errors import DataError
from ccpt.io.outputs import atomic_path, atomic_write_text

HASH_LIMIT = 256 * 1024 * 1024
MANIFEST_VERSION = 1


def fingerprint(path: Path) -> dict[str, Any]:
    """Identity of a file (or of every file under a directory) for change detection."""
    if path.is_dir():
        return {"dir": {str(p.relative_to(path)): fingerprint(p) for p in sorted(path.rglob("*")) if p.is_file()}}
    stat = path.stat()
    if stat.st_size <= HASH_LIMIT:
        with path.open("rb") as fh:
            return {"size": stat.st_size, "sha256": hashlib.file_digest(fh, "sha256").hexdigest()}
    return {"size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


@contextlib.contextmanager
def atomic_text(path: Path) -> Iterator[TextIO]:
    """Open ``path`` for writing text (gzip if it ends in .gz), atomically."""
    with atomic_path(path) as partial:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(partial, "wt", encoding="utf-8", newline="") as fh:  # type: ignore[operator]
            yield fh


def write_jsonl(path: Path, rows: Iterable[Mapping[str, Any]]) -> None:
    """Write rows as JSON lines, atomically."""
    with atomic_text(path) as fh:
        fh.writelines(json.dumps(row, ensure_ascii=False) + "\n" for row in rows)


def open_text(path: Path) -> Any:
    """Open a UTF-8 text file for reading (gzip if it ends in .gz)."""
    return gzip.open(path, "rt", encoding="utf-8") if path.suffix == ".gz" else path.open(encoding="utf-8")


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    """Stream the rows of a JSON-lines file (gzip if it ends in .gz)."""
    with open_text(path) as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def write_json(path: Path, value: Any) -> None:
    """Write pretty JSON atomically."""
    atomic_write_text(path, json.dumps(value, indent=2, ensure_ascii=False) + "\n")


@dataclass(frozen=True)
class StageSpec:
    """What identifies one run of a stage: its inputs, parameters and outputs."""

    name: str
    workdir: Path
    inputs: tuple[Path, ...]
    outputs: tuple[Path, ...]
    params: Mapping[str, Any] = field(default_factory=dict)

    @property
    def manifest_path(self) -> Path:
        return self.workdir / ".manifests" / f"{self.name}.json"


@dataclass(frozen=True)
class StageResult:
    """Outcome of :func:`run_stage`: whether it was skipped, its counts and its manifest."""

    name: str
    skipped: bool
    counts: dict[str, Any]
    manifest: Path


def _jsonable(params: Mapping[str, Any]) -> dict[str, Any]:
    return json.loads(json.dumps(params, default=str))


def _current(spec: StageSpec) -> dict[str, Any]:
    return {
        "version": MANIFEST_VERSION,
        "ccpt": __version__,  # a new release may change a stage's output: redo it
        "stage": spec.name,
        "params": _jsonable(spec.params),
        "inputs": {str(p): fingerprint(p) for p in spec.inputs},
    }


def is_up_to_date(spec: StageSpec) -> dict[str, Any] | None:
    """The stored manifest if the stage can be skipped, else None."""
    try:
        stored = json.loads(spec.manifest_path.read_text(encoding="utf-8"))
    except (FileNotFoundError, json.JSONDecodeError):
        return None
    if not all(p.exists() for p in (*spec.inputs, *spec.outputs)):
        return None
    if any(stored.get(k) != v for k, v in _current(spec).items()):
        return None
    outputs = {str(p): fingerprint(p) for p in spec.outputs}
    return stored if stored.get("outputs") == outputs else None


def run_stage(spec: StageSpec, work: Callable[[], Mapping[str, Any]], *, force: bool = False) -> StageResult:
    """Run ``work`` (writes ``spec.outputs``, returns counts) unless up to date; then write the manifest."""
    missing = [p for p in spec.inputs if not p.exists()]
    if missing:
        raise DataError(f"stage {spec.name}: input {missing[0]} does not exist", "run the stage before it first")
    stored = None if force else is_up_to_date(spec)
    if stored is not None:
        return StageResult(spec.name, True, dict(stored.get("counts", {})), spec.manifest_path)
    spec.manifest_path.unlink(missing_ok=True)
    began = time.perf_counter()
    counts = dict(work())
    manifest = {
        **_current(spec),
        "outputs": {str(p): fingerprint(p) for p in spec.outputs},
        "counts": _jsonable(counts),
        "seconds": round(time.perf_counter() - began, 3),
        "finished_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
    }
    write_json(spec.manifest_path, manifest)
    return StageResult(spec.name, False, counts, spec.manifest_path)
