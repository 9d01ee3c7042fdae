"""Methods (paper §4.1) as registered objects: one module per method, one registry line each; other packages add
methods through the ``ccpt.methods`` entry-point group (CONTRIBUTING.md, "Adding a method")."""

from __future__ import annotations

import dataclasses
import functools
import math
import numbers
import re
from collections.abc import Callable, Mapping, Sequence
from importlib.metadata import EntryPoint
from typing import TYPE_CHECKING, Any, get_args

from ccpt.errors import CcptError, PluginError
from ccpt.methods import base, cot, gold, multi_oracle, spreading
from ccpt.methods.definition import Cell, Judged, Method, Plan, Range, Reduction, calls_problem, majority, mean_cell
from ccpt.plugins import load_registry
from ccpt.schemas.run import MAX_SAMPLES, MAX_SEEDS, TaskOptions
from ccpt.scoring import ScoredType
from ccpt.spec import (
    GOLD_STORED,
    GOLD_STORED_LABEL,
    NOFILTER_SUFFIX,
    TASK_SPECS,
    TYPE_LABELS,
    Source,
    split_method,
    task_spec,
)

if TYPE_CHECKING:
    import pandas as pd

__layer__ = "core"  # no Inspect: solvers are named "module:function" and imported by ccpt.eval (tests/test_layering.py)

__all__ = [
    "BUILTIN", "ENTRY_POINTS", "Cell", "Judged", "Method", "Plan", "Range", "get", "majority", "mean_cell",
    "method_label", "order", "parse", "reduction", "registered", "unregistered_notes",
]  # fmt: skip

# The registry: ccpt's methods, in the row order of the paper's tables.
BUILTIN: tuple[Method, ...] = (base.METHOD, cot.METHOD, *spreading.METHODS, multi_oracle.METHOD, gold.METHOD)
ENTRY_POINTS = "ccpt.methods"  # the entry-point group through which other packages register methods


@functools.cache
def registered() -> Mapping[str, Method]:
    """Every method by name: ccpt's own, then those of installed packages (a clash with a built-in is an error; so
    is a label another method prints under: two rows of one report would read alike)."""
    labels = {m.label.strip().casefold(): m.base for m in BUILTIN}
    # The labels reports print besides: the filter ablations' and the Gold row of the dataset's stored scores.
    labels |= {f"{m.label} (no filter)".casefold(): f"{m.base}{NOFILTER_SUFFIX}" for m in BUILTIN if m.spreading}
    labels[GOLD_STORED_LABEL.casefold()] = GOLD_STORED

    def check(method: Method, point: EntryPoint) -> None:
        _check_declaration(method, point)
        taken = labels.setdefault(method.label.strip().casefold(), method.base)
        if taken != method.base and method.base not in labels.values():
            raise CcptError(
                f"entry point {point.value!r} ({ENTRY_POINTS}): method {method.base!r} has the label "
                f"{method.label!r} of method {taken!r} (reports would print both alike)"
            )

    return load_registry(BUILTIN, ENTRY_POINTS, Method, lambda m: m.base, check)


NAME = re.compile(r"[a-z][a-z0-9_]{0,63}")  # a method name is written on command lines and stored in logs and tables
_SOLVER = re.compile(r"[A-Za-z_][\w.]*:[A-Za-z_]\w*")  # "module:function", imported by ccpt.eval when a run plans it


def _check_declaration(method: Method, point: EntryPoint) -> None:
    """Refuse a plug-in's declaration that would plan nonsense, in one line naming its entry point: a malformed name,
    counts that are not integers ≥ 1 (seeds and samples bounded as `ccpt run`'s options), or a
    ``samples``/``applies``/``calls`` that raises or answers out of type."""

    def refuse(problem: str) -> CcptError:
        return CcptError(f"entry point {point.value!r} ({ENTRY_POINTS}): method {method.base!r} {problem}")

    def probe(what: str, call: Callable[[], Any]) -> Any:
        try:
            return call()
        except Exception as exc:  # the plug-in's code, not ccpt's: named, not a traceback
            raise refuse(f"{what} raises {type(exc).__name__}: {exc}") from None

    def count(value: Any, low: int, high: float = math.inf) -> bool:
        return isinstance(value, int) and not isinstance(value, bool) and low <= value <= high

    if not isinstance(method.base, str) or not NAME.fullmatch(method.base) or method.base.endswith(NOFILTER_SUFFIX):
        raise refuse(
            f"has a malformed name: up to 64 lower-case letters, digits and '_', not ending in {NOFILTER_SUFFIX!r}"
        )
    if not isinstance(method.label, str) or not method.label.strip() or not method.label.isprintable():
        raise refuse(f"has the label {method.label!r}: printable text on one line")
    # Checked here, not where a run first uses them: a solver of 3 was an internal error, a None reduce a report's.
    if not isinstance(method.solver, str) or not _SOLVER.fullmatch(method.solver):
        raise refuse(f"declares solver {method.solver!r}: 'module:function'")
    if not all(callable(f) for f in (method.samples, method.reduce, method.calls, method.applies)):
        raise refuse("declares a samples, reduce, calls or applies that is not callable")
    if method.source is not None and method.source not in get_args(Source):
        raise refuse(f"declares source {method.source!r}: one of {', '.join(get_args(Source))}, or None")
    if method.seeds is not None and not count(method.seeds, 1, MAX_SEEDS):
        raise refuse(f"declares seeds={method.seeds!r}: an integer in [1, {MAX_SEEDS}] (or None: the run's)")
    for options in ({}, vars(TaskOptions())):  # none given, and a run's defaults (oracle_n 5, …)
        if not count(samples := probe("samples", lambda o=options: method.samples(o)), 1, MAX_SAMPLES):
            raise refuse(f"declares {samples!r} samples per instance and seed: an integer in [1, {MAX_SAMPLES}]")
    for spec in TASK_SPECS.values():
        if not isinstance(applies := probe("applies", lambda s=spec: method.applies(s)), bool):
            raise refuse(f"applies({spec.name}) returns {applies!r}, not true/false")
        if not applies:
            continue
        if method.template not in spec.templates:  # the prompt its solver asks: a missing one failed mid-run
            raise refuse(
                f"declares template {method.template!r}, which {spec.name} has not: {', '.join(spec.templates)}"
            )
        plan = Plan(spec, [], 1, {})
        if problem := calls_problem(probe("calls", lambda p=plan: method.calls(method, p)), plan):
            raise refuse(problem)


def get(name: str) -> Method | None:
    """The registered method of a base name (``sa_llm``), or None."""
    return registered().get(name)


def parse(text: str, task: str | None = None) -> Method:
    """The method named ``text`` (e.g. ``sa_llm_nofilter``), which must apply to ``task`` if given."""
    name = text.removesuffix(NOFILTER_SUFFIX)
    method = get(name)
    if method is None:
        raise CcptError(f"unknown method {text!r}; choose one of {', '.join(registered())}")
    if text != name:
        if not method.spreading:
            raise CcptError(f"'{NOFILTER_SUFFIX}' applies to spreading activation methods only, not {name!r}")
        method = dataclasses.replace(method, filter=False)
    if task is not None:
        method.check(task_spec(task))
    return method


def order(name: str) -> tuple[int, str]:
    """Sort key of a method name in reports: ccpt's own in ``BUILTIN``'s order (the paper's rows), then the others
    by name."""
    names = [m.base for m in BUILTIN]
    base_name = split_method(name)[0]
    return (names.index(base_name) if base_name in names else len(names), name)


def method_label(name: str) -> str:
    """Display name of a method name as stored in logs; unknown names are shown as they are."""
    base_name, sa_filter = split_method(name)
    method = get(base_name)
    label = method.label if method is not None else name
    return f"{label} (no filter)" if sa_filter is False else label


def reduction(name: str) -> Reduction:
    """How the samples of one instance and seed of method ``name`` reduce to a cell; an unregistered method's by
    the mean (:func:`unregistered_notes` says so in the report). What a reduction returns depends on the data, so it
    is checked here, each time: a cell of numbers in [0, 1] (or None), else one line naming the method."""
    method = get(split_method(name)[0])
    if method is None:
        return mean_cell

    def checked(samples: Sequence[Judged], kind: ScoredType | None, oracle: str = "paper") -> Cell:
        try:
            cell = method.reduce(samples, kind, oracle)
        except Exception as exc:
            if method in BUILTIN:  # ccpt's own: a bug, as raised
                raise
            raise PluginError(f"method {name!r}: its reduction raises {type(exc).__name__}: {exc}") from None
        values = (cell.r_hmp, cell.r_np, cell.score) if isinstance(cell, Cell) else (cell,)
        answer = cell.answer if isinstance(cell, Cell) else None
        if not isinstance(cell, Cell) or not all(v is None or _unit(v) for v in values) or not _label(answer, kind):
            raise PluginError(
                f"method {name!r}: its reduction returned {cell!r}; a cell's values are numbers in [0, 1] or None, "
                f"its answer text or None (Task 3: a type label, {', '.join(TYPE_LABELS)})"
            )
        return cell

    return checked


def _label(value: object, kind: ScoredType | None) -> bool:
    # The answer a cell counts: text or None, never a number posing as a label. Task 3's (kind None) is its predicted
    # type, compared with the gold label as written: "EMERGENT" or "banana" was counted wrong with no line.
    return value is None or (isinstance(value, str) and (kind is not None or value in TYPE_LABELS))


def _unit(value: object) -> bool:
    # numbers.Real: NumPy's numbers too; a bool is not a number here, nor NaN or infinity.
    return isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value) and 0 <= value <= 1


def unregistered_notes(frame: pd.DataFrame) -> list[str]:
    """Report notes for unregistered methods with several samples of one instance and seed (averaged)."""
    unknown = frame[~frame["method"].astype(str).isin(list(registered()))]
    keys = [
        k for k in ("task", "model", "method", "judge", "protocol", "sa_iteration", "instance", "seed") if k in frame
    ]
    cells = unknown.groupby(keys, dropna=False)
    # Distinct samples, not rows: the authors' Task-3 files hold some pairs twice in one seed (two items).
    most = (cells["sample"].nunique() if "sample" in frame else cells.size()).groupby("method").max()
    return [
        f"method {name!r} is not registered with this ccpt: its up to {n} samples per instance and seed are "
        "averaged, on Task 3 the most common answer counted (install the package that defines it to reduce them "
        "its own way)"
        for name, n in sorted(most.items())
        if n > 1
    ]
