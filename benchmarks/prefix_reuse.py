"""Aligned prefix reuse in the embedded provider: time per judge call vs evaluating every prompt from
scratch, and a check that the outputs (text and every log-probability) are bitwise identical.

    .venv/bin/python benchmarks/prefix_reuse.py [--model qwen2.5-1.5b] [--pairs 12]
"""

from __future__ import annotations

import argparse
import asyncio
import time

from inspect_ai.model import GenerateConfig, get_model

from ccpt.eval.judge import JUDGE_SCHEMA
from ccpt.prompts import judge_prompt

PAIRS = [("apple", "red"), ("peeled apple", "white"), ("banana", "yellow"), ("rusty wrench", "useless"),
         ("a chicken in the cage", "in danger"), ("burned banknote", "valuable"), ("frozen lake", "solid"),
         ("wet dog", "smelly"), ("glass hammer", "fragile"), ("old lettuce", "wilted"), ("lemon", "sour"),
         ("toothpick", "unstable")]  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="qwen2.5-1.5b")
    parser.add_argument("--pairs", type=int, default=len(PAIRS))
    args = parser.parse_args()
    pairs = PAIRS[: args.pairs]
    config = GenerateConfig(temperature=0.0, max_tokens=16, response_schema=JUDGE_SCHEMA, top_logprobs=10)
    results = {}
    for mode in ("off", "aligned"):
        model = get_model(f"gguf/{args.model}", prefix_cache=mode, memoize=False)
        start = time.perf_counter()
        outs = [asyncio.run(model.generate(judge_prompt(c, p), config=config)) for c, p in pairs]
        seconds = time.perf_counter() - start
        results[mode] = (seconds, [(o.completion, [t.logprob for t in o.choices[0].logprobs.content]) for o in outs])
        print(f"prefix_cache={mode:<8} {seconds / len(pairs):.2f} s per judge call ({len(pairs)} calls)")
    identical = results["off"][1] == results["aligned"][1]
    speedup = results["off"][0] / results["aligned"][0]
    print(f"speed-up aligned vs off: {speedup:.1f}x; outputs and logprobs identical: {identical}")


if __name__ == "__main__":
    main()
