"""A one-line progress display for long pipeline stages (processed / total, rate, ETA), drawn by rich.

Shown only on an interactive terminal outside CI, so captured output holds results, not redraws.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TextIO, TypeVar

if TYPE_CHECKING:
    from rich.live import Live

T = TypeVar("T")


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


@dataclass
class Progress(contextlib.AbstractContextManager["Progress"]):
    """Counts processed items of one stage; on a terminal, rich shows ``label: done/total (rate/s, ETA …)``."""

    label: str
    total: int | None = None
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    enabled: bool | None = None  # None: only when the stream is an interactive terminal
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    _start: float = field(init=False, default=0.0)
    _live: Live | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        if self.enabled is None:  # on a terminal outside CI (``$CI`` set by CI services: no live display)
            self.enabled = bool(getattr(self.stream, "isatty", lambda: False)()) and not os.environ.get("CI")
        self._start = self.clock()
        if self.enabled:
            from rich.console import Console
            from rich.live import Live
            from rich.text import Text

            console = Console(file=self.stream, force_terminal=True)
            self._live = Live(console=console, get_renderable=lambda: Text(self.line()), refresh_per_second=2)
            self._live.start()

    def line(self) -> str:
        """The text of the progress line (rate over the whole stage so far; ETA when the total is known)."""
        rate = self.done / max(self.clock() - self._start, 1e-9)
        count = f"{self.done:,}" + (f"/{self.total:,}" if self.total is not None else "")
        text = f"{self.label}: {count} ({rate:,.1f}/s"
        if self.total is not None and rate > 0:
            text += f", ETA {_duration(max(self.total - self.done, 0) / rate)}"
        return text + ")"

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more processed items (rich redraws on its own schedule)."""
        self.done += n

    def close(self) -> None:
        """Draw the final count and end the line (nothing if the display was off)."""
        if self._live is not None:
            self._live.stop()
            self._live = None

    def __exit__(self, *exc: object) -> None:
        self.close()


async def gather_with_progress(label: str, awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """``asyncio.gather`` of ``awaitables`` (results in order) with a progress line as each one finishes."""
    import asyncio

    items = list(awaitables)
    with Progress(label, total=len(items)) as progress:

        async def tick(awaitable: Awaitable[T]) -> T:
            result = await awaitable
            progress.advance()
            return result

        return list(await asyncio.gather(*(tick(a) for a in items)))
