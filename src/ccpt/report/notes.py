"""The sentences every report prints about how its numbers were made: the protocol(s) of its rows, the spread
statistic, the Multi-Oracle reduction, and the provenance block (models, judges, dataset)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import pandas as pd

from ccpt.io.jsonout import DEFAULT_PROTOCOL, provenance
from ccpt.protocol import PROTOCOLS
from ccpt.report.tables import HUMAN_MODEL, OracleReduction, protocols_of
from ccpt.spec import GOLD, TASK_SPECS
from ccpt.stats import STAT_DESCRIPTIONS, Stat

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset


def frame_provenance(
    frame: pd.DataFrame, dataset: CCPTDataset | None = None, *, protocol: str | None = None
) -> dict[str, Any]:
    """The provenance block of results: their protocol(s) (``protocol`` overrides), models and judges, the
    generation settings their logs recorded, and the dataset directory when known."""

    def names(column: str) -> list[str]:
        values = frame[column].dropna().unique() if column in frame else []
        return [str(v) for v in values if str(v) and str(v) != HUMAN_MODEL]

    models = names("model")
    return provenance(
        protocol=protocol or "/".join(protocols_of(frame)) or DEFAULT_PROTOCOL,
        models=models,
        judges=names("judge"),
        generation={"sent": sent_settings(frame, models)} if models else None,
        data_dir=dataset.source if dataset is not None and dataset.source else None,
    )


def sent_settings(frame: pd.DataFrame, models: list[str]) -> dict[str, list[str] | None]:
    """Per model, the generation settings its logs recorded it was sent (one line per distinct setting: "temperature
    0.7, max_tokens 512"); None where no log says (the authors' files, a tidy table)."""
    sent: dict[str, str] = frame.attrs.get("sent", {})  # Inspect log name → its line (ccpt.results.inspect_logs)
    asked = frame[frame["method"] != GOLD] if "method" in frame else frame  # Gold's answer is the dataset's
    pairs = asked[["model", "source"]].dropna().drop_duplicates().itertuples(index=False) if "source" in asked else []
    found: dict[str, set[str]] = {}
    for model, source in pairs:
        if str(source) in sent:
            found.setdefault(str(model), set()).add(sent[str(source)])
    return {model: sorted(found[model]) if model in found else None for model in sorted(models)}


def protocol_note(frame: pd.DataFrame) -> str:
    """The sentence every report prints about the protocol(s) its rows were produced under."""
    names = protocols_of(frame)
    described = "; ".join(f"{n} ({PROTOCOLS[n].summary})" if n in PROTOCOLS else n for n in names)
    text = f"Protocol: {described or 'unknown'}."
    if any(n in PROTOCOLS and PROTOCOLS[n].fill_failures for n in names):
        text += " As run, an unscored sample is filled from another seed before averaging (Failures table, Filled)."
    return text


def split_coverage_notes(frame: pd.DataFrame, dataset: CCPTDataset | None) -> list[str]:
    """Per task whose answers (Gold and Human rows aside) cover part of the test split: how much of it, e.g.
    "PI-Eme.: the rows cover 99 of the test split's 200 instances" (a `--limit` run, a trimmed file). Said only
    where every instance is in the dataset's test split, so a run of another split or corpus is not misnamed."""
    from ccpt.dataset import instances

    if dataset is None or frame.empty:
        return []
    answers = frame[(frame["method"] != GOLD) & (frame["model"] != HUMAN_MODEL)]
    out = []
    for task, rows in answers.groupby("task", sort=False):
        if str(task) not in TASK_SPECS:
            continue
        split = {str(item.id) for item in instances(dataset, str(task))}  # type: ignore[arg-type]
        covered = set(rows["instance"].astype(str))
        if covered < split:
            short = TASK_SPECS[str(task)].short
            out.append(f"{short}: the rows cover {len(covered)} of the test split's {len(split)} instances.")
    return out


def stat_note(stat: Stat) -> str:
    """The sentence every report prints about its spread statistic."""
    return STAT_DESCRIPTIONS[stat] + "; values are ×100 (percent)."


def oracle_note(oracle: OracleReduction) -> str:
    """How Multi-Oracle rows were computed."""
    if oracle == "paper":
        return "Multi-Oracle: per instance and seed each column takes its own best sample (paper convention)."
    return "Multi-Oracle: per instance and seed all columns come from the one sample with the best E/C."
