"""The paper's models in a report: the authors' stored runs alone (``ccpt report --paper``), or beside a run under
the run's own judge (``ccpt report RUN --beside-paper``), ranked together only where one judge scored both."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from ccpt.errors import CcptError
from ccpt.judges import JudgeIdentity
from ccpt.results import load_results
from ccpt.results.inspect_logs import JUDGE_IDENTITIES
from ccpt.results.paper_scores import find_scores, rescore
from ccpt.spec import TASK_SPECS, TYPE_PREDICTION

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

# The judges whose verdicts the authors stored: GPT-4o. The alias `gpt-4o` and the snapshot the paper names are
# taken as that judge (said in a note: the alias now serves a later snapshot); any other snapshot is another judge.
_PAPER_JUDGE = re.compile(r"(?:^|/)gpt-4o(?:-2024-05-13)?$")
PAPER_SUFFIX = " (paper)"  # how a stored model's name is printed beside a run


def is_paper_judge(identity: JudgeIdentity) -> bool:
    """Whether a judge identity names the judge of the paper's stored verdicts (GPT-4o)."""
    return bool(_PAPER_JUDGE.search(identity.name))


def read_stored(files: Sequence[Path], dataset: CCPTDataset | None) -> tuple[pd.DataFrame, list[str]]:
    """The authors' result files, each read on its own: one that cannot be read (a file holding generations the
    authors never judged, a damaged copy) is named in a note and left out, never half-read."""
    parts, notes = [], []
    for path in files:
        try:
            parts.append(load_results([path], dataset))
        except CcptError as exc:
            notes.append(f"stored file left out: {exc.message}")
    if not parts:
        raise CcptError("none of the stored result files could be read", "; ".join(notes) or None)
    # A local copy (--results-dir, $CCPT_RESULTS_DIR) is read as given: a file edited, or one the authors never
    # stored, would print as the paper's numbers. The download is hashed already; this names what is not pinned.
    from ccpt.io.download import result_checksums, sha256_file

    pinned = result_checksums()
    altered = [str(p) for p in files if p.name in pinned and sha256_file(p) != pinned[p.name]]
    unpinned = [str(p) for p in files if p.name not in pinned]
    if altered or unpinned:
        said = [f"differ from their pinned sha256: {', '.join(altered)}"] if altered else []
        said += [f"are none of the pinned files: {', '.join(unpinned)}"] if unpinned else []
        why = "; ".join(said)
        notes.append(f"stored files not as the authors published them (their rows are read as given): {why}")
    return pd.concat(parts, ignore_index=True), notes


def table3_rows(frame: pd.DataFrame) -> pd.DataFrame:
    """The rows of paper Tables 3 and 5: no Spreading-Activation step files (Table 6), no no-filter runs (Table 7)."""
    keep = frame["sa_iteration"].isna() & frame["sa_filter"].ne(False)
    return frame[keep]


@dataclass
class Beside:
    """The stored rows to report beside a run, and what was said about them."""

    frame: pd.DataFrame
    labels: dict[str, str] = field(default_factory=dict)  # stored model id → printed name
    notes: list[str] = field(default_factory=list)  # under the tables
    lines: list[str] = field(default_factory=list)  # said first (stderr): why a judge has no paper rows


def beside_paper(run: pd.DataFrame, stored: pd.DataFrame) -> Beside:
    """The paper's models' rows for every judge of ``run``: the stored GPT-4o verdicts under a GPT-4o judge, the
    stored answers re-judged by the run's judge where a paper-scores store holds that judge's scores
    (:mod:`ccpt.results.paper_scores`), and for any other judge one line saying why none are shown."""
    stored = table3_rows(stored)
    clash = set(stored["model"].dropna().astype(str)) & set(run["model"].dropna().astype(str))
    if clash:  # a run under a stored model's own id: kept apart, never pooled with the authors' rows
        stored = stored.assign(model=stored["model"].map(lambda m: f"paper/{m}" if m in clash else m))
    generative = run["task"].map(lambda t: TASK_SPECS[t].generative)
    judges = sorted({str(j) for j in run.loc[generative, "judge"].dropna() if str(j)})
    known = run.attrs.get(JUDGE_IDENTITIES, {})  # each log's judge as stored; a table's judge is its name
    gen_stored = stored[stored["task"].map(lambda t: TASK_SPECS[t].generative)]
    parts: list[pd.DataFrame] = []
    out = Beside(frame=stored.iloc[0:0])
    for judge in judges:
        identity = known.get(judge) or JudgeIdentity(judge)
        if is_paper_judge(identity):
            parts.append(gen_stored.assign(judge=judge))
            out.notes.append(
                f"Paper rows under {judge}: the authors' stored GPT-4o verdicts (their judge protocol; the paper "
                "names GPT-4o-2024-05-13, the alias gpt-4o now serves a later snapshot)."
            )
        elif (scores := find_scores(judge)) is not None:
            rescored, missing = rescore(gen_stored, scores)
            parts.append(rescored)
            stale = sorted(set(gen_stored["source"].map(lambda s: Path(str(s)).name)) - set(scores.files))
            out.notes.append(
                f"Paper rows under {judge}: the authors' stored answers re-judged by this judge ({scores.path.name}, "
                f"{len(scores.pairs):,} pairs)"
                + (f"; {missing:,} answers have no score in it, counted as never judged" if missing else "")
                + (f"; not scored in it: {', '.join(stale)} (run `ccpt judge paper-scores`)" if stale else "")
                + "."
            )
        else:
            out.lines.append(
                f"no paper rows beside judge {judge}: the paper's answers were judged by GPT-4o, and no store of "
                f"this judge's scores of them exists (make one: ccpt judge paper-scores --judge "
                f"{identity.name}; an LLM judge: ccpt rejudge the stored files, then report both)"
            )
    if (run["task"] == TYPE_PREDICTION).any():  # Task 3 has no judge: the paper's accuracy stands beside any run
        parts.append(stored[stored["task"] == TYPE_PREDICTION])
    if parts:
        out.frame = pd.concat(parts, ignore_index=True)
        out.labels = {m: f"{m}{PAPER_SUFFIX}" for m in out.frame["model"].dropna().astype(str).unique()}
    return out
