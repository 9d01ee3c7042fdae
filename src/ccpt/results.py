"""The tidy results table: one row per (task, model, method, seed, instance, sample).

Builders:
- :func:`from_reference_csv` — the authors' stored result files (paper experiments, GPT-4o).
- :func:`from_inspect_logs` — Inspect eval logs written by ccpt's tasks (judge scorer metadata).
- :func:`load_results` — any mix of the two, concatenated.

Columns are :data:`ccpt.rows.COLUMNS`, the fields of the per-sample record (docs/metrics.md, "Per-sample
results"). Relevances are in [0, 1]; ``r_hmp`` and ``score`` are always (re)computed with :mod:`ccpt.scoring`, the one
implementation of the metric. Notes about the import (e.g. how instance ids were assigned) are kept in
``df.attrs["notes"]``.
"""

from __future__ import annotations

import csv
import math
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import pandas as pd

from ccpt.errors import DataError, require_pyarrow
from ccpt.protocol import DEFAULT_PROTOCOL
from ccpt.rows import COLUMNS, FLOAT_COLUMNS, empty_row
from ccpt.scoring import Relevances
from ccpt.spec import (
    BASE,
    NPC_EMERGENT,
    PI_CANCELED,
    PI_EMERGENT,
    REFERENCE_METHODS,
    TASK_SPECS,
    TYPE_PREDICTION,
    split_method,
)

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

# The protocol that produced a row (see ccpt.protocol): the authors' stored files are "as run" by definition;
# Inspect logs written before protocols existed ran ccpt's default (DEFAULT_PROTOCOL).
REFERENCE_PROTOCOL = "as-run"

# Per-run columns of the authors' files: <model>_<method>_<seed>[_<sample>]_<field>. The model part may hold any
# character (dots, colons, slashes, spaces: "Meta-Llama-3.1-70B-Instruct", "qwen2.5:72b", even Bedrock's
# "meta.llama3-1-70b-instruct-v1:0"): the dataset's own "meta.*" columns never end in "_<seed>_<field>" or
# "_generated_", so the structure alone tells them apart.
_RUN_COLUMN = re.compile(
    r"^(?P<prefix>.+?)_(?P<seed>\d+)(?:_(?P<sample>\d+))?_(?P<field>generated_|property|combination|modifier|"
    r"combination_relevance|root_relevance|modifier_relevance|indiv_max|emergence|cancellation)$"
)
_TP_COLUMN = re.compile(r"^(?P<model>.+?)_generated_$")
_JUDGE_COLUMN = re.compile(r"^meta\.combination_(?P<judge>.+)_relevance$")


def _generations(cell: Any, path: Path, row: int, column: str) -> list[str]:
    """The raw generations of one ``*_generated_`` cell (a Python list literal, decoded without eval)."""
    from ccpt.answers import split_reply_list

    if not isinstance(cell, str):
        return []
    items = split_reply_list(cell)
    if items is None:
        raise DataError(f"{path}: row {row}, column {column}: not a list of generations")
    return items


# ----------------------------------------------------------------------------------------- reference


# What identifies one answer across logs: the same key in two logs is the same run done twice. The judge
# is the log's grader role (LOG_JUDGE), not the row's ``judge``: that is empty on a failed sample, and a
# resumed run's answer must replace the failed or stale one of the killed run (counted once).
LOG_JUDGE = "_log_judge"
LOG_DONE = "_log_done"  # whether the row's log finished (success/error) rather than was interrupted
RUN_KEY = ("task", "model", "method", "sa_filter", LOG_JUDGE, "seed", "instance", "sample", "sa_iteration", "protocol")


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    """Rows → DataFrame with :data:`COLUMNS` in order and numeric dtypes (None → NaN for relevances)."""
    out = pd.DataFrame(rows, columns=list(COLUMNS))
    out[list(FLOAT_COLUMNS)] = out[list(FLOAT_COLUMNS)].astype(float)
    out["judge_failures"] = out["judge_failures"].fillna(0).astype(int)
    return out


def _missing(columns: Iterable[str], required: Iterable[str]) -> list[str]:
    have = set(columns)
    return [c for c in required if c not in have]


def _require(path: Path, columns: Iterable[str], required: Sequence[str], what: str) -> None:
    missing = _missing(columns, required)
    if missing:
        raise DataError(
            f"{path}: not a CCPT {what} result file; missing column(s): {', '.join(missing)}",
            "expected the authors' result CSV format (docs/metrics.md, \"The authors' result files\")",
        )


def _detect_task(path: Path, columns: Sequence[str], fields: set[str]) -> str:
    if not fields:
        if any(_TP_COLUMN.match(c) for c in columns):
            return TYPE_PREDICTION
        raise DataError(
            f"{path}: no per-run result columns found (e.g. 'gpt-4o_naive_0_generated_' or "
            "'gpt-4o_naive_0_combination_relevance')",
            "is this one of the authors' result files?",
        )
    if "combination" in fields:
        return NPC_EMERGENT
    if "property" in fields:
        if "cancellation" in fields or any(re.match(r"^meta\..*_cancellation$", c) for c in columns):
            return PI_CANCELED
        if "emergence" in fields or any(re.match(r"^meta\..*_emergence$", c) for c in columns):
            return PI_EMERGENT
    raise DataError(
        f"{path}: cannot tell the task from the columns (need '<run>_property' with an emergence or "
        "cancellation column, or '<run>_combination')"
    )


T = TypeVar("T")


def optional(value: Any, cast: Callable[[Any], T]) -> T | None:
    """``cast(value)``, or None for a missing cell: None, or NaN (how pandas stores a missing value).

    The one place that decides what "missing" means for a results cell (relevances, labels, answers).
    """
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return None
    return cast(value)


def _instance_ids(
    frame: pd.DataFrame, task: str, path: Path, dataset: CCPTDataset | None, notes: list[str]
) -> list[str]:
    """Dataset Record ids for the rows of a generative reference file (matched on combination + property)."""
    if dataset is None:
        notes.append(
            f"{path.name}: no dataset given; instance ids are row positions ('{task}:row<i>'), "
            "pass --data-dir to use dataset ids and to add the Gold row"
        )
        return [f"{task}:row{i}" for i in range(len(frame))]
    from ccpt.dataset import clean_combination

    pool: dict[tuple[str, str], list[str]] = {}
    for record in dataset.test(task):  # type: ignore[arg-type]
        pool.setdefault((record.combination.lower(), record.property.lower()), []).append(record.id)
    ids: list[str] = []
    for i, (combination, prop) in enumerate(zip(frame["combination"], frame["property"], strict=True)):
        key = (clean_combination(str(combination)).lower(), str(prop).lower())
        matches = pool.get(key)
        if not matches:
            raise DataError(
                f"{path}: row {i} ({combination!r}, {prop!r}) is not in the {task} test split of {dataset.source}",
                "use the dataset the results were produced on, or omit --data-dir",
            )
        ids.append(matches.pop(0))  # duplicates: first unused match, in file order
    return ids


def _base_row(task: str, model: str, method_raw: str, seed: int, instance: str, path: Path) -> dict[str, Any]:
    row = empty_row()
    row.update(
        task=task,
        model=model,
        method=REFERENCE_METHODS.get(method_raw, method_raw),
        method_raw=method_raw,
        seed=seed,
        instance=instance,
        sample=0,
        judge_failures=0,
        source=path.name,
        protocol=REFERENCE_PROTOCOL,
    )
    return row


def _set_scores(row: dict[str, Any], rel: Relevances) -> None:
    kind = TASK_SPECS[row["task"]].kind
    row.update(r_np=rel.r_np, r_hp=rel.r_hp, r_mp=rel.r_mp, r_hmp=rel.r_hmp, score=rel.score(kind))  # type: ignore[arg-type]


def from_reference_csv(path: str | Path, dataset: CCPTDataset | None = None) -> pd.DataFrame:
    """Read one of the authors' result CSVs into the tidy table.

    Model, method, seed, sample and task are recognised from the column names (not the file name):
    ``<model>_<method>_<seed>_generated_`` holds the raw generations (a list, one per sample), per-sample
    fields are ``<model>_<method>_<seed>[_<sample>]_<field>``. Aggregate columns such as
    ``gpt-4o_best+multi_0_emergence`` are ignored (ccpt recomputes the oracle). The stored relevances are
    already in [0, 1]. For NPC, R_H,P is the dataset's stored judge relevance of the head noun
    (``meta.root_<judge>_relevance``), as in the authors' ``indiv_max``. ``answer`` is the answer the authors
    judged (their parsed column); ``parse_ok``/``parse_error`` come from :mod:`ccpt.answers` on the raw text.
    """
    path = Path(path)
    try:
        frame = pd.read_csv(path)
    except (OSError, UnicodeDecodeError, pd.errors.ParserError, pd.errors.EmptyDataError) as exc:
        raise DataError(f"{path}: cannot read as CSV ({exc})") from exc
    columns = list(frame.columns)
    runs: dict[tuple[str, int], dict[tuple[int | None, str], str]] = {}
    for column in columns:
        match = _RUN_COLUMN.match(column)
        if match and "+" not in match["prefix"] and "_" in match["prefix"]:
            sample = None if match["sample"] is None else int(match["sample"])
            runs.setdefault((match["prefix"], int(match["seed"])), {})[(sample, match["field"])] = column
    fields = {field for run in runs.values() for (_, field) in run}
    task = _detect_task(path, columns, fields)
    notes: list[str] = []
    if not TASK_SPECS[task].generative:
        out = _type_prediction_rows(frame, path, dataset, notes)
    else:
        out = _generative_rows(frame, path, task, runs, dataset, notes)
    out.attrs["notes"] = notes
    return out


def _judge_name(columns: Sequence[str]) -> str:
    for column in columns:
        match = _JUDGE_COLUMN.match(column)
        if match and match["judge"] != "human":  # meta.combination_human_relevance holds Likert tuples
            return match["judge"]
    return "unknown"


def _generative_rows(
    frame: pd.DataFrame,
    path: Path,
    task: str,
    runs: Mapping[tuple[str, int], Mapping[tuple[int | None, str], str]],
    dataset: CCPTDataset | None,
    notes: list[str],
) -> pd.DataFrame:
    _require(path, frame.columns, ["combination", "root", "modifier", "property"], task)
    judge = _judge_name(list(frame.columns))
    spec = TASK_SPECS[task]
    npc = spec.completes_phrase
    head_column = f"meta.root_{judge}_relevance"
    if npc:
        _require(path, frame.columns, [head_column], task)
    ids = _instance_ids(frame, task, path, dataset, notes)
    lines = frame.to_dict("records")  # plain dicts: much faster than frame.iloc per row
    rows: list[dict[str, Any]] = []
    for (prefix, seed), cols in sorted(runs.items()):
        model, _, method_raw = prefix.rpartition("_")
        samples = sorted({s for (s, f) in cols if f != "generated_"}, key=lambda s: -1 if s is None else s)
        needed = ["combination_relevance", "modifier_relevance"] + ([] if npc else ["root_relevance"])
        for sample in samples:
            absent = [
                f"{prefix}_{seed}{'' if sample is None else f'_{sample}'}_{f}"
                for f in needed
                if (sample, f) not in cols
            ]
            if absent:
                raise DataError(f"{path}: missing column(s): {', '.join(absent)}")
        raw_column = cols.get((None, "generated_"))
        for i, line in enumerate(lines):
            raw_list = [] if raw_column is None else _generations(line[raw_column], path, i, raw_column)
            for sample in samples:
                index = 0 if sample is None else sample

                def get(field: str, _sample: int | None = sample, _cols=cols, _line=line) -> Any:
                    column = _cols.get((_sample, field))
                    return None if column is None else _line[column]

                row = _base_row(task, model, method_raw, seed, ids[i], path)
                row.update(
                    sample=index,
                    combination=str(line["combination"]),
                    head=str(line["root"]),
                    modifier=str(line["modifier"]),
                    property=str(line["property"]),
                    judge=judge,
                )
                raw = raw_list[index] if index < len(raw_list) else None
                row["answer_raw"] = raw
                parsed = spec.parse(raw, str(line["root"])) if raw is not None else None
                # The answer the authors judged (their parsed columns); ours only where they stored none.
                if npc:
                    row["answer"] = optional(get("combination"), str) or (parsed.value if parsed else None)
                    row["answer_modifier"] = optional(get("modifier"), str) or (parsed.modifier if parsed else None)
                    r_hp = optional(line[head_column], float)
                else:
                    row["answer"] = optional(get("property"), str) or (parsed.value if parsed else None)
                    r_hp = optional(get("root_relevance"), float)
                row["parse_ok"] = bool(parsed.ok) if parsed else False
                row["parse_error"] = parsed.error if parsed else "no raw generation stored"
                _set_scores(
                    row,
                    Relevances(
                        optional(get("combination_relevance"), float),
                        r_hp,
                        optional(get("modifier_relevance"), float),
                    ),
                )
                rows.append(row)
    return _frame(rows)


def _type_prediction_rows(
    frame: pd.DataFrame, path: Path, dataset: CCPTDataset | None, notes: list[str]
) -> pd.DataFrame:
    answer_columns = [c for c in frame.columns if _TP_COLUMN.match(c)]
    _require(path, frame.columns, ["combination", "property", "human_label_majority"], TYPE_PREDICTION)
    lookup: dict[tuple[str, str, str], list[str]] = {}
    if dataset is not None:
        from ccpt.dataset import clean_combination

        for record in dataset.paper_records:
            key = (record.type, record.combination.lower(), record.property.lower())
            lookup.setdefault(key, []).append(record.id)
    else:
        notes.append(f"{path.name}: no dataset given; instance ids are row positions ('{TYPE_PREDICTION}:row<i>')")
    rows: list[dict[str, Any]] = []
    lines = frame.to_dict("records")
    for column in answer_columns:
        model = _TP_COLUMN.match(column)["model"]  # type: ignore[index]
        unmatched = 0
        for i, line in enumerate(lines):
            gold = str(line["human_label_majority"])
            instance = f"{TYPE_PREDICTION}:row{i}"
            if dataset is not None:
                key = (
                    gold,
                    clean_combination(str(line["combination"])).lower(),
                    str(line["property"]).lower(),
                )
                ids = lookup.get(key)
                if ids:
                    instance = f"{gold}:{ids[0]}"
                elif gold != "others":
                    unmatched += 1
            row = _base_row(TYPE_PREDICTION, model, "naive", 0, instance, path)
            row.update(combination=str(line["combination"]), property=str(line["property"]), gold_type=gold)
            row["method"] = BASE
            raw_list = _generations(line[column], path, i, column)
            raw = raw_list[0] if raw_list else None
            parsed = TASK_SPECS[TYPE_PREDICTION].parse(raw) if raw is not None else None
            row.update(
                answer_raw=raw,
                answer=parsed.value if parsed and parsed.ok else None,
                pred_type=parsed.value if parsed and parsed.ok else None,
                parse_ok=bool(parsed and parsed.ok),
                parse_error=parsed.error if parsed else "no raw generation stored",
                judge=None,
            )
            rows.append(row)
        if unmatched:
            notes.append(f"{path.name}: {unmatched} non-'others' rows not found in the dataset; ids are row positions")
    return _frame(rows)


# ---------------------------------------------------------------------------------------- inspect logs


def _normalise_sa(row: dict[str, Any]) -> None:
    """Filter ablation: method ``<sa>_nofilter`` → ``<sa>`` with ``sa_filter=False``; SA runs → True."""
    method, sa_filter = split_method(str(row.get("method") or ""))
    if sa_filter is False:
        row["method"], row["sa_filter"] = method, False
    elif sa_filter and row.get("sa_filter") is None:
        row["sa_filter"] = True


def rows_from_metadata(
    meta: Mapping[str, Any],
    *,
    default_seed: int,
    default_model: str,
    source: str,
    protocol: str = DEFAULT_PROTOCOL,
) -> list[dict[str, Any]]:
    """Tidy rows from one ``Score.metadata["ccpt"]`` dict (see :func:`from_inspect_logs` for the shape)."""
    base = {k: v for k, v in meta.items() if k != "samples"}
    members = meta.get("samples")
    if members is None:
        members = [{}]
    if not isinstance(members, list) or not all(isinstance(m, Mapping) for m in members):
        raise DataError(f"{source}: metadata 'samples' must be a list of per-sample dicts")
    rows: list[dict[str, Any]] = []
    for index, member in enumerate(members):
        merged = {**base, **member}
        row = empty_row()
        row.update({k: merged.get(k) for k in COLUMNS if k in merged})
        row["sample"] = int(merged.get("sample", index))
        row["seed"] = int(merged["seed"]) if merged.get("seed") is not None else default_seed
        row["model"] = merged.get("model") or default_model
        row["method_raw"] = merged.get("method_raw") or merged.get("method")
        _normalise_sa(row)
        row["judge_failures"] = int(merged.get("judge_failures") or 0)
        row["source"] = source
        row["protocol"] = protocol
        if row.get("task") not in TASK_SPECS:
            raise DataError(f"{source}: unknown task {row.get('task')!r} in sample metadata")
        if TASK_SPECS[row["task"]].generative:
            _set_scores(row, Relevances(row.get("r_np"), row.get("r_hp"), row.get("r_mp")))
        rows.append(row)
    return rows


def from_inspect_logs(log_dir: str | Path) -> pd.DataFrame:
    """Read every Inspect eval log under ``log_dir`` (a directory or one log file) into the tidy table.

    One row per sample per epoch (and per Multi-Oracle member) from
    ``sample.scores[<scorer>].metadata["ccpt"]``.
    The scorer stores there one per-sample dict whose keys are those of :data:`COLUMNS` (docs/metrics.md).

    Multi-Oracle shape: the same dict, whose per-answer keys move into a list under ``"samples"``::

        {"task": "pi_emergent", "model": "...", "method": "multi_oracle", "seed": 0,
         "instance": "ccpt_emergent:17", "combination": ..., "head": ..., "modifier": ..., "property": ...,
         "judge": "...",
         "samples": [{"sample": 0, "answer_raw": ..., "answer": ..., "answer_modifier": ...,
                      "parse_ok": ..., "parse_error": ..., "r_np": ..., "r_hp": ..., "r_mp": ...,
                      "judge_failures": 0}, ...]}

    Each list element is merged over the top-level keys (element wins) and becomes one row. ``seed``
    defaults to ``epoch − 1`` and ``model`` to the log's model when absent. ``r_hmp`` and ``score`` are
    recomputed from ``r_np``, ``r_hp``, ``r_mp``. Samples with no ``ccpt`` metadata (e.g. errored samples)
    become a row with ``parse_ok=False`` and ``parse_error="sample error: …"`` so failures are counted.
    """
    from inspect_ai.log import list_eval_logs, read_eval_log

    root = Path(log_dir)
    if root.is_file():
        locations = [str(root)]
    elif root.is_dir():
        locations = [info.name for info in list_eval_logs(str(root), recursive=True)]
    else:
        raise DataError(f"{root}: no such log file or directory")
    rows: list[dict[str, Any]] = []
    logs = []
    unreadable: list[UnreadableLog] = []
    for location in locations:
        try:
            logs.append(read_eval_log(location))
        except Exception as exc:  # truncated zip, bad JSON, foreign file: one bad log must not hide the others
            unreadable.append(UnreadableLog(str(location).replace("file://", ""), _reason(exc)))
    logs.sort(key=lambda log: str(log.eval.created))
    for log in logs:
        source = Path(str(log.location).replace("file://", "")).name
        model = str(log.eval.model)
        task_name = str(log.eval.task).split("/")[-1]
        protocol = str((log.eval.task_args or {}).get("protocol") or DEFAULT_PROTOCOL)
        roles = log.eval.model_roles or {}
        log_judge = str(roles["grader"].model) if "grader" in roles else None
        first = len(rows)
        for sample in log.samples or []:
            epoch = int(getattr(sample, "epoch", 1) or 1)
            meta = None
            for score in (sample.scores or {}).values():
                if isinstance(score.metadata, Mapping) and "ccpt" in score.metadata:
                    meta = score.metadata["ccpt"]
                    break
            if meta is None:
                error = getattr(sample, "error", None)
                row = empty_row()
                # The sample's own metadata (instance fields, Task 3's gold type) survives a failed or cancelled
                # sample: keep it, so the failure is counted in its place (e.g. Table 5's Unparsed column).
                sample_meta = sample.metadata if isinstance(sample.metadata, Mapping) else {}
                row.update({k: sample_meta[k] for k in COLUMNS if k in sample_meta})
                row.update(
                    task=task_name if task_name in TASK_SPECS else None,
                    model=model,
                    method=(log.eval.task_args or {}).get("method"),
                    seed=epoch - 1,
                    instance=str(sample.id),
                    sample=0,
                    parse_ok=False,
                    judge_failures=0,
                    source=source,
                    protocol=protocol,
                    parse_error=f"sample error: {getattr(error, 'message', error)}"
                    if error
                    else "no ccpt score metadata",
                )
                rows.append(row)
                continue
            rows.extend(
                rows_from_metadata(meta, default_seed=epoch - 1, default_model=model, source=source, protocol=protocol)
            )
        for row in rows[first:]:
            row[LOG_JUDGE] = log_judge
            row[LOG_DONE] = log.status in ("success", "error")
    if not rows:
        if unreadable:
            raise DataError(f"{root}: no readable Inspect logs: {unreadable_line(unreadable)}")
        raise DataError(f"{root}: no samples found in Inspect logs", "check the path")
    out = _frame(rows)
    out[LOG_JUDGE] = [row.get(LOG_JUDGE) for row in rows]
    out[LOG_DONE] = [row[LOG_DONE] for row in rows]
    # A directory can hold the same run twice (rerun with a larger --limit, or a killed run and its resumption):
    # the newest log wins, so no answer is counted twice. Rows of an interrupted log (status started or
    # cancelled) that its resumption replaced are simply superseded; repeats of finished runs get a note.
    repeated = out.duplicated(subset=list(RUN_KEY), keep="last")
    repeated_done = int((repeated & out[LOG_DONE]).sum())
    out = out[~repeated].reset_index(drop=True)
    unfinished = int((~out[LOG_DONE]).sum())
    out = out.drop(columns=[LOG_JUDGE, LOG_DONE])
    notes = []
    if repeated_done:
        notes.append(f"{repeated_done} rows repeated in older logs of the same run were ignored (newest log kept)")
    if unfinished:
        notes.append(
            f"{unfinished} rows come from interrupted runs (log status started or cancelled): "
            "rerun the same `ccpt run` command to complete them"
        )
    if unreadable:
        notes.append(f"skipped {unreadable_line(unreadable)}")
    out.attrs["notes"] = notes
    out.attrs["unreadable"] = unreadable
    return out


@dataclass(frozen=True)
class UnreadableLog:
    """A log file that could not be read (e.g. truncated by a kill); skipped and reported, never fatal."""

    path: str
    reason: str


def _reason(exc: BaseException) -> str:
    text = " ".join(str(exc).split()) or type(exc).__name__
    return text if len(text) <= 120 else text[:117] + "..."


def unreadable_line(logs: Sequence[UnreadableLog]) -> str:
    """One line naming every unreadable log and why, e.g. for a warning on stderr."""
    named = "; ".join(f"{log.path}: {log.reason}" for log in logs)
    return f"{len(logs)} unreadable log file{'s' if len(logs) != 1 else ''} ({named})"


# --------------------------------------------------------------------------------------------- loading

LOG_SUFFIXES = (".eval", ".json")


def load_results(paths: str | Path | Iterable[str | Path], dataset: CCPTDataset | None = None) -> pd.DataFrame:
    """The tidy per-sample table (columns :data:`COLUMNS`) of one path or many: the authors' reference CSVs,
    Inspect log files and directories, tidy tables written by :func:`export` (mixed is fine).

    A directory is read as Inspect logs, plus any ``*.csv`` directly inside it as reference files.
    ``dataset`` maps the authors' files to dataset record ids (without it, ids are positional).
    """
    if isinstance(paths, str | Path):
        paths = [paths]
    frames: list[pd.DataFrame] = []
    notes: list[str] = []
    unreadable: list[UnreadableLog] = []
    for item in paths:
        path = Path(item)
        if not path.exists():
            raise DataError(f"{path}: no such file or directory")
        parts: list[pd.DataFrame] = []
        if path.is_dir():
            parts.extend(from_reference_csv(p, dataset) for p in sorted(path.glob("*.csv")))
            if any(p.suffix in LOG_SUFFIXES for p in path.rglob("*")):
                parts.append(from_inspect_logs(path))
            if not parts:
                raise DataError(f"{path}: no result CSVs or Inspect logs inside")
        elif path.suffix == ".parquet" or (path.suffix == ".csv" and _is_tidy(path)):
            parts.append(from_tidy(path))
        elif path.suffix == ".csv":
            parts.append(from_reference_csv(path, dataset))
        elif path.suffix in LOG_SUFFIXES:
            parts.append(from_inspect_logs(path))
        else:
            raise DataError(f"{path}: unknown result file type (expected .csv, .eval or .json)")
        for part in parts:
            notes.extend(part.attrs.get("notes", []))
            unreadable.extend(part.attrs.get("unreadable", []))
        frames.extend(parts)
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    out.attrs["notes"] = notes
    out.attrs["unreadable"] = unreadable
    return out


_TIDY_MARKERS = ("task", "model", "method", "seed", "instance", "r_np", "parse_ok")


def _is_tidy(path: Path) -> bool:
    """Whether a CSV is a tidy table written by :func:`export` (rather than one of the authors' result files)."""
    with path.open(newline="", encoding="utf-8") as fh:
        header = next(csv.reader(fh), [])
    return all(column in header for column in _TIDY_MARKERS)


def from_tidy(path: str | Path) -> pd.DataFrame:
    """Read back a tidy table written by :func:`export` (e.g. judged human answers from `ccpt human`)."""
    path = Path(path)
    if path.suffix == ".parquet":
        require_pyarrow(path)
        frame = pd.read_parquet(path)
    else:
        from ccpt.sheets import restore_frame

        frame = restore_frame(pd.read_csv(path, keep_default_na=True))
    if "protocol" not in frame.columns:  # tables exported before protocols existed ran ccpt's default
        frame["protocol"] = DEFAULT_PROTOCOL
    missing = _missing(frame.columns, COLUMNS)
    if missing:
        raise DataError(f"{path}: not a ccpt tidy table, missing column(s) {', '.join(missing)}")
    out = _frame(frame[list(COLUMNS)].astype(object).where(frame[list(COLUMNS)].notna(), None).to_dict("records"))
    out.attrs["notes"] = []
    return out


def export(frame: pd.DataFrame, path: str | Path) -> Path:
    """Write the tidy table as CSV or Parquet (chosen by the suffix)."""
    path = Path(path)
    if path.suffix == ".csv":  # opened by people in spreadsheets: model text must not become a formula
        from ccpt.sheets import write_sheet

        write_sheet(frame, path)
    elif path.suffix in (".parquet", ".pq"):
        require_pyarrow(path)
        frame.to_parquet(path, index=False)
    else:
        raise DataError(f"{path}: unsupported export format (use .csv or .parquet)")
    return path
