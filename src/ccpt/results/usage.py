"""Token and cost accounting from Inspect logs' model events, per model and role (solver, judge): calls sent,
served from the cache (not counted or priced), failed and timed-out attempts. Definitions: docs/metrics.md."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.errors import DataError
from ccpt.io.provider_errors import recorded_timeout
from ccpt.results.inspect_logs import LOG_SUFFIXES, LogCache, is_ccpt_log, read_logs, run_identity


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
    calls: int = 0
    cached_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost: float | None = None  # US dollars, with --prices; None when the model has no price
    failed_attempts: int = 0  # attempts that ended in an error (retried unless it was the call's last)
    timed_out: int = 0  # failed attempts that hit the attempt timeout
    invalid_usage: int = 0  # calls whose recorded token counts are not counts (not summed, not priced)


def load_prices(path: str | Path) -> dict[str, Price]:
    """Read a TOML price list, ``"openai/gpt-4o" = { input = 2.5, output = 10.0 }`` ($ per 1M tokens), checked by
    its schema (docs/schemas.md, "price list")."""
    from pydantic import ValidationError

    from ccpt.schemas.base import one_line, read_toml
    from ccpt.schemas.usage import PriceList

    path = Path(path)
    try:
        checked = PriceList.model_validate(read_toml(path)).root
    except ValidationError as exc:
        raise DataError(one_line(path, exc), "each entry is { input = $/1M tokens, output = $/1M tokens }") from None
    return {model: Price(entry.input, entry.output) for model, entry in checked.items()}


def read_usage(
    paths: Iterable[str | Path], prices: Mapping[str, Price] | None = None, *, cache: LogCache | None = None
) -> list[UsageRow]:
    """Usage per (model, role) over every readable Inspect log under ``paths`` (files or directories); ``cache``: the
    logs the command has read already."""
    from pydantic import ValidationError

    from ccpt.schemas.usage import CallUsage

    # Unreadable logs, and other benchmarks' logs, are named by the results loader: nothing countable here.
    given = (p for p in map(Path, paths) if p.is_dir() or (p.suffix in LOG_SUFFIXES and p.is_file()))
    logs = read_logs(given, cache=cache).logs
    # Every model call once, by its event's id: a resumed run's log (or a log given twice) repeats the same events.
    events: dict[tuple[Any, ...], Any] = {}
    for log in filter(is_ccpt_log, logs):
        run = run_identity(log)
        for sample in log.samples or []:
            for position, event in enumerate(e for e in sample.events if e.event == "model"):
                events[(event.uuid,) if event.uuid else (run, str(sample.id), sample.epoch, position)] = event
    totals: dict[tuple[str, str], Counter[str]] = defaultdict(Counter)  # UsageRow's counts by field name
    for event in events.values():
        counts = totals[(str(event.model), "judge" if event.role == "grader" else "solver")]
        if event.cache == "read":
            counts["cached_calls"] += 1
            continue
        counts["calls"] += 1
        if event.error:
            counts["failed_attempts"] += 1
            counts["timed_out"] += int(recorded_timeout(event))
        usage = event.output.usage if event.output is not None else None
        if usage is not None:
            try:  # a negative count would subtract tokens and dollars: set aside and counted instead
                tokens = CallUsage.model_validate(
                    {"input_tokens": usage.input_tokens or 0, "output_tokens": usage.output_tokens or 0}
                )
            except ValidationError:
                counts["invalid_usage"] += 1
                continue
            counts.update(tokens.model_dump())
    from ccpt.judges import cost_per_pair

    rows = []
    for (model, role), n in sorted(totals.items()):
        price = (prices or {}).get(model)
        cost = None if price is None else (n["input_tokens"] * price.input + n["output_tokens"] * price.output) / 1e6
        if prices is not None and (per_pair := cost_per_pair(model)) is not None:
            # An in-process judge costs its declared price per judged pair (one call each), as `--dry-run` plans it;
            # its "tokens" are the words it read, priced by a price list's entry they billed a free judge $0.0145.
            cost = per_pair * n["calls"]
        rows.append(UsageRow(model, role, cost=cost, **n))
    return rows


def timeout_note(rows: Iterable[UsageRow], timeout: int | None = None) -> str | None:
    """One line when most attempts of a model timed out, with the usual fix (a single-slot server queues them)."""
    # At least half of the attempts sent (and two or more) timed out: a server that cannot keep up.
    if not (slow := [r for r in rows if r.timed_out >= 2 and 2 * r.timed_out >= r.calls]):
        return None
    named = "; ".join(f"{r.model} ({r.role}): {r.timed_out} of {r.calls} attempts" for r in slow)
    limit = f" after {timeout} s" if timeout else ""
    return (
        f"Most attempts timed out{limit} ({named}): a server answering one request at a time queues the rest; "
        "pass --max-connections 1 (or a larger --timeout)."
    )
