"""The report: every table of the registry (:data:`ccpt.report.tables.TABLES`) computed for one ``ccpt report``,
and its views the renderers print: the display tables, the records, the lines above the tables."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pandas as pd

from ccpt.errors import CcptError
from ccpt.judges import JudgeIdentity
from ccpt.judging.agreement import judge_note
from ccpt.methods import unregistered_notes
from ccpt.report.display import DisplayTable
from ccpt.report.names import model_text, resolve_labels
from ccpt.report.notes import frame_provenance, oracle_note, protocol_note, split_coverage_notes, stat_note
from ccpt.report.tables import TABLES, OracleReduction, TableOptions, as_reported, tagged_models
from ccpt.report.tables.common import CSV_FIELDS
from ccpt.results import LOG_SUFFIXES, load_results
from ccpt.results.inspect_logs import JUDGE_IDENTITIES, LogCache
from ccpt.results.usage import Price, read_usage
from ccpt.stats import Stat

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


@dataclass
class Report:
    """Everything one ``ccpt report`` prints; each table's computed value by its name (``report.failures``)."""

    stat: Stat
    oracle: OracleReduction
    computed: dict[str, Any]  # table name → what its compute returned (ccpt.report.tables.TABLES)
    notes: list[str]
    judge_info: str | None = None
    examples: pd.DataFrame | None = None
    provenance: dict[str, Any] | None = None
    labels: dict[str, str] = field(default_factory=dict)  # model id → display name
    warnings: list[str] = field(default_factory=list)  # printed first by every format, and by the CLI on stderr

    def __getattr__(self, name: str) -> Any:
        computed = self.__dict__.get("computed", {})
        if name in computed:
            return computed[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

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
    notes = [protocol_note(frame), *split_coverage_notes(frame, dataset), *frame.attrs.get("notes", [])]
    repeats = list(frame.attrs.get("warnings", []))  # rows read twice (ccpt.results.identity): said first
    # The display name follows the model id into its tagged form (protocol, run arguments).
    tagged = pd.DataFrame({"id": frame["model"].astype(str), "key": tagged_models(frame)}).drop_duplicates()
    names |= {t: names[m] + t[len(m) :] for m, t in tagged.itertuples(index=False) if t != m and m in names}
    # Of the rows as read (their model ids, the logs they came from), before the report relabels them.
    block = dict(provenance) if provenance is not None else frame_provenance(frame, dataset, protocol=protocol)
    frame = as_reported(frame)  # never two protocols pooled; as-run fills (counted in the Failures table)
    options = TableOptions(stat, oracle, dataset, rank_scope, n_boot, seed)
    computed = {table.name: table.compute(frame, options) for table in TABLES}
    notes += [note for table in TABLES for note in table.notes(computed[table.name], options)]
    notes.extend(unregistered_notes(frame))  # their samples are averaged, never best-of-n'ed
    examples = None
    if examples_per_group:
        groups = frame.groupby(["task", "model", "method"], sort=True, dropna=False)
        examples = groups.head(examples_per_group)[[c for c in EXAMPLE_COLUMNS if c in frame]]
    report = Report(stat, oracle, computed, notes, judge_info, examples, block, names, repeats)
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
    cache: LogCache | None = None,
) -> Report:
    """The report of the result files under ``paths`` (``frame``: their tidy table if already read), as ``ccpt
    report`` prints it: ``judge_info`` defaults to each judge's agreement with humans, ``generation`` joins the
    provenance, the token table comes from the Inspect logs among ``paths``, priced with ``prices``; ``cache``: the
    logs read for ``frame`` (each log is then read once)."""
    cache = {} if cache is None else cache
    if frame is None:
        frame = load_results(paths, dataset, cache=cache)
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
        report.computed["usage"] = read_usage(paths, prices, cache=cache)
    return report


# The per-sample fields of the example answers: what was asked, what came back, and how it was scored.
EXAMPLE_COLUMNS: tuple[str, ...] = (
    "task", "model", "method", "seed", "instance", "combination", "property", "answer_raw", "answer", "r_np", "r_hmp",
    "score", "judge", "gold_type", "pred_type",
)  # fmt: skip


def coverage_warnings(report: Report) -> list[str]:
    """One warning per place whose rows cover different instance sets (each table declares its places: Table 3 per
    task column, Table 5 across runs, Table 7 without vs with Filter)."""
    checks = [check for t in TABLES for check in t.coverage(report.computed[t.name], report.labels)]
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


def display_tables(report: Report) -> list[DisplayTable]:
    """Every table of the report as its display tables, in the registry's order (3, 5, 6, 7, failures, usage)."""
    return [shown for t in TABLES for shown in t.display(report.computed[t.name], report.labels)]


def report_records(report: Report) -> list[dict[str, Any]]:
    """Every number of the report as long-format records (the stored-judge Gold row: method ``gold_stored``, no
    model; ``model_label``: the printed name)."""
    out = [record for t in TABLES for record in t.records(report.computed[t.name])]
    for record in out:
        model = record.get("model")
        record["model_label"] = model_text(model, report.labels) if model else model
    return out


def preamble_lines(report: Report) -> list[str]:
    """The notes every format prints above the tables: warnings (one line each, starting with "Warning:", e.g. rows
    over different instance sets), statistic, oracle, judge, failures, run notes."""
    lines = [f"Warning: {w}" for w in report.warnings]
    lines += [stat_note(report.stat), oracle_note(report.oracle)]
    if report.judge_info:
        lines.append(f"Judge: {report.judge_info}")
    lines.append(
        "Failed samples (unparsable answer, failed judge call, or a result-file cell its schema rejected) are "
        "counted in the Failures table and, when they leave no score, excluded from the means; a reply in an "
        "authors' result file that ccpt cannot parse keeps the score the authors stored for it (docs/metrics.md)."
    )
    if any(f.sa_failed for f in report.failures):
        lines.append(
            "SA failed: samples whose Spreading Activation had a step with an unreadable activation or filter reply "
            "(treated as an empty list; the answer is kept and scored)."
        )
    if any(f.sa_failed is None for f in report.failures):
        lines.append("SA failed –: not recorded by those rows (e.g. the authors' result files), so unknown, not zero.")
    lines.extend(report.notes)
    return lines
