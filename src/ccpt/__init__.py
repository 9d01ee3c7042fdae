"""ccpt: evaluate LLMs on Conceptual Combination with Property Type (Song et al., CCPT).

The public Python API (see docs/python-api.md)::

    import ccpt

    frame = ccpt.load_results("ccpt-runs/default")  # tidy per-sample DataFrame
    report = ccpt.build_report(frame, stat="sem")   # every table; report.tables()[key].to_frame()
    data = ccpt.load_dataset()                      # the CCPT dataset and its splits (local copy or download)
    files = ccpt.stored_result_files()              # the authors' stored result files (local copy or download)

The names are imported on first use, so ``import ccpt`` stays cheap and never imports Inspect, pandas or the CLI.
``__all__``, :mod:`ccpt.methods` (its ``__all__``: declaring and registering a method) and ``ccpt.judges`` are the
promised API; every other module is private (docs/python-api.md, "What is public").
"""

from __future__ import annotations

import importlib
from typing import Any

__version__ = "0.1.0"

# public name -> module defining it (imported lazily by __getattr__)
_LAZY: dict[str, str] = {
    "load_results": "ccpt.results",
    "build_report": "ccpt.report",
    "load_dataset": "ccpt.dataset",
    "stored_result_files": "ccpt.io.sources",
}
__all__ = ["__version__", "build_report", "load_dataset", "load_results", "stored_result_files"]


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ccpt' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)


def __dir__() -> list[str]:
    return sorted({*globals(), *_LAZY})
