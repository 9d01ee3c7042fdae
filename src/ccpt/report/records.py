"""The report as long-format records: CSV (spreadsheet-safe) and strict JSON."""

from __future__ import annotations

import csv
import io

from ccpt.io.jsonout import dumps, strict
from ccpt.io.safe_csv import neutralise
from ccpt.report.build import Report, report_records
from ccpt.report.notes import stat_note
from ccpt.report.tables.common import CSV_FIELDS


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
