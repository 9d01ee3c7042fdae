"""Stage 5 (paper §3.2 Step 3, Appendix A.3, Figures 5–6): human annotation of the candidates.

Export writes ``hits.csv``, a printable ``hits.html`` and ``answers_template.csv`` (one row per assignment; 3 per
emergent/canceled HIT, 1 per component HIT). Import reads the answers (ours, or a platform's batch results) and
writes the dataset in the released CCPT schema: strict-plurality majority labels (else ``others``), Fleiss' κ per
form and seeded test splits. The rules are in docs/pipeline.md.
"""

from __future__ import annotations

import csv
import html
import random
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ccpt.dataset import RELEASED_HEADERS, TASK_FILE
from ccpt.errors import DataError
from ccpt.io.outputs import atomic_write_text
from ccpt.io.safe_csv import neutralise_row, read_checked_sheet, read_sheet_rows
from ccpt.pipeline.candidates import CANDIDATES
from ccpt.pipeline.manifest import StageResult, StageSpec, atomic_text, read_jsonl, run_stage, write_json
from ccpt.prompts import render_template
from ccpt.schemas.sheets import ANSWERS, HITS
from ccpt.spec import CANCELED, COMPONENT, EMERGENT, GENERATIVE_TASKS, OTHERS, TASK_SPECS
from ccpt.stats import defined, fleiss_kappa

FORM_FIELDS = ("root", "modifier", "combination", "property")  # the form's variables
HIT_COLUMNS = (
    *("hit_id", "form", "candidate_type", "assignments", *FORM_FIELDS),
    *("sentence", "doc_id", "property_source", "question"),
)
RELEVANCE_COLUMNS = ("combination_relevance", "root_relevance", "modifier_relevance")
ANSWER_COLUMNS = ("hit_id", "worker_id", "label", *RELEVANCE_COLUMNS, "toxic", "source")
# What an answers file shows of its HIT, checked against hits.csv on import: HIT ids are numbered alike in every
# export (a platform's batch results carry every HIT column as ``Input.<name>``).
ANSWER_CONTEXT = ("combination", "property")
FORM_OPTIONS: dict[str, tuple[str, str, str]] = {
    EMERGENT: (EMERGENT, COMPONENT, OTHERS),  # Figure 5, codes 0/1/2
    CANCELED: (CANCELED, COMPONENT, OTHERS),  # Figure 6, codes 0/1/2
}
# The released file of a HIT by (candidate type, majority label); other outcomes are left out. A component HIT
# labelled emergent is a single-annotator emergent row, as in the released add_ccpt_emergent.csv.
TARGET_FILE = {(t, t): f"ccpt_{t}" for t in (EMERGENT, CANCELED, COMPONENT)}
TARGET_FILE[COMPONENT, EMERGENT] = "add_ccpt_emergent"
PAPER_TEST_SIZES = {name: spec.paper_test_size for name, spec in TASK_SPECS.items() if spec.paper_test_size}
Answer = dict[str, Any]  # one annotator's checked answers row: label an option's name, worker_id never empty


@dataclass(frozen=True)
class AnnotationParams:
    """Documented parameters of stage 5."""

    annotators: int = 3  # per emergent / canceled HIT (paper: 3)
    component_annotators: int = 1  # per component HIT (paper: 1, for cost)
    toxic_rule: str = "any"  # "any" annotator, or "majority"
    test_sizes: tuple[tuple[str, int], ...] = tuple(PAPER_TEST_SIZES.items())
    seed: int = 0


def hits_from_candidates(rows: Sequence[dict[str, Any]], params: AnnotationParams) -> list[dict[str, Any]]:
    """One HIT per candidate, ids ``<type>-<n>`` in file order."""
    numbers: Counter[str] = Counter()
    hits = []
    for row in rows:
        kind = row["type"]
        form = CANCELED if kind == CANCELED else EMERGENT
        numbers[kind] += 1
        fields = {name: row["head" if name == "root" else name] for name in FORM_FIELDS}
        question = render_template(f"pipeline_form_{form}", **fields)
        if kind == COMPONENT:
            question += "\n\n" + render_template("pipeline_form_component_source", **fields)
        hits.append(
            {
                "hit_id": f"{kind}-{numbers[kind]:05d}",
                "form": form,
                "candidate_type": kind,
                "assignments": params.component_annotators if kind == COMPONENT else params.annotators,
                **fields,
                **{name: row.get(name) or "" for name in ("sentence", "doc_id", "property_source")},
                "question": question,
            }
        )
    return hits


def write_csv(path: Path, columns: Sequence[str], rows: Sequence[dict[str, Any]]) -> Path:
    """Write ``rows`` as a CSV people open (atomically): text cells neutralised, no live formulas."""
    with atomic_text(path) as fh:
        writer = csv.DictWriter(fh, fieldnames=list(columns), extrasaction="ignore")
        writer.writeheader()
        writer.writerows(neutralise_row(row) for row in rows)
    return path


def hits_html(hits: Sequence[dict[str, Any]]) -> str:
    """A printable sheet: one block per HIT with its rendered question (all text HTML-escaped)."""
    blocks = [
        f'<section class="hit"><h2>{html.escape(h["hit_id"])}</h2>'
        f'<p class="sentence">{html.escape(h["sentence"])}</p><pre>{html.escape(h["question"])}</pre>'
        f"<p>Annotator: ________ &nbsp; Q1-1: ☐1 ☐2 ☐3 ☐4 ☐5 &nbsp; Q1-2: ☐1 ☐2 ☐3 ☐4 ☐5 &nbsp; "
        f"Q1-3: ☐1 ☐2 ☐3 ☐4 ☐5 &nbsp; Q2: ☐0 ☐1 ☐2 &nbsp; toxic ☐</p></section>"
        for h in hits
    ]
    style = (
        "body{font-family:serif;max-width:48em;margin:auto}pre{white-space:pre-wrap;font-family:inherit}"
        ".hit{page-break-inside:avoid;border-top:1px solid #999;padding:.5em 0}.sentence{font-style:italic}"
    )
    return (
        f'<!doctype html><html><head><meta charset="utf-8"><title>CCPT annotation</title><style>{style}'
        f"</style></head><body><h1>CCPT annotation ({len(hits)} HITs)</h1>{''.join(blocks)}</body></html>\n"
    )


def export_tasks(workdir: Path, *, params: AnnotationParams = AnnotationParams(), force: bool = False) -> StageResult:
    """Stage 5a: ``candidates.jsonl`` → ``annotation/hits.csv``, ``hits.html``, ``answers_template.csv``."""
    source, folder = workdir / CANDIDATES, workdir / "annotation"
    outputs = (folder / "hits.csv", folder / "hits.html", folder / "answers_template.csv")
    recorded = {"annotators": params.annotators, "component_annotators": params.component_annotators}
    spec = StageSpec("annotate-export", workdir, (source,), outputs, recorded)

    def work() -> dict[str, Any]:
        hits = hits_from_candidates(list(read_jsonl(source)), params)
        write_csv(outputs[0], HIT_COLUMNS, hits)
        atomic_write_text(outputs[1], hits_html(hits))
        template = [
            {"hit_id": h["hit_id"], "worker_id": "", **{c: h[c] for c in ANSWER_CONTEXT}}
            for h in hits
            for _ in range(h["assignments"])
        ]
        write_csv(outputs[2], [*ANSWER_COLUMNS, *ANSWER_CONTEXT], template)
        return {
            "hits": len(hits),
            "assignments": len(template),
            **{f"hits_{t}": n for t, n in Counter(h["candidate_type"] for h in hits).items()},
        }

    return run_stage(spec, work, force=force)


def _normalise_header(name: str) -> str:
    name = name.strip().removeprefix("Input.").removeprefix("Answer.")
    return {"WorkerId": "worker_id", "HITId": "platform_hit_id"}.get(name, name)


def read_answers(path: Path, hits: dict[str, dict[str, Any]]) -> list[Answer]:
    """Parse an answers CSV against the exported HITs (docs/schemas.md, "annotation answers"); DataError if bad."""
    if not path.is_file():
        raise DataError(f"answers file not found: {path}", "fill in annotation/answers_template.csv")
    sheet = read_sheet_rows(path, [c for c in ANSWER_COLUMNS if c != "source"], rename=_normalise_header)
    for row, number in zip(sheet.rows, sheet.numbers, strict=True):
        hit = hits.get(row.get("hit_id", "").strip())
        if hit is None:
            raise DataError(
                f"{path}: row {number}, column 'hit_id': unknown HIT {row.get('hit_id')!r}",
                "answers must come from this export",
            )
        for name in FORM_FIELDS:  # what the row shows of its HIT, where it shows it
            shown, exported = (" ".join(str(v or "").split()).casefold() for v in (row.get(name), hit.get(name)))
            if shown and shown != exported:
                raise DataError(
                    f"{path}: row {number}: HIT {hit['hit_id']!r} is {name} {row[name]!r} here but "
                    f"{hit.get(name)!r} in hits.csv",
                    "answers must come from this export (every export numbers its HITs alike)",
                )
    # An assignment not (yet) answered (empty label) is counted as missing by the caller.
    answered = [(row, n) for row, n in zip(sheet.rows, sheet.numbers, strict=True) if row.get("label", "").strip()]
    numbers = [n for _, n in answered]
    checked = ANSWERS.check([row for row, _ in answered], str(path), row_numbers=numbers)
    answers: list[Answer] = []
    for values, number in zip(checked.rows, numbers, strict=True):
        hit = hits[values["hit_id"]]
        options = FORM_OPTIONS[hit["form"]]
        label = options[int(values["label"])] if values["label"].isdigit() else values["label"]
        if label not in options:
            raise DataError(
                f"{path}: row {number}, column 'label': {label!r} is not an option of the {hit['form']} form "
                f"({', '.join(options)} or 0-2)"
            )
        # Padded " W1 " is W1 (else one person votes twice); no worker id: each row is its own annotator.
        worker = (values["worker_id"] or "").strip() or f"row{number}"
        answers.append({**values, "hit_id": hit["hit_id"], "worker_id": worker, "label": label})
    ANSWERS.check_unique(answers, str(path), numbers)
    seen: Counter[str] = Counter()
    for answer, number in zip(answers, numbers, strict=True):  # no HIT has more answers than its assignments
        seen[answer["hit_id"]] += 1
        allowed = int(hits[answer["hit_id"]]["assignments"])
        if seen[answer["hit_id"]] > allowed:
            raise DataError(
                f"{path}: row {number}, column 'hit_id': HIT {answer['hit_id']!r} has more answers than its "
                f"{allowed} assignment(s)",
                "each assignment is answered once; remove the extra rows",
            )
    return answers


def majority(labels: Sequence[str]) -> str:
    """The label with a strict plurality; ``others`` when the top count is shared."""
    ranked = Counter(labels).most_common()
    if len(ranked) > 1 and ranked[0][1] == ranked[1][1]:
        return OTHERS
    return ranked[0][0]


def _tuple(values: Sequence[object]) -> str:
    """The released files' tuple notation: "(5, 5, 3)", and "(5, )" for one value."""
    return "(" + ", ".join(map(str, values)) + (", )" if len(values) == 1 else ")")


def form_kappa(answers_by_hit: dict[str, list[Answer]], hits: dict[str, dict[str, Any]], form: str) -> dict[str, Any]:
    """Fleiss' κ of the three-way classification over the form's HITs that have its full annotator count."""
    groups = [a for h, a in answers_by_hit.items() if hits[h]["form"] == form and len(a) == int(hits[h]["assignments"])]
    groups = [g for g in groups if len(g) >= 2]
    if not groups or len({len(g) for g in groups}) != 1:
        return {"kappa": None, "items": 0}
    # Every label is one of the form's options (read_answers checks it): each row of counts sums to the raters.
    kappa = fleiss_kappa([[sum(1 for a in g if a["label"] == o) for o in FORM_OPTIONS[form]] for g in groups])
    return {"kappa": defined(kappa), "items": len(groups), "raters": len(groups[0])}


def dataset_rows(
    hits: dict[str, dict[str, Any]], answers_by_hit: dict[str, list[Answer]], params: AnnotationParams
) -> tuple[dict[str, list[dict[str, str]]], Counter[str]]:
    """Released-schema rows per file, and counts of every outcome."""
    files: dict[str, list[dict[str, str]]] = {name: [] for name in RELEASED_HEADERS}
    outcome: Counter[str] = Counter()
    for hit_id, hit in hits.items():
        answers = answers_by_hit.get(hit_id, [])
        if not answers:
            outcome["hits_unanswered"] += 1
            continue
        if len(answers) < int(hit["assignments"]):
            outcome["hits_with_fewer_answers"] += 1
        label = majority([a["label"] for a in answers])
        outcome[f"{hit['candidate_type']}_candidates_labelled_{label}"] += 1
        target = TARGET_FILE.get((hit["candidate_type"], label))
        if target is None:
            continue
        flags = [a["toxic"] for a in answers]
        toxic = any(flags) if params.toxic_rule == "any" else sum(flags) * 2 > len(flags)
        row = {
            **{name: hit[name] for name in ("sentence", *FORM_FIELDS)},
            "human_label_majority": label,
            "meta.human_labels": _tuple([a["label"] for a in answers]),
            **{f"meta.{c.replace('_', '_human_')}": _tuple([a[c] for a in answers]) for c in RELEVANCE_COLUMNS},
            "meta.toxicity": str(toxic),
        }
        if "meta.property_source" in RELEASED_HEADERS[target]:
            sources = [a["source"] for a in answers if a["source"]]
            row["meta.property_source"] = Counter(sources).most_common(1)[0][0] if sources else "nope"
        outcome["toxic_rows"] += toxic
        files[target].append(row)
    return files, outcome


def test_index(files: dict[str, list[dict[str, str]]], params: AnnotationParams) -> dict[str, list[int]]:
    """Seeded test splits: row positions into the task's file, at most the file's size."""
    rng, sizes = random.Random(params.seed), dict(params.test_sizes)
    lengths = {task: len(files[TASK_FILE[task]]) for task in GENERATIVE_TASKS}
    return {task: sorted(rng.sample(range(n), min(sizes.get(task, 0), n))) for task, n in lengths.items()}


def import_answers(
    workdir: Path,
    answers: Path,
    out_dir: Path | None = None,
    *,
    params: AnnotationParams = AnnotationParams(),
    force: bool = False,
) -> StageResult:
    """Stage 5b: answers → CCPT dataset directory (default ``workdir/dataset``) + ``annotation_report.json``."""
    hits_csv = workdir / "annotation" / "hits.csv"
    target = out_dir or workdir / "dataset"
    outputs = (
        *(target / f"{name}.csv" for name in RELEASED_HEADERS),
        target / "test_index.json",
        target / "annotation_report.json",
    )
    recorded = {"toxic_rule": params.toxic_rule, "test_sizes": dict(params.test_sizes), "seed": params.seed}
    spec = StageSpec("annotate-import", workdir, (hits_csv, Path(answers)), outputs, {**recorded, "out": str(target)})

    def work() -> dict[str, Any]:
        # hits.csv checked by its schema (docs/schemas.md, "annotation HITs"), by hit_id; rows kept as text.
        hits = {row["hit_id"]: row for row in read_checked_sheet(hits_csv, HITS)[1].rows}
        parsed = read_answers(Path(answers), hits)
        by_hit: dict[str, list[Answer]] = {}
        for a in parsed:
            by_hit.setdefault(a["hit_id"], []).append(a)
        files, outcome = dataset_rows(hits, by_hit, params)
        for name, rows in files.items():
            write_csv(target / f"{name}.csv", RELEASED_HEADERS[name], rows)
        write_json(target / "test_index.json", test_index(files, params))
        report = {
            "answers": len(parsed),
            "hits": len(hits),
            "rows": {name: len(rows) for name, rows in files.items()},
            "fleiss_kappa": {form: form_kappa(by_hit, hits, form) for form in FORM_OPTIONS},
            "outcomes": dict(sorted(outcome.items())),
            "toxic_rule": params.toxic_rule,
            "judge_columns": "empty: the meta.*gpt-4o* columns hold the paper judge's scores, not annotations",
        }
        write_json(target / "annotation_report.json", report)
        return {
            "answers": len(parsed),
            **{f"rows_{k}": v for k, v in report["rows"].items()},
            **{f"kappa_{form}_form": report["fleiss_kappa"][form]["kappa"] for form in FORM_OPTIONS},
        }

    return run_stage(spec, work, force=force)
