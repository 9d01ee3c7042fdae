"""Descriptive statistics of the CCPT dataset (`ccpt data stats`; defined in docs/metrics.md)."""

from __future__ import annotations

from collections import Counter
from statistics import fmean
from typing import Any

from ccpt.dataset import FILE_SPECS, CCPTDataset, Record, unique_concepts
from ccpt.spec import GENERATIVE_TASKS, TYPE_PREDICTION
from ccpt.stats import fleiss_kappa

# The answer options annotators had (Figures 5 and 6): emergent candidates were labelled emergent /
# component / others, canceled candidates canceled / component / others.
KAPPA_CATEGORIES: dict[str, tuple[str, ...]] = {
    "ccpt_emergent": ("emergent", "component", "others"),
    "ccpt_canceled": ("canceled", "component", "others"),
}


def _mean_ratings(records: list[Record]) -> dict[str, float | None]:
    """Mean 1–5 rating per concept role; ``None`` for a file with no rows (e.g. a small pipeline build)."""
    return {
        role: round(fmean(x for r in records for x in getattr(r, f"{role}_ratings")), 3) if records else None
        for role in ("combination", "head", "modifier")
    }


def dataset_stats(ds: CCPTDataset) -> dict[str, Any]:
    """All statistics of `ccpt data stats` as a JSON-ready dict."""
    files: dict[str, Any] = {}
    for stem in FILE_SPECS:
        recs = ds.records(stem)
        raters = Counter(len(r.human_labels) for r in recs)
        entry: dict[str, Any] = {
            "type": FILE_SPECS[stem][0],
            "rows": len(recs),
            "toxic_rows": sum(r.toxic for r in recs),
            "empty_sentence_rows": sum(r.sentence is None for r in recs),
            "annotators_per_row": dict(sorted(raters.items())),
            "mean_human_relevance_1to5": _mean_ratings(recs),
            "in_paper": stem != "add_ccpt_emergent",
        }
        if stem in KAPPA_CATEGORIES and recs:
            # κ needs the same number of raters per row: only rows with the modal number of annotators are used.
            modal = raters.most_common(1)[0][0]
            table = [
                [r.human_labels.count(c) for c in KAPPA_CATEGORIES[stem]] for r in recs if len(r.human_labels) == modal
            ]
            entry |= {"fleiss_kappa": round(fleiss_kappa(table), 4), "fleiss_kappa_rows": len(table)}
            entry["label_counts"] = dict(Counter(label for r in recs for label in r.human_labels))
        files[stem] = entry
    paper = ds.paper_records
    by_type = Counter(r.type for r in paper)
    return {
        "source": ds.source,
        "total_paper_rows": len(paper),
        "rows_per_type": {t: by_type[t] for t in ("emergent", "canceled", "component")},
        "files": files,
        "splits": {task: {"test": len(ds.test(task)), "train": len(ds.train(task))} for task in GENERATIVE_TASKS},
        TYPE_PREDICTION: {"per_type": 250, "total": 1000},
        "unique_concepts": unique_concepts(paper),
        "toxic_rows": sum(r.toxic for r in paper),
        "toxic_in_test": {task: sum(r.toxic for r in ds.test(task)) for task in GENERATIVE_TASKS},
        "toxic_excluded": ds.excluded_toxic,
        "mean_human_relevance_by_type_1to5": {
            t: _mean_ratings([r for r in paper if r.type == t]) for t in ("emergent", "canceled", "component")
        },
    }


def format_stats(stats: dict[str, Any]) -> str:
    """Human-readable rendering of :func:`dataset_stats`."""
    types = stats["rows_per_type"]
    lines = [
        f"CCPT dataset at {stats['source']}",
        f"paper rows: {stats['total_paper_rows']:,} = {types['emergent']:,} emergent + "
        f"{types['canceled']:,} canceled + {types['component']:,} component "
        "(the paper's text says 12,315; the released files hold the rows counted here)",
        "",
        f"{'file':<20}{'rows':>7}{'toxic':>7}{'raters':>8}{'κ':>8}  mean relevance N/H/M (1–5)",
    ]
    for stem, f in stats["files"].items():
        raters = "/".join(str(k) for k in f["annotators_per_row"])
        kappa = f"{f['fleiss_kappa']:.3f}" if "fleiss_kappa" in f else "—"
        rel = {k: "—" if v is None else f"{v:.2f}" for k, v in f["mean_human_relevance_1to5"].items()}
        note = "" if f["in_paper"] else "  (not among the paper rows above)"
        lines.append(
            f"{stem:<20}{f['rows']:>7,}{f['toxic_rows']:>7}{raters:>8}{kappa:>8}  "
            f"{rel['combination']}/{rel['head']}/{rel['modifier']}{note}"
        )
    lines += ["", "splits (test / train pool):"]
    for task, s in stats["splits"].items():
        lines.append(f"  {task:<14}{s['test']:>5} / {s['train']:,}   toxic in test: {stats['toxic_in_test'][task]}")
    lines.append(f"  {TYPE_PREDICTION}  {stats[TYPE_PREDICTION]['total']} (250 per type, seeded sample)")
    u = stats["unique_concepts"]
    excluded = stats["toxic_excluded"]
    lines += [
        "",
        f"unique: {u['unigram_concepts']:,} unigram concepts ({u['heads']:,} heads, {u['modifiers']:,} modifiers), "
        f"{u['combinations']:,} noun phrases, {u['properties']:,} properties",
        f"{excluded} toxic rows excluded (--exclude-toxic)"
        if excluded
        else f"{stats['toxic_rows']} toxic-flagged rows kept (as in the paper's splits; --exclude-toxic drops them)",
        "κ = Fleiss' kappa of the three annotators' type labels (see docs/metrics.md)",
    ]
    return "\n".join(lines)
