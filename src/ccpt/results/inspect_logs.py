"""Inspect eval logs: the one reader of log files (:func:`read_logs`), and the tidy table of ccpt's task logs.
Unreadable logs are named and skipped, never fatal; where two logs hold the same run or answer, the newest wins."""

from __future__ import annotations

import json
import re
import zipfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import pandas as pd

from ccpt.errors import DataError
from ccpt.judges import BASE_URL, JudgeIdentity
from ccpt.judges.identity import LEGACY_DISTILLED_URL
from ccpt.protocol import DEFAULT_PROTOCOL, PROTOCOLS
from ccpt.results.checks import LogHeader, dataset_items, record_problem, sample_set_problem, test_splits
from ccpt.results.identity import ANSWER_SETTINGS, JUDGE_ARG, rejudged_variant
from ccpt.results.table import LOG_DONE, recompute, set_scores, tidy_frame
from ccpt.rows import COLUMNS, JUDGE_IDENTITY, RUN_IDENTITY, SAMPLE_CONTENT, SAMPLE_IDENTITY, empty_row
from ccpt.scoring import Relevances
from ccpt.spec import GOLD, TASK_SPECS, split_method

if TYPE_CHECKING:
    from ccpt.dataset import CCPTDataset

# parse_error of a sample without an answer (errored, or no ccpt metadata): a sample error, not a parse failure.
SAMPLE_ERROR = "sample error: "
NO_SCORE_METADATA = "no ccpt score metadata"


def rows_from_metadata(
    meta: Mapping[str, Any], *, default_seed: int, default_model: str, source: str, protocol: str = DEFAULT_PROTOCOL
) -> list[dict[str, Any]]:
    """Tidy rows from one ``Score.metadata["ccpt"]`` dict (see :func:`from_inspect_logs` for the shape)."""
    base = {k: v for k, v in meta.items() if k != "samples"}
    members = [{}] if meta.get("samples") is None else meta["samples"]
    if not isinstance(members, list) or not all(isinstance(m, Mapping) for m in members):
        raise DataError(f"{source}: metadata 'samples' must be a list of per-sample dicts")
    rows: list[dict[str, Any]] = []
    for index, member in enumerate(members):
        merged = {**base, **member}
        row = empty_row() | {k: merged[k] for k in COLUMNS if k in merged}
        # Raw values: the tidy-table schema checks them (:func:`check_records`), once, for every reader.
        row["sample"] = merged.get("sample", index)
        row["seed"] = merged["seed"] if merged.get("seed") is not None else default_seed
        row["model"] = merged.get("model") or default_model
        row["method_raw"] = merged.get("method_raw") or merged.get("method")
        _set_method(row)
        row.update(judge_failures=merged.get("judge_failures") or 0, source=source, protocol=protocol)
        if row.get("task") in TASK_SPECS and TASK_SPECS[row["task"]].generative:
            set_scores(row, Relevances(row.get("r_np"), row.get("r_hp"), row.get("r_mp")))
        rows.append(row)
    return rows


def _set_method(row: dict[str, Any]) -> None:
    """The filter ablation in ``row``: method ``<sa>_nofilter`` → ``<sa>`` with ``sa_filter=False``; SA runs → True
    (a failed sample's row too, so it is counted in its run's place)."""
    method, sa_filter = split_method(str(row.get("method") or ""))
    if sa_filter is False:
        row["method"], row["sa_filter"] = method, False
    elif sa_filter and row.get("sa_filter") is None:
        row["sa_filter"] = True


def from_inspect_logs(
    log_dir: str | Path, dataset: CCPTDataset | None = None, *, cache: LogCache | None = None
) -> pd.DataFrame:
    """Read every Inspect eval log under ``log_dir`` (a directory or one log file) into the tidy table: one row per
    sample, epoch and Multi-Oracle member from ``score.metadata["ccpt"]`` (docs/metrics.md; members in a list under
    ``"samples"``, merged over the top-level keys); a sample without it is a failed row (``parse_error``). A log
    whose records contradict its header or ``dataset`` (:mod:`ccpt.results.checks`) is named and set aside."""
    root = Path(log_dir)
    logs, unreadable = read_logs([root], cache=cache)
    items = dataset_items(dataset) if dataset is not None else None
    splits = test_splits(dataset) if dataset is not None else None
    logs, copies = _without_copies(logs)
    rows: list[dict[str, Any]] = []
    formats: dict[str, set[str]] = {}  # judge → its negotiated reply format(s) (ccpt.eval.judge)
    invalid: list[str] = []  # per log, the cells of its records the schema set aside
    settings: dict[tuple[str, ...], dict[str, str]] = {}  # per RUN_IDENTITY: generation settings → a log sent them
    sent_by_source: dict[str, str] = {}  # log name → the generation settings its answers' model was sent
    run_formats: dict[tuple[str, str, str, str], set[str]] = {}  # per run_key: its judge's formats in any of its logs
    asked: dict[str, tuple[str, int]] = {}  # per run_identity: a log of it, and how many instances its command asked
    stored: dict[int, JudgeIdentity] = {}  # per log: the judge identity its scorer stored (none in older logs)
    # Per run_identity: the identity the run's newest log that scored a sample stored. A log whose every sample failed
    # (an attempt Inspect's eval set retried) stored none; its rows are that run's, judged by that run's judge.
    run_judges: dict[str, JudgeIdentity] = {}
    identities: dict[str, JudgeIdentity] = {}  # each judge's identity by its key (the rows' judge column)
    other_version: list[str] = []  # logs recording another dataset version than the given dataset's
    for log in logs:
        found = run_formats.setdefault(run_key(log), set())
        for sample in log.samples or []:
            if isinstance(meta := _ccpt_metadata(sample), Mapping) and meta.get("judge_format"):
                found.add(str(meta["judge_format"]))
            judge = JudgeIdentity.from_fields(meta.get(JUDGE_IDENTITY)) if isinstance(meta, Mapping) else None
            if judge is not None:
                stored.setdefault(id(log), judge)
        if id(log) in stored:
            run_judges[run_identity(log)] = stored[id(log)]
    for log in logs:
        source = Path(_path(log)).name
        model = str(log.eval.model)
        task_name = task_of(log)
        if not is_ccpt_log(log):
            # Another benchmark's log beside ccpt's: named and skipped, never read as failed ccpt samples.
            unreadable.append(UnreadableLog(_path(log), f"not a ccpt log (task {str(log.eval.task)!r})"))
            continue
        if problem := _log_problem(log, items, splits):  # a record not what its log says: no part of it is scored
            unreadable.append(UnreadableLog(_path(log), problem))
            continue
        protocol = str((log.eval.task_args or {}).get("protocol") or DEFAULT_PROTOCOL)  # older logs ran the default
        grader = (log.eval.model_roles or {}).get("grader")
        # Every row of a judged task run carries its judge's identity, a failed sample's too: it belongs to that run.
        identity = None
        if grader is not None:
            if recorded := run_formats[run_key(log)]:
                formats.setdefault(str(grader.model), set()).update(recorded)
            # "json_object (json_schema refused: …)": the format it fell back to comes first.
            reply_format = "/".join(sorted({f.split(" ", 1)[0] for f in recorded})) or None
            if (judge := stored.get(id(log)) or run_judges.get(run_identity(log))) is None:  # an older log
                mode = str((log.eval.task_args or {}).get("judge_mode") or "text")
                judge = JudgeIdentity.legacy(str(grader.model), grader.base_url, reply_format, mode)
            elif judge.reply_format is not None:  # an LLM judge: the formats of every log of its run
                judge = replace(judge, reply_format=reply_format)
            identity = judge.key
            identities[identity] = judge
        if dataset is not None and (digest := _dataset_digest(log)) is not None and digest != dataset.sha256:
            other_version.append(f"{source} ({digest[:12]})")
        first = len(rows)
        if ids := getattr(log.eval.dataset, "sample_ids", None):  # the instances the command asked for
            asked[run_identity(log)] = (source, len(ids))  # the newest log's (a larger --limit extends a run)
        for sample in log.samples or []:
            epoch = int(getattr(sample, "epoch", 1) or 1)
            meta = _ccpt_metadata(sample)
            if meta is None:
                error = getattr(sample, "error", None)
                # Keep the failed sample's own metadata (instance, gold type): its failure is counted in its place.
                sample_meta = sample.metadata if isinstance(sample.metadata, Mapping) else {}
                row = empty_row() | {k: sample_meta[k] for k in COLUMNS if k in sample_meta}
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
                    parse_error=f"{SAMPLE_ERROR}{getattr(error, 'message', error)}" if error else NO_SCORE_METADATA,
                )
                _set_method(row)
                rows.append(row)
                continue
            rows.extend(
                rows_from_metadata(meta, default_seed=epoch - 1, default_model=model, source=source, protocol=protocol)
            )
        try:
            if issues := check_records(rows[first:], source):
                invalid.append(issues)
        except DataError as exc:  # a record without its task, instance or seed: the log cannot be placed
            del rows[first:]
            unreadable.append(UnreadableLog(_path(log), exc.message.removeprefix(f"{source}: ")))
            continue
        # A re-judged log carries what its answers' model was sent, as the source log recorded it (or nothing, for
        # answers from a file that does not say); another task's log of answers made elsewhere knows nothing.
        recorded = (log.eval.metadata if isinstance(log.eval.metadata, Mapping) else {}).get(SENT_SETTINGS)
        recorded = recorded if isinstance(recorded, str) and recorded.strip() else None  # a log's text, untrusted
        run, sent = run_identity(log), recorded or generation_settings(log, protocol)
        variant = run_variant(log) if task_name in TASK_SPECS else None  # a re-judged row keeps its source's,
        # with the judge of the answers it re-judged: two runs of one model and method under two judges (their
        # answers apart) stay two runs re-judged, never "two runs claim to be one"
        original = (log.eval.metadata if isinstance(log.eval.metadata, Mapping) else {}).get(REJUDGED_JUDGE)
        rejudged_with = as_cells(judge_arguments(log))
        generated = task_name in TASK_SPECS or recorded is not None
        if generated:
            sent_by_source[source] = sent
        for row in rows[first:]:
            if row.get("task") in TASK_SPECS and TASK_SPECS[row["task"]].generative:
                row["judge"] = identity
            row[LOG_DONE] = log.status in ("success", "error")
            row[_RUN] = run
            if variant is not None:
                row["variant"] = variant
            elif isinstance(original, str) and original:
                row["variant"] = rejudged_variant(row.get("variant"), original, rejudged_with)
            if generated and row.get("method") != GOLD:  # Gold: the dataset's answer, the model is sent nothing
                key = tuple(str(row.get(c)) for c in RUN_IDENTITY)
                settings.setdefault(key, {}).setdefault(sent, source)
    if not rows:
        if unreadable:
            raise DataError(f"{root}: no readable Inspect logs: {unreadable_line(unreadable)}")
        raise DataError(f"{root}: no samples found in Inspect logs", "check the path")
    out = tidy_frame(rows).assign(**{column: [row[column] for row in rows] for column in (LOG_DONE, _RUN)})
    # One answer in two logs of one run: the newest wins; two runs under one identity: ccpt.results.identity decides.
    repeated = out.duplicated(subset=[*_IN_RUN, _RUN], keep="last")
    repeated_done = int((repeated & out[LOG_DONE]).sum())
    replaced = _replaced_answers(out, repeated)
    out = out[~repeated].reset_index(drop=True)
    unfinished = int((~out[LOG_DONE]).sum())
    covered = out.groupby(_RUN, sort=False)["instance"].nunique()
    short = [f"{source} {covered.get(run, 0)} of {n}" for run, (source, n) in asked.items() if covered.get(run, 0) < n]
    out = out.drop(columns=[LOG_DONE, _RUN])
    notes = []
    if repeated_done:
        notes.append(f"{repeated_done} rows repeated in older logs of the same run were ignored (newest log kept)")
    if replaced:
        notes.append(f"of these, older answers the newest log replaced (a log copied from another server?): {replaced}")
    if unfinished:
        notes.append(
            f"{unfinished} rows come from interrupted runs (log status started or cancelled): "
            "rerun the same `ccpt run` command to complete them"
        )
    if short:  # one line: the runs whose rows are not the instance set their command asked for
        notes.append(f"runs covering fewer instances than their command asked for: {'; '.join(short)}")
    if unreadable:
        notes.append(f"skipped {unreadable_line(unreadable)}")
    if other_version and dataset is not None:
        # Their items agree with the given dataset's (else the log is set aside): scored against it, but the log
        # says it was made on other files (a --data-dir copy, or an edited digest); its rows keep their own tag.
        notes.append(
            f"logs recording another dataset version than the given one ({dataset.sha256[:12]}), scored against it "
            f"(their items are its items under the same ids): {', '.join(other_version)}"
        )
    notes.extend(invalid)
    out.attrs["notes"] = notes
    out.attrs[REPLY_FORMATS] = formats  # a note once for every path read (ccpt.results.load): reply_format_note
    out.attrs["warnings"] = copies
    out.attrs["unreadable"] = unreadable
    out.attrs["settings"] = settings
    out.attrs["sent"] = sent_by_source
    out.attrs[JUDGE_IDENTITIES] = identities
    return out


REPLY_FORMATS = "reply_formats"  # the attrs key of each judge's negotiated reply formats (judge → formats seen)


def reply_format_note(formats: Mapping[str, set[str]]) -> list[str]:
    """The note saying each judge's reply format as negotiated with its server and recorded in its logs (none when
    no LLM judge was read)."""
    if not formats:
        return []
    described = "; ".join(f"{judge}: {' / '.join(sorted(seen))}" for judge, seen in sorted(formats.items()))
    return [f"Judge reply format (JSON schema, JSON object or plain prompt, as the server took): {described}."]


def _log_problem(log: Any, items: dict[str, tuple[str, str]] | None, splits: dict[str, set[str]] | None) -> str | None:
    """The first record of ``log`` that contradicts its header or the dataset's items and splits, as one phrase,
    or None."""
    if problem := sample_set_problem(log, splits):
        return problem
    # The benchmark version keys its rows apart (run_variant): "2" or true printed as version 2 or 1 beside real ones.
    version = log.eval.task_version
    if isinstance(version, bool) or not isinstance(version, int) or version < 0:
        return f"its benchmark version (task_version) {version!r} is not a whole number ≥ 0"
    header = LogHeader.of(log)
    grader = (log.eval.model_roles or {}).get("grader")
    first: JudgeIdentity | None = None
    for sample in log.samples or []:
        meta = _ccpt_metadata(sample)
        epoch = int(getattr(sample, "epoch", 1) or 1)
        if meta is not None and (problem := record_problem(meta, header, sample.id, epoch, items)):
            return problem
        said = meta.get(JUDGE_IDENTITY) if isinstance(meta, Mapping) else None
        if said is None:
            continue
        if (stored := JudgeIdentity.from_fields(said)) is None:
            return f"sample {sample.id!r} stores a malformed judge identity {said!r}"
        if grader is not None and not _same_judge(stored.name, str(grader.model)):
            # Rows are labelled by the stored identity: a forged one printed a scripted judge's scores as GPT-4o's.
            return f"sample {sample.id!r} says it was judged by {stored.name!r}, its log's grader is {grader.model!r}"
        # The log's rows take its first sample's identity: a sample naming another version or scale is another judge.
        if (first := first or stored).scored != stored.scored:
            return f"sample {sample.id!r} says it was judged by {stored.key!r}, an earlier one by {first.key!r}"
    return None


def _same_judge(stored: str, grader: str) -> bool:
    """Whether a stored judge identity's model is the log's grader: the same name, or one declared judge and variant
    under its two spellings (``ccpt-judge/distilled/default``, ``ccpt-distilled/default``)."""
    from ccpt import judges

    if stored == grader:
        return True
    found, said = judges.of_model(stored), judges.of_model(grader)
    return found is not None and said is not None and (found[0].name, found[1]) == (said[0].name, said[1])


def _without_copies(logs: list[Any]) -> tuple[list[Any], list[str]]:
    """``logs`` with one file per Inspect eval (its ``eval_id``: a copied log file keeps it, a rerun or retry gets a
    new one), the one holding the most samples; and a warning per copy left out, as for any answer read twice."""
    kept: dict[str, Any] = {}
    for log in logs:
        eval_id = str(log.eval.eval_id or "") or _path(log)
        if eval_id not in kept or len(log.samples or []) > len(kept[eval_id].samples or []):
            kept[eval_id] = log
    chosen = {id(log) for log in kept.values()}  # by identity: two copies are equal logs
    warnings = [
        f"{_path(log)} is a copy of {_path(kept[str(log.eval.eval_id)])} (one Inspect eval, id {log.eval.eval_id}): "
        "its rows are counted once"
        for log in logs
        if id(log) not in chosen
    ]
    return [log for log in logs if id(log) in chosen], warnings


def _replaced_answers(out: pd.DataFrame, repeated: pd.Series) -> str:
    """``"N rows of OLD (kept: NEW)"`` per pair of logs where a finished older log of a run answered otherwise than
    its newest (a resumption copies finished answers: this is another run's log), or empty."""
    key, content = [*_IN_RUN, _RUN], list(SAMPLE_CONTENT)  # out: a tidy frame with its working columns
    failed = out["parse_error"].astype("string").fillna("").str.startswith(SAMPLE_ERROR)
    old = out[repeated & out[LOG_DONE] & ~failed]
    if old.empty:
        return ""
    text = out[[*key, *content, "source"]].astype("string").fillna("")
    pairs = text.loc[old.index].merge(text[~repeated], on=key, suffixes=("", "_new"))
    differ = pairs[(pairs[content].to_numpy() != pairs[[f"{c}_new" for c in content]].to_numpy()).any(axis=1)]
    counts = differ.groupby(["source", "source_new"], sort=False).size()
    return "; ".join(f"{n} rows of {old_log} (kept: {new_log})" for (old_log, new_log), n in counts.items())


def _path(log: Any) -> str:
    return str(log.location).replace("file://", "")


def task_of(log: Any) -> str:
    """A log's task without its registry prefix (``ccpt/pi_emergent`` → ``pi_emergent``)."""
    return str(log.eval.task).split("/")[-1]


def is_ccpt_log(log: Any) -> bool:
    """Whether a log is a ccpt task's: its task is one of ccpt's, or its samples carry ccpt score metadata."""
    return task_of(log) in TASK_SPECS or any(_ccpt_metadata(s) is not None for s in log.samples or [])


def _ccpt_metadata(sample: Any) -> Any:
    """The ``ccpt`` metadata a ccpt scorer stored on a sample's score, or None."""
    for score in (sample.scores or {}).values():
        if isinstance(score.metadata, Mapping) and "ccpt" in score.metadata:
            return score.metadata["ccpt"]
    return None


def check_records(rows: list[dict[str, Any]], source: str) -> str | None:
    """Check one log's rows against the tidy-table schema, in place: a rejected value is set aside and counted in
    ``invalid_cells``, a bad key cell raises a :class:`DataError`. Returns the note of the set-aside cells, or None."""
    from ccpt.schemas.base import summary_line
    from ccpt.schemas.results import TIDY

    derived = ("r_hmp", "score")  # computed here from the relevances, not read: never a rejected cell of the log
    checked = TIDY.check([{k: None if k in derived else row.get(k) for k in COLUMNS} for row in rows], source)
    for row, values, bad in zip(rows, checked.rows, checked.bad_cells(), strict=True):
        row.update({k: v for k, v in values.items() if k not in derived})  # typed values, set-aside cells None
        if bad:
            row["invalid_cells"] = (row.get("invalid_cells") or 0) + bad
            recompute(row)
    return f"{source}: {summary_line(checked.issues)}" if checked.issues else None


@dataclass(frozen=True)
class UnreadableLog:
    """A log file that could not be read (e.g. truncated by a kill); skipped and reported, never fatal."""

    path: str
    reason: str


def unreadable_line(logs: Sequence[UnreadableLog]) -> str:
    """One line naming every unreadable log and why, e.g. for a warning on stderr."""
    named = "; ".join(f"{log.path}: {log.reason}" for log in logs)
    return f"{len(logs)} unreadable log file{'s' if len(logs) != 1 else ''} ({named})"


LOG_SUFFIXES = (".eval", ".json")
# Logs already read in full, by location: one command's readers share it (a report reads each log once for its rows
# and its token table). Made per command, never kept across commands: a log may change between them.
LogCache = dict[str, Any]


class InspectLogs(NamedTuple):
    """Inspect logs as read by :func:`read_logs`: the readable ones oldest first, and the ones that were not."""

    logs: list[Any]  # inspect_ai.log.EvalLog, oldest first (by creation time)
    unreadable: list[UnreadableLog]


def read_logs(paths: Iterable[str | Path], *, header_only: bool = False, cache: LogCache | None = None) -> InspectLogs:
    """Every Inspect log under ``paths`` (files, or directories searched recursively), oldest first; an unreadable
    log is named in ``unreadable`` and skipped. ``header_only`` reads no samples; ``cache`` holds full reads."""
    from inspect_ai.log import list_eval_logs, read_eval_log

    locations: list[str] = []
    logs, unreadable = [], []
    for item in paths:
        path = Path(item)
        if path.is_dir():
            # A FIFO or socket named *.eval is not listed by Inspect; named below rather than passed over in silence.
            locations += [
                str(p)
                for p in sorted(path.rglob("*"))
                if p.suffix in LOG_SUFFIXES and not p.is_file() and not p.is_dir()
            ]
            locations += [info.name for info in list_eval_logs(str(path), recursive=True)]
        elif path.exists():  # a log file, or a FIFO or socket named below
            locations.append(str(path))
        else:
            raise DataError(f"{path}: no such log file or directory")
    written: list[int] = []  # per log read, its file's modification time (ns)
    for location in locations:
        local = location.replace("file://", "")
        if not Path(local).is_file():  # a FIFO would block the reader forever
            unreadable.append(UnreadableLog(local, "not a regular file (skipped)"))
            continue
        if not header_only and cache is not None and location in cache:
            logs.append(cache[location])
            written.append(Path(local).stat().st_mtime_ns)
            continue
        try:
            logs.append(read_eval_log(location, header_only=header_only))
            written.append(Path(local).stat().st_mtime_ns)
            if not header_only and cache is not None:
                cache[location] = logs[-1]
        except Exception as exc:  # truncated zip, bad JSON, foreign file: whatever it is, it cannot be read
            unreadable.append(UnreadableLog(local, _unreadable_reason(Path(local), exc)))
    # Oldest first, by creation time; Inspect records it to the second, so two runs started in one second (a short
    # run interrupted and run again) are ordered by when their files were last written: the rerun's is later.
    order = sorted(range(len(logs)), key=lambda i: (str(logs[i].eval.created), written[i]))
    return InspectLogs([logs[i] for i in order], unreadable)


def _unreadable_reason(path: Path, exc: Exception) -> str:
    """Why a log file cannot be read, in a user's words: an ``.eval`` log is a zip archive, and Inspect's reader
    says only "EOCD not found" of one that was cut short (a copy or a run that was killed) or is no archive."""
    if path.suffix == ".eval" and not zipfile.is_zipfile(path):
        return "not a complete .eval log (truncated, or not an Inspect log at all)"
    reason = " ".join(str(exc).split()) or type(exc).__name__
    reason = f"not valid JSON ({reason})" if path.suffix == ".json" and isinstance(exc, ValueError) else reason
    return reason if len(reason) <= 120 else reason[:117] + "..."


def run_key(log: Any) -> tuple[str, str, str, str]:
    """What makes two logs the same task run: task, model, task arguments and judge (a declared judge's base URL
    names its identity and weights: ``ccpt.eval.distilled_provider``; older logs' the distilled judge's)."""
    grader = (log.eval.model_roles or {}).get("grader")
    judge = "" if grader is None else str(grader.model)
    if grader is not None and str(grader.base_url or "").startswith(DECLARED_JUDGE_URLS):
        judge += f" {grader.base_url}"
    return (str(log.eval.task), str(log.eval.model), repr(sorted((log.eval.task_args or {}).items())), judge)


def run_identity(log: Any) -> str:
    """The task run a log belongs to, as Inspect's eval set pairs logs with tasks (``inspect_ai.task_identifier``),
    with the distilled judge's weights (:func:`run_key`) and the servers it was sent to (:func:`servers_of`). The
    model's -M arguments that change no number (``latency``) are left out: a run resumed with another is one run."""
    from inspect_ai import task_identifier

    from ccpt.schemas.run import PLAIN_MODEL_ARGS

    try:
        model_args = {k: v for k, v in (log.eval.model_args or {}).items() if k not in PLAIN_MODEL_ARGS}
        log = log.model_copy(update={"eval": log.eval.model_copy(update={"model_args": model_args})})
        return f"{task_identifier(log, None)} {run_key(log)[3]} {servers_of(log)}"
    except Exception:  # a log of another Inspect version, missing a field the identifier reads
        return f"{run_key(log)!r} {servers_of(log)}"


def servers_of(log: Any) -> str:
    """The base URLs a log's model and judge were sent to, as recorded (Inspect's identifier leaves them out)."""
    grader = (log.eval.model_roles or {}).get("grader")
    judge = getattr(grader, "base_url", None)
    return f"model at {str(log.eval.model_base_url or '').rstrip('/')}; judge at {str(judge or '').rstrip('/')}"


_RUN = "_run"  # a working column of from_inspect_logs: the row's run_identity
# An answer within one Inspect task run: its newest log's wins whatever its arguments (a larger --limit extends it).
_IN_RUN = tuple(c for c in SAMPLE_IDENTITY if c != "variant")


# The base URLs of declared judges, this ccpt's and older logs' (only compared, never read: ccpt.judges.identity).
DECLARED_JUDGE_URLS = (BASE_URL, LEGACY_DISTILLED_URL)
# The frame attribute holding each judge's structured identity by its key (the judge column): reports read it.
JUDGE_IDENTITIES = "judge_identities"

# The task metadata key under which a re-judged log records its source log's generation settings (ccpt.eval.rejudge).
SENT_SETTINGS = "generation_settings"
# The task metadata key under which a re-judged log names the judge of the answers it re-judged (their run's).
REJUDGED_JUDGE = "rejudged_judge"


def generation_settings(log: Any, protocol: str) -> str:
    """The answer-changing generation settings ``log``'s model was sent, as one line ("temperature 0.7, …"). A
    provider-dependent protocol (``as-run``) sets them per call where the log's config leaves them unset."""
    sent = answer_settings(getattr(getattr(log, "plan", None), "config", None), protocol, str(log.eval.model))
    said = [f"{name} {' '.join(str(value).split())}" for name, value in sent.items()]
    return ", ".join(said) or "the provider's defaults"


def answer_settings(config: Any, protocol: str, model: str) -> dict[str, Any]:
    """The answer-changing settings a generation config sends ``model`` (those set), by name."""
    values = {name: getattr(config, name, None) for name in ANSWER_SETTINGS}
    if (chosen := PROTOCOLS.get(protocol)) is not None and chosen.provider_dependent:
        wanted = chosen.call_settings(model)
        values |= {k: getattr(wanted, k) for k in ("temperature", "top_p", "max_tokens") if values[k] is None}
    return {name: value for name, value in values.items() if value is not None}


# The task metadata key under which a ccpt task records its dataset files' digest (ccpt.benchmark.dataset_digest).
DATASET_SHA256 = "dataset_sha256"
# The header's metadata key of the concept graph file's digest (Spreading Activation over ConceptNet).
GRAPH_SHA256 = "graph_sha256"
# -M and --judge-arg names never written into a label: secrets, and the headers and credentials that carry them
_SECRET = re.compile(r"(key|secret|passw(or)?d|token|credentials?|auth|authori[sz]ation|headers?|cookies?)$", re.I)


def run_variant(log: Any) -> str:
    """A ccpt task log's number-changing arguments beyond its task, model, method, judge and protocol, as sorted JSON
    (:data:`ccpt.schemas.run.IDENTITY_ARGS`): the task arguments that change its method's numbers, the instance set
    (``limit``, ``sample_id``), the answering model's -M arguments, the judge's, the generation settings its model
    was sent (:data:`ANSWER_SETTINGS`), the dataset's digest, the concept graph's (SA over ConceptNet) and the
    benchmark version."""
    from ccpt.schemas.run import IDENTITY_ARGS, PLAIN_MODEL_ARGS

    args = log.eval.task_args or {}
    method = split_method(str(args.get("method") or ""))[0]
    changes = [name for name, methods in IDENTITY_ARGS.items() if methods is None or method in methods]
    values = {name: args[name] for name in changes if name in args}
    if "judge_retries" in values and values["judge_retries"] is None:  # the protocol's default, as the run used it
        protocol = PROTOCOLS.get(str(args.get("protocol") or DEFAULT_PROTOCOL))
        values["judge_retries"] = protocol.judge_retries if protocol else None
    config = log.eval.config
    values |= {name: value for name in ("limit", "sample_id") if (value := getattr(config, name, None)) is not None}
    model_args = log.eval.model_args if isinstance(log.eval.model_args, Mapping) else {}
    values |= {f"-M {k}": v for k, v in model_args.items() if k not in PLAIN_MODEL_ARGS and not _SECRET.search(k)}
    if (spec := TASK_SPECS.get(str(log.eval.task).split("/")[-1])) is None or spec.generative:
        values |= judge_arguments(log)  # Task 3 is not judged: its runs are not told apart by the judge's arguments
    if method != GOLD:  # what the model was sent changes its answers (Gold's are the dataset's: it is sent nothing)
        protocol = str(args.get("protocol") or DEFAULT_PROTOCOL)
        values |= answer_settings(getattr(getattr(log, "plan", None), "config", None), protocol, str(log.eval.model))
    if (digest := _dataset_digest(log)) is not None:
        values["dataset"] = digest[:12]
    metadata = log.eval.metadata if isinstance(log.eval.metadata, Mapping) else {}
    if isinstance(graph := metadata.get(GRAPH_SHA256), str):
        values["graph"] = graph[:12]
    values["benchmark"] = log.eval.task_version  # older logs: 1, what every task said before it was declared
    plain = {k: v if isinstance(v, str | int | float | bool) or v is None else str(v) for k, v in values.items()}
    return json.dumps(plain, sort_keys=True)


def judge_arguments(log: Any) -> dict[str, Any]:
    """The judge's model arguments that can change its scores (``--judge-arg NAME`` → value): two runs apart in one
    are two rows, not "two runs claim to be one". Where it is reached and billed (PLAIN_MODEL_ARGS) and secrets are
    left out; the judge's name, version and scale are its identity already."""
    grader = (log.eval.model_roles or {}).get("grader")
    args = getattr(grader, "args", None)
    return scoring_arguments(str(grader.model), args) if grader is not None and isinstance(args, Mapping) else {}


def as_cells(arguments: Mapping[str, Any]) -> dict[str, str]:
    """Argument values as a re-judged row's variant holds them: text, or the JSON of any other value."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in arguments.items()}


def scoring_arguments(model: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """Judge ``model``'s arguments as its runs' variant names them (``--judge-arg NAME`` → value), without where it
    is reached and billed (PLAIN_MODEL_ARGS), secrets, and what a declared judge's identity records already."""
    from ccpt import judges
    from ccpt.schemas.run import PLAIN_MODEL_ARGS

    found = judges.of_model(model)
    recorded = PLAIN_MODEL_ARGS | (found[0].recorded_args if found is not None else frozenset())
    return {f"{JUDGE_ARG} {k}": v for k, v in args.items() if k not in recorded and not _SECRET.search(str(k))}


def _dataset_digest(log: Any) -> str | None:
    """The digest of the dataset files a ccpt task log says it read (None: an older log, or not text)."""
    metadata = log.eval.metadata if isinstance(log.eval.metadata, Mapping) else {}
    return digest if isinstance(digest := metadata.get(DATASET_SHA256), str) else None


def samples_completed(log: Any) -> int:
    """Samples × epochs a log holds answered without error. A log that ended in error or was cancelled leaves its
    results' count unset: its samples are counted from its sample summaries (a log a kill truncated holds none)."""
    from inspect_ai.log import read_eval_log_sample_summaries

    results = getattr(log, "results", None)
    if log.status == "success" and results is not None and results.completed_samples is not None:
        return int(results.completed_samples)
    try:
        summaries = read_eval_log_sample_summaries(log.location)
    except Exception:  # a log a kill truncated: nothing in it can be reused
        return 0
    return sum(1 for s in summaries if s.completed and s.error is None)
