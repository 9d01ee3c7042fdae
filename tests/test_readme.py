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
