"""The README and the user guide say what runs: their code blocks run as written, their links resolve, the README
keeps its two commands (the second is CI's) and stays a front door; CONTRIBUTING.md's Layout names the tree.

Every ``bash`` and ``python`` block of the README and the guide pages runs here, from a directory laid out like a
checkout beside ``shared/`` (``.venv`` is this interpreter's environment, ``../shared/data`` the test data, given
to ccpt as a user's local copies are: ``$CCPT_DATA_DIR``, ``$CCPT_RESULTS_DIR``; no block names ``../shared``), unless
the line before it says why not: ``<!-- no-test: REASON -->`` (an API key, a server, minutes of work, placeholders).
Those are reported as skipped with that reason, never left out silently. ``<!-- needs: embedded -->`` marks a block
that needs the embedded model's weights (skipped without them, failed in CI like every embedded test).
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
# The user guide: one page per job, plus the pages the README sends a user to first.
GUIDE = (
    "README.md",
    "docs/evaluating.md",
    "docs/serving.md",
    "docs/judges.md",
    "docs/reports.md",
    "docs/reproducing.md",
    "docs/human.md",
    "docs/pipeline.md",
    "docs/python-api.md",
)
MAIN_COMMAND = "bash scripts/setup.sh && .venv/bin/ccpt run"
TEST_COMMAND = "bash scripts/setup.sh --test && .venv/bin/python -m pytest"
README_MAX_LINES = 150
BLOCK_TIMEOUT = 300  # seconds; the slowest tested block (the full stored-outputs report) takes ≈ 40 s when busy

_FENCE = re.compile(r"^```(\w*)\n(.*?)^```\s*$", re.S | re.M)
_MARK = re.compile(r"<!--\s*(no-test|needs):\s*(.*?)\s*-->\s*$")


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    lang: str
    code: str
    no_test: str | None  # the reason given in the markdown
    needs: str | None

    @property
    def id(self) -> str:
        return f"{self.page}:{self.line}"


def code_blocks(page: str) -> list[Block]:
    """The ``bash``/``python`` blocks of ``page``, with the marker on the line before each, if any."""
    text = (REPO / page).read_text(encoding="utf-8")
    out = []
    for match in _FENCE.finditer(text):
        lang = match.group(1)
        if lang not in ("bash", "sh", "python"):
            continue
        before = text[: match.start()].rstrip("\n").rsplit("\n", 1)[-1]
        mark = _MARK.search(before)
        kind, reason = (mark.group(1), mark.group(2)) if mark else (None, None)
        line = text.count("\n", 0, match.start()) + 1
        out.append(
            Block(
                page,
                line,
                lang,
                match.group(2),
                reason if kind == "no-test" else None,
                reason if kind == "needs" else None,
            )
        )
    return out


ALL_BLOCKS = [block for page in GUIDE for block in code_blocks(page)]
# Blocks whose output a test of their own checks (they run there, not twice).
CHECKED_APART = {"docs/python-api.md"}
RUN_BLOCKS = [block for block in ALL_BLOCKS if block.page not in CHECKED_APART]
# A block repeated word for word on another page runs once, where it first appears.
FIRST_OF: dict[str, Block] = {}
for _block in ALL_BLOCKS:
    if _block.no_test is None:
        FIRST_OF.setdefault(_block.code.strip(), _block)


def _checkout_beside(shared_data: Path, root: Path) -> Path:
    """``root/repo``, laid out like a checkout beside ``root/shared/data`` (symlinks), with this venv as .venv."""
    repo = root / "repo"
    repo.mkdir()
    (root / "shared").mkdir()
    (root / "shared" / "data").symlink_to(shared_data)
    (repo / ".venv").symlink_to(Path(sys.prefix))
    for name in ("src", "scripts", "docs", "benchmarks", "tests", "pyproject.toml", "requirements.lock"):
        if (REPO / name).exists():
            (repo / name).symlink_to(REPO / name)
    return repo


def _env(cwd: Path) -> dict[str, str]:
    # The checkout's own source first, whichever environment runs it; the shared copies as a user's local copies.
    path = os.pathsep.join(p for p in (str(REPO / "src"), os.environ.get("PYTHONPATH", "")) if p)
    shared = cwd.parent / "shared" / "data"
    env = {
        **os.environ,
        "PYTHONPATH": path,
        "CCPT_DATA_DIR": str(shared / "ccpt"),
        "CCPT_RESULTS_DIR": str(shared / "reference-results"),
    }
    for key in [k for k in env if k.endswith("_API_KEY")]:  # a tested block must not need one
        del env[key]
    return env


def _run(block: Block, cwd: Path) -> subprocess.CompletedProcess[str]:
    argv = (
        ["bash", "-euo", "pipefail", "-c", block.code] if block.lang != "python" else [sys.executable, "-c", block.code]
    )
    return subprocess.run(
        argv, cwd=cwd, env=_env(cwd), capture_output=True, text=True, timeout=BLOCK_TIMEOUT, check=False
    )


def _require_embedded() -> None:
    from ccpt.io.weights import DEFAULT_SOLVER, EMBEDDED_MODELS, is_installed

    if is_installed(EMBEDDED_MODELS[DEFAULT_SOLVER]):
        return
    reason = "the embedded model's weights are not installed (bash scripts/setup.sh)"
    if os.environ.get("CCPT_REQUIRE_EMBEDDED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.mark.parametrize("block", RUN_BLOCKS, ids=[block.id for block in RUN_BLOCKS])
def test_code_block_runs_as_written(block: Block, shared_data: Path, tmp_path: Path) -> None:
    if block.no_test is not None:
        pytest.skip(f"marked no-test in {block.page}: {block.no_test}")
    first = FIRST_OF[block.code.strip()]
    if first is not block:
        pytest.skip(f"the same block as {first.id}, which runs it")
    if block.needs == "embedded":
        _require_embedded()
    out = _run(block, _checkout_beside(shared_data, tmp_path))
    assert out.returncode == 0, f"{block.id} failed (exit {out.returncode}):\n{out.stderr[-3000:]}"


def test_markers_are_known_and_give_a_reason() -> None:
    for page in GUIDE:
        text = (REPO / page).read_text(encoding="utf-8")
        for kind, reason in re.findall(r"<!--\s*([\w-]+):\s*(.*?)\s*-->", text):
            if kind in ("no-test", "needs"):
                assert reason, f"{page}: a {kind} marker without a reason"
        for block in code_blocks(page):
            assert block.needs in (None, "embedded"), f"{block.id}: unknown need {block.needs!r}"


def test_the_guide_runs_something_of_every_kind() -> None:
    tested = [block for block in ALL_BLOCKS if block.no_test is None]
    assert any(block.lang == "python" for block in tested)
    assert any("ccpt report" in block.code for block in tested)
    assert any(block.page == "README.md" for block in tested)
    assert len(tested) >= 8


def test_no_command_names_this_projects_shared_copy() -> None:
    """A user has no ``../shared``: the commands find data through the variables or the download, as theirs do."""
    named = [block.id for block in ALL_BLOCKS if "../shared" in block.code or "shared/data" in block.code]
    assert named == [], f"these blocks name this project's shared copy (use the variables or the download): {named}"


def test_the_python_api_example_prints_the_papers_number(shared_data: Path, tmp_path: Path) -> None:
    (block,) = [b for b in code_blocks("docs/python-api.md") if b.lang == "python"]
    out = _run(block, _checkout_beside(shared_data, tmp_path))
    assert out.returncode == 0, out.stderr
    numbers = [line for line in out.stdout.splitlines() if re.fullmatch(r"-?\d+(\.\d+)?", line.strip())]
    assert "40.8" in [f"{float(line):.1f}" for line in numbers]
    assert "pi_emergent" in out.stdout and "gpt-4o" in out.stdout


# The README as a front door ----------------------------------------------------------------------------------


def test_the_readme_keeps_its_two_commands_and_ci_runs_the_second() -> None:
    blocks = [block.code.strip() for block in code_blocks("README.md")]
    assert blocks[0] == MAIN_COMMAND, "the README's first block must be the main command"
    assert blocks[1] == TEST_COMMAND, "the README's second block must be the test command"
    ci = (REPO / ".ci" / "run").read_text(encoding="utf-8")
    assert TEST_COMMAND in ci.splitlines(), ".ci/run must run the README's test command as written"


def test_the_readme_fits_150_lines() -> None:
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines; move detail to the guide in docs/"


_LINK = re.compile(r"\]\(([^)\s]+)\)")


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped but for - and _, spaces to -."""
    text = re.sub(r"[`*]", "", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", path.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


@pytest.mark.parametrize(
    "page",
    [
        *GUIDE,
        "CONTRIBUTING.md",
        "CHANGELOG.md",
        *(f"docs/{name}.md" for name in ("benchmarks", "cli", "judge", "methods", "metrics", "schemas")),
    ],
)
def test_links_resolve(page: str) -> None:
    """Every relative link of the page names a file that exists, and a heading of it when it has a #fragment."""
    source = REPO / page
    text = re.sub(r"^```.*?^```", "", source.read_text(encoding="utf-8"), flags=re.S | re.M)
    broken = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s), mailto
        file, _, fragment = target.partition("#")
        path = (source.parent / file).resolve() if file else source
        missing_heading = fragment and path.suffix == ".md" and path.exists() and fragment not in _anchors(path)
        if not path.exists() or missing_heading:
            broken.append(target)
    assert broken == [], f"{page} links to what does not exist: {broken}"


# CONTRIBUTING.md's Layout ----------------------------------------------------------------------------------------


def _layout_bullets() -> list[tuple[Path, list[str]]]:
    """(directory, the names written in its bullet) for each bullet of CONTRIBUTING.md's "Layout" section."""
    text = (REPO / "CONTRIBUTING.md").read_text(encoding="utf-8")
    section = text[text.index("## Layout") :].split("\n## ")[0]
    bullets = re.findall(r"^- (.*?)(?=^- |\Z)", section, re.S | re.M)
    out = []
    for bullet in bullets:
        names = [name for name in re.findall(r"`([^`]+)`", bullet) if " " not in name]
        out.append((REPO / names[0], names[1:]))
    return out


def _named_paths() -> set[Path]:
    """Every file or directory the Layout names: ``x.py`` and ``x/`` inside a bullet are relative to its directory
    (``tests/…``, ``docs/…`` and ``src/…`` to the repository)."""
    paths = set()
    for base, names in _layout_bullets():
        paths.add(base)
        for name in names:
            if name.endswith((".py", "/")):
                root = REPO if name.startswith(("tests/", "docs/", "src/")) else base
                paths.add(root / name)
    return {Path(str(p).rstrip("/")) for p in paths}


def test_layout_names_every_package_and_top_level_module_and_nothing_missing() -> None:
    named = _named_paths()
    assert len(_layout_bullets()) >= 5  # the section is still a list the reader below understands
    missing = sorted(str(p.relative_to(REPO)) for p in named if not p.exists())
    assert missing == [], f"CONTRIBUTING.md's Layout names files that do not exist: {missing}"
    package = REPO / "src" / "ccpt"
    packages = {p.parent for p in package.rglob("__init__.py") if p.parent != package}
    modules = {p for p in package.glob("*.py") if p.name != "__init__.py"}
    unnamed = sorted(str(p.relative_to(package)) for p in (packages | modules) - named)
    assert unnamed == [], f"packages or top-level modules CONTRIBUTING.md's Layout does not name: {unnamed}"
