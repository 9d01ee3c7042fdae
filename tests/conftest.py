"""Shared fixtures: the authors' dataset copy in ../shared/data (CI always has it).

Tests that need it skip with a reason when it is absent, unless CCPT_REQUIRE_SHARED=1 (set by .ci/run),
in which case they fail: CI must never skip them silently.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def shared_data_root() -> Path:
    """Where the shared data lives: $CCPT_SHARED_DATA or ../shared/data beside the checkout."""
    env = os.environ.get("CCPT_SHARED_DATA")
    return Path(env) if env else REPO.parent / "shared" / "data"


def _require(path: Path, what: str) -> Path:
    if path.exists():
        return path
    reason = f"{what} not found at {path} (set CCPT_SHARED_DATA or put shared/ beside the checkout)"
    if os.environ.get("CCPT_REQUIRE_SHARED") == "1":
        pytest.fail(reason)
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """The ../shared/data directory."""
    return _require(shared_data_root(), "shared data")


@pytest.fixture(scope="session")
def ccpt_dir(shared_data: Path) -> Path:
    """The dataset directory (ccpt_*.csv, test_index.json, conceptnet_adjacent.json)."""
    return _require(shared_data / "ccpt", "CCPT dataset copy")


@pytest.fixture(scope="session")
def reference_dir(shared_data: Path) -> Path:
    """The authors' stored GPT-4o outputs."""
    return _require(shared_data / "reference-results", "reference results")


@pytest.fixture(scope="session")
def dataset(ccpt_dir: Path):
    """The full CCPT dataset loaded once per test session."""
    from ccpt.dataset import load_dataset

    return load_dataset(ccpt_dir)


@pytest.fixture(autouse=True)
def fresh_inspect_models(monkeypatch: pytest.MonkeyPatch) -> None:
    """Give every test an empty memo of Inspect's ``get_model``.

    Inspect memoises model instances by name, role, config and *explicit* base URL. A base URL taken from the
    environment (``LOOP_BASE_URL``, set per loopback server) is not part of that key, so a later test asking for
    ``openai-api/loop/test-model`` with the same settings got an earlier test's instance, still pointing at that
    test's closed server, and retried against it (CI hung there). No public API clears the memo; the module
    attribute is replaced for the duration of one test instead.
    """
    try:
        from inspect_ai.model import _model
    except ImportError:  # pragma: no cover - Inspect is a hard dependency
        return
    if isinstance(getattr(_model, "_models", None), dict):
        monkeypatch.setattr(_model, "_models", {})
