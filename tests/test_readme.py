"""The README's Python API example runs as written and prints the paper's number."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def _example() -> str:
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Python API") :]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_readme_python_example_runs(shared_data: Path, tmp_path: Path) -> None:
    # The example names ../shared/data relative to the repository root: run it from a directory whose
    # ../shared/data is the test data (a symlink), so the test works wherever the data lives.
    root = tmp_path / "repo"
    root.mkdir()
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "data").symlink_to(shared_data)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(REPO / "src"), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run(
        [sys.executable, "-c", _example()], cwd=root, env=env, capture_output=True, text=True, check=False
    )
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert "40.8" in [f"{float(line):.1f}" for line in lines if re.fullmatch(r"-?\d+(\.\d+)?", line.strip())]
    assert "pi_emergent" in out.stdout and "gpt-4o" in out.stdout


def _layout_bullets() -> list[tuple[Path, list[str]]]:
    """(directory, the names written in its bullet) for each bullet of the README's "Layout" section."""
    text = (REPO / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout") :].split("\n## ")[0]
    bullets = re.findall(r"^- (.*?)(?=^- |\Z)", section, re.S | re.M)
    out = []
    for bullet in bullets:
        names = [name for name in re.findall(r"`([^`]+)`", bullet) if " " not in name]
        out.append((REPO / names[0], names[1:]))
    return out


def _named_paths() -> set[Path]:
    """Every file or directory the Layout names: ``x.py`` and ``x/`` inside a bullet are relative to its directory
    (``tests/…`` and ``docs/…`` to the repository)."""
    paths = set()
    for base, names in _layout_bullets():
        paths.add(base)
        for name in names:
            if name.endswith((".py", "/")):
                root = REPO if name.startswith(("tests/", "docs/", "src/")) else base
                paths.add(root / name)
    return {Path(str(p).rstrip("/")) for p in paths}


def test_readme_layout_names_every_package_and_top_level_module_and_nothing_missing() -> None:
    named = _named_paths()
    assert len(_layout_bullets()) >= 5  # the section is still a list the reader below understands
    missing = sorted(str(p.relative_to(REPO)) for p in named if not p.exists())
    assert missing == [], f"the README's Layout names files that do not exist: {missing}"
    package = REPO / "src" / "ccpt"
    packages = {p.parent for p in package.rglob("__init__.py") if p.parent != package}
    modules = {p for p in package.glob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(str(p.relative_to(package)) for p in (packages | modules) - named)
    assert unnamed == [], f"packages or top-level modules the README's Layout does not name: {unnamed}"
