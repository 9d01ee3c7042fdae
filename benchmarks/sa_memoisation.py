"""Model calls per instance of Spreading Activation (LLM activation) with and without the per-run memo.

Runs Algorithm 1 over the three test splits with a latency-free scripted model: its "activation" answers
are the concept's neighbours in the authors' ConceptNet cache (so concept overlap between instances is
realistic), and its filter keeps a fixed pseudo-random 8 of the candidates. All instances of a split run
concurrently, as in an Inspect run, sharing one Activator (or none, for the baseline).

    .venv/bin/python benchmarks/sa_memoisation.py [DATA_DIR]      # default: ../shared/data/ccpt
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import re
import sys
import time
from collections import Counter
from pathlib import Path

from ccpt.dataset import load_dataset
from ccpt.graph import NeighbourCache
from ccpt.spreading.activation import (
    Activator,
    SAConfig,
    Seeds,
    noun_phrase_completion_seeds,
    property_induction_seeds,
    spread_activation,
)

CONCEPT_LINE = re.compile(r'^Concept: "(.*)"$', re.M)
CANDIDATES_LINE = re.compile(r"^(\[.*\])$", re.M)


class ScriptedModel:
    """Answers p_act from the neighbourhood cache and p_fil with a stable pseudo-random subset."""

    def __init__(self, cache: NeighbourCache) -> None:
        self.cache = cache
        self.calls: Counter[str] = Counter()

    async def __call__(self, prompt: str) -> str:
        await asyncio.sleep(0)
        if (match := CONCEPT_LINE.search(prompt)) is not None:
            self.calls["activate"] += 1
            return json.dumps({"concepts": list(self.cache.neighbours(match.group(1), 10))})
        self.calls["filter"] += 1
        candidates = json.loads(CANDIDATES_LINE.search(prompt).group(1))  # type: ignore[union-attr]
        ranked = sorted(candidates, key=lambda c: hashlib.md5(c.encode()).hexdigest())
        return json.dumps({"concepts": ranked[:8]})


async def run_split(seeds: list[Seeds], model: ScriptedModel, memoise: bool) -> Activator:
    activator = Activator(memoise=memoise)
    config = SAConfig(use_llm=True, use_graph=False)
    await asyncio.gather(
        *(spread_activation(s, generate=model, graph=None, activator=activator, config=config) for s in seeds)
    )
    return activator


def main() -> None:
    default = Path(__file__).resolve().parents[2] / "shared" / "data" / "ccpt"
    data_dir = Path(sys.argv[1]) if len(sys.argv) > 1 else default
    dataset = load_dataset(data_dir)
    cache = NeighbourCache.load(data_dir / "conceptnet_adjacent.json")
    splits = {
        task: [property_induction_seeds(r.modifier, r.head) for r in dataset.test(task)]
        for task in ("pi_emergent", "pi_canceled")
    }
    splits["npc_emergent"] = [noun_phrase_completion_seeds(r.head, r.property) for r in dataset.test("npc_emergent")]
    print("| split | instances | calls/instance, memo (activate + filter) | without memo | ratio | seconds |")
    print("|---|---|---|---|---|---|")
    for name, seeds in splits.items():
        row = []
        for memoise in (True, False):
            model = ScriptedModel(cache)
            began = time.perf_counter()
            asyncio.run(run_split(seeds, model, memoise))
            row.append((model.calls, time.perf_counter() - began))
        (memo, t_memo), (plain, _) = row
        n = len(seeds)
        total_memo, total_plain = sum(memo.values()) / n, sum(plain.values()) / n
        print(
            f"| {name} | {n} | {total_memo:.1f} ({memo['activate'] / n:.1f} + {memo['filter'] / n:.1f}) "
            f"| {total_plain:.1f} ({plain['activate'] / n:.1f} + {plain['filter'] / n:.1f}) "
            f"| {total_plain / total_memo:.1f}× | {t_memo:.2f} |"
        )


if __name__ == "__main__":
    main()
