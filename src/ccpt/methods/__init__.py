"""Methods (paper §4.1) as registered objects: one module per method, one registry line each; other packages add
methods through the ``ccpt.methods`` entry-point group (CONTRIBUTING.md, "Adding a method")."""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Mapping
from importlib.metadata import entry_points
from typing import TYPE_CHECKING

from ccpt.errors import CcptError
from ccpt.methods import base, cot, gold, multi_oracle, spreading
from ccpt.methods.definition import Cell, Judged, Method, Plan, Range, Reduction, majority, mean_cell
from ccpt.spec import NOFILTER_SUFFIX, split_method, task_spec

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
    """Every method by name: ccpt's own, then those of installed packages (a clash with a built-in is an error)."""
    methods = {m.base: m for m in BUILTIN}
    for point in entry_points(group=ENTRY_POINTS):
        try:
            method = point.load()
        except Exception as exc:  # a broken plug-in is one line naming it, not a traceback
            raise CcptError(f"entry point {point.value!r} ({ENTRY_POINTS}) does not load: {exc}") from None
        if not isinstance(method, Method):
            raise CcptError(f"entry point {point.value!r} ({ENTRY_POINTS}) is not a ccpt.methods.Method")
        if method.base in methods and methods[method.base] is not method:
            raise CcptError(f"method {method.base!r} of entry point {point.value!r} is already registered")
        methods[method.base] = method
    return methods


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
    the mean (:func:`unregistered_notes` says so in the report)."""
    method = get(split_method(name)[0])
    return method.reduce if method is not None else mean_cell


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
