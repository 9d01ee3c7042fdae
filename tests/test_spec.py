"""The benchmark's vocabulary lives in ccpt.spec: names, methods, task behaviour, and the per-sample record."""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import inspect
import json
import typing
from pathlib import Path

import pytest

from ccpt.answers import parse_answer
from ccpt.errors import CcptError
from ccpt.methods import method_label
from ccpt.methods import parse as parse_method
from ccpt.rows import COLUMNS, SampleRow
from ccpt.spec import (
    GENERATIVE_TASKS,
    NPC_EMERGENT,
    PI_CANCELED,
    PI_EMERGENT,
    TASK_SPECS,
    TASKS,
    TYPE_PREDICTION,
    method_name,
    split_method,
)

SRC = Path(__file__).resolve().parents[1] / "src" / "ccpt"
# Every task and method name; written out here (not imported) so the test does not restate spec.py.
NAMES = {
    "pi_emergent",
    "pi_canceled",
    "npc_emergent",
    "type_prediction",
    "base",
    "cot",
    "multi_oracle",
    "sa_llm",
    "sa_conceptnet",
    "sa_both",
    "gold",
}
SUFFIX = "_nofilter"


def _docstrings(tree: ast.AST) -> set[int]:
    """ids of the docstring nodes: the leading string statement of a module, class or function body."""
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                out.add(id(first.value))
    return out


def test_task_and_method_names_are_spelled_only_in_spec():
    """Rule: in src/ccpt/**/*.py other than spec.py, no string literal (f-string parts included) *is* a task or
    method name, and none *contains* ``_nofilter``. Docstrings are exempt (they document the names a user types;
    comments are not in the AST at all); prompt data files (prompts/*.txt) are not Python and are not checked."""
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "spec.py":
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            if literal and (node.value in NAMES or SUFFIX in node.value):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}")
    assert not offenders, "task/method names outside spec.py:\n" + "\n".join(offenders)


def test_the_pipeline_spells_property_types_only_through_spec():
    """The data-construction pipeline labels rows with the benchmark's type words: it takes them from spec (same
    rule as above: string literals outside docstrings)."""
    words = {"emergent", "canceled", "component", "others"}
    offenders = []
    for path in sorted((SRC / "pipeline").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docs = _docstrings(tree)
        for node in ast.walk(tree):
            literal = isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docs
            if literal and node.value in words:
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}: {node.value!r}")
    assert not offenders, "type words spelled in the pipeline:\n" + "\n".join(offenders)


def test_each_property_type_concept_has_one_name_defined_in_spec():
    """A property's type (dataset), a Task-3 label (a type or "others") and the type a generative task is scored
    on are three types, each defined once, in spec.py, one inside the next: no other module declares a
    ``Literal`` over the type words."""
    import typing

    from ccpt import spec

    words = {"emergent", "canceled", "component", "others"}
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        if path == SRC / "spec.py":
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Subscript)
                and getattr(node.value, "id", getattr(node.value, "attr", "")) == "Literal"
            ):
                spelled = {n.value for n in ast.walk(node.slice) if isinstance(n, ast.Constant)}
                if spelled & words:
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == [], f"property-type Literals outside spec.py: {offenders}"
    scored, types, labels = (set(typing.get_args(t)) for t in (spec.ScoredType, spec.PropertyType, spec.TypeLabel))
    assert scored < types < labels == set(spec.TYPE_LABELS) and labels - types == {spec.OTHERS}
    assert {s.kind for s in TASK_SPECS.values() if s.generative} == scored == set(spec.SCORED_TYPES)


def test_the_rule_catches_a_literal_and_spares_a_docstring():
    """The checker itself: a name in code is found, the same name in a docstring is not."""
    tree = ast.parse('"""About pi_emergent."""\ndef f():\n    """gold"""\n    return ["gold", f"x{1}_nofilter"]\n')
    docs = _docstrings(tree)
    found = [
        n.value
        for n in ast.walk(tree)
        if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs
        if n.value in NAMES or SUFFIX in n.value
    ]
    assert found == ["gold", "_nofilter"]


@pytest.mark.parametrize(
    ("text", "base", "source", "use_filter"),
    [
        ("base", "base", None, True),
        ("multi_oracle", "multi_oracle", None, True),
        ("sa_llm", "sa_llm", "llm", True),
        ("sa_conceptnet_nofilter", "sa_conceptnet", "conceptnet", False),
        ("sa_both_nofilter", "sa_both", "both", False),
    ],
)
def test_method_parse(text, base, source, use_filter):
    method = parse_method(text)
    assert (method.base, method.source, method.filter) == (base, source, use_filter)
    assert method.name == text  # the name round-trips
    assert split_method(text) == (base, False if not use_filter else (True if source else None))
    assert method_name(*split_method(text)) == text


def test_method_sources_and_templates():
    assert (parse_method("sa_llm").uses_llm, parse_method("sa_llm").uses_graph) == (True, False)
    assert (parse_method("sa_conceptnet").uses_llm, parse_method("sa_conceptnet").uses_graph) == (False, True)
    assert (parse_method("sa_both").uses_llm, parse_method("sa_both").uses_graph) == (True, True)
    assert [parse_method(m).template for m in ("base", "cot", "multi_oracle", "gold", "sa_both")] == [
        "base",
        "cot",
        "base",
        "base",
        "sa",
    ]
    assert method_label("sa_both_nofilter") == "S.A.w/ Both (no filter)"
    assert method_label("my_method") == "my_method"


@pytest.mark.parametrize(
    ("text", "task", "message"),
    [
        ("sa_bth", None, "unknown method 'sa_bth'"),
        ("cot_nofilter", None, "'_nofilter' applies to spreading activation methods only, not 'cot'"),
        ("cot", "type_prediction", "type_prediction has only the paper's single prompt"),
        ("base", "pi_emergnt", "unknown task 'pi_emergnt'"),
    ],
)
def test_method_parse_errors_are_one_line(text, task, message):
    with pytest.raises(CcptError) as info:
        parse_method(text, task)
    assert message in str(info.value) and "\n" not in str(info.value)


def test_tasks_in_paper_order():
    assert TASKS == ("pi_emergent", "pi_canceled", "npc_emergent", "type_prediction")
    assert TASKS[:3] == GENERATIVE_TASKS
    assert [TASK_SPECS[t].kind for t in TASKS] == ["emergent", "canceled", "emergent", None]


def test_npc_never_shows_the_gold_answer():
    meta = {"combination": "golden retriever", "head": "retriever", "modifier": "golden", "property": "loyal"}
    assert TASK_SPECS[NPC_EMERGENT].prompt_fields(meta) == {"head": "retriever", "property": "loyal"}
    for task in (PI_EMERGENT, PI_CANCELED):
        assert "property" not in TASK_SPECS[task].prompt_fields(meta)
    assert TASK_SPECS[TYPE_PREDICTION].prompt_fields(meta) == meta


def test_judged_pairs():
    meta = {"combination": "wet dog", "head": "dog", "modifier": "wet", "property": "smelly"}
    # PI: the answered property, rated for the instance's phrase, head and modifier.
    assert TASK_SPECS[PI_EMERGENT].judged_pairs(meta, "shiny", None) == (("wet dog", "dog", "wet"), "shiny")
    # NPC: the gold property, rated for the answered phrase, the head and the answered modifier.
    npc = TASK_SPECS[NPC_EMERGENT].judged_pairs(meta, "muddy dog", "muddy")
    assert npc == (("muddy dog", "dog", "muddy"), "smelly")


def test_gold_answers_parse_back():
    meta = {"combination": "wet dog", "head": "dog", "modifier": "wet", "property": "smelly", "gold_type": "others"}
    pi = parse_answer(TASK_SPECS[PI_EMERGENT], TASK_SPECS[PI_EMERGENT].gold_answer(meta))
    assert pi.ok and pi.value == "smelly"
    npc = parse_answer(TASK_SPECS[NPC_EMERGENT], TASK_SPECS[NPC_EMERGENT].gold_answer(meta), "dog")
    assert npc.ok and (npc.value, npc.modifier) == ("wet dog", "wet")
    tp = parse_answer(TASK_SPECS[TYPE_PREDICTION], TASK_SPECS[TYPE_PREDICTION].gold_answer(meta))
    assert tp.ok and tp.value == "others"
    assert json.loads(TASK_SPECS[NPC_EMERGENT].gold_answer(meta)) == {"combination": "wet dog", "modifier": "wet"}


def test_columns_derive_from_the_record():
    names = [f.name for f in dataclasses.fields(SampleRow)]
    assert list(COLUMNS) == [n for n in names if n != "judge_errors"]  # the one log-only field
    row = SampleRow(task=PI_EMERGENT, model="m", method="base", instance="x:1")
    assert set(row.to_dict()) == {*COLUMNS, "judge_errors"}


def test_task_signatures_agree_with_the_options():
    from ccpt.eval.tasks import TaskOptions, npc_emergent, pi_canceled, pi_emergent, type_prediction
    from ccpt.schemas.run import RUN_OPTIONS

    options = [(f.name, f.default, f.type) for f in dataclasses.fields(TaskOptions)]
    for function in (pi_emergent, pi_canceled, npc_emergent):
        # Same names, defaults, types *and order*: the task bodies pass them to TaskOptions positionally.
        signature = [(n, p.default, p.annotation) for n, p in inspect.signature(function).parameters.items()]
        assert signature == options, function
        assert all(f"{name}:" in inspect.getdoc(function) for name, *_ in options)  # every parameter documented
        types = typing.get_type_hints(function, include_extras=True)
        assert all(types[name] == RUN_OPTIONS[name] for name in ("seeds", "oracle_n"))  # --seeds is -T seeds
    options = [(name, default) for name, default, _ in options]
    tp = inspect.signature(type_prediction).parameters
    assert set(tp) < {name for name, _ in options}
    assert all(f"{name}:" in inspect.getdoc(type_prediction) for name in tp)


def _closure(function) -> dict:
    """The variables a solver closure holds (what its factory handed it)."""
    return dict(zip(function.__code__.co_freevars, (c.cell_contents for c in function.__closure__ or ()), strict=True))


def _non_defaults(function, **values):
    """``values``, checked to cover every parameter of ``function`` with a value other than its default."""
    parameters = inspect.signature(function).parameters
    assert set(values) == set(parameters), set(parameters) ^ set(values)
    assert all(values[name] != p.default for name, p in parameters.items()), "every value must differ from the default"
    return values


@pytest.mark.shared_data
@pytest.mark.parametrize("task_name", [PI_EMERGENT, PI_CANCELED, NPC_EMERGENT])
@pytest.mark.parametrize("method", ["sa_both", "multi_oracle"])
def test_every_task_parameter_reaches_where_it_acts(task_name, method, ccpt_dir, tmp_path):
    """Build each generative task with *every* parameter off its default and follow each value to the task's
    options, dataset, epochs, metadata, generate config, solver and scorer (replaces a signature-only check)."""
    import shutil

    from inspect_ai._util.registry import registry_params

    from ccpt.dataset import instances, load_dataset
    from ccpt.eval import tasks
    from ccpt.eval.solvers import task_config
    from ccpt.protocol import get_protocol

    graph = tmp_path / "my-graph.json"
    shutil.copy(ccpt_dir / "conceptnet_adjacent.json", graph)
    function = getattr(tasks, task_name)
    values = _non_defaults(
        function, method=method, seeds=2, oracle_n=7, split="train", system_prompt=False, data_dir=str(ccpt_dir),
        exclude_toxic=True, judge_mode="expected", judge_retries=4, seed=11, sa_max_iterations=3, sa_epsilon=0.25,
        sa_answer_every_step=True, sa_max_candidates=40, conceptnet=str(graph), protocol="as-run",
    )  # fmt: skip
    protocol = values["protocol"]
    task = function(**values)
    assert task.metadata == {
        "ccpt_task": task_name, "method": method, "seeds": 2, "oracle_n": 7, "split": "train", "protocol": protocol,
        "dataset_sha256": load_dataset(ccpt_dir, exclude_toxic=True).sha256,  # the dataset's version
        # the graph SA expanded over, by content (a copy of the cache is the cache): part of the identity
        **({"graph_sha256": hashlib.sha256(graph.read_bytes()).hexdigest()} if method == "sa_both" else {}),
    }  # fmt: skip
    assert task.epochs == 2
    assert task.config == task_config(get_protocol(protocol))  # as-run: empty, filled per call and provider
    # Dataset: the train split of the given directory without its toxic rows.
    expected = instances(load_dataset(ccpt_dir, exclude_toxic=True), task_name, "train")
    assert [s.id for s in task.dataset] == [r.id for r in expected] and task.dataset.name == f"ccpt_{task_name}_train"
    # Scorer: the method, the judge mode and retries, the protocol's judge surface.
    (scorer,) = task.scorer
    assert registry_params(scorer) == {
        "method": method,
        "judge_mode": "expected",
        "judge_retries": 4,
        "protocol": protocol,
    }
    # Solver: what its factory received and what the closure holds.
    solver = _closure(task.solver)
    sampling = solver["params"]
    assert (sampling.seed, sampling.protocol.name) == (11, protocol)
    if method == "multi_oracle":
        assert registry_params(task.solver)["n"] == 7 and registry_params(task.solver)["system"] is False
        return
    args = registry_params(task.solver)
    assert [args[k] for k in ("system", "max_iterations", "epsilon", "answer_every_step")] == [False, 3, 0.25, True]
    assert (args["max_candidates"], args["conceptnet"], args["data_dir"]) == (40, str(graph), str(ccpt_dir))
    config = solver["config"]
    assert (config.max_iterations, config.epsilon, config.seed) == (3, 0.25, 11)
    assert config.sample_size == 40  # as run, the cap is the size of the step's random sample (the authors': 10)
    assert (config.use_llm, config.use_graph, config.use_filter, config.as_run) == (True, True, True, True)
    assert solver["graph"].name.endswith("my-graph.json")  # the given graph file, read as the authors did


@pytest.mark.shared_data
@pytest.mark.parametrize("protocol", ["ccpt", "as-run"])
def test_every_type_prediction_parameter_reaches_where_it_acts(protocol, ccpt_dir):
    from ccpt.dataset import load_dataset
    from ccpt.eval.solvers import task_config
    from ccpt.eval.tasks import type_prediction
    from ccpt.protocol import get_protocol

    # method has one value (Task 3 has one prompt), so it keeps its default; every other parameter does not.
    values = {"method": "base", "seeds": 2, "system_prompt": False, "data_dir": str(ccpt_dir), "exclude_toxic": True,
              "seed": 5, "protocol": protocol}  # fmt: skip
    assert set(values) == set(inspect.signature(type_prediction).parameters)
    task = type_prediction(**values)
    assert task.metadata["protocol"] == protocol and task.epochs == 2
    assert task.config == task_config(get_protocol(protocol))
    sampling = _closure(task.solver)["params"]
    assert (sampling.seed, sampling.protocol.name) == (5, protocol)
    assert _closure(task.solver)["system"] is False
    typed = [r.id for r in load_dataset(ccpt_dir, exclude_toxic=True).type_prediction_set(seed=5)]
    ids = [s.id for s in task.dataset]
    typed_ids = {i for i in ids if not i.startswith("others:")}
    assert len(ids) == 1000 and typed_ids == {i for i in typed if not i.startswith("others:")}
    others = [s for s in task.dataset if s.target == "others"]
    sources = {i.split(":", 1)[1] for i in typed_ids}
    if protocol == "as-run":  # the authors' others: both halves from the 750 sampled typed rows
        assert all(set(s.id.removeprefix("others:").split("+")) <= sources for s in others)
    else:
        assert sum(set(s.id.removeprefix("others:").split("+")) <= sources for s in others) < 10


def test_sweep_rejects_a_task_arg_no_selected_task_takes():
    from ccpt.eval.sweep import Sweep

    with pytest.raises(CcptError, match="-T sa_epsilon: no selected task takes this parameter"):
        Sweep(tasks=[TYPE_PREDICTION], task_args={"sa_epsilon": 0.2}).validate()
    with pytest.raises(CcptError, match="-T sa_epsilonn"):
        Sweep(tasks=[PI_EMERGENT], task_args={"sa_epsilonn": 0.2}).validate()
    Sweep(tasks=[PI_EMERGENT, TYPE_PREDICTION], task_args={"sa_epsilon": 0.2}).validate()


def test_sweep_passes_type_prediction_the_args_it_takes(ccpt_dir):
    """Task 3 used to get only ``seed`` from -T: now every parameter it takes reaches it (and no other)."""
    from ccpt.eval.sweep import Sweep

    def ids(**task_args):
        sweep = Sweep(tasks=[TYPE_PREDICTION], methods=["base"], data_dir=str(ccpt_dir), task_args=task_args)
        sweep.validate()
        (task,) = sweep.task_objects()
        return [s.id for s in task.dataset]

    plain = ids()
    assert ids(exclude_toxic=True) != plain  # the toxicity filter changes the sampled evaluation set
    assert ids(seed=1) != plain
    # A generative-only parameter goes to the generative task and not to Task 3 (which would refuse it).
    both = Sweep(
        tasks=[PI_EMERGENT, TYPE_PREDICTION], methods=["base"], data_dir=str(ccpt_dir), task_args={"sa_epsilon": 0.3}
    )
    both.validate()
    assert [t.name for t in both.task_objects()] == [PI_EMERGENT, TYPE_PREDICTION]
