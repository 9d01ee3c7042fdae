"""Judge calls made vs unique (concept, property) pairs on a full test-split sweep.

A scripted model that, like real models, repeats answers across seeds and instances (a small answer
vocabulary) answers every generative test instance with Base for 3 seeds; the judge is a separate scripted
model whose calls are counted at the provider. Without memoisation a sweep needs 3 judge calls per answer.

    .venv/bin/python benchmarks/judge_calls.py [--data-dir ../shared/data/ccpt] [--seeds 3]
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

from inspect_ai import eval as inspect_eval
from inspect_ai.model import get_model

from ccpt.eval.inspect_compat import roles_bound
from ccpt.eval.tasks import npc_emergent, pi_canceled, pi_emergent

# The scripted model is the test suite's provider (tests/plugins), not part of the package: importing it registers it.
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "plugins"))
import scripted_provider  # noqa: F401


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", default=str(Path(__file__).resolve().parents[2] / "shared/data/ccpt"))
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        os.environ["INSPECT_CACHE_DIR"] = str(Path(tmp) / "cache")
        calls = Path(tmp) / "judge-calls.txt"
        judge = get_model("ccpt-scripted/judge", calls_file=str(calls), memoize=False)
        # Built with the grader bound, as `inspect eval` and `ccpt run` build tasks: the default judge is not loaded.
        with roles_bound({"grader": judge}):
            tasks = [
                f(method="base", seeds=args.seeds, data_dir=args.data_dir)
                for f in (pi_emergent, pi_canceled, npc_emergent)
            ]
        start = time.perf_counter()
        logs = inspect_eval(
            tasks,
            model="ccpt-scripted/solver",
            model_args={"vocabulary": 6},
            model_roles={"grader": judge},
            log_dir=str(Path(tmp) / "logs"),
            display="none",
        )
        seconds = time.perf_counter() - start
        answers, pairs = 0, set()
        for log in logs:
            for sample in log.samples or []:
                meta = next(s.metadata["ccpt"] for s in sample.scores.values() if s.metadata and "ccpt" in s.metadata)
                for row in meta["samples"]:
                    if not row["parse_ok"]:
                        continue
                    answers += 1
                    if row["task"] == "npc_emergent":
                        concepts = (row["answer"], row["head"], row["answer_modifier"])
                        prop = row["property"]
                    else:
                        concepts = (row["combination"], row["head"], row["modifier"])
                        prop = row["answer"]
                    pairs.update((" ".join(c.split()), " ".join(prop.split())) for c in concepts)
        made = len(calls.read_text().splitlines())
        naive = 3 * answers
        print(f"answers judged: {answers} (3 tasks × test split × {args.seeds} seeds)")
        print(f"judge calls without memoisation (3 per answer): {naive}")
        print(f"unique (concept, property) pairs:               {len(pairs)}")
        print(f"judge calls made:                               {made}")
        print(f"calls made / unique pairs = {made / len(pairs):.3f}; naive / made = {naive / made:.2f}x")
        print(f"wall time: {seconds:.1f} s")


if __name__ == "__main__":
    main()
