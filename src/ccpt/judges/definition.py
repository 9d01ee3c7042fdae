"""What a judge is: the frozen :class:`Judge` record each module of :mod:`ccpt.judges` (or a plug-in) declares. Any
Inspect model judges through the judge prompt without a declaration; a declared judge scores (concept, property)
pairs in-process and runs through Inspect as ``ccpt-judge/<name>`` (:mod:`ccpt.eval.distilled_provider`)."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ccpt.errors import CcptError
from ccpt.judges.identity import TOKEN, VERSION_TEXT

Pairs = Sequence[tuple[str, str]]
# (concept, property) pairs → a relevance in [0, 1] each (None: this pair could not be scored, a counted failure).
PairScorer = Callable[[Pairs], Sequence[float | None]]
PROVIDER = "ccpt-judge"  # the Inspect provider of declared judges: ``ccpt-judge/<name>``
BASE_URL = f"{PROVIDER}:"  # a declared judge's base URL starts so: Inspect's cache key, never read back


@dataclass(frozen=True)
class Scoring:
    """A declared judge made ready to score: its scorer and what decides its scores."""

    score: PairScorer
    version: str | None = None  # the declared version, or the loaded weights' sha256
    scale: str | None = None  # None: the judge's own scale; else its name (the distilled judge's ``raw``)
    fingerprint: str = ""  # more of what decides its scores (an encoder's weights): Inspect's cache key only


@dataclass(frozen=True)
class Judge:
    """A registered in-process judge. ``load`` makes it ready from the Inspect model name's variant (the part after
    ``ccpt-judge/<name>/``; the distilled judge's head) and its model arguments (``--judge-arg``); by default a
    judge takes neither and scores with ``score`` under ``version``."""

    name: str  # what `--judge` takes, and the logs, reports and agreement store name
    label: str  # what reports call it
    score: PairScorer | None = None  # (concept, property) pairs → relevances in [0, 1]
    version: str | None = None  # bump it when the scores change: the old and new logs then report as two judges
    load: Callable[[str, Mapping[str, Any]], Scoring] | None = None  # (variant, model args) → a ready judge
    model: str | None = None  # the Inspect model `--judge <name>` expands to (default ``ccpt-judge/<name>``)
    cost_per_pair: float = 0.0  # US dollars per judged pair, for `ccpt run --dry-run --prices` (in-process: free)
    # (variant, model args) → None, or a one-line CcptError: what `--dry-run` can check of a judge that loads weights
    # without loading them (its files exist, its arguments are known), so a plan is never made for a run that fails
    check: Callable[[str, Mapping[str, Any]], object] | None = None
    # Model arguments its version or scale already records (the distilled judge's ``calibrated``: its scale ``raw``).
    # Every other `--judge-arg` is part of a run's identity: an argument that changes the scores under one version
    # makes another row, never "two runs claim to be one".
    recorded_args: frozenset[str] = frozenset()

    @property
    def model_name(self) -> str:
        """The Inspect model name of this judge (``ccpt-judge/keyword``)."""
        return self.model or f"{PROVIDER}/{self.name}"

    def ready(self, variant: str = "", args: Mapping[str, Any] | None = None) -> Scoring:
        """This judge ready to score (``load``'s, or ``score`` under ``version``); raises a one-line CcptError."""
        if self.load is not None:
            ready = self.load(variant, args or {})
            # Its version and scale become the rows' judge key: one spelling another key's separators pools judges.
            if not isinstance(ready, Scoring) or not callable(ready.score):
                raise CcptError(f"judge {self.name!r}: load returns {ready!r}, not a ccpt.judges.Scoring")
            if any(
                v is not None and not (isinstance(v, str) and TOKEN.fullmatch(v)) for v in (ready.version, ready.scale)
            ):
                raise CcptError(
                    f"judge {self.name!r}: load gives version {ready.version!r} and scale {ready.scale!r}: "
                    f"each {VERSION_TEXT}, or None"
                )
            return ready
        if variant or args:
            given = ", ".join([*([f"variant {variant!r}"] if variant else []), *sorted(args or {})])
            raise CcptError(f"judge {self.name!r} takes no model arguments or variant ({given})")
        if self.score is None:
            raise CcptError(f"judge {self.name!r} declares neither score nor load")
        return Scoring(self.score, self.version)
