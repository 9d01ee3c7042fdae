"""Fidelity of as-run Spreading Activation to the authors' stored GPT-4o runs (docs/methods.md, "Fidelity").

For each stored SA file (``*_sa-llm``, ``*_sa-conceptnet``, ``*_sa-llm&conceptnet``: Table 3; ``*_sa-nf-conceptnet``:
Table 7; ``*_sa-conceptnet-5``: the Table-6 run), every instance is run again through ccpt's own algorithm with a
scripted ``generate`` that follows the file's own concept sets ``C``:

- the filter's t-th reply for an instance is the stored C_t of that instance, written as the authors' model wrote
  lists (reasoning, then a Python-style list in single quotes) — so the stop test, the set semantics and the view
  the answer gets are ccpt's;
- an LLM activation of a concept c lists every concept that followed c in a stored trajectory of the file
  (C_{t+1} items of an instance whose C_t held c);
- ConceptNet activations are the real neighbourhood cache of the dataset, and the random sample (10 candidates;
  the whole set without the filter) is ccpt's, seeded.

It then compares, per task and method, the statistics the stored files show: the share of instances whose concept
set still changes after step 1, the size of C_T as the answer saw it (median, mean, and the total-variation
distance between the two size histograms), and the share of C_T holding a seed word. The ``ccpt`` protocol's
algorithm, run with the same scripted model (its filter answering in its own JSON format), is reported beside.

    .venv/bin/python benchmarks/sa_fidelity.py [--reference DIR] [--data-dir DIR] [--runs 20] [--limit N]

(defaults: ``$CCPT_SHARED_DATA`` or ``../shared/data``, as the tests).

Without the filter nothing is replayed: the expansion is the real graph and ccpt's random sample, so that row is
repeated ``--runs`` times with different seeds and shown as the mean and the range over runs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import statistics
import sys
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import pairwise
from pathlib import Path

import pandas as pd

from ccpt.answers import split_reply_list
from ccpt.graph import ConceptGraph, NeighbourCache
from ccpt.results.authors import parse_step_sets
from ccpt.spec import reference_method
from ccpt.spreading.activation import (
    Activator,
    SAConfig,
    Seeds,
    Trajectory,
    noun_phrase_completion_seeds,
    property_induction_seeds,
    spread_activation,
)
from ccpt.spreading.as_run import AuthorsNeighbourCache, spread_activation_as_run

REPO = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("CCPT_SHARED_DATA") or REPO.parent / "shared" / "data")  # as tests/conftest.py
# (stored file suffix, what the answer was shown): Table-3 runs show C_T, ablations C_t − C_0.
RUNS: tuple[tuple[str, str], ...] = (
    ("sa-llm", "final"),
    ("sa-conceptnet", "final"),
    ("sa-llm&conceptnet", "final"),
    ("sa-nf-conceptnet", "final"),
    ("sa-conceptnet-5", "step5"),
)
TASKS = ("pi_emergent", "pi_canceled", "npc_emergent")
SIZE_BINS = (0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10)  # |C_T| histogram; the last bin is "10 or more"


@dataclass(frozen=True)
class Instance:
    """One stored instance: its C_0 (head first) and the stored sets C_0 … C_5, and what its answer saw."""

    task: str
    seeds: Seeds
    sets: Mapping[int, list[str]]
    shown: list[str]


@dataclass(frozen=True)
class Stats:
    """Trajectory statistics of one run over a file's instances."""

    n: int
    changed: float  # share of instances whose set (as a set) changes after step 1
    sizes: tuple[int, ...]  # |C_T| as the answer saw it, per instance
    with_seed: float  # share of C_T holding a seed word

    @property
    def median(self) -> float:
        return float(statistics.median(self.sizes)) if self.sizes else float("nan")

    @property
    def mean(self) -> float:
        return statistics.fmean(self.sizes) if self.sizes else float("nan")

    def histogram(self) -> list[float]:
        counts = Counter(min(s, SIZE_BINS[-1]) for s in self.sizes)
        return [counts[b] / max(1, len(self.sizes)) for b in SIZE_BINS]

    def tv_distance(self, other: Stats) -> float:
        """Total-variation distance between the two |C_T| histograms (0: identical, 1: disjoint)."""
        return 0.5 * sum(abs(a - b) for a, b in zip(self.histogram(), other.histogram(), strict=True))


def load_instances(path: Path, task: str, limit: int | None = None) -> list[Instance]:
    """The stored instances of one SA file (rows whose ``C``/``C_T`` cells cannot be read are skipped)."""
    frame = pd.read_csv(path, nrows=limit)
    out = []
    for line in frame.to_dict("records"):
        sets, shown = parse_step_sets(line.get("C")), split_reply_list(str(line.get("C_T")))
        if not sets or 0 not in sets or shown is None:
            continue
        if task == "npc_emergent":
            seeds = noun_phrase_completion_seeds(str(line["root"]), str(line["property"]))
        else:
            seeds = property_induction_seeds(str(line["modifier"]), str(line["root"]))
        out.append(Instance(task, seeds, sets, shown))
    return out


def _stats(histories: Sequence[Sequence[set[str]]], shown: Sequence[Sequence[str]], seeds: Sequence[Seeds]) -> Stats:
    changed = sum(any(s != sets[0] for s in sets[1:]) for sets in histories)
    with_seed = sum(bool(set(view) & set(s.as_run_c0)) for view, s in zip(shown, seeds, strict=True))
    n = len(histories)
    return Stats(n, changed / max(1, n), tuple(len(set(view)) for view in shown), with_seed / max(1, n))


def stored_stats(instances: Sequence[Instance]) -> Stats:
    """The statistics of the stored run itself (C_1 … C_5 as sets; C_T as stored)."""
    histories = [[set(i.sets[t]) for t in sorted(i.sets) if t >= 1] for i in instances]
    return _stats(histories, [i.shown for i in instances], [i.seeds for i in instances])


def activation_table(instances: Sequence[Instance]) -> dict[str, list[str]]:
    """c → every concept that followed c in a stored trajectory (the items of C_{t+1} when C_t held c)."""
    table: dict[str, dict[str, None]] = {}
    for instance in instances:
        steps = sorted(instance.sets)
        for t, nxt in pairwise(steps):
            for concept in instance.sets[t]:
                for item in instance.sets[nxt]:
                    if item != concept:
                        table.setdefault(concept, {})[item] = None
    return {c: list(items) for c, items in table.items()}


def python_list(items: Sequence[str]) -> str:
    """A list as the authors' model wrote one: Python literal syntax (single quotes unless a quote is inside)."""
    return "[" + ", ".join(repr(item) for item in items) + "]"


class StoredReplay:
    """Scripted ``generate`` for one instance: activations from the table, the t-th filter reply = stored C_t."""

    ACTIVATION = re.compile(r'^Concept: "?(.*?)"?$', re.M)

    def __init__(self, instance: Instance, table: Mapping[str, list[str]], as_run: bool) -> None:
        self.instance = instance
        self.table = table
        self.as_run = as_run
        self.filter_calls = 0

    async def __call__(self, prompt: str) -> str:
        await asyncio.sleep(0)
        if "related to both concepts" not in prompt and "Seed concepts:" not in prompt:  # an activation prompt
            concept = self.ACTIVATION.findall(prompt)[-1]
            items = self.table.get(concept, [])
            return f"Relevant concepts: {python_list(items)}" if self.as_run else json.dumps({"concepts": items})
        self.filter_calls += 1
        sets = self.instance.sets
        kept = sets.get(self.filter_calls, sets[max(sets)])
        if self.as_run:
            return f"These nodes relate to both concepts. {python_list(kept)}"
        return json.dumps({"concepts": kept})


def simulate(
    instances: Sequence[Instance],
    method_raw: str,
    view: str,
    graph: ConceptGraph | None,
    *,
    as_run: bool,
    seed: int = 0,
) -> Stats:
    """Run every instance through ccpt's algorithm (as run, or ccpt's) with :class:`StoredReplay`."""
    method, use_filter = reference_method(method_raw.rsplit("-", 1)[0] if view == "step5" else method_raw)
    use_llm = method in ("sa_llm", "sa_both")
    use_graph = method in ("sa_conceptnet", "sa_both")
    config = SAConfig(
        use_llm=use_llm,
        use_graph=use_graph,
        use_filter=bool(use_filter),
        seed=seed,
        as_run=as_run,
        prompt_variant="asrun" if as_run else None,
        max_candidates=None if as_run or use_filter else 100,  # ccpt's no-filter cap (NOFILTER_DEFAULT_CAP)
    )
    table = activation_table(instances)

    async def run_all() -> list[Trajectory]:
        activator = Activator()
        run = spread_activation_as_run if as_run else spread_activation
        return await asyncio.gather(
            *(
                run(
                    i.seeds,
                    generate=StoredReplay(i, table, as_run),
                    graph=graph if use_graph else None,
                    activator=activator,
                    config=config,
                )
                for i in instances
            )
        )

    trajectories = asyncio.run(run_all())
    histories = []
    for trajectory in trajectories:
        sets = [set(step.concepts) for step in trajectory.steps]
        histories.append(sets + [sets[-1]] * (5 - len(sets)))  # a stopped instance keeps its set
    shown = [t.at(5) if view == "step5" else t.final for t in trajectories]
    return _stats(histories, shown, [i.seeds for i in instances])


def compare(
    reference: Path,
    data_dir: Path,
    *,
    runs: int = 20,
    limit: int | None = None,
    tasks: Sequence[str] = TASKS,
    ccpt_runs: int | None = None,
) -> list[dict[str, object]]:
    """One record per (task, stored run): stored, as-run and ccpt statistics (``ccpt_runs``: seeds of ccpt's
    no-filter runs, default ``runs``)."""
    authors_graph = AuthorsNeighbourCache.load(data_dir / "conceptnet_adjacent.json")
    ccpt_graph = NeighbourCache.load(data_dir / "conceptnet_adjacent.json")
    out: list[dict[str, object]] = []
    for task in tasks:
        for suffix, view in RUNS:
            path = reference / f"{task}_gpt-4o_{suffix}.csv"
            if not path.is_file():
                continue
            instances = load_instances(path, task, limit)
            stored = stored_stats(instances)
            replayed = "nf-" not in suffix  # with the filter the stored sets are replayed: one run is exact
            seeds = range(1 if replayed else runs)
            as_run = [simulate(instances, suffix, view, authors_graph, as_run=True, seed=s) for s in seeds]
            ccpt_seeds = seeds if replayed or ccpt_runs is None else range(ccpt_runs)
            ccpt = [simulate(instances, suffix, view, ccpt_graph, as_run=False, seed=s) for s in ccpt_seeds]
            out.append({"task": task, "run": suffix, "stored": stored, "as_run": as_run, "ccpt": ccpt})
    return out


# --- step-1 composition against the stored runs (docs/methods.md, "as run per model family") --------------------

OPEN_MODEL = "Meta-Llama-3.1-70B-Instruct"  # the open model whose SA files are stored (more-models/)
COMPOSITION_RUNS = ("sa-llm", "sa-conceptnet", "sa-llm&conceptnet")
CLASSES = ("seed", "ConceptNet", "other")


def composition(concepts: Sequence[str], seeds: Seeds, graph: ConceptGraph) -> Counter[str]:
    """How many of ``concepts`` are a seed word, a stored ConceptNet neighbour of one (exact spelling), or other."""
    c0 = seeds.as_run_c0
    neighbours = {label for seed in c0 for label in graph.neighbours(seed, 50)}
    return Counter("seed" if c in c0 else "ConceptNet" if c in neighbours else "other" for c in concepts)


class FirstView:
    """Scripted ``generate`` for step 1: an LLM activation lists what followed the concept in GPT-4o's stored LLM-only
    trajectories (a real LLM's concepts, free of ConceptNet's cache); the filter keeps every node it is shown, so the
    step-1 set is the view ccpt's as-run request showed the filter."""

    def __init__(self, table: Mapping[str, list[str]]) -> None:
        self.table = table

    async def __call__(self, prompt: str) -> str:
        await asyncio.sleep(0)
        if "related to both concepts" in prompt:
            nodes = json.loads(re.findall(r"^Nodes: (.*)$", prompt, flags=re.M)[-1])
            return f"All of them. {python_list(nodes)}"
        concept = StoredReplay.ACTIVATION.findall(prompt)[-1]
        return python_list(self.table.get(concept, []))


def request_views(
    instances: Sequence[Instance],
    method_raw: str,
    graph: ConceptGraph,
    table: Mapping[str, list[str]],
    *,
    family: str,
    seed: int,
) -> list[tuple[str, ...]]:
    """What ccpt's as-run request showed the filter at step 1, per instance, for a model of ``family`` ("open": every
    method has both sources; "gpt-4o": LLM-only runs show the filter the step's whole sample), as
    ``ccpt.spreading.solver`` configures it."""
    method, _ = reference_method(method_raw)
    use_llm = method in ("sa_llm", "sa_both") or family == "open"
    use_graph = method in ("sa_conceptnet", "sa_both") or family == "open"
    earlier = family == "gpt-4o" and use_llm and not use_graph
    config = SAConfig(
        use_llm=use_llm, use_graph=use_graph, max_iterations=1, seed=seed, as_run=True, prompt_variant="asrun"
    )
    if earlier:
        config = replace(config, view_of_sample=True, filter_view=config.sample_size)

    async def run_all() -> list[Trajectory]:
        activator = Activator()
        generate = FirstView(table)
        return await asyncio.gather(
            *(
                spread_activation_as_run(
                    i.seeds, generate=generate, graph=graph if use_graph else None, activator=activator, config=config
                )
                for i in instances
            )
        )

    return [trajectory.steps[0].concepts for trajectory in asyncio.run(run_all())]


@dataclass(frozen=True)
class FilterModel:
    """The stored filter's average behaviour, measured on one stored run of the model and task against the views
    ccpt's as-run requests showed for the same instances: per class, the share of shown concepts it kept, and the
    concepts per instance it named without being shown them (a class it was never shown is kept as ConceptNet's)."""

    keep: Mapping[str, float]
    unshown: Mapping[str, float]

    @classmethod
    def fit(cls, instances: Sequence[Instance], views: Sequence[Sequence[str]], graph: ConceptGraph) -> FilterModel:
        """Fit on stored step-1 sets and the views ccpt's as-run requests showed for the same instances."""
        shown, kept, unshown = Counter(), Counter(), Counter()
        for instance, view in zip(instances, views, strict=True):
            answered = set(instance.sets.get(1, []))
            shown += composition(sorted(set(view)), instance.seeds, graph)
            kept += composition(sorted(answered & set(view)), instance.seeds, graph)
            unshown += composition(sorted(answered - set(view)), instance.seeds, graph)
        keep = {k: kept[k] / shown[k] for k in CLASSES if shown[k]}
        keep.setdefault("other", keep.get("ConceptNet", 0.0))  # never shown in the fit (GPT-4o): as any other node
        n = max(1, len(instances))
        return cls({k: keep.get(k, 0.0) for k in CLASSES}, {k: unshown[k] / n for k in CLASSES})

    def predict(
        self, instances: Sequence[Instance], views: Sequence[Sequence[str]], graph: ConceptGraph
    ) -> dict[str, float]:
        """Expected step-1 classes when this filter is shown ``views``."""
        out = {k: self.unshown[k] * len(instances) for k in CLASSES}
        for instance, view in zip(instances, views, strict=True):
            for kind, count in composition(sorted(set(view)), instance.seeds, graph).items():
                out[kind] += count * self.keep[kind]
        return out


def compare_composition(
    reference: Path, data_dir: Path, *, runs: int = 5, tasks: Sequence[str] = TASKS
) -> list[dict[str, object]]:
    """Per task, stored model (Llama-3.1-70B: the open family; GPT-4o) and SA method: the step-1 classes of the stored
    file, and the classes predicted for ccpt's as-run requests (mean over ``runs`` seeds) with the stored filter's
    behaviour fitted on the model's ConceptNet-only run (:class:`FilterModel`; that row matches by construction)."""
    graph = AuthorsNeighbourCache.load(data_dir / "conceptnet_adjacent.json")
    out: list[dict[str, object]] = []
    for task in tasks:
        llm_only = reference / f"{task}_gpt-4o_sa-llm.csv"
        table = activation_table(load_instances(llm_only, task)) if llm_only.is_file() else {}
        for model, family, folder in ((OPEN_MODEL, "open", reference / "more-models"), ("gpt-4o", "gpt-4o", reference)):
            files = {suffix: folder / f"{task}_{model}_{suffix}.csv" for suffix in COMPOSITION_RUNS}
            if not all(path.is_file() for path in files.values()):
                continue
            loaded = {suffix: load_instances(path, task) for suffix, path in files.items()}
            views = {
                suffix: [
                    request_views(loaded[suffix], suffix, graph, table, family=family, seed=s) for s in range(runs)
                ]
                for suffix in COMPOSITION_RUNS
            }
            calibration = "sa-conceptnet"
            filter_model = FilterModel.fit(loaded[calibration], views[calibration][0], graph)
            for suffix in COMPOSITION_RUNS:
                instances = loaded[suffix]
                stored = sum((composition(i.sets.get(1, []), i.seeds, graph) for i in instances), Counter())
                predicted = [filter_model.predict(instances, v, graph) for v in views[suffix]]
                ccpt = {k: statistics.fmean(p[k] for p in predicted) for k in CLASSES}
                out.append(
                    {"task": task, "model": model, "run": suffix, "n": len(instances), "stored": stored, "ccpt": ccpt}
                    | {"fitted": suffix == calibration}
                )
    return out


def _shares(counts: Mapping[str, float]) -> list[float]:
    total = sum(counts.get(k, 0) for k in CLASSES)
    return [100 * counts.get(k, 0) / total if total else float("nan") for k in CLASSES]


def composition_markdown(records: Sequence[Mapping[str, object]]) -> str:
    """The side-by-side step-1 table: per class, the share of step-1 concepts (%) stored and predicted for ccpt's
    as-run requests, and the largest difference in points (docs/methods.md)."""
    lines = [
        "| task | model | SA run | n | stored: seed / ConceptNet / other (%) | ccpt as-run (%) | largest gap |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        stored, ccpt = _shares(r["stored"]), _shares(r["ccpt"])  # type: ignore[arg-type]
        gap = max(abs(a - b) for a, b in zip(stored, ccpt, strict=True))
        note = " (fit)" if r["fitted"] else ""
        lines.append(
            f"| {r['task']} | {r['model']} | {r['run']}{note} | {r['n']} | "
            + " / ".join(f"{v:.0f}" for v in stored)
            + " | "
            + " / ".join(f"{v:.0f}" for v in ccpt)
            + f" | {gap:.1f} |"
        )
    return "\n".join(lines)


def _cell(values: Sequence[float], fmt: str) -> str:
    mean = statistics.fmean(values)
    if len(values) == 1 or max(values) == min(values):
        return format(mean, fmt)
    return f"{format(mean, fmt)} [{format(min(values), fmt)}, {format(max(values), fmt)}]"


def markdown(records: Sequence[Mapping[str, object]]) -> str:
    """The side-by-side table (docs/methods.md)."""
    lines = [
        "| task | stored run | n | changes after step 1: stored / as-run / ccpt | |C_T| median, mean: stored / as-run"
        " / ccpt | TV(|C_T|) as-run / ccpt | C_T with a seed word: stored / as-run / ccpt |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in records:
        stored, as_run, ccpt = r["stored"], r["as_run"], r["ccpt"]
        assert isinstance(stored, Stats) and isinstance(as_run, list) and isinstance(ccpt, list)
        lines.append(
            f"| {r['task']} | {r['run']} | {stored.n} "
            f"| {stored.changed:.1%} / {_cell([s.changed for s in as_run], '.1%')} / "
            f"{_cell([s.changed for s in ccpt], '.1%')} "
            f"| {stored.median:g}, {stored.mean:.2f} / {_cell([s.median for s in as_run], '.1f')}, "
            f"{_cell([s.mean for s in as_run], '.2f')} / {_cell([s.median for s in ccpt], '.1f')}, "
            f"{_cell([s.mean for s in ccpt], '.2f')} "
            f"| {_cell([s.tv_distance(stored) for s in as_run], '.3f')} / "
            f"{_cell([s.tv_distance(stored) for s in ccpt], '.3f')} "
            f"| {stored.with_seed:.1%} / {_cell([s.with_seed for s in as_run], '.1%')} / "
            f"{_cell([s.with_seed for s in ccpt], '.1%')} |"
        )
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--reference", type=Path, default=SHARED / "reference-results")
    parser.add_argument("--data-dir", type=Path, default=SHARED / "ccpt")
    parser.add_argument("--runs", type=int, default=20, help="seeds for the no-filter runs (default 20)")
    parser.add_argument("--limit", type=int, default=None, help="first N instances of each file")
    parser.add_argument(
        "--composition",
        action="store_true",
        help=f"only the step-1 composition against {OPEN_MODEL}'s and GPT-4o's stored runs",
    )
    args = parser.parse_args(argv)
    if args.composition:
        print(composition_markdown(compare_composition(args.reference, args.data_dir, runs=args.runs)))
        return 0
    print(markdown(compare(args.reference, args.data_dir, runs=args.runs, limit=args.limit)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
