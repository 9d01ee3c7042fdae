"""The pipeline's progress line: processed / total, rate and ETA on a terminal; silent in CI and pipes."""

from __future__ import annotations

import asyncio
import io
import re

import pytest

from ccpt.pipeline.progress import Progress, gather_with_progress


class FakeTerminal(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_line_shows_count_rate_and_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("CI", raising=False)
    clock, out = Clock(), FakeTerminal()
    progress = Progress("mine: documents", total=1000, stream=out, clock=clock)
    clock.now += 10.0
    progress.advance(250)  # 25/s, 750 left → 30 s
    assert progress.line() == "mine: documents: 250/1,000 (25.0/s, ETA 30s)"
    progress.advance(10)
    clock.now += 600.0
    progress.close()
    # On a terminal rich redraws the line in place (control sequences) and leaves the final count on its own line.
    shown = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\r", "", out.getvalue())
    assert shown.endswith("\n") and shown.splitlines()[-1] == "mine: documents: 260/1,000 (0.4/s, ETA 28m56s)"


def test_unknown_total_has_no_eta(monkeypatch: pytest.MonkeyPatch) -> None:
    clock = Clock()
    progress = Progress("mine: documents", stream=FakeTerminal(), clock=clock, enabled=True)
    clock.now += 2.0
    progress.advance(5)
    assert progress.line() == "mine: documents: 5 (2.5/s)"


@pytest.mark.parametrize("ci", [None, "true"])
def test_quiet_outside_a_terminal_and_in_ci(ci: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
        stream: io.StringIO = io.StringIO()  # a pipe or a log file
    else:
        monkeypatch.setenv("CI", ci)
        stream = FakeTerminal()
    with Progress("x", total=3, stream=stream) as progress:
        progress.advance(3)
    assert stream.getvalue() == ""


def test_gather_with_progress_keeps_order_and_counts_each(monkeypatch: pytest.MonkeyPatch, capsys) -> None:
    async def value(i: int) -> int:
        await asyncio.sleep(0.001 * (5 - i))  # finish in reverse order
        return i

    assert asyncio.run(gather_with_progress("properties", (value(i) for i in range(5)))) == list(range(5))
    assert capsys.readouterr().err == ""  # pytest's captured stderr is not a terminal
