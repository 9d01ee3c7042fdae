"""Exporting CCPT records (JSONL / CSV / parquet) and chat-format SFT examples from the train pool."""

from __future__ import annotations

import csv
import json
from collections.abc import Iterable, Iterator
from dataclasses import asdict
from pathlib import Path
from typing import Any, Literal

from ccpt.dataset import CCPTDataset, Record
from ccpt.errors import CcptError, require_pyarrow
from ccpt.prompts import system_prompt, task_prompt
from ccpt.spec import BASE_TEMPLATE, GENERATIVE_TASKS, TASK_SPECS, TaskName

ExportFormat = Literal["jsonl", "csv", "parquet"]


def record_row(record: Record) -> dict[str, Any]:
    """A flat, JSON-ready dict of a record (tuples become lists, plus the stable ``id``)."""
    row = asdict(record)
    row = {"id": record.id, **{k: list(v) if isinstance(v, tuple) else v for k, v in row.items()}}
    return row


def select_records(ds: CCPTDataset, split: str | None, task: TaskName | None) -> list[Record]:
    """Records for export: everything (``split=None``), or one task's ``test`` / ``train`` split."""
    if split is None:
        return [*ds.paper_records, *ds.extra_emergent]
    if task is None:
        raise CcptError("--split needs --task (which task's split?)")
    return ds.test(task) if split == "test" else ds.train(task)


def write_rows(rows: list[dict[str, Any]], path: Path, fmt: ExportFormat) -> None:
    """Write dict rows as JSONL (one object per line, loadable by ``datasets.load_dataset("json")``),
    CSV (list fields JSON-encoded), or parquet."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        with path.open("w", encoding="utf-8") as fh:
            for row in rows:
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
    elif fmt == "csv":
        fields = list(rows[0]) if rows else []
        with path.open("w", newline="", encoding="utf-8") as fh:
            writer = csv.DictWriter(fh, fieldnames=fields)
            writer.writeheader()
            for row in rows:
                writer.writerow({k: json.dumps(v) if isinstance(v, list | dict) else v for k, v in row.items()})
    elif fmt == "parquet":
        require_pyarrow(path)
        import pyarrow as pa  # optional: the `parquet` extra
        import pyarrow.parquet as pq

        pq.write_table(pa.Table.from_pylist(rows), path)
    else:
        raise CcptError(f"unknown export format {fmt!r}; choose jsonl, csv or parquet")


def _target(record: Record, task: TaskName) -> tuple[str, dict[str, str]]:
    spec, fields = TASK_SPECS[task], asdict(record)
    return task_prompt(task, BASE_TEMPLATE, **spec.prompt_fields(fields)), spec.gold_fields(fields)


def sft_examples(ds: CCPTDataset, tasks: Iterable[TaskName] = GENERATIVE_TASKS) -> Iterator[dict[str, Any]]:
    """Chat-format supervised fine-tuning examples from the train pools.

    No test row of *any* generative task is used: PI-emergent and NPC-emergent index the same file, so a
    row held out for one is held out for both. Only rows whose majority label is the file's type are used.
    """
    held_out = ds.held_out_rows()
    system = system_prompt()
    for task in tasks:
        if task not in GENERATIVE_TASKS:
            raise CcptError(f"SFT export supports the generative tasks only, not {task!r}")
        for record in ds.train(task):
            if record.id in held_out:
                continue
            prompt, answer = _target(record, task)
            yield {
                "id": record.id,
                "task": task,
                "messages": [
                    {"role": "system", "content": system},
                    {"role": "user", "content": prompt},
                    {"role": "assistant", "content": json.dumps(answer, ensure_ascii=False)},
                ],
            }
