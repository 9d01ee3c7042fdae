"""Spreading Activation on the embedded model, offline: where the time goes, per call type.

Runs (or reads the logs of) the issue's command

    ccpt run --task pi_canceled --method sa_llm --method sa_conceptnet --method sa_both --limit 2 --seeds 1

with an empty Inspect cache, and splits the solver's model calls by type — activation (p_act), filter (p_fil),
answer (the SA template) — with calls made, calls served from the cache, failed attempts (thrown away and
retried), prompt and output tokens, and seconds (llama.cpp's time per call, from the provider's output). The
judge's calls are counted apart. With ``--answers`` it also writes every solver call's prompt and completion as
JSON lines, to compare two runs bitwise.

    .venv/bin/python benchmarks/sa_offline.py --data-dir ../shared/data/ccpt [--logs DIR] [--answers FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from inspect_ai.event import ModelEvent
from inspect_ai.log import list_eval_logs, read_eval_log

COMMAND = ["--task", "pi_canceled", "--method", "sa_llm", "--method", "sa_conceptnet", "--method", "sa_both"]
# The first words of each expansion prompt (src/ccpt/prompts/sa_activate.txt, sa_filter.txt and their as-run forms).
KINDS = {
    "activation": ("You are exploring a network of associated concepts", "Find relevant concepts related to"),
    "filter": ("We are solving a task about a conceptual combination", "Given a set of nodes and two concepts"),
}


def kind_of(event: ModelEvent) -> str:
    """activation, filter, answer (the solver's final SA answer) or judge."""
    if event.role == "grader":
        return "judge"
    text = event.input[-1].text if event.input else ""
    for kind, starts in KINDS.items():
        if text.lstrip().startswith(starts):
            return kind
    return "answer"


def run(data_dir: str, logs: Path, limit: int, extra: list[str]) -> float:
    """Run the command with fresh Inspect cache and logs; returns the wall time in seconds."""
    env = {**os.environ, "INSPECT_CACHE_DIR": str(logs.parent / "inspect-cache")}
    ccpt = Path(sys.executable).with_name("ccpt")
    args = [str(ccpt), "run", *COMMAND, "--limit", str(limit), "--seeds", "1", "--data-dir", data_dir]
    start = time.perf_counter()
    subprocess.run([*args, "--log-dir", str(logs), *extra], env=env, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def summarise(logs: Path, answers: Path | None) -> dict[str, dict[str, float]]:
    """Calls, cache hits, tokens and seconds per call type over every log in ``logs``."""
    table: dict[str, dict[str, float]] = defaultdict(lambda: defaultdict(float))
    records = []
    for info in list_eval_logs(str(logs)):
        log = read_eval_log(info, resolve_attachments=True)
        for sample in log.samples or []:
            for event in sample.events:
                if not isinstance(event, ModelEvent):
                    continue
                kind = kind_of(event)
                row = table[kind]
                if event.cache == "read":
                    row["cached"] += 1
                    continue
                if event.error:  # an attempt that failed (e.g. Inspect's attempt timeout): its work was thrown away
                    row["failed"] += 1
                    continue
                usage = event.output.usage
                row["calls"] += 1
                row["prompt_tokens"] += usage.input_tokens if usage else 0
                row["output_tokens"] += usage.output_tokens if usage else 0
                row["seconds"] += event.output.time or 0.0
                if kind != "judge":
                    records.append(
                        {
                            "method": log.eval.task_args.get("method"),
                            "sample": sample.id,
                            "kind": kind,
                            "prompt": [m.text for m in event.input],
                            "completion": event.output.completion,
                        }
                    )
    if answers is not None:
        records.sort(key=lambda r: json.dumps(r, sort_keys=True))
        answers.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", required=True)
    parser.add_argument("--logs", type=Path, help="summarise these logs instead of running the command")
    parser.add_argument("--limit", type=int, default=2)
    parser.add_argument("--answers", type=Path, help="write every solver call's prompt and completion here")
    parser.add_argument("extra", nargs="*", help="more ccpt run options (after --)")
    args = parser.parse_args()
    wall = None
    with tempfile.TemporaryDirectory() as tmp:
        logs = args.logs
        if logs is None:
            logs = Path(tmp) / "logs"
            wall = run(args.data_dir, logs, args.limit, args.extra)
        table = summarise(logs, args.answers)
    print(
        f"{'type':10s} {'calls':>6s} {'cached':>6s} {'failed':>6s} {'prompt tok':>10s} {'output tok':>10s}"
        f" {'s':>8s} {'s/call':>7s}"
    )
    for kind in ("activation", "filter", "answer", "judge"):
        row = table.get(kind)
        if not row:
            continue
        calls = row["calls"]
        per_call = row["seconds"] / calls if calls else 0.0
        print(
            f"{kind:10s} {calls:6.0f} {row['cached']:6.0f} {row['failed']:6.0f} {row['prompt_tokens']:10.0f}"
            f" {row['output_tokens']:10.0f}"
            f" {row['seconds']:8.1f} {per_call:7.2f}"
        )
    if wall is not None:
        print(f"wall time of the command: {wall:.1f} s")


if __name__ == "__main__":
    main()
