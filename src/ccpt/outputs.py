"""Output directories checked before any work starts, so a bad path costs one line, not a finished run."""

from __future__ import annotations

import os
from pathlib import Path

from ccpt.errors import CcptError


def ensure_writable_dir(directory: str | Path, option: str) -> Path:
    """Create ``directory`` and check a file can be written there, or raise one CcptError line naming it."""
    path = Path(directory)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / f".ccpt-write-check-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        raise CcptError(f"{option} {path}: not writable ({exc.strerror or exc})") from None
    return path
