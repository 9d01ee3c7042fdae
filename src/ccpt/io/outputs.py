"""Writing outputs safely: a bad output path costs one line before work starts, not a finished run; a file is
written to a temporary name beside it and renamed into place once complete (a crash or Ctrl-C leaves the old file,
never half a new one); an output that would replace one of the command's inputs is refused before anything is read.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Iterable, Iterator
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


def _partial_beside(target: Path, where: str) -> Path:
    """A new empty temporary file beside ``target`` (its directory made), or one CcptError line naming ``where``."""
    if target.exists() and not target.is_file():  # renaming onto /dev/null or a FIFO would replace it with a file
        raise CcptError(f"{where}: exists and is not a regular file", "write to a file")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".partial")
    except OSError as exc:  # the file is written beside its target first: say it is the directory that refused
        raise CcptError(f"{where}: cannot create a file in {target.parent} ({exc.strerror or exc})") from None
    os.close(fd)
    return Path(name)


def ensure_writable_file(path: str | Path | None, option: str) -> None:
    """Check, before any work, that ``path`` can be written as :func:`atomic_path` will (None: nothing to check)."""
    if path is not None:
        _partial_beside(Path(path), f"{option} {path}").unlink()


@contextlib.contextmanager
def atomic_path(path: str | Path, option: str | None = None) -> Iterator[Path]:
    """A unique temporary path beside ``path``, renamed onto ``path`` if the block succeeds (else removed);
    ``option`` (e.g. ``"--out"``) names the option the path came from in the one-line error."""
    target = Path(path)
    where = f"{option} {target}" if option else str(target)
    partial = _partial_beside(target, where)
    os.chmod(partial, 0o644)  # mkstemp creates 0600: the output is an ordinary readable file
    try:
        yield partial
        os.replace(partial, target)
    except OSError as exc:
        raise CcptError(f"{where}: cannot write ({exc.strerror or exc})") from None
    finally:
        partial.unlink(missing_ok=True)


def atomic_write_text(path: str | Path, text: str, option: str | None = None) -> Path:
    """Write ``text`` (UTF-8) to ``path`` atomically; returns the path."""
    with atomic_path(path, option) as partial:
        partial.write_text(text, encoding="utf-8")
    return Path(path)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.exists() and b.exists() and os.path.samefile(a, b)
    except OSError:
        return False


def refuse_inputs(out: str | Path | None, inputs: Iterable[str | Path], option: str) -> None:
    """Refuse an output that is one of the command's input files (a link to one included), before any work."""
    if out is None:
        return
    target = Path(out)
    for item in inputs:
        source = Path(item)
        if source.is_file() and (_same_file(target, source) or target.resolve() == source.resolve()):
            raise CcptError(
                f"{option} {target}: is an input of this command ({source}) and would be overwritten",
                "write to another file",
            )
