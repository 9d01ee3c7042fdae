"""Every prompt of the paper (Appendix B.2-B.3, Tables 9-17) as a data file, and a tiny renderer. Files are
``string.Template`` texts (``$name``, ``$$`` for ``$``: JSON needs no brace escaping); a leading ``#`` comment header
(provenance, deviations from the paper) and the trailing newline are stripped. Templates: ``system``, ``judge``,
``<task>_<method>``, ``human_<task>``; a protocol's own version is ``<name>_<variant>.txt`` (e.g.
``judge_asrun.txt``), used where it exists."""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from importlib import resources
from string import Template

from ccpt.spec import TASK_SPECS, TASKS, TaskName

__layer__ = "core"  # prompts as data (tests/test_layering.py)


@functools.cache
def _template(name: str) -> Template:
    """Read ``<name>.txt`` from the package once, drop its comment header, and compile it."""
    text = resources.files(__package__).joinpath(f"{name}.txt").read_text(encoding="utf-8")
    lines = itertools.dropwhile(lambda line: line.startswith("#"), text.splitlines())
    return Template("\n".join(lines).rstrip("\n"))


@functools.cache
def variant_name(name: str, variant: str | None) -> str:
    """``<name>_<variant>`` when that prompt file exists, else ``name`` (a protocol overrides some prompts only)."""
    if variant and resources.files(__package__).joinpath(f"{name}_{variant}.txt").is_file():
        return f"{name}_{variant}"
    return name


def format_concepts(concepts: Sequence[str]) -> str:
    """Render a concept list like the paper's prompts: ``['bland', 'bitter']``; a concept containing a single quote
    in double quotes (as Python's repr would), unescaped: the text goes to a model, not to an interpreter."""
    if isinstance(concepts, str):
        raise TypeError("concepts must be a sequence of strings, not a single string")
    return "[" + ", ".join(f'"{c}"' if "'" in c else f"'{c}'" for c in concepts) + "]"


def render_template(name: str, **fields: object) -> str:
    """Render the prompt file ``<name>.txt`` (e.g. ``sa_filter``); field values are converted with str(), and a
    field the template uses that is missing, blank or NaN (a missing cell) raises ValueError naming it."""
    values = {k: None if v is None or (isinstance(v, float) and math.isnan(v)) else str(v) for k, v in fields.items()}
    template = _template(name)
    for field in template.get_identifiers():
        if not (values.get(field) or "").strip():
            raise ValueError(f"prompt {name!r} needs field {field!r}")
    return template.substitute(values)


def system_prompt() -> str:
    """The system prompt shared by every task and method (paper Table 9)."""
    return render_template("system")


def available_methods(task: TaskName | str) -> tuple[str, ...]:
    """The prompt templates ``task`` has (:attr:`ccpt.spec.TaskSpec.templates`); ValueError for an unknown task."""
    try:
        return TASK_SPECS[task].templates
    except KeyError:
        raise ValueError(f"unknown task {task!r}; expected one of {sorted(TASKS)}") from None


def task_prompt(
    task: TaskName | str,
    method: str,
    *,
    combination: str | None = None,
    head: str | None = None,
    modifier: str | None = None,
    property: str | None = None,
    concepts: Sequence[str] | None = None,
    variant: str | None = None,
) -> str:
    """The user message for one instance of ``task`` under ``method`` (``variant``: a protocol's own template, where
    it has one). Fields a template does not use are ignored (e.g. ``head`` for PI); a missing or blank one it uses
    raises ValueError naming it, as does an unknown task/method pair. ``concepts``: the SA concept set C_T."""
    methods = available_methods(task)
    if method not in methods:
        raise ValueError(f"no prompt for task {task!r} with method {method!r}; have {methods}")
    fields = {"combination": combination, "head": head, "modifier": modifier, "property": property}
    listed = None if concepts is None else format_concepts(concepts)
    return render_template(variant_name(f"{task}_{method}", variant), **fields, concepts=listed)


def judge_prompt(concept: str, property: str, template: str = "judge", capitalise: bool = False) -> str:
    """The LLM-as-a-judge prompt (paper Table 17) asking how much ``concept`` has ``property``; ``template`` names a
    protocol's version of the prompt, ``capitalise`` writes the concept as the authors' judge did: Python's
    ``str.capitalize()``, which also lower-cases the rest ("New York" → "New york")."""
    if capitalise:
        concept = concept.capitalize()
    return render_template(template, concept=concept, property=property)


def human_question(
    task: TaskName | str,
    *,
    combination: str | None = None,
    head: str | None = None,
    modifier: str | None = None,
    property: str | None = None,
) -> str:
    """One question of the human solver sheets (paper Appendix B.3), as printed on the sheet."""
    if task not in TASK_SPECS:
        raise ValueError(f"no human question format for task {task!r}; have {TASKS}")
    return render_template(f"human_{task}", combination=combination, head=head, modifier=modifier, property=property)
