"""User-facing errors: one readable line, never a traceback."""

from __future__ import annotations


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


def require_pyarrow(path: object) -> None:
    """Raise one readable line when Parquet is asked for without the optional ``pyarrow`` installed."""
    from ccpt.extras import install_command

    try:
        import pyarrow  # noqa: F401  (probe only: pandas imports it itself)
    except ImportError:
        raise CcptError(
            f"{path}: Parquet needs pyarrow, which is not installed", hint=install_command("parquet")
        ) from None


class Interrupted(Exception):
    """The user interrupted a run (Ctrl-C). The CLI prints the message and exits 130 without a report."""

    def __init__(self, finished: int, total: int, where: str) -> None:
        super().__init__(f"{finished} of {total} samples finished (kept in {where}); rerun the same command to resume")
