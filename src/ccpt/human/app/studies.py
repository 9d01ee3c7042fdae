"""The studies a STUDY_DIR holds, read from the sheets ccpt exports, and the checks on their answers: solver sheets
``<task>_sheet.csv`` (no gold answer), the rating ``key.csv`` (never the LLM judge's score) and annotation
``hits.csv`` in STUDY_DIR or STUDY_DIR/annotation (Figures 5–6, plus A.3's property-source question).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ccpt.errors import DataError
from ccpt.io.safe_csv import read_checked_sheet
from ccpt.pipeline.annotation import FORM_OPTIONS
from ccpt.prompts import render_template
from ccpt.schemas.sheets import HITS, QUESTIONS, RATING_KEY, SOURCE_OPTIONS
from ccpt.spec import TASK_SPECS, TASKS, TYPE_LABELS

SOLVER, RATING, ANNOTATION = "solver", "rating", "annotation"
STUDY_TITLES = {SOLVER: "Answer the question", RATING: "Relevance rating", ANNOTATION: "Property annotation"}
MAX_TEXT = 300  # characters of one free-text answer: a property or a noun phrase, never an essay
RATING_SCALE = range(1, 11)  # Figure 8
RELEVANCE_SCALE = range(1, 6)  # Figures 5–6, Q1
RELEVANCE_LABELS = ("Not Relevant", "Slightly Relevant", "Moderately Relevant", "Highly Relevant", "Fully Relevant")
RELEVANCE_FIELDS = ("root_relevance", "modifier_relevance", "combination_relevance")  # Q1-1, Q1-2, Q1-3


@dataclass(frozen=True)
class Item:
    """One thing to answer: ``key`` is unique within its study and is what the export writes back."""

    study: str
    key: str
    kind: str  # solver: the task; rating: "rating"; annotation: the form ("emergent" | "canceled")
    fields: Mapping[str, str]  # what the page shows, and nothing else
    overlap: int | None = None  # annotators per item; None = every annotator
    component: bool = False  # annotation: the HIT also asks the A.3 property-source question (Q3)


@dataclass(frozen=True)
class Study:
    """Every item of a STUDY_DIR, in the order annotators see them, and the rating key / HITs file they came from."""

    root: Path
    items: tuple[Item, ...]
    sources: Mapping[str, Path] = field(default_factory=dict)

    @property
    def kinds(self) -> tuple[str, ...]:
        """The studies present, in display order."""
        return tuple(s for s in (SOLVER, RATING, ANNOTATION) if any(i.study == s for i in self.items))


def _solver_items(path: Path) -> list[Item]:
    items = []
    for line, row in enumerate(read_checked_sheet(path, QUESTIONS)[0], start=2):
        if f"{row['task']}_sheet.csv" != path.name:
            raise DataError(f"{path}: line {line}: task {row['task']!r} does not belong in this sheet")
        shown = ("combination", "head", "modifier", "property", "question")
        items.append(Item(SOLVER, row["id"], row["task"], {k: row[k] or "" for k in shown}))
    return items


def _rating_items(path: Path, overlap: int | None) -> list[Item]:
    seen: dict[str, Item] = {}
    # key.csv holds one row per (answer, role); a pair shared by several rows is rated once
    for row in read_checked_sheet(path, RATING_KEY)[0]:
        if row["pair_id"] not in seen:
            fields = {"concept": row["concept"], "property": row["property"]}
            seen[row["pair_id"]] = Item(RATING, row["pair_id"], "rating", fields, overlap)
    return list(seen.values())


def _annotation_items(path: Path) -> list[Item]:
    items = []
    for row in read_checked_sheet(path, HITS)[0]:  # form, assignments ≥ 1 and a unique hit_id: checked by the schema
        fields = {k: row.get(k) or "" for k in ("root", "modifier", "combination", "property")}
        component = row["candidate_type"] == "component"
        items.append(Item(ANNOTATION, row["hit_id"], row["form"], fields, row["assignments"], component))
    return items


def load_study(root: Path, rating_overlap: int | None = None) -> Study:
    """Every study found in ``root``; a DataError when there is none or a sheet is malformed."""
    if not root.is_dir():
        raise DataError(f"study directory not found: {root}")
    items: list[Item] = []
    sources: dict[str, Path] = {}
    for sheet in (root / f"{task}_sheet.csv" for task in TASKS):
        if sheet.is_file():
            items += _solver_items(sheet)
    if (root / "key.csv").is_file():
        sources[RATING] = root / "key.csv"
        items += _rating_items(sources[RATING], rating_overlap)
    hits = next((p for p in (root / "hits.csv", root / "annotation" / "hits.csv") if p.is_file()), None)
    if hits is not None:
        sources[ANNOTATION] = hits
        items += _annotation_items(hits)
    if not items:
        raise DataError(
            f"{root}: no study sheets found",
            "expected <task>_sheet.csv (human export-solver), key.csv (human export-ratings) "
            "or annotation/hits.csv (pipeline annotate-export)",
        )
    return Study(root, tuple(items), sources)


def _lines(name: str, item: Item) -> list[str]:
    return [line for line in render_template(name, **item.fields).splitlines() if line.strip()]


def annotation_form(item: Item) -> dict[str, Any]:
    """The Figure 5/6 form of a HIT (and A.3's Q3 for component HITs), split into its parts for the page, worded by
    the printable export's templates."""
    lines = _lines(f"pipeline_form_{item.kind}", item)
    options = [line[4:].strip() for line in lines if line[:3] in ("(0)", "(1)", "(2)")]
    form: dict[str, Any] = {
        "relevance": list(zip(RELEVANCE_FIELDS, [line for line in lines if line.startswith("Q1-")], strict=True)),
        "q2": next(line for line in lines if line.startswith("Q2.")),
        "labels": list(zip(FORM_OPTIONS[item.kind], options, strict=True)),
        "note": next(line for line in lines if line.startswith("NOTE:")),
        "q3": None,
    }
    if item.component:
        q3 = _lines("pipeline_form_component_source", item)
        form["q3"] = q3[0]
        form["sources"] = list(zip(SOURCE_OPTIONS, [line[4:].strip() for line in q3[1:]], strict=True))
    return form


class AnswerError(ValueError):
    """An answer the page refuses, with the message shown to the annotator."""


def _text(form: Mapping[str, str], name: str, label: str) -> str:
    value, capital = form.get(name, "").strip(), label[0].upper() + label[1:]
    if not value:
        raise AnswerError(f"Please fill in {label}.")
    if len(value) > MAX_TEXT:
        raise AnswerError(f"{capital} is too long (at most {MAX_TEXT} characters).")
    if any(ord(c) < 32 and c not in "\t" for c in value):
        raise AnswerError(f"{capital} must be one line of text.")
    return value


def _choice(form: Mapping[str, str], name: str, options: Sequence[str], label: str) -> str:
    value = form.get(name, "").strip()
    if value not in options:
        raise AnswerError(f"Please choose {label}.")
    return value


def _number(form: Mapping[str, str], name: str, scale: range, label: str) -> int:
    value = form.get(name, "").strip()
    if not (value.isascii() and value.isdigit() and int(value) in scale):
        raise AnswerError(f"{label} must be a whole number from {scale.start} to {scale.stop - 1}.")
    return int(value)


def check_answer(item: Item, form: Mapping[str, str]) -> dict[str, Any]:
    """The stored answer for ``item`` from the posted fields; AnswerError names what is wrong."""
    if item.study == SOLVER:
        task = TASK_SPECS[item.kind]
        if not task.generative:
            return {"answer": _choice(form, "answer", TYPE_LABELS, "a property type")}
        answer = {"answer": _text(form, "answer", "the answer")}
        if task.completes_phrase:
            answer["answer_modifier"] = _text(form, "answer_modifier", "the modifier you added")
        return answer
    if item.study == RATING:
        return {"rating": _number(form, "rating", RATING_SCALE, "The rating")}
    answer: dict[str, Any] = {
        name: _number(form, name, RELEVANCE_SCALE, f"Q1-{k}") for k, name in enumerate(RELEVANCE_FIELDS, start=1)
    }
    answer["label"] = _choice(form, "label", FORM_OPTIONS[item.kind], "an answer to Q2")
    answer["toxic"] = form.get("toxic", "") == "on"
    answer["source"] = _choice(form, "source", SOURCE_OPTIONS, "an answer to Q3") if item.component else ""
    return answer
