"""The report: every table of one ``ccpt report``, above the tables and their views (no import circle)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ccpt.errors import CcptError
from ccpt.judges import JudgeIdentity
from ccpt.judging.agreement import judge_note
from ccpt.methods import method_label, unregistered_notes
from ccpt.report.display import DisplayTable, display_tables
from ccpt.report.names import model_text, resolve_labels
from ccpt.report.notes import frame_provenance, protocol_note
from ccpt.report.records import CSV_FIELDS, report_records
from ccpt.report.tables import (
    FailureRow,
    FilterRow,
    GenerativeTable,
    IterationTable,
    OracleReduction,
    TypeResult,
    as_reported,
    failures,
    generative_rows,
    table3,
    table5,
    table6,
    table7,
    tagged_models,
)
from ccpt.results import LOG_SUFFIXES, load_results
from ccpt.results.inspect_logs import JUDGE_IDENTITIES
from ccpt.results.usage import Price, UsageRow, read_usage
from ccpt.spec import TASK_SPECS
from ccpt.stats import Stat

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


@dataclass
class Report:
    """Everything one ``ccpt report`` prints."""

    stat: Stat
    oracle: OracleReduction
    generative: GenerativeTable | None
    types: list[TypeResult]
    iterations: list[IterationTable]
    filters: list[FilterRow]
    failures: list[FailureRow]
    notes: list[str]
    judge_info: str | None = None
    examples: pd.DataFrame | None = None
    provenance: dict[str, Any] | None = None
    usage: list[UsageRow] = field(default_factory=list)  # token/cost accounting, set from the logs by the CLI
    labels: dict[str, str] = field(default_factory=dict)  # model id → display name
    warnings: list[str] = field(default_factory=list)  # printed first by every format, and by the CLI on stderr

    def tables(self) -> dict[str, DisplayTable]:
        """Every table by key: ``table3``, ``table5:<model>:<method>``, ``table6:<model>:<method>``, ``table7``,
        ``failures``, ``usage`` (model ids, never display names, in the keys; docs/metrics.md, "Python API");
        each has ``.to_frame(spread=False)``."""
        return {table.key: table for table in display_tables(self)}

    def to_frame(self) -> pd.DataFrame:
        """Every number of the report in long format (the rows of ``ccpt report --format csv``)."""
        return pd.DataFrame(report_records(self), columns=[c for c in CSV_FIELDS if c != "text"])


def build_report(
    frame: pd.DataFrame,
    *,
    stat: Stat = "sem",
    oracle: OracleReduction = "paper",
    dataset: CCPTDataset | None = None,
    judge_info: str | None = None,
    n_boot: int = 10_000,
    seed: int = 0,
    examples_per_group: int = 3,
    provenance: Mapping[str, Any] | None = None,
    protocol: str | None = None,
    labels: Mapping[str, str] | None = None,
    rank_scope: Literal["model", "all"] = "model",
) -> Report:
    """Compute every table from the tidy results table (see :func:`ccpt.load_results`); ``provenance`` defaults to
    that of ``frame``, ``labels`` maps model ids to printed names (ids stay the keys); ``rank_scope``: Table 3
    ranks within each model's rows, or across every model (a run beside the paper's models)."""
    if frame.empty:
        raise CcptError("no results to report", "check the paths given to `ccpt report`")
    names = resolve_labels(labels, {str(m) for m in frame["model"].dropna()})
    notes = [protocol_note(frame), *frame.attrs.get("notes", [])]
    repeats = list(frame.attrs.get("warnings", []))  # rows read twice (ccpt.results.identity): said first
    # The display name follows the model id into its tagged form (protocol, run arguments).
    tagged = pd.DataFrame({"id": frame["model"].astype(str), "key": tagged_models(frame)}).drop_duplicates()
    names |= {t: names[m] + t[len(m) :] for m, t in tagged.itertuples(index=False) if t != m and m in names}
    # Of the rows as read (their model ids, the logs they came from), before the report relabels them.
    block = dict(provenance) if provenance is not None else frame_provenance(frame, dataset, protocol=protocol)
    frame = as_reported(frame)  # never two protocols pooled; as-run fills (counted in the Failures table)
    has_gen = not generative_rows(frame).empty
    generative = (
        table3(frame, stat=stat, oracle=oracle, dataset=dataset, rank_scope=rank_scope, n_boot=n_boot, seed=seed)
        if has_gen
        else None
    )
    if dataset is None and has_gen:
        notes.append("Gold row omitted: pass --data-dir (or set CCPT_DATA_DIR) to include it")
    for row in generative.rows if generative is not None else []:
        if row.unjudged:
            counts = ", ".join(f"{task} {n} of {len(row.instances[task])}" for task, n in row.unjudged.items())
            notes.append(f"{row.label}: instances without a stored relevance (never judged), left out of the cells "
                         f"that need it: {counts}")  # fmt: skip
    notes.extend(unregistered_notes(frame))  # their samples are averaged, never best-of-n'ed
    examples = None
    if examples_per_group:
        groups = frame.groupby(["task", "model", "method"], sort=True, dropna=False)
        examples = groups.head(examples_per_group)[[c for c in EXAMPLE_COLUMNS if c in frame]]
    report = Report(
        stat=stat,
        oracle=oracle,
        generative=generative,
        types=table5(frame, stat=stat, n_boot=n_boot, seed=seed),
        iterations=table6(frame, stat=stat, oracle=oracle, n_boot=n_boot, seed=seed),
        filters=table7(frame, stat=stat, oracle=oracle, n_boot=n_boot, seed=seed),
        failures=failures(frame),
        notes=notes,
        judge_info=judge_info,
        examples=examples,
        provenance=block,
        labels=names,
        warnings=repeats,
    )
    report.warnings += coverage_warnings(report)
    return report


def report_from_paths(
    paths: Sequence[str | Path],
    *,
    frame: pd.DataFrame | None = None,
    dataset: CCPTDataset | None = None,
    stat: Stat = "sem",
    oracle: OracleReduction = "paper",
    judge_info: str | None = None,
    labels: Mapping[str, str] | None = None,
    generation: Mapping[str, Any] | None = None,
    prices: Mapping[str, Price] | None = None,
    rank_scope: Literal["model", "all"] = "model",
) -> Report:
    """The report of the result files under ``paths`` (``frame``: their tidy table if already read), as ``ccpt
    report`` prints it: ``judge_info`` defaults to each judge's agreement with humans, ``generation`` joins the
    provenance, the token table comes from the Inspect logs among ``paths``, priced with ``prices``."""
    if frame is None:
        frame = load_results(paths, dataset)
    if judge_info is None:
        # Each judge's structured identity as its logs stored it; a table's or the authors' file's judge is its name.
        known = frame.attrs.get(JUDGE_IDENTITIES, {})
        judges = [known.get(j) or JudgeIdentity(j) for j in sorted({str(j) for j in frame["judge"].dropna() if j})]
        judge_info = judge_note(judges) if judges else None
    block = {**frame_provenance(frame, dataset), "generation": dict(generation)} if generation else None
    report = build_report(
        frame,
        stat=stat,
        oracle=oracle,
        dataset=dataset,
        judge_info=judge_info,
        labels=labels,
        provenance=block,
        rank_scope=rank_scope,
    )
    if any(Path(p).is_dir() or Path(p).suffix in LOG_SUFFIXES for p in paths):  # only Inspect logs record calls
        report.usage = read_usage(paths, prices)
    return report


# The per-sample fields of the example answers: what was asked, what came back, and how it was scored.
EXAMPLE_COLUMNS: tuple[str, ...] = (
    "task", "model", "method", "seed", "instance", "combination", "property", "answer_raw", "answer", "r_np", "r_hmp",
    "score", "judge", "gold_type", "pred_type",
)  # fmt: skip


def coverage_warnings(report: Report) -> list[str]:
    """One warning per place whose rows cover different instance sets: Table 3 (per task column), Table 5 (across
    runs) and Table 7 (without vs with Filter)."""
    generative, labels = report.generative, report.labels
    checks: list[tuple[str, dict[str, frozenset[str]]]] = []  # (where, name → instance ids)
    if generative is not None:
        several = generative.several_judges
        for task in dict.fromkeys(c.task for c in generative.columns):
            sets = {
                r.name(labels, with_judge=several): r.instances[task] for r in generative.rows if task in r.instances
            }
            checks.append((f"{generative.title.split(':')[0]}, {TASK_SPECS[task].label}", sets))
    runs = {f"{model_text(t.model, labels)} / {method_label(t.method)}": t.instances for t in report.types}
    checks.append(("Table 5", runs))
    for f in report.filters:
        if f.with_ is not None:
            run = f"{model_text(f.model, labels)} / {method_label(f.method)}"
            sets = {"without Filter": f.instances[0], "with Filter": f.instances[1]}
            checks.append((f"Table 7, {TASK_SPECS[f.task].label}, {run}", sets))
    out = []
    for where, sets in checks:
        if len(set(sets.values())) > 1:
            counts = ", ".join(f"{name}: {len(ids)}" for name, ids in sets.items())
            common = len(frozenset.intersection(*sets.values()))
            out.append(
                f"{where}: rows cover different instance sets ({counts} instances; {common} in all of them) — their "
                "means are not comparable; `ccpt compare` pairs instances."
            )
    return out
