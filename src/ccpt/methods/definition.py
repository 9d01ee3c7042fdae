"""What a method is: the frozen :class:`Method` record that each module of :mod:`ccpt.methods` declares (its solver
named ``"module:function"``, so that this core module never imports Inspect)."""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from operator import attrgetter
from typing import Any

from ccpt.errors import CcptError
from ccpt.scoring import Relevances
from ccpt.spec import BASE, BASE_TEMPLATE, NOFILTER_SUFFIX, ScoredType, Source, TaskSpec

Range = tuple[int, int]  # (low, high) of a call count
# A declared call count's bound per instance and seed, for the solver's calls and the judge's alike: the built-in
# methods plan at most 1,201 (Spreading Activation at its 100-step bound, answering at every step); a plug-in
# declaring more is a slip (a count per run multiplied again) that would plan a runaway run or price a false cost.
MAX_CALLS_PER_ANSWER = 10_000
UNJUDGED = Relevances(None, None, None)  # a Task-3 sample's: its answer is a label, no judge rates it


@dataclass(frozen=True)
class Judged:
    """One judged sample of an instance and seed: its parsed answer (None: not parsed) and its relevances (Task 3:
    none, its answer is a label)."""

    answer: str | None
    relevances: Relevances = UNJUDGED


@dataclass(frozen=True)
class Cell:
    """The values one instance and seed contributes to a Table-3 row: R_H,M,P, R_N,P and E (or C), and the answer
    it counts (Task 3's predicted type: Table 5 and the accuracy read it; None: none parsed)."""

    r_hmp: float | None
    r_np: float | None
    score: float | None
    answer: str | None = None


# The samples of one instance and seed → its cell; the kind is the task's (None: Task 3, whose answers are labels);
# ``oracle``: the report's ``--oracle`` ("paper" or "single").
Reduction = Callable[[Sequence[Judged], ScoredType | None, str], Cell]


@dataclass(frozen=True)
class Plan:
    """What ``--dry-run`` knows of one task run before it starts: the call counts are computed from it."""

    spec: TaskSpec
    instances: Sequence[Mapping[str, Any]]  # the metadata of each instance the run would answer
    seeds: int
    options: Mapping[str, Any]  # the sweep's task options (``oracle_n``, ``sa_max_iterations``, …)
    model: str | None = None  # the answering model (its protocol family can change the calls); None: any
    protocol: str | None = None  # the task's protocol (None: the default)


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None and not math.isnan(v)]
    return sum(present) / len(present) if present else None


def _mode(answers: Sequence[str | None]) -> str | None:
    """The most common parsed answer, a tie to the one given first (Inspect's ``mode`` reducer); None: none parsed."""
    counts = Counter(a for a in answers if a is not None)
    return counts.most_common(1)[0][0] if counts else None


def mean_cell(samples: Sequence[Judged], kind: ScoredType | None, oracle: str = "paper") -> Cell:
    """Each column the mean of the samples that have it; the answer the most common one (a label's average is its
    mode); one sample: its own values."""
    rel = [s.relevances for s in samples]
    score = _mean([r.score(kind) for r in rel]) if kind is not None else None
    return Cell(_mean([r.r_hmp for r in rel]), _mean([r.r_np for r in rel]), score, _mode([s.answer for s in samples]))


def majority(samples: Sequence[Judged], kind: ScoredType | None, oracle: str = "paper") -> Cell:
    """Self-consistency: the most common parsed answer wins (Inspect's ``mode`` reducer over the answers); its
    cells are the mean of the samples that gave it."""
    winner = _mode([s.answer for s in samples])
    if winner is None:
        return Cell(None, None, None)
    return mean_cell([s for s in samples if s.answer == winner], kind, oracle)


def answer_calls(method: Method, plan: Plan) -> tuple[Range, Range]:
    """(solver calls, judge calls) of a method that only answers: one call per sample; a generative task judges
    three memoised (concept, property) pairs per answer, so at least three per instance."""
    instances = len(plan.instances)
    answers = instances * plan.seeds * method.sample_count(plan.options)
    judge = (3 * instances, 3 * answers) if plan.spec.generative else (0, 0)
    return (answers, answers), judge


def calls_problem(value: Any, plan: Plan) -> str | None:
    """Why ``value``, a method's declared calls for ``plan``, is not two (low, high) ranges of integers
    0 ≤ low ≤ high, each at most :data:`MAX_CALLS_PER_ANSWER` per instance and seed; None if it is."""

    def count(x: Any) -> bool:
        return isinstance(x, int) and not isinstance(x, bool) and x >= 0

    if not (
        isinstance(value, Sequence)
        and len(value) == 2
        and all(isinstance(r, Sequence) and len(r) == 2 and count(r[0]) and count(r[1]) and r[0] <= r[1] for r in value)
    ):
        return f"calls returns {value!r}: (solver, judge) ranges of integers 0 ≤ low ≤ high"
    if any(high > MAX_CALLS_PER_ANSWER * max(1, len(plan.instances)) * max(1, plan.seeds) for _, high in value):
        return (
            f"calls returns {value!r}, more than {MAX_CALLS_PER_ANSWER:,} calls per instance and seed "
            f"({len(plan.instances)} instance(s), {plan.seeds} seed(s))"
        )
    return None


@dataclass(frozen=True)
class Method:
    """A registered method; ``filter=False`` is its Filter ablation (``<name>_nofilter``, spreading only)."""

    base: str  # the registered name
    label: str  # display name in reports
    solver: str  # "module:function" → (spec, method, options, protocol) -> Inspect Solver
    template: str = BASE_TEMPLATE  # prompt template of the final answer (also sizes --dry-run's prompts)
    samples: Callable[[Mapping[str, Any]], int] = lambda options: 1  # answers per instance and seed, from the options
    reduce: Reduction = mean_cell  # the samples of one instance and seed → its cell (report and Inspect's score)
    calls: Callable[[Method, Plan], tuple[Range, Range]] = answer_calls  # --dry-run's (solver, judge) calls
    applies: Callable[[TaskSpec], bool] = attrgetter("generative")  # the tasks it runs on (default Tasks 1 and 2)
    seeds: int | None = None  # a fixed number of seeds (Gold: one), else the run's
    source: Source | None = None  # spreading activation's concept source
    filter: bool = True

    def sample_count(self, options: Mapping[str, Any]) -> int:
        """``samples(options)``, checked: an integer in [1, 100] (``--oracle-n``'s bounds), else a PluginError naming
        the method. Registration probes the defaults only; a plug-in answering 0 or a million for a run's options
        planned "judge calls 6–0" or two million calls."""
        from ccpt.errors import PluginError
        from ccpt.schemas.run import MAX_SAMPLES

        try:
            count = self.samples(options)
        except Exception as exc:
            raise PluginError(f"method {self.base!r}: samples raises {type(exc).__name__}: {exc}") from None
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_SAMPLES:
            raise PluginError(
                f"method {self.base!r}: samples gives {count!r} for the run's options; an integer in [1, {MAX_SAMPLES}]"
            )
        return count

    def call_ranges(self, plan: Plan) -> tuple[Range, Range]:
        """``calls(plan)``, checked: two (low, high) ranges of integers 0 ≤ low ≤ high, else a PluginError."""
        from ccpt.errors import PluginError

        try:
            ranges = self.calls(self, plan)
        except PluginError:
            raise
        except Exception as exc:
            raise PluginError(f"method {self.base!r}: calls raises {type(exc).__name__}: {exc}") from None
        if problem := calls_problem(ranges, plan):
            raise PluginError(f"method {self.base!r}: {problem}")
        return ranges

    def check(self, task: TaskSpec) -> None:
        """Raise a CcptError (one line) if this method does not apply to ``task``."""
        if self.applies(task):
            return
        if not task.generative:
            raise CcptError(f"{task.name} has only the paper's single prompt: use method {BASE!r}")
        raise CcptError(f"method {self.base!r} does not apply to {task.name}")

    @property
    def name(self) -> str:
        """The name as written on the command line and stored in logs (``sa_both_nofilter``)."""
        return self.base if self.filter else self.base + NOFILTER_SUFFIX

    @property
    def spreading(self) -> bool:
        """Whether the method is spreading activation (Algorithm 1)."""
        return self.source is not None

    @property
    def uses_llm(self) -> bool:
        """Spreading activation that asks the model for related concepts."""
        return self.source in ("llm", "both")

    @property
    def uses_graph(self) -> bool:
        """Spreading activation that takes related concepts from ConceptNet."""
        return self.source in ("conceptnet", "both")
