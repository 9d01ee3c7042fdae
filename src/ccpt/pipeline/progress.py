"""A one-line progress display for long pipeline stages: processed / total, rate and ETA.

Shown only on an interactive terminal: in CI, in a pipe or in a log file it stays silent, so captured output
holds results, not carriage returns. It writes at most twice a second and ends with a newline on close.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass, field
from typing import TextIO, TypeVar

T = TypeVar("T")


def _duration(seconds: float) -> str:
    hours, rest = divmod(round(seconds), 3600)
    minutes, secs = divmod(rest, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


def interactive(stream: TextIO) -> bool:
    """True on a terminal outside CI (``$CI`` set by CI services means: no live display)."""
    return bool(getattr(stream, "isatty", lambda: False)()) and not os.environ.get("CI")


@dataclass
class Progress:
    """Counts processed items of one stage and redraws ``label: done/total (rate/s, ETA …)`` in place."""

    label: str
    total: int | None = None
    stream: TextIO = field(default_factory=lambda: sys.stderr)
    enabled: bool | None = None  # None: only when the stream is an interactive terminal
    interval: float = 0.5
    clock: Callable[[], float] = time.monotonic
    done: int = 0
    _start: float = field(init=False, default=0.0)
    _last: float = field(init=False, default=float("-inf"))

    def __post_init__(self) -> None:
        if self.enabled is None:
            self.enabled = interactive(self.stream)
        self._start = self._now()

    def _now(self) -> float:
        return self.clock()

    def line(self) -> str:
        """The text of the progress line (rate over the whole stage so far; ETA when the total is known)."""
        elapsed = max(self._now() - self._start, 1e-9)
        rate = self.done / elapsed
        count = f"{self.done:,}" + (f"/{self.total:,}" if self.total is not None else "")
        text = f"{self.label}: {count} ({rate:,.1f}/s"
        if self.total is not None and rate > 0:
            text += f", ETA {_duration(max(self.total - self.done, 0) / rate)}"
        return text + ")"

    def advance(self, n: int = 1) -> None:
        """Count ``n`` more processed items; redraw if the last draw is older than ``interval``."""
        self.done += n
        now = self._now()
        if self.enabled and now - self._last >= self.interval:
            self._last = now
            self.stream.write("\r" + self.line() + "\x1b[K")
            self.stream.flush()

    def close(self) -> None:
        """Draw the final count and end the line (nothing if the display was off)."""
        if self.enabled:
            self.stream.write("\r" + self.line() + "\x1b[K\n")
            self.stream.flush()

    def __enter__(self) -> Progress:
        return self

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
