"""Prompt templates (ccpt.prompts) checked against the paper's Appendix B tables."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from conftest import shared_data_root

from ccpt.prompts import (
    available_methods,
    format_concepts,
    human_question,
    judge_prompt,
    system_prompt,
    task_prompt,
)

QUERY = {
    "combination": "a kite in a tree",
    "head": "kite",
    "modifier": "tree",
    "property": "stuck",
    "concepts": ["wind", "branch", "string"],
}
PAIRS = [(task, method) for task in ("pi_emergent", "pi_canceled", "npc_emergent", "type_prediction")
         for method in available_methods(task)]  # fmt: skip
# The query fields each task must show the model (docs/methods.md: each task's inputs).
SHOWN = {
    "pi_emergent": ("combination",),
    "pi_canceled": ("combination",),
    "npc_emergent": ("head", "property"),
    "type_prediction": ("combination", "property"),
}
# Paper table holding each template (Table 15 is captioned "Noun Phrase Completion" but is PI; see the file).
PAPER_TABLE = {
    ("npc_emergent", "base"): 10,
    ("npc_emergent", "cot"): 11,
    ("npc_emergent", "sa"): 12,
    ("pi_emergent", "base"): 13,
    ("pi_emergent", "cot"): 14,
    ("pi_emergent", "sa"): 15,
    ("type_prediction", "base"): 16,
}


@pytest.fixture(scope="module")
def paper() -> str:
    path = shared_data_root().parent / "paper" / "ccpt-paper.txt"
    if not path.exists():
        pytest.skip(f"paper text not found at {path}")
    return Path(path).read_text(encoding="utf-8")


def _table(paper: str, number: int) -> str:
    """The text between the captions of paper Tables ``number - 1`` and ``number``: Table ``number``."""
    return paper[paper.index(f"\nTable {number - 1}:") : paper.index(f"\nTable {number}:")]


def _as_model_sees(paper_text: str) -> str:
    """Undo the paper's typesetting: str.format doubled braces, monospace backticks, the '}}}' typo."""
    text = paper_text.replace("`", "").replace("}}}", "}}").replace("{{", "{").replace("}}", "}")
    return " ".join(text.split())


def _squash(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize(("task", "method"), PAIRS)
def test_every_template_renders_with_its_query(task: str, method: str) -> None:
    prompt = task_prompt(task, method, **QUERY)
    shown = SHOWN[task] + (("concepts",) if method == "sa" else ())
    for field in shown:
        expected = format_concepts(QUERY["concepts"]) if field == "concepts" else QUERY[field]
        assert expected in prompt.split("Then let's begin:")[1], field
    assert not re.search(r"\$\w|\$\{", prompt), "unfilled placeholder"
    assert "{{" not in prompt and "}}" not in prompt
    assert not prompt.startswith("#"), "comment header leaked"
    assert prompt.endswith("- Answer:")


@pytest.mark.parametrize(("task", "method"), sorted(PAPER_TABLE))
def test_instructions_are_the_papers_verbatim(paper: str, task: str, method: str) -> None:
    ours = task_prompt(task, method, **QUERY).split("Then let's begin:")[0]
    theirs = _table(paper, PAPER_TABLE[(task, method)]).split("Then let's begin:")[0]
    theirs = theirs.split("Instructions:", 1)[1]
    assert _squash(ours) == "Instructions: " + _as_model_sees(theirs)


def test_system_prompt_is_table_9(paper: str) -> None:
    body = _table(paper, 9).split("System Prompt", 1)[1].strip()
    body = body.removesuffix("-").strip()  # the table rule printed after item 5
    assert _squash(system_prompt()) == _squash(body)
    assert system_prompt().startswith("Conceptual combination is a task")


def test_judge_prompt_is_table_17_with_the_query_in_the_last_slot(paper: str) -> None:
    prompt = judge_prompt("a peeled apple", "white")
    assert prompt.endswith("Concept: a peeled apple\nProperty: white\nRelevance:")
    assert "Wrench" not in prompt and "{{" not in prompt
    theirs = _table(paper, 17).split("Prompt for LLM-as-a-Judge", 1)[1]
    theirs = theirs.split("Concept: Wrench")[0]
    assert _squash(prompt).startswith(_as_model_sees(theirs))


def test_as_run_judge_prompt_writes_the_concept_as_str_capitalize_does() -> None:
    """The authors' judge capitalised the concept with Python's str.capitalize(): the rest is lower-cased."""
    prompt = judge_prompt("new York cheesecake", "sweet", "judge_asrun", capitalise=True)
    assert "New york cheesecake" in prompt and "new York" not in prompt
    assert "new York cheesecake" in judge_prompt("new York cheesecake", "sweet")  # ccpt's: as given


def test_canceled_templates_mirror_emergent_ones_and_cot_really_reasons() -> None:
    base = task_prompt("pi_canceled", "base", combination="x")
    cot = task_prompt("pi_canceled", "cot", combination="x")
    sa = task_prompt("pi_canceled", "sa", combination="x", concepts=["y"])
    for prompt in (base, cot, sa):
        assert "canceled property" in prompt
        assert "- Combination: peeled apple" in prompt and "- Combination: burned banknote" in prompt
        assert '{"property": "red"}' in prompt and '{"property": "useless"}' in prompt
    assert cot != base
    assert "reasoning process" in cot and "Let's think step-by-step" in cot
    assert "reasoning process" not in base


def test_concepts_render_like_the_paper() -> None:
    # Table 12 prints the list exactly as Python shows it.
    concepts = ["bland", "bitter", "inedible", "insipid", "unappealing", "unpalatable"]
    printed = "['bland', 'bitter', 'inedible', 'insipid', 'unappealing', 'unpalatable']"
    assert format_concepts(concepts) == printed
    assert format_concepts(["collector's item"]) == '["collector\'s item"]'
    assert format_concepts([]) == "[]"
    with pytest.raises(TypeError):
        format_concepts("apple")


def test_field_values_are_not_re_substituted() -> None:
    prompt = task_prompt("pi_emergent", "base", combination="$head ${property} {x}")
    assert "- Combination: $head ${property} {x}\n" in prompt


def test_missing_field_and_unknown_pairs_are_errors() -> None:
    with pytest.raises(ValueError, match="'combination'"):
        task_prompt("pi_emergent", "base")
    with pytest.raises(ValueError, match="'concepts'"):
        task_prompt("pi_emergent", "sa", combination="a kite in a tree")
    with pytest.raises(ValueError, match="'property'"):
        task_prompt("npc_emergent", "base", head="kite", property="  ")
    with pytest.raises(ValueError, match="method 'cot'"):
        task_prompt("type_prediction", "cot", combination="a", property="b")
    with pytest.raises(ValueError, match="unknown task"):
        task_prompt("npc_canceled", "base", head="a", property="b")
    with pytest.raises(ValueError, match="'property'"):
        judge_prompt("apple", "")
    # A missing cell read as NaN is missing, never the word "nan" in a prompt.
    with pytest.raises(ValueError, match="'concept'"):
        judge_prompt(float("nan"), "red")  # type: ignore[arg-type]


def test_available_methods() -> None:
    assert available_methods("pi_emergent") == ("base", "cot", "sa")
    assert available_methods("type_prediction") == ("base",)
    with pytest.raises(ValueError):
        available_methods("nope")


def test_human_questions_follow_appendix_b3() -> None:
    # The exact sheet texts (straight quotes: the sheets are typed into spreadsheets), written out by hand.
    q = human_question("pi_emergent", combination="peeled apple", head="apple", modifier="peeled")
    assert q == (
        "Conceptual combination: 'peeled apple', Type-of-property: 'emergent property'\n"
        "Q. What is a property of 'peeled apple' that 'apple' or 'peeled' doesn't have?"
    )
    q = human_question("pi_canceled", combination="peeled apple", head="apple", modifier="peeled")
    assert q.endswith("belongs to 'apple' or 'peeled' but does not belong to a noun phrase 'peeled apple'?")
    q = human_question("npc_emergent", head="apple", property="rare")
    assert q == (
        "Head noun: 'apple', Property: 'rare'\n"
        "Q. What is a noun phrase using 'apple' to be 'rare'? (also write the modifier you added)"
    )
    q = human_question("type_prediction", combination="peeled apple", head="apple", modifier="peeled", property="white")
    assert q.splitlines()[:4] == [
        "Conceptual combination: peeled apple",
        "Head noun: apple",
        "Modifier: peeled",
        "Property: white",
    ]
    assert q.endswith('(Imagine the most typical "apple".) Answer one of: emergent, component, canceled, others.')
    with pytest.raises(ValueError, match="property"):
        human_question("type_prediction", combination="a", head="b", modifier="c")
    with pytest.raises(ValueError, match="no human question"):
        human_question("nope", combination="a")
