"""User-facing errors: one readable line, never a traceback."""

from __future__ import annotations

import os
import stat
from pathlib import Path


class CcptError(Exception):
    """An error caused by the user's input or environment, printed by the CLI on one line (``hint``: what to do)."""

    def __init__(self, message: str, hint: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def __str__(self) -> str:
        return f"{self.message} ({self.hint})" if self.hint else self.message


class DataError(CcptError):
    """A dataset file is missing, corrupt, or malformed."""


class ModelError(CcptError):
    """A model cannot be resolved, loaded or reached."""


class PluginError(CcptError):
    """A plug-in (a method or judge another package declares) gave what it may not: a rerun repeats it."""


def require_pyarrow(path: object) -> None:
    """Raise one readable line when Parquet is asked for without the optional ``pyarrow`` installed."""
    from ccpt.io.extras import install_command

    try:
        import pyarrow  # noqa: F401  (probe only: pandas imports it itself)
    except ImportError:
        raise CcptError(
            f"{path}: Parquet needs pyarrow, which is not installed", hint=install_command("parquet")
        ) from None


def require_regular_file(path: str | Path, option: str | None = None) -> Path:
    """``path`` if it is a regular file (a link to one included); else one DataError line naming it, raised before
    anything opens it: a FIFO blocks its reader forever and a device never ends. ``option`` names where it came from.
    """
    where = f"{option} {path}" if option else str(path)
    problem = path_problem(path, directory=False)
    if problem:
        raise DataError(f"{where}: {problem}")
    return Path(path)


def path_problem(path: str | Path, *, directory: bool) -> str | None:
    """Why ``path`` is not a readable regular file (``directory``: not a directory), as words for one line; None if
    it is one (through links). A dangling link or a link loop is named as such, not as a missing file."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        if os.path.islink(path):
            return "is a dangling symbolic link"
        return "does not exist" if directory else "file not found"
    except OSError as exc:  # ELOOP (a link loop), EACCES on a parent, ENAMETOOLONG…
        return f"cannot be read ({exc.strerror or exc})"
    if directory:
        return None if stat.S_ISDIR(mode) else "not a directory"
    if not stat.S_ISREG(mode):
        kind = "a directory" if stat.S_ISDIR(mode) else "a FIFO, device or socket"
        return f"not a regular file ({kind})"
    return None


class Interrupted(Exception):
    """The user interrupted a run (Ctrl-C). The CLI prints the message and exits 130 without a report."""

    def __init__(self, finished: int, total: int, where: str) -> None:
        super().__init__(f"{finished} of {total} samples finished (kept in {where}); rerun the same command to resume")
