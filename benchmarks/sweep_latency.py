"""Wall time of a sweep against a loopback OpenAI-compatible server with fixed latency, vs the ideal
calls × latency / concurrency.

The server (tests/loopback_openai.py) sleeps a fixed time per request; Inspect's real OpenAI-compatible
provider talks to it over HTTP on 127.0.0.1. The ratio shows how much of the concurrency the harness
actually achieves (1.0 = perfect; per-call runner overhead and the judge's dependence on the answer push
it above 1).

    .venv/bin/python benchmarks/sweep_latency.py [--latency 0.25] [--connections 16] [--limit 48]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from inspect_ai import eval as inspect_eval

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "plugins"))  # the scripted model
from loopback_openai import serve

from ccpt.eval.inspect_compat import roles_bound
from ccpt.eval.tasks import pi_emergent


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/ccpt"))
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--connections", type=int, default=16)
    parser.add_argument("--limit", type=int, default=48)
    parser.add_argument("--seeds", type=int, default=2)
    args = parser.parse_args()
    _sweep(argparse.Namespace(**{**vars(args), "limit": 2}), latency=0.001)  # warm-up: imports, dataset load
    zero_wall, _ = _sweep(args, latency=0.0)
    wall, calls = _sweep(args, latency=args.latency)
    ideal = calls * args.latency / args.connections
    print(f"HTTP calls: {calls} ({args.limit} instances × {args.seeds} seeds; solver + memoised judge calls)")
    print(f"latency {args.latency:.2f} s, max_connections {args.connections}")
    print(f"ideal calls × latency / concurrency = {ideal:.2f} s")
    print(f"measured wall time = {wall:.2f} s; same sweep at zero latency (harness overhead) = {zero_wall:.2f} s")
    print(
        f"ratio measured / ideal = {wall / ideal:.2f}; (measured − overhead) / ideal = {(wall - zero_wall) / ideal:.2f}"
    )


def _sweep(args: argparse.Namespace, latency: float) -> tuple[float, int]:
    with tempfile.TemporaryDirectory() as tmp, serve(latency=latency) as (base_url, requests):
        os.environ |= {"INSPECT_CACHE_DIR": str(Path(tmp) / "cache"), "LOOP_API_KEY": "x", "LOOP_BASE_URL": base_url}
        # Distinct model names per run: Inspect memoises model clients, which hold the server URL.
        grader = f"openai-api/loop/judge-{latency}"
        # Built outside the timer with the grader bound, as `inspect eval` builds it: the default judge never loads.
        with roles_bound({"grader": grader}):
            task = pi_emergent(method="base", seeds=args.seeds, data_dir=args.data_dir)
        start = time.perf_counter()
        inspect_eval(
            task,
            model=f"openai-api/loop/solver-{latency}",
            model_roles={"grader": grader},
            limit=args.limit,
            max_connections=args.connections,
            log_dir=str(Path(tmp) / "logs"),
            display="none",
            log_realtime=False,
        )
        return time.perf_counter() - start, len(requests)


if __name__ == "__main__":
    main()
