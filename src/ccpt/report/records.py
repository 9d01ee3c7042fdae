"""The report as long-format records: CSV (spreadsheet-safe) and strict JSON."""

from __future__ import annotations

import csv
import io
from typing import TYPE_CHECKING, Any

from ccpt.jsonout import dumps, strict
from ccpt.report.display import FAILURE_COUNTS
from ccpt.report.names import model_text
from ccpt.report.notes import stat_note
from ccpt.sheets import neutralise
from ccpt.spec import GOLD_STORED, TYPE_PREDICTION
from ccpt.stats import Summary

if TYPE_CHECKING:
    from ccpt.report.build import Report  # built above this module (report_records is one of its views)

SUMMARY_FIELDS = ("mean", "spread", "lo", "hi", "stat", "n_seeds", "n_instances", "n_failed")  # of a Summary
CSV_FIELDS: tuple[str, ...] = (
    "table", "model", "method", "judge", "task", "metric", *SUMMARY_FIELDS, "rank", "count", "model_label", "text",
)  # fmt: skip


def _summary_record(summary: Summary) -> dict[str, Any]:
    return {name: getattr(summary, name) for name in SUMMARY_FIELDS}


def report_records(report: Report) -> list[dict[str, Any]]:
    """Every number of the report as long-format records (the stored-judge Gold row: method ``gold_stored``, no
    model; ``model_label``: the printed name)."""
    out: list[dict[str, Any]] = []
    for row in report.generative.rows if report.generative else []:
        method = GOLD_STORED if row.kind == GOLD_STORED else row.method
        base = {"table": "table3", "model": row.model, "method": method, "judge": row.judge}
        out += [
            {**base, "task": task, "metric": metric, "rank": row.ranks.get((task, metric)), **_summary_record(summary)}
            for (task, metric), summary in row.cells.items()
        ]
    for res in report.types:
        base = {"table": "table5", "model": res.model, "method": res.method, "task": TYPE_PREDICTION}
        cls = res.classification
        out.append({**base, "metric": "accuracy", **_summary_record(res.accuracy), "count": len(res.instances)})
        for name in ("has_property_accuracy", "lacks_property_accuracy", "binary_accuracy"):
            out.append({**base, "metric": name, "mean": 100 * getattr(cls, name)})
        pct = cls.row_percent()
        for i, actual in enumerate(cls.labels):
            for j, predicted in enumerate(cls.labels):
                metric = f"confusion:{actual}->{predicted}"
                out.append({**base, "metric": metric, "mean": float(pct[i, j]), "count": int(cls.counts[i, j])})
            share, count = res.unparsed_percent(i), int(cls.unparsed[i])
            out.append({**base, "metric": f"unparsed:{actual}", "mean": float(share), "count": count})
            out.append({**base, "metric": f"n:{actual}", "count": res.type_n(i)})
    for tab in report.iterations:
        base = {"table": "table6", "model": tab.model, "method": tab.method, "judge": tab.judge}
        out += [
            {**base, "task": task, "metric": f"score@C_{t}", **_summary_record(summary)}
            for (task, t), summary in tab.cells.items()
        ]
    for fr in report.filters:
        base = {"table": "table7", "model": fr.model, "method": fr.method, "judge": fr.judge, "task": fr.task}
        for metric, summary in (("score_without_filter", fr.without), ("score_with_filter", fr.with_)):
            if summary is not None:
                out.append({**base, "metric": metric, **_summary_record(summary)})
        out.append({**base, "metric": "delta", "mean": fr.delta})
    for f in report.failures:
        base = {"table": "failures", "model": f.model, "method": f.method, "judge": f.judge, "task": f.task}
        step = "" if f.sa_iteration is None else f"@C_{f.sa_iteration}"  # as Table 6's "score@C_t"
        out += [{**base, "metric": name + step, "count": getattr(f, name)} for name in FAILURE_COUNTS]
    usage = ("calls", "cached_calls", "input_tokens", "output_tokens", "cost", "failed_attempts", "timed_out")
    out += [  # the role is in ``method``
        {"table": "usage", "model": r.model, "method": r.role, "task": None, "metric": name, "count": getattr(r, name)}
        for r in report.usage
        for name in usage + (("invalid_usage",) if r.invalid_usage else ())
    ]
    for record in out:
        model = record.get("model")
        record["model_label"] = model_text(model, report.labels) if model else model
    return out


def render_csv(report: Report) -> str:
    """Long-format CSV of every number (see :func:`report_records`); provenance as ``table=provenance`` rows
    (``metric`` = field, ``text`` = value)."""
    records = report_records(report)
    for key, value in (report.provenance or {}).items():
        text = value if isinstance(value, str) else dumps(value, indent=None)
        records.append({"table": "provenance", "metric": key, "text": text})
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=list(CSV_FIELDS), extrasaction="ignore")
    writer.writeheader()
    writer.writerows({k: neutralise(v) for k, v in r.items()} for r in strict(records))  # names can be hostile
    return buffer.getvalue()


def render_json(report: Report) -> str:
    """Strict JSON: {"provenance", "stat", "stat_description", "oracle", "judge", "warnings", "notes", "labels",
    "records": [...]}."""
    payload = {
        "provenance": report.provenance,
        "stat": report.stat,
        "stat_description": stat_note(report.stat),
        "oracle": report.oracle,
        "judge": report.judge_info,
        "warnings": report.warnings,
        "notes": report.notes,
        "labels": report.labels,
        "records": report_records(report),
    }
    return dumps(payload) + "\n"
