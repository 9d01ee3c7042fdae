"""Stage 3's property calls against an endpoint with fixed latency: Inspect's model layer (``max_connections``)
vs the Ray Data batch job (``--batch http``), each vs the ideal calls × latency / parallelism.

Both talk to the loopback OpenAI-compatible server (tests/loopback_openai.py), which sleeps a fixed latency
per request. Each path also runs at zero latency, which measures its own overhead (Ray: the job's actor pool
and Ray Data's planning; Inspect: the harness per call). Every run starts cold (no cache, no reply store). The
local Ray cluster is started once beforehand and timed apart (on a cluster, ``--address``, it is already up).

    .venv/bin/python benchmarks/batch_properties.py [--prompts 240] [--latency 0.25] [--parallel 16]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "plugins"))  # the scripted model
from loopback_openai import serve

from ccpt.pipeline.batch import BatchOptions, request_id, run_batch
from ccpt.pipeline.llm import JsonCaller, LLMOptions
from ccpt.prompts import render_template


def _prompts(n: int) -> list[str]:
    combos = ["caged tiger", "pure crystal", "wet dog", "old engine", "frozen lake", "broken clock"]
    return [
        render_template(
            "pipeline_properties",
            combination=combos[i % 6],
            sentence=f"Sentence {i}: it was like a {combos[i % 6]}.",
            count="10",
        )
        for i in range(n)
    ]


def _inspect(prompts: list[str], latency: float, parallel: int, tmp: Path) -> tuple[float, int]:
    with serve(latency=latency) as (base_url, requests):
        cache = str(tmp / f"cache-{latency}")
        os.environ |= {"INSPECT_CACHE_DIR": cache, "LOOP_API_KEY": "x", "LOOP_BASE_URL": base_url}
        caller = JsonCaller(LLMOptions(model=f"openai-api/loop/props-{latency}", max_connections=parallel))

        async def all_calls() -> None:
            await asyncio.gather(*(caller.ask(p) for p in prompts))

        start = time.perf_counter()
        asyncio.run(all_calls())
        return time.perf_counter() - start, len(requests)


def _ray(prompts: list[str], latency: float, parallel: int, concurrency: int, tmp: Path) -> tuple[float, int]:
    # The stage's max_connections is the number of requests in flight over all actors, as on the Inspect path.
    llm = LLMOptions(model="unused", max_connections=parallel)
    with serve(latency=latency) as (base_url, requests):
        batch = BatchOptions(backend="http", model="loop", url=f"{base_url}/chat/completions", concurrency=concurrency)
        ids = {request_id(p, llm, batch): p for p in prompts}
        start = time.perf_counter()
        run_batch(ids, llm, batch, tmp / f"replies-{latency}.jsonl")
        return time.perf_counter() - start, len(requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=240)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--parallel", type=int, default=16, help="requests in flight (both paths)")
    parser.add_argument("--actors", type=int, default=2, help="Ray tasks at a time (batches of 64 prompts)")
    args = parser.parse_args()
    prompts = _prompts(args.prompts)
    ideal = args.prompts * args.latency / args.parallel
    print(f"{args.prompts} prompts, latency {args.latency:.2f} s, {args.parallel} in flight; ideal {ideal:.2f} s")
    with tempfile.TemporaryDirectory() as tmp:
        from ccpt.pipeline.engine import ray_init

        start = time.perf_counter()
        ray_init(None, args.actors)
        print(f"starting the local Ray cluster: {time.perf_counter() - start:.2f} s (not counted below)")
        for name, run in (
            ("inspect", lambda lat: _inspect(prompts, lat, args.parallel, Path(tmp))),
            ("ray-batch-http", lambda lat: _ray(prompts, lat, args.parallel, args.actors, Path(tmp))),
        ):
            zero, _ = run(0.0)
            wall, calls = run(args.latency)
            print(
                f"{name:15s} calls {calls}  wall {wall:6.2f} s  ratio to ideal {wall / ideal:5.2f}  "
                f"zero-latency wall {zero:6.2f} s  (wall − zero) / ideal {(wall - zero) / ideal:5.2f}"
            )


if __name__ == "__main__":
    main()
