"""Who answers what: each item goes to as many annotators as its overlap asks, spreading the load evenly."""

from __future__ import annotations

from collections.abc import Sequence

from ccpt.errors import DataError
from ccpt.human.app.studies import Item


def assign(items: Sequence[Item], annotators: int) -> list[list[Item]]:
    """Per annotator, the items they answer, in study order (deterministic). An item goes to everyone
    (``overlap=None``) or to the ``overlap`` annotators with the fewest items so far (ties: a rotating start)."""
    if annotators < 1:
        raise DataError("a study needs at least one annotator")
    out: list[list[Item]] = [[] for _ in range(annotators)]
    for n, item in enumerate(items):
        if item.overlap is not None and item.overlap > annotators:
            raise DataError(
                f"{item.study} item {item.key} needs {item.overlap} annotators, only {annotators} given",
                "pass --annotators or a names file with enough people",
            )
        order = sorted(range(annotators), key=lambda a, n=n: (len(out[a]), (a - n) % annotators))
        for a in sorted(order[: item.overlap]):  # overlap None: everyone
            out[a].append(item)
    return out
