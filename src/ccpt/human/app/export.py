"""Write the answers as exactly the CSVs the existing importers read (``ccpt human import-solver``, ``ccpt human
import-ratings --key``, ``ccpt pipeline annotate-import``). Every assignment is written, answered or not: an
unanswered solver item is an empty answer (a counted failure), an unanswered rating or HIT an empty cell.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.human.app.store import Store
from ccpt.human.app.studies import ANNOTATION, RATING, SOLVER, Study
from ccpt.human.sheets import SOLVER_COLUMNS
from ccpt.io.outputs import atomic_path, ensure_writable_dir
from ccpt.pipeline.annotation import ANSWER_COLUMNS, ANSWER_CONTEXT, write_csv
from ccpt.spec import TASK_SPECS, TASKS


@dataclass(frozen=True)
class ExportResult:
    """What was written: the files, and answered / assigned counts per study."""

    files: tuple[Path, ...]
    answered: dict[str, int]
    assigned: dict[str, int]


def export_answers(study: Study, store: Store, out: Path) -> ExportResult:
    """Write every study's answers into ``out`` (each file atomically) and count them."""
    ensure_writable_dir(out, "--out")  # a read-only or full directory: one line naming it
    annotators = store.annotators()
    assignments = store.all_assignments()
    items = {(i.study, i.key): i for i in study.items}
    answered = dict.fromkeys(study.kinds, 0)
    assigned = dict.fromkeys(study.kinds, 0)
    files: list[Path] = []
    solver_rows: dict[str, list[dict[str, Any]]] = {}
    rating_rows: dict[int, list[dict[str, Any]]] = {}
    hit_rows: list[dict[str, Any]] = []
    for annotator in annotators:
        answers = store.answers(annotator.id)
        for assignment in assignments.get(annotator.id, []):
            item = items[(assignment.study, assignment.item)]
            value = answers.get((item.study, item.key), {})
            assigned[item.study] += 1
            answered[item.study] += bool(value)
            if item.study == SOLVER:
                answer = {k: value.get(k, "") for k in ("answer", "answer_modifier")}  # write_csv drops an unasked one
                row = {"id": item.key, "task": item.kind, **item.fields, **answer, "rater": annotator.name}
                solver_rows.setdefault(item.kind, []).append(row)
            elif item.study == RATING:
                rating_rows.setdefault(annotator.id, []).append(
                    {"pair_id": item.key, **item.fields, "rater": annotator.name, "rating": value.get("rating", "")}
                )
            else:
                answer = {c: value.get(c, "") for c in ANSWER_COLUMNS[2:]}
                toxic = ("true" if value.get("toxic") else "false") if value else ""
                hit_rows.append(
                    {"hit_id": item.key, "worker_id": annotator.name, **answer, "toxic": toxic, **item.fields}
                )
    for task in [t for t in TASKS if t in solver_rows]:
        extra = ["answer_modifier"] if TASK_SPECS[task].completes_phrase else []
        files.append(write_csv(out / f"{task}_answers.csv", [*SOLVER_COLUMNS, *extra, "rater"], solver_rows[task]))
    if RATING in study.sources:
        with atomic_path(out / "key.csv") as partial:
            shutil.copyfile(study.sources[RATING], partial)
        files.append(out / "key.csv")
        columns = ["pair_id", "concept", "property", "rater", "rating"]
        for k, annotator in enumerate(annotators, start=1):
            if annotator.id in rating_rows:
                files.append(write_csv(out / f"rater_{k}.csv", columns, rating_rows[annotator.id]))
    if ANNOTATION in study.sources:
        files.append(write_csv(out / "answers.csv", [*ANSWER_COLUMNS, *ANSWER_CONTEXT], hit_rows))
    return ExportResult(tuple(files), answered, assigned)
