"""What a result file says about itself, checked against what else it says and against the dataset: an Inspect log's
per-sample records against its header, a record's item against the dataset's item under that id, the samples a
method draws, the id scheme of a run's rows. Each check gives one phrase naming the first culprit, or None; the
readers set the file aside (a log) or refuse it (a tidy table) with it, never scoring part of it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ccpt import methods
from ccpt.dataset import FILE_SPECS, clean_combination
from ccpt.protocol import AS_RUN
from ccpt.spec import GOLD, TASK_SPECS, TASKS, TYPE_LABELS, TYPE_PREDICTION, split_method, type_label

if TYPE_CHECKING:
    import pandas as pd

    from ccpt.dataset import CCPTDataset

REJUDGE_PREFIX = "rejudge_"  # a re-judged log's task: ``rejudge_<task>`` (ccpt.eval.rejudge)
RELEVANCES = ("r_np", "r_hp", "r_mp")


@dataclass(frozen=True)
class LogHeader:
    """What an Inspect log's header says every record of it is (None: the header does not say)."""

    task: str | None  # the ccpt task of its records (None: a log of another task that stores ccpt records)
    method: str | None  # as run, with ``_nofilter``
    model: str | None  # None for a re-judged log: its records keep their source's model
    protocol: str | None  # None: an older log that does not record it
    options: Mapping[str, Any]  # the task's recorded options (``oracle_n``): how many samples its method draws
    rejudged: bool  # a ``ccpt rejudge`` log: sample ids are ``<instance>@<seed>``

    @classmethod
    def of(cls, log: Any) -> LogHeader:
        """The header of an ``inspect_ai.log.EvalLog``."""
        name = str(log.eval.task).split("/")[-1]
        rejudged = name.startswith(REJUDGE_PREFIX) and name.removeprefix(REJUDGE_PREFIX) in TASK_SPECS
        task = name.removeprefix(REJUDGE_PREFIX) if rejudged else name if name in TASK_SPECS else None
        args = log.eval.task_args if isinstance(log.eval.task_args, Mapping) else {}
        meta = log.eval.metadata if isinstance(log.eval.metadata, Mapping) else {}
        method = args.get("method", meta.get("method")) if task is not None else None
        model = None if rejudged or task is None else str(log.eval.model)
        protocol = args.get("protocol", meta.get("protocol")) if task is not None and not rejudged else None
        method = None if method is None else str(method)
        return cls(task, method, model, None if protocol is None else str(protocol), {**meta, **args}, rejudged)


def record_problem(
    meta: Any, header: LogHeader, sample_id: Any, epoch: int, items: Mapping[str, tuple[str, str]] | None
) -> str | None:
    """The first way one sample's ``ccpt`` score metadata contradicts its log's header or the dataset (``items``:
    instance id → (combination, property), :func:`dataset_items`), as one phrase, or None."""
    if not isinstance(meta, Mapping):
        return f"sample {sample_id!r}: its ccpt metadata is not an object"
    members = [{}] if meta.get("samples") is None else meta["samples"]
    if not isinstance(members, list) or not all(isinstance(m, Mapping) for m in members):
        return None  # the reader names this one (rows_from_metadata)
    base = {k: v for k, v in meta.items() if k != "samples"}
    main = 0  # members of the final answer (not an SA step): numbered 0, 1, … in order
    for member in members:
        record = {**base, **member}
        where = f"sample {sample_id!r}, epoch {epoch}"
        step = record.get("sa_iteration") is not None
        if problem := _header_problem(record, header, sample_id, epoch):
            return f"{where}: {problem}"
        number = record.get("sample", 0 if step else main)
        if isinstance(number, bool) or number != (0 if step else main):
            return f"{where}: record says sample {number!r} where its place says {0 if step else main}"
        main += not step
        for name in RELEVANCES:
            value = record.get(name)
            # NaN is a float: read as "not judged", it left the sample out of the mean with no line.
            if value is not None and (isinstance(value, bool) or not isinstance(value, int | float) or value != value):
                return f"{where}: {name} {value!r} is not a number"
        # The text 'false' is true to Python and read as false by the tidy schema: a log's flag is true or false.
        if (parsed := record.get("parse_ok")) is not None and not isinstance(parsed, bool):
            return f"{where}: parse_ok {parsed!r} is not true/false"
        if items is not None and (problem := item_problem(record, items, required=header.task is not None)):
            return f"{where}: {problem}"
        if problem := row_problem(record, log=True) or _past_steps(record, header.options.get("sa_max_iterations")):
            return f"{where}: {problem}"
        # ccpt judges an answer: relevances beside none were scored in the means (a tidy table made by hand may
        # leave its answers out; a log holds what was judged).
        held = next((n for n in RELEVANCES if record.get(n) is not None), None)
        if held is not None and not str(record.get("answer") or "").strip():
            return f"{where}: it holds {held} {record[held]!r} but no answer"
        if step and header.options.get("sa_answer_every_step") is False:  # Table 6's column of a run without steps
            return f"{where}: step answer {record['sa_iteration']!r} of a run without sa_answer_every_step"
        # ccpt's scorer judges a parsed answer only, and counts a failure per pair left without a relevance: a
        # record saying otherwise moves samples between the Failures table's columns and the means.
        missing = sum(record.get(name) is None for name in RELEVANCES)
        failures = record.get("judge_failures")
        judged = record.get("parse_ok") is True and TASK_SPECS.get(str(record.get("task"))) in GENERATIVE_SPECS
        if isinstance(failures, int) and not isinstance(failures, bool) and judged and failures != missing:
            return f"{where}: record says {failures} judge failure(s) but {missing} pair(s) without a relevance"
    # A run's header records the options that set its count (oracle_n); a re-judged log's or another task's does
    # not: there only a one-sample method's count is known. No record at all is no answer of the header's method.
    method = record.get("method") if members else header.method
    run = header.task is not None and not header.rejudged
    drawn = samples_drawn(str(method), header.options if run else {}) if method is not None else None
    drawn = drawn if run or drawn == 1 else None
    # A run's record holds every answer its method drew (a failed call fails the sample, no record): fewer is a
    # member dropped or a header claiming a larger n (best-of-2 shown as best-of-5). A re-judge keeps what it read.
    if drawn is not None and (main > drawn or (run and main < drawn)):
        return f"sample {sample_id!r}, epoch {epoch}: {main} answers of method {method!r}, which draws {drawn}"
    return None


def _header_problem(record: Mapping[str, Any], header: LogHeader, sample_id: Any, epoch: int) -> str | None:
    """How a record contradicts its log's header (task, method, filter, model, protocol, seed, instance), or None."""
    said = {"task": header.task, "method": header.method, "model": header.model, "protocol": header.protocol}
    for name, expected in said.items():
        value = record.get(name)
        if expected is not None and (value is not None or name not in ("model", "protocol")) and str(value) != expected:
            return f"record says {name} {value!r}, its log {expected!r}"
    # The filter is part of the method: a Base record saying sa_filter false is read as a filter-ablation row.
    sa_filter = record.get("sa_filter")
    if header.method is not None and sa_filter is not None and sa_filter != split_method(header.method)[1]:
        return f"record says sa_filter {sa_filter!r}, its log's method {header.method!r}"
    if header.task is None:
        return None
    seed, instance = record.get("seed"), record.get("instance")
    if header.rejudged:
        if str(sample_id) != f"{instance}@{seed}":
            return f"record says instance {instance!r} seed {seed!r}, its sample id {str(sample_id)!r}"
        return None
    if seed is not None and (isinstance(seed, bool) or seed != epoch - 1):
        return f"record says seed {seed!r}, its epoch {epoch} (seed {epoch - 1})"
    if str(instance) != str(sample_id):
        return f"record says instance {instance!r}, its sample id {str(sample_id)!r}"
    return None


def sample_set_problem(log: Any, test_ids: Mapping[str, set[str]] | None = None) -> str | None:
    """How the samples a log holds contradict its header, or None: a sample of an epoch past the log's epochs (a
    seed the run never drew), a finished log holding other than the samples its results count (a sample file
    removed, or one sample's id moved onto another's), or, given each task's test ids (:func:`test_splits`), an
    instance outside the split its header names (test items under ``split: train``): each would change a cell, or
    the row a cell is shown in, with no line naming it."""
    epochs = getattr(log.eval.config, "epochs", None)
    samples = log.samples or []
    if isinstance(epochs, int) and (late := next((s for s in samples if (s.epoch or 1) > epochs), None)):
        return f"sample {late.id!r} has epoch {late.epoch}, past the log's {epochs} epoch(s) (seeds)"
    total = getattr(log.results, "total_samples", None)
    if log.status == "success" and isinstance(total, int) and len(samples) != total:
        return f"holds {len(samples)} samples where its header says it finished {total}"
    # The instance set is part of the run's identity (its variant): the header's limit must be the instances it names.
    limit, named, size = log.eval.config.limit, log.eval.dataset.sample_ids, log.eval.dataset.samples
    if isinstance(limit, int) and isinstance(named, list) and isinstance(size, int) and len(named) != min(limit, size):
        return f"its header says limit {limit} of {size} instances but names {len(named)}"
    if isinstance(named, list) and (stray := next((s.id for s in samples if s.id not in set(named)), None)):
        return f"sample {stray!r} is not among the instances its header names"
    header = LogHeader.of(log)
    split = header.options.get("split")
    if test_ids is None or header.rejudged or (ids := test_ids.get(str(header.task))) is None or split is None:
        return None
    outside = next((s.id for s in samples if (str(s.id) in ids) != (split == "test")), None)
    return None if outside is None else f"sample {outside!r} is not in the {split} split its header names"


def test_splits(dataset: CCPTDataset) -> dict[str, set[str]]:
    """Each generative task's test instance ids."""
    from ccpt.spec import GENERATIVE_TASKS

    return {task: {r.id for r in dataset.test(task)} for task in GENERATIVE_TASKS}


def samples_drawn(method: str, options: Mapping[str, Any]) -> int | None:
    """How many answers per instance and seed a registered method draws with ``options`` (None: not registered)."""
    found = methods.get(split_method(method)[0])
    try:  # unchecked: a recorded oracle_n of 500 draws 500, which the rows are then checked against
        return int(found.samples(options)) if found is not None else None
    except Exception:  # a recorded option that is not a number, or a plug-in failing on it: the count is not known
        return None


def dataset_items(dataset: CCPTDataset) -> dict[str, tuple[str, str]]:
    """Instance id → (combination, property) of every item a ccpt task can ask about: each record of the dataset's
    files (Tasks 1 and 2) and each Task-3 id form (``<type>:<record>``, ``others:<record>+<record>``)."""
    records = [*dataset.paper_records, *dataset.extra_emergent]
    return {r.id: (r.combination.strip(), r.property.strip()) for r in records}


GENERATIVE_SPECS = tuple(spec for spec in TASK_SPECS.values() if spec.generative)
_TYPE_ID = re.compile(r"^(?P<type>[a-z]+):(?P<source>[^+]+:\d+)(?:\+(?P<property_source>[^+]+:\d+))?$")


def item_problem(record: Mapping[str, Any], items: Mapping[str, tuple[str, str]], *, required: bool) -> str | None:
    """How a record's combination and property differ from the dataset's item under its instance id, or None
    (``required``: an id the dataset does not hold is a problem too; else it is not checked)."""
    instance = str(record.get("instance"))
    expected = items.get(instance)
    if expected is None and (found := _TYPE_ID.match(instance)):  # Task 3: the combination's and property's rows
        source, other = items.get(found["source"]), items.get(found["property_source"] or found["source"])
        expected = (source[0], other[1]) if source and other else None
    if expected is None:
        return f"instance {instance!r} is not in the given dataset (made on another dataset?)" if required else None
    # A generative task asks about one property type: an item of a file of another type is another task's.
    spec, kind = TASK_SPECS.get(str(record.get("task"))), FILE_SPECS.get(instance.rsplit(":", 1)[0], (None,))[0]
    if spec is not None and spec.kind is not None and kind is not None and kind != spec.kind:
        return f"instance {instance!r} is an item of {kind} properties, not of task {spec.name!r} ({spec.kind})"
    # A row of the authors' files keeps their text ("a beaten dog,"): the dataset's item is its cleaned form.
    given = (clean_combination(str(record.get("combination") or "")), str(record.get("property") or "").strip())
    if given != expected:
        return (
            f"instance {instance!r} is {given[0]!r} / {given[1]!r} in the file but {expected[0]!r} / {expected[1]!r} "
            "in the given dataset (made on another version of the dataset with the same ids?)"
        )
    return None


def row_problem(row: Mapping[str, Any], *, log: bool = False) -> str | None:
    """How one row (or, ``log``, log record) contradicts its own task and method, as one phrase, or None: a Spreading
    Activation cell on a method without it, relevances on a task whose answers are not judged (a generative row
    moved to Task 3 left its cell an answer short), more judge failures than pairs without a relevance, a Gold
    answer other than its item's annotated one (a model's answers relabelled ``gold`` printed as the upper bound)."""
    method = row.get("method")
    found = methods.get(split_method(str(method))[0]) if method is not None else None
    # A Base row with sa_filter false is read as a filter-ablation row (Table 7), with sa_iteration as a step of
    # Table 6: either leaves its run's row an answer short; a failed step is counted in the Failures table.
    for name in ("sa_filter", "sa_iteration", "sa_failed_steps"):
        if found is not None and not found.spreading and row.get(name) is not None:
            return f"{name} {row[name]!r} on method {method!r}, which has no spreading activation"
    spec = TASK_SPECS.get(str(row.get("task")))
    if spec is None:
        return None
    if not spec.generative and (name := next((n for n in RELEVANCES if row.get(n) is not None), None)):
        return f"{name} {row[name]!r} on task {spec.name!r}, whose answers are not judged"
    # An answer that did not parse is neither judged nor predicts a type: a row saying otherwise was counted a parse
    # failure in the Failures table and scored in the means. As run, the authors' files keep their judge's score of
    # what their code read from a reply ccpt's parser refuses (5 rows of the GPT-4o files, 101 of more-models); they
    # record no run arguments. ccpt's scorer judges parsed answers only under either protocol: a log or a run's row
    # saying otherwise is refused (a run's failed answers given scores under an `as-run` label were averaged in).
    held = next((n for n in _PARSED if row.get(n) is not None), None)
    authors = row.get("protocol") == AS_RUN.name and not log and not row.get("variant")
    stored = held in RELEVANCES and authors  # the authors' judge's, of what they read
    if held is not None and not stored and row.get("parse_ok") is False:
        return f"its answer did not parse, yet it holds {held} {row[held]!r}"
    if not spec.generative and (problem := _type_problem(row)):
        return problem
    # A judge failure is a pair left without a relevance: more of them than such pairs filled the Failures table.
    failures, missing = row.get("judge_failures"), sum(row.get(name) is None for name in RELEVANCES)
    if spec.generative and isinstance(failures, int) and not isinstance(failures, bool) and failures > missing:
        return f"{failures} judge failure(s) but {missing} pair(s) without a relevance"
    answer, gold = row.get("answer"), row.get("combination" if spec.completes_phrase else "property")
    gold_row = row.get("method") == GOLD and spec.generative and answer is not None and gold is not None
    if gold_row and _plain(str(answer)) != _plain(str(gold)):
        return f"Gold answer {str(answer)!r} is not its item's annotated answer {str(gold)!r}"
    return None


_PARSED = (*RELEVANCES, "pred_type")  # what only a parsed answer has
# A Task-3 id names its gold type: ``<type>:<record>``, or the authors' ``type_prediction:others:<N>|<P>``.
_GOLD_OF_ID = re.compile(rf"^(?:{TYPE_PREDICTION}:)?({'|'.join(TYPE_LABELS)}):")


def _type_problem(row: Mapping[str, Any]) -> str | None:
    """How a Task-3 row's gold type contradicts its instance id, or its predicted type its answer, or None: either
    edit moved Table 5's accuracy with no line."""
    gold, predicted, answer, instance = (
        row.get("gold_type"),
        row.get("pred_type"),
        row.get("answer"),
        row.get("instance"),
    )
    if (found := _GOLD_OF_ID.match(str(instance))) is not None:
        # The type an id names is its record's file's ("emergent:ccpt_canceled:242" relabels a canceled item).
        kind = FILE_SPECS.get(str(instance)[found.end() :].rsplit(":", 1)[0], (None,))[0]
        if kind is not None and kind != found[1]:
            return f"instance {str(instance)!r} names type {found[1]!r} for an item of {kind} properties"
        if gold is not None and str(gold) != found[1]:
            return f"gold_type {gold!r} on instance {str(instance)!r}, an item of type {found[1]!r}"
    said = type_label(str(answer)) if answer is not None else None
    if predicted is not None and said is not None and said != str(predicted):
        return f"pred_type {predicted!r} where its answer {str(answer)!r} says {said!r}"
    return None


def _plain(text: str) -> str:
    return " ".join(clean_combination(text).split()).casefold()


def variant_problem(
    rows: Sequence[Mapping[str, Any]],
    items: Mapping[str, tuple[str, str]] | None = None,
    splits: Mapping[str, set[str]] | None = None,
) -> str | None:
    """The first run of a tidy table whose rows contradict the arguments their ``variant`` records, as one phrase, or
    None: more instances than its recorded ``limit``, or, given the dataset's ``items`` and each task's test ids
    (:func:`test_splits`), a dataset instance outside the ``split`` it records (test items under ``split: train``).
    A log's header is checked the same way (:func:`sample_set_problem`)."""
    recorded: dict[Any, dict[str, Any]] = {}  # variant → its arguments (a table has millions of rows, few runs)
    covered: dict[tuple[Any, ...], set[str]] = {}
    for number, row in enumerate(rows):
        if (variant := row.get("variant")) not in recorded:
            recorded[variant] = _recorded(variant, None)
            if variant is not None and not recorded[variant] and str(variant).strip() != "{}":
                return f"row {number}: variant {str(variant)!r} is not the JSON object of a run's arguments"
        split, instance = recorded[variant].get("split"), str(row.get("instance"))
        ids = splits.get(str(row.get("task"))) if splits is not None and items is not None else None
        outside = ids is not None and instance in items and (instance in ids) != (split == "test")  # type: ignore[operator]
        if split in ("test", "train") and outside:
            return f"row {number}: instance {instance!r} is not in the {split} split its run records (variant)"
        covered.setdefault(tuple(row.get(c) for c in _RUN_SAMPLE[:-2]), set()).add(instance)
    for (_t, model, method, *_, variant), instances in covered.items():
        limit = recorded[variant].get("limit")
        if isinstance(limit, int) and not isinstance(limit, bool) and 0 < limit < len(instances):
            return (
                f"the run of model {model!r}, method {method!r} records limit {limit} but its rows cover "
                f"{len(instances)} instances"
            )
    return None


def dataset_versions(rows: Sequence[Mapping[str, Any]], dataset: CCPTDataset) -> set[str]:
    """The dataset digests (12 hex digits) the rows' ``variant`` records other than ``dataset``'s."""
    found = {_recorded(v, None).get("dataset") for v in {row.get("variant") for row in rows}}
    return {str(d) for d in found if d is not None and d != dataset.sha256[:12]}


def method_problem(rows: Sequence[Mapping[str, Any]], items: Mapping[str, tuple[str, str]] | None = None) -> str | None:
    """The first row claiming what its method never gives, as one phrase, or None: a method cell that is no method
    name (its label ``Base``: a second Base row), a sample ≥ 1 of a one-sample method (averaged in, it would change
    the cell), other than the answers per instance and seed its row's recorded ``oracle_n`` draws, a filter or step
    cell of a registered method without spreading activation (a Base row with ``sa_filter`` false is read as a
    filter-ablation row, with ``sa_iteration`` as a step of Table 6: either leaves its run's row an answer short), or,
    given the dataset's ``items`` (:func:`dataset_items`), an item other than the
    dataset's under its id (an id it does not hold, as a row position, is not checked)."""
    answers: dict[tuple[Any, ...], list[Mapping[str, Any]]] = {}  # per run, seed and instance: its final answers
    steps: dict[tuple[Any, ...], int] = {}  # per run, seed and instance with a Spreading Activation step: its row
    finals: set[tuple[Any, ...]] = set()  # runs, and their seeds and instances, with a final answer
    counts: dict[tuple[Any, Any], int | None] = {}  # per (variant, method): the answers drawn, where known
    for number, row in enumerate(rows):
        sample, method = row.get("sample"), row.get("method")
        if method is not None and not methods.NAME.fullmatch(str(method)):
            return f"row {number}: method {str(method)!r} is no method name (the tidy table holds names, as `base`)"
        said = row.get("combination") is not None or row.get("property") is not None
        # An id the dataset does not hold is not checked: Task 3's pairs drawn by text (the authors'
        # ``type_prediction:others:<N>|<P>``), a table made by hand; an item under one of its ids must be its item.
        if items is not None and said and (problem := item_problem(row, items, required=False)):
            return f"row {number}: {problem}"
        if problem := row_problem(row):
            return f"row {number}: {problem}"
        # How many answers its method draws: one for a one-sample method whatever its arguments; with the arguments
        # its row records (oracle_n), as many as they say. A sample past them would be counted in the cell.
        if (key := (row.get("variant"), method)) not in counts:  # a table has millions of rows, few runs
            options = _recorded(*key)
            drawn = samples_drawn(str(method), options) if method is not None else None
            counts[key] = drawn if drawn == 1 or options else None
        drawn = counts[key]
        if sample and drawn is not None and sample >= drawn:
            return f"row {number}: sample {sample} of method {method!r}, which draws {drawn} answer(s) per seed"
        if drawn is not None and drawn > 1 and row.get("sa_iteration") is None:
            answers.setdefault((*(row.get(c) for c in _RUN_SAMPLE), drawn), []).append(row)
        if problem := _step_problem(row, number, steps, finals):
            return f"row {number}: {problem}"
    # A step answered beside a final answer (sa_answer_every_step): a run's step without its final left its
    # Table-3 cell an answer short (a file holding per-step rows only has no final answers at all).
    stray = next((n for key, n in steps.items() if key not in finals and key[:-2] in finals), None)
    if stray is not None:
        return f"row {stray}: a Spreading Activation step answer (sa_iteration) without its seed's final answer"
    # Fewer answers than drawn is another n (best-of-2 shown as best-of-5); a failed sample is one row, unscored.
    for (*_, method, _f, _j, _p, _v, seed, instance, drawn), found in answers.items():
        failed = len(found) == 1 and not found[0].get("parse_ok") and found[0].get("r_np") is None
        if len(found) < drawn and not failed:
            return f"{len(found)} answer(s) of method {method!r}, instance {instance!r}, seed {seed}: it draws {drawn}"
    return None


_RUN_SAMPLE = ("task", "model", "method", "sa_filter", "judge", "protocol", "variant", "seed", "instance")


def _step_problem(
    row: Mapping[str, Any], number: int, steps: dict[tuple[Any, ...], int], finals: set[tuple[Any, ...]]
) -> str | None:
    """A Spreading Activation step (``sa_iteration``) or failed-step count past the run's recorded number of steps
    (``sa_max_iterations``), or None; notes row ``number`` in ``steps`` or ``finals`` (its run's and its own key)."""
    key = tuple(row.get(c) for c in _RUN_SAMPLE)
    if row.get("sa_iteration") is None:
        finals.update((key, key[:-2]))
    else:
        steps.setdefault(key, number)
    counted = any(isinstance(row.get(n), int) and row[n] > 0 for n in ("sa_iteration", "sa_failed_steps"))
    return _past_steps(row, _recorded(row.get("variant"), None).get("sa_max_iterations")) if counted else None


def _past_steps(row: Mapping[str, Any], most: Any) -> str | None:
    """A step (``sa_iteration``) or failed-step count past ``most``, its run's ``sa_max_iterations``, or None: Table
    6 printed a column C_9 of a run of 5 steps."""
    if not isinstance(most, int) or isinstance(most, bool):
        return None
    for name in ("sa_iteration", "sa_failed_steps"):
        if isinstance(value := row.get(name), int) and not isinstance(value, bool) and value > most:
            return f"{name} {value} past the {most} steps its run records (sa_max_iterations)"
    return None
    for name in ("sa_iteration", "sa_failed_steps"):
        if isinstance(value := row.get(name), int) and value > most:
            return f"{name} {value} past the {most} steps its run records (sa_max_iterations)"
    return None


def _recorded(variant: Any, method: Any) -> dict[str, Any]:
    """The arguments a tidy row's ``variant`` (JSON) records: with a ``method``, those that set how many answers it
    draws (``oracle_n``; :data:`ccpt.schemas.run.IDENTITY_ARGS`); with None, all. {} where it records none."""
    from ccpt.schemas.run import IDENTITY_ARGS

    try:
        values = json.loads(str(variant)) if variant is not None else {}
    except ValueError:
        return {}
    if not isinstance(values, dict) or method is None:
        return values if isinstance(values, dict) else {}
    wanted = {k for k, named in IDENTITY_ARGS.items() if named and split_method(str(method))[0] in named}
    return {k: v for k, v in values.items() if k in wanted}


_POSITIONAL = re.compile(rf"^(?:{'|'.join(map(re.escape, TASKS))}):row\d+$")


def mixed_id_schemes(frame: pd.DataFrame, run: Sequence[str]) -> str | None:
    """One phrase naming a run (``run``: its identity columns) whose rows use row-position ids (``<task>:row<i>``, a
    file read without the dataset) in one file and dataset ids in another (``source``: the file each row was read
    from): one answer counted under two ids. Within one file, a row that could not be matched keeps its position."""
    if frame.empty or "instance" not in frame:
        return None
    positional = frame["instance"].astype(str).str.match(_POSITIONAL)
    if not positional.any() or positional.all():
        return None
    keys = [c for c in run if c in frame]
    text = frame[[*keys, "source"]].astype("string").fillna("")
    both = text[positional].drop_duplicates().merge(text[~positional].drop_duplicates(), on=keys, suffixes=("", "_ids"))
    both = both[both["source"] != both["source_ids"]]
    if both.empty:
        return None
    first = both.iloc[0]
    described = ", ".join(f"{k} {first[k]}" for k in keys if first[k])
    return (
        f"{first['source']} has row-position instance ids and {first['source_ids']} dataset ids for one run "
        f"({described}): its answers would be counted twice under two id schemes"
    )
