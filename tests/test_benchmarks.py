"""The benchmark scripts run against the package as it is: each one imports (its ``from ccpt… import`` names exist).

They are not run here (docs/benchmarks.md gives each command); a name a trim removed from ``src`` would otherwise
break a benchmark nobody ran since.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

BENCHMARKS = sorted((Path(__file__).resolve().parents[1] / "benchmarks").glob("*.py"))


@pytest.mark.parametrize("script", BENCHMARKS, ids=[p.stem for p in BENCHMARKS])
def test_benchmark_imports(script: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    name = f"ccpt_benchmark_{script.stem}"
    spec = importlib.util.spec_from_file_location(name, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, name, module)  # dataclasses in the script look their module up
    monkeypatch.setattr(sys, "path", list(sys.path))  # a script may put tests/ on the path
    spec.loader.exec_module(module)
    assert callable(getattr(module, "main", None)), f"{script.name} has no main()"
