"""The core install, as a researcher with only `pip` gets it: the wheel and the sdist build (`python -m build`);
the wheel, installed into a fresh venv without extras, pulls in neither torch nor llama.cpp, ships every data file
ccpt reads and nothing from the tests, reports a stored file (the paper's 40.8) and plans an API run; asking it for
an offline part is one line naming the command that installs it.

The build and the install reach PyPI (CI and this machine can; the packages come from pip's cache after setup).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.shared_data
# What a user's wheel must carry besides the modules: the package-data patterns of pyproject.toml, as files.
DATA_SUFFIXES = (".txt", ".toml", ".json", ".safetensors", ".sha256", ".gz", ".html", ".yaml")


def _clean_env(**extra: str) -> dict[str, str]:
    """The user's environment: no PYTHONPATH (the tests' source and plugins), no API key, and Python's default of
    writing bytecode (the install below compiles none: the first command compiles what it imports, the next reuse
    it)."""
    drop = {"PYTHONPATH", "PYTHONDONTWRITEBYTECODE"}
    env = {k: v for k, v in os.environ.items() if k not in drop and not k.endswith("_API_KEY")}
    return {**env, **extra}


@pytest.fixture(scope="module")
def light(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the built wheel, the fresh venv it is installed into without extras)."""
    root = tmp_path_factory.mktemp("light")
    source = root / "source"  # a copy: building writes egg-info and build/ beside the sources
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "src", source / "src", ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
    dist = root / "dist"
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        capture_output=True,
        text=True,
        env=_clean_env(),
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stdout[-2000:] + built.stderr[-2000:]
    (wheel,) = dist.glob("ccpt-*.whl")
    assert len(list(dist.glob("ccpt-*.tar.gz"))) == 1
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    # --no-compile: pip would compile every module of the 0.8 GB (most never imported here) to bytecode: 86 s of
    # CPU against 19-49 s without (two runs), measured on 2026-11-29; what it installs is the same.
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", "--no-compile"]
    pip += ["-c", str(REPO / "requirements.lock")]
    installed = subprocess.run(
        [*pip, str(wheel)], capture_output=True, text=True, env=_clean_env(), timeout=900, check=False
    )
    assert installed.returncode == 0, installed.stderr[-3000:]
    return wheel, venv


def test_the_wheel_ships_every_data_file_and_nothing_from_tests(light: tuple[Path, Path]) -> None:
    wheel, _venv = light
    names = set(zipfile.ZipFile(wheel).namelist())
    package = REPO / "src" / "ccpt"
    wanted = {
        f"ccpt/{p.relative_to(package).as_posix()}"
        for p in package.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts and (p.suffix == ".py" or p.suffix in DATA_SUFFIXES)
    }
    assert wanted - names == set()
    assert {"ccpt/benchmark.toml", "ccpt/data/paper_scores.json.gz"} <= names
    assert not [n for n in names if n.startswith("tests/") or "scripted_provider" in n or "conftest" in n]


def test_the_core_install_has_no_torch_or_llama_and_runs(
    light: tuple[Path, Path], reference_dir: Path, ccpt_dir: Path
) -> None:
    _wheel, venv = light
    listed = subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "list", "--format", "json"],
        capture_output=True,
        text=True,
        check=True,
        env=_clean_env(),
    )
    packages = {p["name"].lower().replace("_", "-") for p in json.loads(listed.stdout)}
    assert "ccpt" in packages and "inspect-ai" in packages
    assert packages.isdisjoint({"torch", "llama-cpp-python", "tokenizers", "safetensors"})
    ccpt = str(venv / "bin" / "ccpt")

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ccpt, *args], capture_output=True, text=True, env=_clean_env(), timeout=600, check=False, cwd=venv
        )

    report = run("report", str(reference_dir / "pi_emergent_gpt-4o_naive.csv"), "--stat", "paper")
    assert report.returncode == 0, report.stderr
    assert "| gpt-4o | Base | 44.1 ± 0.6 | 83.3 ± 0.4 | 40.8 ± 0.7 |" in report.stdout
    plan = run("run", "--model", "openai/gpt-4o", "--judge", "openai/gpt-4o", "--dry-run", "--data-dir", str(ccpt_dir))
    assert plan.returncode == 0, plan.stderr
    assert "openai/gpt-4o" in plan.stdout and "calls" in plan.stdout
    for args, install in (
        (["--model", "openai/gpt-4o"], "pip install"),  # the default judge is the distilled one: torch
        (["--model", "gguf/qwen2.5-0.5b", "--judge", "openai/gpt-4o"], "pip install"),
    ):
        refused = run("run", *args, "--dry-run", "--data-dir", str(ccpt_dir))
        lines = refused.stderr.strip().splitlines()
        assert refused.returncode == 2 and len(lines) == 1 and install in lines[0], refused.stderr
        assert "Traceback" not in refused.stderr
