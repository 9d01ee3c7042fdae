"""Cost of the fixed-instruction-set llama.cpp build (x86-64-v3) against a native build, on the embedded 0.5B.

    .venv/bin/python benchmarks/llama_isa.py --build native= --build x86-64-v3=/path/to/site-dir [--rounds 3]

Each ``--build NAME=DIR`` names a llama-cpp-python install: ``DIR`` is put first on ``PYTHONPATH`` of a child
process (empty: the venv's own install). Builds alternate within every round, so they share the machine's
load; each child loads the model (not timed), then times ``--prompts`` PI-emergent-style chat completions
(greedy, ``max_tokens`` 48, no prefix reuse: ``Llama.reset()`` before each) and reports wall and CPU seconds
per call (CPU time of the process: with one thread it measures the kernels' work even on a loaded machine,
where wall time mostly measures the share of the CPU the process got), llama.cpp's compile-time kernels, and
the answers. The parent prints the medians per build, their ratio to the first build, and whether the builds'
greedy answers are identical.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

PROMPTS = [
    "a peeled apple",
    "a boat on the rocks",
    "a moth near a candle",
    "a frozen lake",
    "a broken umbrella",
    "a burning library",
]
SYSTEM = 'You name properties. Answer with one property, as JSON: {"property": "..."}.'


def child(prompts: int, threads: int) -> None:
    import llama_cpp

    from ccpt.eval.llama_isa import build_isa
    from ccpt.io.weights import DEFAULT_SOLVER, EMBEDDED_MODELS, assemble_embedded

    path = assemble_embedded(EMBEDDED_MODELS[DEFAULT_SOLVER])
    llm = llama_cpp.Llama(str(path), n_ctx=512, n_threads=threads, n_batch=64, verbose=False, seed=0)
    seconds, cpu, answers = [], [], []
    for phrase in PROMPTS[:prompts]:
        llm.reset()
        messages = [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": f"Which property emerges in '{phrase}' that neither word has alone?"},
        ]
        started, cpu_started = time.perf_counter(), time.process_time()
        out = llm.create_chat_completion(messages, temperature=0.0, max_tokens=48, seed=0)
        seconds.append(time.perf_counter() - started)
        cpu.append(time.process_time() - cpu_started)
        answers.append(out["choices"][0]["message"]["content"])
    print(json.dumps({"isa": build_isa(), "seconds": seconds, "cpu_seconds": cpu, "answers": answers}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--build", action="append", default=[], help="NAME=DIR (DIR empty: the venv's own)")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--prompts", type=int, default=len(PROMPTS))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.prompts, args.threads)
        return
    builds = [b.partition("=")[::2] for b in args.build]
    results: dict[str, list[dict]] = {name: [] for name, _ in builds}
    for _ in range(args.rounds):
        for name, site in builds:
            env = dict(os.environ)
            if site:
                env["PYTHONPATH"] = os.pathsep.join(p for p in (site, env.get("PYTHONPATH", "")) if p)
            cmd = [sys.executable, __file__, "--child", "--prompts", str(args.prompts), "--threads", str(args.threads)]
            out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True)
            results[name].append(json.loads(out.stdout.strip().splitlines()[-1]))
    first = builds[0][0]
    median = {name: statistics.median(s for r in runs for s in r["seconds"]) for name, runs in results.items()}
    cpu = {name: statistics.median(s for r in runs for s in r["cpu_seconds"]) for name, runs in results.items()}
    summary = {
        name: {
            "isa": runs[0]["isa"],
            "median_wall_s_per_call": round(median[name], 3),
            "median_cpu_s_per_call": round(cpu[name], 3),
            "cpu_ratio_to_" + first: round(cpu[name] / cpu[first], 3),
            "answers_identical_to_" + first: runs[0]["answers"] == results[first][0]["answers"],
            "answers_stable_across_rounds": all(r["answers"] == runs[0]["answers"] for r in runs),
        }
        for name, runs in results.items()
    }
    print(json.dumps({"rounds": args.rounds, "prompts": args.prompts, "threads": args.threads, **summary}, indent=2))


if __name__ == "__main__":
    main()
