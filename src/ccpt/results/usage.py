"""Token and cost accounting from Inspect logs: per model and role (solver, judge).

Inspect records every model call of a sample as a model event with the model's name, its role (``grader``
for the judge) and whether the answer came from Inspect's cache (``cache == "read"``). Calls served from
the cache cost nothing and reached no provider, so their tokens are not counted; ``calls`` counts the
requests sent to the provider. Inspect records every attempt of a call, a failed one with its error: those are
the *failed attempts* (each was retried, unless it was the call's last), and the *timed-out* ones among them hit
``--timeout`` (Inspect's attempt timeout). A sample present in several logs of one directory (a resumed run) is
counted once, from the newest log, as in :func:`ccpt.results.from_inspect_logs` (both read through
:func:`ccpt.results.inspect_logs.read_logs`). Definitions: docs/metrics.md.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.errors import DataError
from ccpt.results.inspect_logs import LOG_SUFFIXES, is_ccpt_log, read_logs, run_key

ROLES = ("solver", "judge")


@dataclass(frozen=True)
class Price:
    """US dollars per one million input and output tokens."""

    input: float
    output: float


@dataclass(frozen=True)
class UsageRow:
    """Model calls of one (model, role): sent to the provider, served from the cache, and their tokens."""

    model: str
    role: str
    calls: int
    cached_calls: int
    input_tokens: int
    output_tokens: int
    cost: float | None = None  # US dollars, with --prices; None when the model has no price
    failed_attempts: int = 0  # attempts that ended in an error (retried unless it was the call's last)
    timed_out: int = 0  # failed attempts that hit the attempt timeout

    def mostly_timed_out(self) -> bool:
        """Whether at least half of the attempts sent (and two or more) timed out: a server that cannot keep up."""
        return self.timed_out >= 2 and 2 * self.timed_out >= self.calls


def timed_out(error: str) -> bool:
    """Whether an attempt's recorded error is a timeout (Inspect's AttemptTimeoutError, an HTTP read timeout)."""
    text = error.lower()
    return "attempttimeouterror" in text or "timed out" in text or "timeout" in text.split(":", 1)[0]


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a TOML price list: ``"openai/gpt-4o" = { input = 2.5, output = 10.0 }`` ($ per 1M tokens)."""
    path = Path(path)
    try:
        table = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise DataError(f"{path}: cannot read the price list ({exc})") from None
    prices: dict[str, Price] = {}
    for model, entry in table.items():
        if not isinstance(entry, Mapping) or set(entry) != {"input", "output"}:
            raise DataError(f"{path}: {model!r} must be {{ input = $/1M tokens, output = $/1M tokens }}")
        values = [entry["input"], entry["output"]]
        if not all(isinstance(v, int | float) and not isinstance(v, bool) and v >= 0 for v in values):
            raise DataError(f"{path}: {model!r}: prices must be non-negative numbers")
        prices[model] = Price(float(values[0]), float(values[1]))
    return prices


def read_usage(paths: Iterable[str | Path], prices: Mapping[str, Price] | None = None) -> list[UsageRow]:
    """Usage per (model, role) over every readable Inspect log under ``paths`` (files or directories)."""
    files = [Path(p) for p in paths]
    # Unreadable logs are named by the results loader; they cost nothing countable here.
    logs = read_logs(p for p in files if p.is_dir() or (p.suffix in LOG_SUFFIXES and p.is_file())).logs
    logs = [log for log in logs if is_ccpt_log(log)]  # another benchmark's log is named by the results loader
    events: dict[tuple[Any, ...], list[Any]] = {}
    for log in logs:
        identity = run_key(log)
        for sample in log.samples or []:
            # Newest log wins (logs come oldest first): a resumed run's copy of a sample replaces the interrupted run's.
            events[(*identity, str(sample.id), sample.epoch)] = [e for e in sample.events if e.event == "model"]
    totals: dict[tuple[str, str], list[int]] = {}
    for model_events in events.values():
        for event in model_events:
            role = "judge" if event.role == "grader" else "solver"
            counts = totals.setdefault((str(event.model), role), [0, 0, 0, 0, 0, 0])
            if event.cache == "read":
                counts[1] += 1
                continue
            counts[0] += 1
            if event.error:
                counts[4] += 1
                counts[5] += int(timed_out(str(event.error)))
            usage = event.output.usage if event.output is not None else None
            if usage is not None:
                counts[2] += int(usage.input_tokens or 0)
                counts[3] += int(usage.output_tokens or 0)
    rows = []
    for (model, role), (calls, cached, tokens_in, tokens_out, failed, slow) in sorted(totals.items()):
        price = (prices or {}).get(model)
        cost = None if price is None else (tokens_in * price.input + tokens_out * price.output) / 1e6
        rows.append(UsageRow(model, role, calls, cached, tokens_in, tokens_out, cost, failed, slow))
    return rows


def timeout_note(rows: Iterable[UsageRow], timeout: int | None = None) -> str | None:
    """One line when most attempts of a model timed out, with the usual fix (a single-slot server queues them)."""
    slow = [r for r in rows if r.mostly_timed_out()]
    if not slow:
        return None
    named = "; ".join(f"{r.model} ({r.role}): {r.timed_out} of {r.calls} attempts" for r in slow)
    limit = f" after {timeout} s" if timeout else ""
    return (
        f"Most attempts timed out{limit} ({named}): a server answering one request at a time queues the rest; "
        "pass --max-connections 1 (or a larger --timeout)."
    )
