"""Where stages 1–2 run: a local process pool (default) or Ray Data (``--engine ray``).

A stage hands the engine a picklable job ``job(units) -> (rows, counts)``; both engines return the per-batch
results in input order, so they write identical files. Ray reads the input files itself: they must be readable
from every node.
"""

from __future__ import annotations

import json
import multiprocessing
from collections import Counter, deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from typing import Any

from ccpt.errors import CcptError

ENGINES = ("process", "ray")
Rows = list[dict[str, Any]]
Counts = dict[str, int]
Job = Callable[[list[dict[str, Any]]], tuple[Rows, Counts]]


def run_process_pool(job: Job, batches: Iterable[list[dict[str, Any]]], workers: int) -> Iterator[tuple[Rows, Counts]]:
    """Run ``job`` over ``batches`` in ``workers`` processes (in this process if workers ≤ 1), in order."""
    if workers <= 1:
        yield from map(job, batches)
        return
    with ProcessPoolExecutor(max_workers=workers, mp_context=multiprocessing.get_context("spawn")) as pool:
        pending: deque[Future[tuple[Rows, Counts]]] = deque()
        for batch in batches:
            pending.append(pool.submit(job, batch))
            if len(pending) >= 2 * workers:
                yield pending.popleft().result()
        while pending:
            yield pending.popleft().result()


@dataclass(frozen=True)
class RaySource:
    """How a stage reads its input in Ray: a dataset factory and a batch → units converter."""

    build: Callable[[Any], Any]  # ray.data module -> ray.data.Dataset
    to_units: Callable[[dict[str, Any]], list[dict[str, Any]]]  # numpy batch -> units


@dataclass
class _RayJob:
    """Ray Data callable class: one instance per actor, so resources load once per actor."""

    job: Job
    to_units: Callable[[dict[str, Any]], list[dict[str, Any]]]

    def __call__(self, batch: dict[str, Any]) -> dict[str, Any]:
        import numpy as np

        rows, counts = self.job(self.to_units(batch))
        # One string column keeps the schema fixed even for batches with no rows; counts travel as a row.
        encoded = [json.dumps(r, ensure_ascii=False) for r in rows] + [json.dumps({"__counts__": counts})]
        return {"json": np.array(encoded, dtype=object)}


def ray_init(address: str | None, workers: int) -> Any:
    """Import and start (or connect to) Ray, from the main thread (a local Ray dies with the thread that started it)."""
    try:
        import ray
    except ImportError:
        raise CcptError("the Ray engine needs Ray Data", "pip install 'ray[data]'") from None
    if not ray.is_initialized():
        if address:
            ray.init(address=address, log_to_driver=False)
        else:
            # One CPU beyond the actors for Ray Data's read tasks, else they never run and the job waits forever.
            ray.init(num_cpus=workers + 1, include_dashboard=False, log_to_driver=False)
    elif not address and ray.cluster_resources().get("CPU", 0) < workers + 1:
        raise CcptError(
            f"the Ray already running in this process has too few CPUs for {workers} workers",
            "call ray.shutdown() first, or use fewer workers",
        )
    return ray


def run_ray(
    job: Job, source: RaySource, *, workers: int, address: str | None, batch_size: int
) -> Iterator[tuple[Rows, Counts]]:
    """Run ``job`` as a Ray Data batch job over ``source``; yields (rows, counts) per output block."""
    ray = ray_init(address, workers)
    context = ray.data.DataContext.get_current()
    context.execution_options.preserve_order = True
    context.enable_progress_bars = False
    dataset = source.build(ray.data).map_batches(
        _RayJob,
        fn_constructor_args=(job, source.to_units),
        batch_size=batch_size,
        batch_format="numpy",
        compute=ray.data.ActorPoolStrategy(size=max(1, workers)),
    )
    for batch in dataset.iter_batches(batch_size=None, batch_format="numpy"):
        rows: Rows = []
        counts: Counter[str] = Counter()
        for text in batch["json"]:
            obj = json.loads(text)
            if isinstance(obj, dict) and "__counts__" in obj:
                counts.update(obj["__counts__"])
            else:
                rows.append(obj)
        yield rows, counts
