"""Shared fixtures, and the rules that keep the suite correct when pytest-xdist runs it in parallel.

The suite runs in several worker processes at once (``-n`` in pyproject.toml's pytest options), on a 2-core
machine, beside other test runs. What this file does for every test, so that a new test is safe by default:

* **Caches and state directories are private to the test.** ``INSPECT_CACHE_DIR`` (Inspect's model-call
  cache: pickles written in place, unsafe to share between processes), ``INSPECT_LOG_DIR`` and ``CCPT_HOME``
  (ccpt's saved judge measurements) point into the test's own temporary directory, and Inspect's memo of
  model instances is emptied (:func:`fresh_inspect_models`). A test never sees another test's cached answers,
  so call counts and cache hits are its own. Module- and session-scoped fixtures get the worker's own
  directories (:func:`worker_state_dirs`).
* **``CCPT_CACHE_DIR`` is shared** by every test and worker of a run: it holds only large artefacts that are
  written atomically and verified (the assembled GGUF weights, verified downloads, the converted Hugging Face
  checkpoint of :func:`embedded_hf_checkpoint`), so sharing it saves minutes and cannot leak results.
* **Ports**: bind 127.0.0.1 port 0 and read the port back (``tests/loopback_openai.py``); never a fixed port.
  ``http://127.0.0.1:9`` (discard, nothing listens) is the one fixed address, for "connection refused".
* **CPU-heavy tests** (a real llama.cpp model, vLLM, a local Ray cluster) run one after another on one worker:
  mark them ``@pytest.mark.embedded`` (real embedded model or vLLM) or ``@pytest.mark.ray`` (starts Ray); the
  scheduler (:func:`pytest_xdist_make_scheduler`) runs all of them on one worker, in order, starting first. Two
  of them at once on 2 cores only slow each other down (llama.cpp threads spin) and two local Ray clusters
  compete for the same CPUs. Tests that assert a wall-clock bound (``@pytest.mark.timing``) run there too, so
  that no CPU-heavy test runs beside them. That chain is the run's critical path, so the other tests run at a
  lower CPU priority (:func:`pytest_runtest_setup`): they fill the cores the chain leaves idle instead of taking
  their share from it. Ray starts its workers at niceness +15 by default, below the light tests: the chain's Ray
  and vLLM work then ran on what they left (the vLLM batch test: 182 s alone, 740 s and a 900 s timeout in the
  suite), so a local Ray started by a test keeps the niceness of the process that starts it
  (``RAY_worker_niceness``).
* **Expensive artefacts** are session fixtures that build once per run and are cached where every worker finds
  them, under a file lock (:func:`embedded_hf_checkpoint`). Add new ones here, not in a test module; one that
  belongs to a single module builds in :func:`run_shared_dir` under :func:`cross_process_lock`. The tests of a
  module that defines a module-scoped fixture run on one worker, one after another (the scheduler), so that
  fixture is made once per run, not once per worker that happens to get one of its tests.
* Tests that need ../shared/data skip with a reason when it is absent, unless ``CCPT_REQUIRE_SHARED=1`` (set by
  .ci/run), in which case they fail: CI must never skip them silently.
* **Test-only model providers** (``ccpt-scripted``, tests/plugins/scripted_provider.py) are registered here, in
  this process and, through ``PYTHONPATH``, in every subprocess: a test that builds its own environment must
  start from ``os.environ`` (``{**os.environ, ...}``) to keep them.
* Every test has a time limit (``timeout`` in pyproject.toml): a hang fails that test instead of the whole run.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
# Environment variables that name per-test state (see the module docstring); CCPT_CACHE_DIR is deliberately absent.
# Test-only Inspect providers (``ccpt-scripted``): tests/plugins holds the module and a committed dist-info whose
# ``inspect_ai`` entry point registers it. Put first on sys.path (this process) and on PYTHONPATH (every ccpt,
# inspect or python subprocess a test starts inherits os.environ), and imported here so that the provider is
# registered in-process too. Users never get it: the package does not ship it.
PLUGINS = Path(__file__).resolve().with_name("plugins")
if str(PLUGINS) not in sys.path:
    sys.path.insert(0, str(PLUGINS))
if str(PLUGINS) not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (str(PLUGINS), os.environ.get("PYTHONPATH", "")) if p)
import scripted_provider  # noqa: E402, F401 - registers ccpt-scripted in this process

os.environ.setdefault("RAY_worker_niceness", "0")  # see the docstring, "CPU-heavy tests"; read when Ray starts

PRIVATE_DIRS = {"INSPECT_CACHE_DIR": "inspect-cache", "INSPECT_LOG_DIR": "inspect-logs", "CCPT_HOME": "ccpt-home"}
HEAVY_MARKS = ("embedded", "ray", "timing")
HEAVY_GROUP = "cpu-heavy"


@pytest.fixture(scope="session", autouse=True)
def worker_state_dirs(tmp_path_factory: pytest.TempPathFactory) -> Iterator[None]:
    """Give this process (one xdist worker, or the only process) its own state directories.

    Session-scoped and autouse, so it is set up before every module- or session-scoped fixture: those fixtures
    and the subprocesses they start never share Inspect's cache with another worker. The directories live under
    the run's base temporary directory (fresh per run, per worker under xdist).
    """
    base = tmp_path_factory.mktemp("worker-state")
    saved = {name: os.environ.get(name) for name in PRIVATE_DIRS}
    os.environ.update({name: str(base / sub) for name, sub in PRIVATE_DIRS.items()})
    yield
    for name, value in saved.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


GROUPS_ENV = "CCPT_TEST_GROUPS_DIR"  # where workers tell the scheduler which tests are CPU-heavy
BASE_NICE_ENV = "CCPT_TEST_BASE_NICE"  # the controller's niceness, which the light tests run above
LIGHT_NICE = 5  # how much lower the light tests' CPU priority is than the cpu-heavy chain's (under xdist)


def _is_heavy(item: pytest.Item) -> bool:
    return any(item.get_closest_marker(mark) for mark in HEAVY_MARKS)


def pytest_configure(config: pytest.Config) -> None:
    """In the xdist controller: a directory the workers (spawned later, inheriting it) report heavy tests in."""
    parallel = getattr(config.option, "numprocesses", None)
    if parallel and not hasattr(config, "workerinput") and GROUPS_ENV not in os.environ:
        os.environ[GROUPS_ENV] = tempfile.mkdtemp(prefix="ccpt-test-groups-")
        os.environ[BASE_NICE_ENV] = str(os.getpriority(os.PRIO_PROCESS, 0))
        config.add_cleanup(lambda: os.environ.pop(BASE_NICE_ENV, None))
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop(GROUPS_ENV), ignore_errors=True))


def _module_fixture_module(item: pytest.Item) -> str | None:
    """The node id of ``item``'s module when that module defines a module-scoped fixture the test uses, else None."""
    module = item.nodeid.split("::", 1)[0]
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    for defs in getattr(fixtureinfo, "name2fixturedefs", {}).values():
        if defs and defs[-1].scope == "module" and getattr(defs[-1], "baseid", None) == module:
            return module
    return None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """In an xdist worker: write, for the scheduler (the controller sees node ids only, not markers or fixtures),
    the unit of work of every test that is not scheduled alone: the CPU-heavy tests (marked ``embedded``, ``ray``
    or ``timing``) form one unit, and the tests of a module with a module-scoped fixture one unit per module."""
    directory = os.environ.get(GROUPS_ENV)
    worker = getattr(config, "workerinput", {}).get("workerid")
    if directory and worker:
        units: dict[str, str] = {}
        for item in items:
            unit = HEAVY_GROUP if _is_heavy(item) else _module_fixture_module(item)
            if unit:
                units[item.nodeid] = unit
        tmp = Path(directory) / f".{worker}.json"
        tmp.write_text(json.dumps(units), encoding="utf-8")
        tmp.replace(Path(directory) / f"{worker}.json")  # written before the worker reports its collection


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item: pytest.Item) -> None:
    """In an xdist worker, before a light test: lower this worker's CPU priority (once; it is never raised again).

    The cpu-heavy chain runs on one worker from the start and is the run's critical path. At equal priority, two
    busy light workers left a two-threaded llama.cpp model on the chain half of the 2 cores; at niceness +5 (CFS
    weight 335 against 1024) they leave it about three quarters, and they still get every core the chain leaves
    idle (its waits on timeouts and servers starting, its single-threaded parts). Subprocesses inherit it.
    """
    base = os.environ.get(BASE_NICE_ENV)
    if base is None or not os.environ.get("PYTEST_XDIST_WORKER") or _is_heavy(item):
        return
    target = int(base) + LIGHT_NICE
    if os.getpriority(os.PRIO_PROCESS, 0) < target:
        os.setpriority(os.PRIO_PROCESS, 0, target)
        # One OpenMP thread per light worker (torch's distilled judge; its subprocesses inherit it): three workers
        # share 2 cores, and a two-threaded torch spins at each barrier for a thread the scheduler has parked.
        # `judge-agreement` on the distilled judge (test_agreement.py), beside other load: 67 s against 93 s.
        os.environ["OMP_NUM_THREADS"] = "1"
        if (torch := sys.modules.get("torch")) is not None:
            torch.set_num_threads(1)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: unknown (and unused) without pytest-xdist
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """Schedule like ``--dist load``, except that the CPU-heavy tests are one unit of work, run in order on one
    worker and handed out first (the largest unit), and the tests of a module with a module-scoped fixture are one
    unit each (:func:`pytest_collection_modifyitems`). xdist's own ``loadgroup`` cannot be used here: it tags node
    ids, which pytest 9 no longer lets a plugin change. Another ``--dist`` given on the command line is left to xdist.
    """
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class HeavyGroupScheduling(LoadScopeScheduling):
        _units: dict[str, str] | None = None

        def _split_scope(self, nodeid: str) -> str:
            if self._units is None:  # every worker has reported its collection by the time scopes are split
                directory = Path(os.environ.get(GROUPS_ENV, "."))
                self._units = {}
                for report in directory.glob("*.json"):
                    self._units.update(json.loads(report.read_text(encoding="utf-8")))
            return self._units.get(nodeid, nodeid)

    return HeavyGroupScheduling(config, log)


@pytest.fixture(autouse=True)
def private_state_dirs(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Point Inspect's cache and log directories and CCPT_HOME at directories of this test alone.

    A fresh directory per test (not ``tmp_path``, so a test's own files stay as they were) keeps one test's
    cached model calls from answering another's and makes every test independent of the order tests run in.
    """
    root = tmp_path_factory.mktemp("state", numbered=True)
    for name, sub in PRIVATE_DIRS.items():
        monkeypatch.setenv(name, str(root / sub))


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


@contextlib.contextmanager
def cross_process_lock(path: Path) -> Iterator[None]:
    """An exclusive lock on ``path`` held across processes (xdist workers, parallel runs on one machine)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _convert_embedded_to_hf(target: Path) -> None:
    """Dequantise the embedded 0.5B GGUF into a bf16 Hugging Face checkpoint at ``target`` (atomically)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from ccpt.io import weights

    gguf = weights.resolve_gguf(weights.DEFAULT_SOLVER)
    tokenizer = AutoTokenizer.from_pretrained(gguf.parent, gguf_file=gguf.name)
    loaded = AutoModelForCausalLM.from_pretrained(gguf.parent, gguf_file=gguf.name, dtype=torch.bfloat16)
    config = loaded.config
    del config.quantization_config  # dequantised on load: save a plain checkpoint
    # Built on the meta device and given the loaded tensors (assign=True): no random initialisation of weights that
    # are replaced at once (6-7 s of the conversion); the files written are byte-identical to building it in memory.
    with torch.device("meta"):
        plain = AutoModelForCausalLM.from_config(config, dtype=torch.bfloat16)
    plain.load_state_dict(loaded.state_dict(), assign=True)
    plain.tie_weights()  # a no-op for this model (tie_word_embeddings is false); needed if a tied one is added
    partial = target.with_name(f"{target.name}.partial-{os.getpid()}")
    tokenizer.save_pretrained(partial)
    plain.save_pretrained(partial)
    partial.rename(target)  # a reader sees the whole checkpoint or none of it


@pytest.fixture(scope="session")
def run_shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory of this test run shared by all its xdist workers (the run's base temporary directory; under
    ``-n 0`` the process's own): for artefacts made once per run rather than once per worker, each built under
    :func:`cross_process_lock` and published complete (e.g. tests/test_interrupts.py's reference run)."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


@pytest.fixture(scope="session")
def embedded_hf_checkpoint() -> Path:
    """The embedded Qwen2.5-Coder-0.5B as a Hugging Face checkpoint (bf16), the form vLLM loads.

    Converted once per machine and cache directory (about a minute), under a lock so that parallel workers wait
    for one conversion instead of each doing their own; later tests, workers and runs reuse it. Under xdist the
    first user is tests/test_checkpoint_conversion.py on a light worker near the start of the run, not the vLLM
    tests on the cpu-heavy chain.
    """
    from ccpt.io import weights

    model = weights.EMBEDDED_MODELS[weights.DEFAULT_SOLVER]
    target = weights.model_cache_dir() / f"hf-{model.sha256[:16]}"
    with cross_process_lock(target.with_name(target.name + ".lock")):
        if not (target / "model.safetensors").is_file():
            _convert_embedded_to_hf(target)
    return target


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
