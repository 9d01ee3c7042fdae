"""Judges as registered objects: any Inspect model judges through the judge prompt (an LLM judge needs no
declaration); an in-process judge declares a :class:`Judge` in one module, one registry line each, and other
packages add judges through the ``ccpt.judges`` entry-point group (CONTRIBUTING.md, "Adding a judge"). Every judge
is known by its structured :class:`JudgeIdentity`."""

from __future__ import annotations

import functools
import math
import numbers
import re
from collections.abc import Mapping, Sequence
from importlib.metadata import EntryPoint

from ccpt.errors import CcptError
from ccpt.judges import distilled
from ccpt.judges.definition import BASE_URL, PROVIDER, Judge, PairScorer, Scoring
from ccpt.judges.identity import TOKEN, VERSION_TEXT, JudgeIdentity
from ccpt.plugins import load_registry
from ccpt.schemas.usage import MAX_PRICE

__layer__ = "core"  # no Inspect: the provider that runs a declared judge through Inspect is ccpt.eval's

__all__ = [
    "BASE_URL", "BUILTIN", "ENTRY_POINTS", "PROVIDER", "Judge", "JudgeIdentity", "PairScorer", "Scoring",
    "check_model", "cost_per_pair", "get", "model_name", "of_model", "registered", "relevance", "scored",
]  # fmt: skip

BUILTIN: tuple[Judge, ...] = (distilled.JUDGE,)
ENTRY_POINTS = "ccpt.judges"  # the entry-point group through which other packages register judges
_NAME = re.compile(r"[a-z][a-z0-9_-]{0,63}")  # written on command lines and in Inspect model names
PROBE = [("a peeled apple", "white")]  # the pair a plug-in's scorer is tried on when it registers


@functools.cache
def registered() -> Mapping[str, Judge]:
    """Every declared judge by name: ccpt's own, then those of installed packages (a clash is an error)."""
    return load_registry(BUILTIN, ENTRY_POINTS, Judge, lambda j: j.name, _check_declaration)


def _check_declaration(judge: Judge, point: EntryPoint) -> None:
    """Refuse a plug-in's declaration that could not judge, in one line naming its entry point."""

    def refuse(problem: str) -> CcptError:
        return CcptError(f"entry point {point.value!r} ({ENTRY_POINTS}): judge {judge.name!r} {problem}")

    if any(judge is own for own in BUILTIN):  # ccpt's own judge under a plug-in's entry point: already registered
        return

    if not isinstance(judge.name, str) or not _NAME.fullmatch(judge.name):
        raise refuse("has a malformed name: up to 64 lower-case letters, digits, '_' and '-'")
    if not isinstance(judge.label, str) or not judge.label.strip() or not judge.label.isprintable():
        raise refuse(f"has the label {judge.label!r}: printable text on one line")
    if judge.version is not None and (not isinstance(judge.version, str) or not TOKEN.fullmatch(judge.version)):
        raise refuse(f"declares version {judge.version!r}: {VERSION_TEXT}, or None")
    # Its Inspect model is its own: `model="openai/gpt-4o"` made every GPT-4o judge this plug-in (priced at its cost).
    own = f"{PROVIDER}/{judge.name}"
    if judge.model is not None and not (isinstance(judge.model, str) and f"{judge.model}/".startswith(f"{own}/")):
        raise refuse(f"declares model {judge.model!r}: None, or {own}[/VARIANT]")
    cost = judge.cost_per_pair
    # Bounded as a price list's entries: 1e308 per pair is finite, but times the pairs a dry run plans, "$inf".
    if not isinstance(cost, numbers.Real) or isinstance(cost, bool) or not 0 <= cost <= MAX_PRICE:
        raise refuse(f"declares cost_per_pair={cost!r}: a number in [0, {MAX_PRICE:,}] (US dollars per pair)")
    if judge.check is not None and not callable(judge.check):
        raise refuse("declares a check that is not callable")
    if not isinstance(judge.recorded_args, frozenset) or not all(isinstance(a, str) for a in judge.recorded_args):
        raise refuse(f"declares recorded_args={judge.recorded_args!r}: a frozenset of argument names")
    if judge.load is not None:
        if not callable(judge.load):
            raise refuse("declares a load that is not callable")
        return
    if not callable(judge.score):
        raise refuse("declares neither a callable score nor load")
    try:
        scores = scored(judge.name, judge.score, PROBE)
    except CcptError as exc:
        raise refuse(str(exc).removeprefix(f"judge {judge.name!r}: ")) from None
    if not all(s is None or relevance(s) for s in scores):
        raise refuse(f"scores {PROBE} as {scores!r}: one relevance in [0, 1] (or None) per pair")


def scored(name: str, score: PairScorer, pairs: Sequence[tuple[str, str]]) -> list[object]:
    """What judge ``name``'s ``score`` gives ``pairs``: one value per pair, in order (each checked by the caller with
    :func:`relevance`). Anything but a sequence of that length (a mapping, text, a raise) is one CcptError naming
    the judge: a dict ``{0: 0.7}`` read pair by pair scored every pair 0 (its key)."""
    try:
        result = score(list(pairs))
        values = None if isinstance(result, str | bytes | Mapping) else list(result)
    except Exception as exc:  # the judge's code, not ccpt's: named, not a traceback
        raise CcptError(f"judge {name!r}: score raises {type(exc).__name__}: {exc}") from None
    if values is None or len(values) != len(pairs):
        shown = repr(result)[:200]
        raise CcptError(f"judge {name!r}: score gives {shown} for {len(pairs)} pair(s): one relevance per pair")
    return values


def relevance(value: object) -> bool:
    """Whether ``value`` is a relevance: a finite number in [0, 1] (NumPy's too; not a bool)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1


def get(name: str) -> Judge | None:
    """The declared judge of ``name`` (``distilled``), or None (an Inspect model judges through the prompt)."""
    return registered().get(name)


def model_name(name: str) -> str:
    """The Inspect model of what ``--judge`` names: a declared judge's (``distilled`` → ``ccpt-distilled/default``),
    else the name unchanged (an Inspect model)."""
    judge = get(name)
    return judge.model_name if judge is not None else name


def of_model(model: str) -> tuple[Judge, str] | None:
    """The declared judge an Inspect model name runs, and its variant: ``ccpt-judge/<name>[/<variant>]``, or a
    judge's own provider (``ccpt-distilled/<head>``); None for any other model."""
    provider, _, rest = model.partition("/")
    if provider == PROVIDER:
        name, _, variant = rest.partition("/")
        return (judge, variant) if (judge := get(name)) is not None else None
    for judge in registered().values():
        if judge.model is not None and judge.model.partition("/")[0] == provider:
            return judge, rest
    return None


def check_model(model: str, args: Mapping[str, object]) -> None:
    """Refuse, in one line, a declared judge's model that no run could start (before a dry run plans and prices
    it): a ``ccpt-judge/`` name no judge is registered under, or a variant or arguments given to a judge that takes
    none. A judge that loads weights is checked by its declared ``check`` (files and arguments, nothing loaded)."""
    provider = model.partition("/")[0]
    found = of_model(model)
    if found is None and (provider == PROVIDER or any(j.model_name.partition("/")[0] == provider for j in BUILTIN)):
        raise CcptError(f"--judge {model}: no judge of that name is registered (registered: {', '.join(registered())})")
    if found is not None and found[0].load is None:
        found[0].ready(found[1], args)
    elif found is not None and found[0].check is not None:
        try:
            found[0].check(found[1], args)
        except CcptError:
            raise
        except Exception as exc:  # a plug-in's own check failing is its fault, named, never a traceback
            raise CcptError(f"judge {found[0].name!r}: check raises {type(exc).__name__}: {exc}") from None


def cost_per_pair(model: str) -> float | None:
    """A declared judge's cost per judged pair (``--dry-run --prices``); None: an LLM judge, priced by its tokens."""
    found = of_model(model)
    return found[0].cost_per_pair if found is not None else None
