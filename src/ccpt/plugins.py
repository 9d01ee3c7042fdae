"""The one loader of ccpt's plug-in registries (methods, judges): ccpt's own declarations, then those other
packages declare through an entry-point group, each checked when it registers."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from importlib.metadata import EntryPoint, entry_points
from typing import TypeVar

from ccpt.errors import CcptError

T = TypeVar("T")


def load_registry(
    builtin: Iterable[T],
    group: str,
    kind: type[T],
    key: Callable[[T], str],
    check: Callable[[T, EntryPoint], None],
) -> dict[str, T]:
    """Every declaration by name: ``builtin``, then each entry point of ``group`` that loads a ``kind`` and passes
    ``check``. A plug-in that does not load, is of another kind, or takes a registered name is one line naming it."""
    noun = kind.__name__.lower()
    found = {key(item): item for item in builtin}
    for point in entry_points(group=group):
        try:
            item = point.load()
        except Exception as exc:  # a broken plug-in is one line naming it, not a traceback
            raise CcptError(f"entry point {point.value!r} ({group}) does not load: {exc}") from None
        if not isinstance(item, kind):
            raise CcptError(f"entry point {point.value!r} ({group}) is not a {group}.{kind.__name__}")
        check(item, point)
        if key(item) in found and found[key(item)] is not item:
            raise CcptError(f"{noun} {key(item)!r} of entry point {point.value!r} is already registered")
        found[key(item)] = item
    return found
