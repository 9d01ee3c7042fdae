"""Answer extraction (ccpt.answers) on real reply shapes, hostile input, and the authors' stored outputs."""

from __future__ import annotations

import csv
import re
import time
from collections import Counter
from pathlib import Path

import pytest

from ccpt.answers import (
    MAX_REPLY_CHARS,
    contains_head,
    extract_json_object,
    normalise_modifier,
    parse_combination,
    parse_property,
    parse_property_type,
    parse_relevance,
    split_reply_list,
)
from ccpt.spec import TYPE_LABELS

# --- extract_json_object ---------------------------------------------------------------------------------

COT_REPLY = """Let's think step-by-step. A kite is a toy that flies {in the wind}; in a tree it cannot fly.
Consider the set {kite, tree} and the mapping {"kite": {"state": "flying"}}.
So the answer is ```json
{"property": "stuck"}
```"""


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ('{"property": "stranded"}', {"property": "stranded"}),
        ('{"combination": "a blue apple",}', {"combination": "a blue apple"}),
        ("{'property': 'stranded'}", {"property": "stranded"}),  # the authors' *_generated columns
        ('[\'{"property": "stranded"}\']', {"property": "stranded"}),  # their *_generated_ columns
        ('```json\n{\n  "property": "unstable",\n}\n```', {"property": "unstable"}),
        ("{“property”: “unstable”}", {"property": "unstable"}),
        ('Example: {"property": "a"}. Answer: {‘property’: ‘b’}', {"property": "b"}),
        ('{"property": "collector’s item"}', {"property": "collector’s item"}),
        ('{"property": "collector\'s item"}', {"property": "collector's item"}),
        ("{'property': 'collector's item'}", {"property": "collector's item"}),
        ("{'property': \"collector's item\"}", {"property": "collector's item"}),
        ('[\'{"property": "collector\\\'s item"}\']', {"property": "collector's item"}),
        ('{"relevance": 7}', {"relevance": 7}),
        ("Relevance: {'relevance': 9}", {"relevance": 9}),
        (COT_REPLY, {"property": "stuck"}),
        ('first {"property": "a"} then, on reflection, {"property": "b"}', {"property": "b"}),
        ('{"answer": {"property": "x"}}', {"answer": {"property": "x"}}),  # outermost of nested objects
        ('{"property": "a {curly} word"}', {"property": "a {curly} word"}),
        ('So: {"property": "fragile"}. Note that {this is not JSON}', {"property": "fragile"}),
    ],
)
def test_extracts_the_last_object(reply: str, expected: dict[str, object]) -> None:
    assert extract_json_object(reply) == expected


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "unstable",
        "I'm sorry, I need a bit more context.",
        "{",
        '{"property": "unterminated}',
        "}{",
        "[]",
        '["property", "x"]',
        "{property: stuck}",
        "__import__('os').system('echo pwned')",
        "{'property': __import__('os').system('echo pwned')}",
    ],
)
def test_no_object_means_none(reply: str) -> None:
    assert extract_json_object(reply) is None


def test_code_around_or_inside_an_object_is_just_text() -> None:
    reply = "{'property': \"__import__('os').system('x')\"}"
    assert parse_property(reply).value == "__import__('os').system('x')"
    # not a list of string literals, so it is scanned as text: the JSON object in it is found, nothing runs
    assert extract_json_object("['{\"property\": \"x\"}', __import__('os')]") == {"property": "x"}


@pytest.mark.parametrize(
    "reply",
    [
        "a" * (MAX_REPLY_CHARS + 1),
        "x" * MAX_REPLY_CHARS + '{"property": "late"}',
        "{" * 150_000,
        '{"property": "' * 10_000,
        "{'" * 50_000,
        "{" * 64 + "a" * 100_000,
        '{"a": ' + "[" * 1_900 + "]" * 1_900 + "}",
        "['" + "a" * 150_000 + "']",
    ],
)
@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_hostile_input_fails_fast(reply: str) -> None:
    started = time.perf_counter()
    parsed = parse_property(reply)
    assert not parsed.ok and parsed.error
    assert time.perf_counter() - started < 0.5


def test_long_reasoning_before_the_answer_is_fine() -> None:
    assert parse_property("thinking... " * 10_000 + '{"property": "ok"}').value == "ok"


def test_split_reply_list_decodes_python_repr_without_eval() -> None:
    replies = ["a'b", "c\"d'", "Aé\n\x07", "\U0001f600", '{"property": "x"}']
    assert split_reply_list(repr(replies)) == replies
    assert split_reply_list("[]") == []
    for not_a_list in ("{'a': 1}", "['a' 'b']", "['a'] tail", "[1, 2]", "['a', __import__('os')]", "['open"):
        assert split_reply_list(not_a_list) is None


# --- typed parsers ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("reply", "value"),
    [
        ('{"property": "stuck"}', "stuck"),
        ('{"property": "  \\"Unstable.\\" "}', "Unstable"),
        ("{'property': 'in danger.'}", "in danger"),
        ('{"Property": "rare"}', "rare"),
    ],
)
def test_parse_property(reply: str, value: str) -> None:
    assert parse_property(reply).value == value


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ("stuck", "no JSON object"),
        ('{"answer": "stuck"}', "missing key 'property'"),
        ('{"property": ""}', "empty 'property'"),
        ('{"property": " . "}', "empty 'property'"),
        ('{"property": ["stuck", "fragile"]}', "'property' is not a string"),
        ('{"property": null}', "'property' is not a string"),
    ],
)
def test_parse_property_failures_say_why(reply: str, error: str) -> None:
    parsed = parse_property(reply)
    assert (parsed.ok, parsed.value, parsed.error) == (False, None, error)


@pytest.mark.parametrize(
    ("value", "label"),
    [
        ("emergent", "emergent"),
        ("Emergent", "emergent"),
        ("emergent property", "emergent"),
        ("(1) Emergent", "emergent"),
        ("(3) Component", "component"),
        ("Component Property", "component"),
        ("canceled", "canceled"),
        ("cancelled", "canceled"),
        ("Canceled property", "canceled"),
        ("others", "others"),
        ("Other", "others"),
        ("(4) Others", "others"),
    ],
)
def test_parse_property_type_maps_to_the_four_labels(value: str, label: str) -> None:
    parsed = parse_property_type(f'{{"property_type": "{value}"}}')
    assert parsed.ok and parsed.value == label and label in TYPE_LABELS


def test_parse_property_type_rejects_other_labels() -> None:
    assert parse_property_type('{"property_type": "inherited"}').error == "unknown property_type 'inherited'"
    assert parse_property_type('{"type": "emergent"}').error == "missing key 'property_type'"


@pytest.mark.parametrize(
    ("reply", "score"),
    [('{"relevance": 7}', 7), ('{"relevance": 7.0}', 7), ('{"relevance": "7"}', 7), ("{'relevance': 10}", 10),
     ('Relevance: {"relevance": 1}', 1)],
)  # fmt: skip
def test_parse_relevance(reply: str, score: int) -> None:
    assert parse_relevance(reply).value == score


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ('{"relevance": 11}', "relevance 11 out of range 1-10"),
        ('{"relevance": 0}', "relevance 0 out of range 1-10"),
        ('{"relevance": "-3"}', "relevance -3 out of range 1-10"),
        ('{"relevance": 7.5}', "relevance 7.5 is not an integer"),
        ('{"relevance": "2-3"}', "relevance '2-3' is not an integer"),
        ('{"relevance": "high"}', "relevance 'high' is not an integer"),
        ('{"relevance": true}', "relevance True is not an integer"),
        ('{"relevance": your_relevance_score}', "no JSON object"),
        ("7", "no JSON object"),
    ],
)
def test_parse_relevance_failures_say_why(reply: str, error: str) -> None:
    assert parse_relevance(reply).error == error


@pytest.mark.parametrize(
    ("combination", "head"),
    [("brown apple", "apple"), ("two peeled Apples", "apple"), ("six feet of earth", "foot"),
     ("an apple-shaped cake", "apple"), ("the early twenties", "twenty"), ("Donkey's ears", "ear")],
)  # fmt: skip
def test_contains_head(combination: str, head: str) -> None:
    assert contains_head(combination, head)


def test_contains_head_is_word_level() -> None:
    assert not contains_head("a pineapple", "apple")
    assert not contains_head("a brown pear", "apple")


@pytest.mark.parametrize(
    ("modifier", "expected"),
    [
        # inflected verbs -> verb lemma, as in the authors' *_modifier columns
        ("burned", "burn"), ("a burned", "burn"), ("floating", "float"), ("stuffed", "stuff"),
        ("lost", "lose"), ("hidden", "hide"), ("Expired", "expire"),
        # words the dictionary knows as base-form adjectives or nouns stay (the authors' spaCy lemmas differ)
        ("broken", "broken"), ("dried", "dried"), ("retired", "retired"), ("flying", "flying"),
        ("shopping", "shopping"),
        # plain adjectives / nouns, plural nouns, function words, compounds
        ("old", "old"), ("Victorian", "victorian"), ("strawberries", "strawberry"),
        ("of the wooden", "wooden"), ("oil-rich", "oil-rich"), ("older", "old"),
        ("technologically advanced", "technologically"),
    ],
)  # fmt: skip
def test_normalise_modifier(modifier: str, expected: str) -> None:
    assert normalise_modifier(modifier) == expected


def test_parse_combination() -> None:
    parsed = parse_combination('{"combination": "a burned banknote", "modifier": "a burned"}', "banknote")
    assert (parsed.ok, parsed.value, parsed.modifier) == (True, "a burned banknote", "burn")
    assert parse_combination("{'combination': 'Blue Apples', 'modifier': 'Blue'}", "apple").modifier == "blue"


@pytest.mark.parametrize(
    ("reply", "error"),
    [
        ('{"combination": "brown pear", "modifier": "brown"}', "head noun 'apple' not in combination"),
        ('{"combination": "brown apple"}', "missing key 'modifier'"),
        ('{"modifier": "brown"}', "missing key 'combination'"),
        ('{"combination": "the apple", "modifier": "the"}', "modifier 'the' has no content word"),
        ('{"combination": "", "modifier": "brown"}', "empty 'combination'"),
        ("brown apple", "no JSON object"),
    ],
)
def test_parse_combination_failures_say_why(reply: str, error: str) -> None:
    parsed = parse_combination(reply, "apple")
    assert (parsed.ok, parsed.error) == (False, error)


# --- the authors' stored outputs -------------------------------------------------------------------------


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def _raw_columns(rows: list[dict[str, str]]) -> list[tuple[str, str]]:
    """(column, run prefix) for each ``<run>_<seed>_generated_`` column."""
    return [(c, c.removesuffix("_generated_")) for c in rows[0] if re.fullmatch(r".+_\d_generated_", c)]


@pytest.mark.parametrize(
    ("name", "replies", "failures"),
    [
        ("pi_emergent_gpt-4o_naive.csv", 600, []),
        ("pi_canceled_gpt-4o_naive.csv", 501, []),
        # One of the 3,000 Multi-Oracle samples is a refusal; the authors' table carries "rare" there.
        ("pi_emergent_gpt-4o_multi.csv", 3000, [("gpt-4o_multi_1_4", "rare")]),
    ],
)
def test_stored_pi_replies_agree_with_the_authors(
    reference_dir: Path, name: str, replies: int, failures: list[tuple[str, str]]
) -> None:
    rows = _rows(reference_dir / name)
    multi = "multi" in name
    counts: Counter[str] = Counter()
    failed: list[tuple[str, str]] = []
    for column, run in _raw_columns(rows):
        for row in rows:
            stored = split_reply_list(row[column])
            assert stored is not None and len(stored) == (5 if multi else 1)
            for k, reply in enumerate(stored):
                sample = f"{run}_{k}" if multi else run
                parsed = parse_property(reply)
                counts["replies"] += 1
                counts["agree"] += parsed.value == row[f"{sample}_property"]
                # their per-sample dict cell ("{'property': 'x'}") parses to the same answer
                from_dict = parse_property(row[f"{sample}_generated"])
                counts["dict_agree"] += from_dict.value == row[f"{sample}_property"]
                if not parsed.ok:
                    assert parsed.error == "no JSON object"
                    failed.append((sample, row[f"{sample}_property"]))
    assert counts["replies"] == replies
    assert counts["agree"] == replies - len(failures)
    assert counts["dict_agree"] == replies
    assert failed == failures


def test_stored_npc_replies_agree_with_the_authors(reference_dir: Path) -> None:
    rows = _rows(reference_dir / "npc_emergent_gpt-4o_naive.csv")
    counts: Counter[str] = Counter()
    for column, run in _raw_columns(rows):
        for row in rows:
            (reply,) = split_reply_list(row[column]) or [None]
            parsed = parse_combination(reply, row["root"])
            assert parsed.ok, (reply, parsed.error)
            counts["replies"] += 1
            counts["combination"] += parsed.value.lower() == row[f"{run}_combination"]
            counts["modifier"] += parsed.modifier == row[f"{run}_modifier"]
    # The authors lower-cased the combination ("Victorian capital"); otherwise identical.
    assert counts["combination"] == counts["replies"] == 501
    # Modifier: the authors took spaCy's in-context lemma of the first token (hyphen-split). We keep words
    # lemminflect knows as base-form adjectives/nouns ("flying", "broken", "dried": 32) and hyphenated
    # compounds ("oil-rich": 3), and lemminflect has no adjective "whispering" (3 more: we say "whisper").
    assert counts["modifier"] == 465


def test_stored_type_predictions_give_the_papers_accuracy(reference_dir: Path) -> None:
    rows = _rows(reference_dir / "tp_gpt-4o_naive.csv")
    labels = []
    for row in rows:
        (reply,) = split_reply_list(row["gpt-4o_generated_"]) or [None]
        parsed = parse_property_type(reply)
        assert parsed.ok, (reply, parsed.error)
        labels.append((row["human_label_majority"], parsed.value))
    assert len(labels) == 1000
    # Paper Table 5 / §5.2: GPT-4o accuracy 56.4% on the 1,000 sampled instances.
    assert sum(gold == pred for gold, pred in labels) == 564


def test_every_dataset_combination_contains_its_head(ccpt_dir: Path) -> None:
    missing: list[tuple[str, str]] = []
    total = 0
    for name in ("ccpt_emergent.csv", "ccpt_canceled.csv", "ccpt_component.csv"):
        for row in _rows(ccpt_dir / name):
            total += 1
            if not contains_head(row["combination"], row["root"]):
                missing.append((row["combination"], row["root"]))
    assert total == 12_314
    # The dataset's own lemmatiser produced heads that are not forms of the word in the phrase.
    assert missing == DATASET_HEAD_ERRORS


DATASET_HEAD_ERRORS = [("used syringes", "syrinx")] * 3 + [
    ("little medusae", "medusa"),
    ("an evil omen", "oman"),
    ("useless trivia", "trivium"),
]


def test_an_answer_object_longer_than_the_bound_is_named_as_such() -> None:
    """Before: a reply whose object runs past MAX_OBJECT_CHARS said "no JSON object", as if it held none."""
    from ccpt.answers import MAX_OBJECT_CHARS

    long = '{"property": "' + "very " * (MAX_OBJECT_CHARS // 5) + 'red"}'
    assert parse_property(long).error == "no JSON object closes within 4,000 characters of its opening brace"
    assert parse_property('{"property": "red"} ' + "x" * MAX_OBJECT_CHARS).value == "red"
    assert parse_property("{ unclosed").error == "no JSON object"
