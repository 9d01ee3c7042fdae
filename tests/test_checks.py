"""A result file is checked against itself and the dataset (ccpt.results.checks): every case edits a real file
(a log of a scripted run, an export of it, the authors' files) the way a damaged or forged one would differ, and
gets the right number or one line naming the culprit."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ccpt.cli import main
from ccpt.errors import DataError
from ccpt.results import load_results

RUN = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent", "--limit", "2",
       "--seeds", "2", "--no-preflight", "--display", "none"]  # fmt: skip


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory, ccpt_dir: Path) -> Path:
    """A scripted Base run and a Multi-Oracle run (2 members) of PI-emergent: 2 instances × 2 seeds, one log each."""
    logs = tmp_path_factory.mktemp("runs") / "logs"
    argv = [*RUN, "--method", "base", "--method", "multi_oracle", "--oracle-n", "2"]
    assert main([*argv, "--data-dir", str(ccpt_dir), "--log-dir", str(logs)]) == 0
    return logs


def _log_of(runs: Path, method: str) -> Path:
    from inspect_ai.log import read_eval_log

    return next(
        p for p in sorted(runs.glob("*.eval")) if read_eval_log(p, header_only=True).eval.task_args["method"] == method
    )


def _edited(runs: Path, target: Path, method: str, edit: Callable[[list[dict[str, Any]], Any], None]) -> Path:
    """Both logs of ``runs`` copied into ``target``, the ``method`` log's first sample's records edited by ``edit``
    (records, sample)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    target.mkdir(parents=True, exist_ok=True)
    for path in runs.glob("*.eval"):
        shutil.copy(path, target / path.name)
    path = target / _log_of(runs, method).name
    log = read_eval_log(path)
    sample = log.samples[0]
    (score,) = sample.scores.values()
    edit(score.metadata["ccpt"]["samples"], sample)
    write_eval_log(log, path)
    return path


def _set(**changes: Any) -> Callable[[list[dict[str, Any]], Any], None]:
    return lambda records, _sample: records[0].update(changes)


@pytest.mark.parametrize(
    ("method", "changes", "reason"),
    [
        ("base", {"task": "pi_canceled"}, "record says task 'pi_canceled', its log 'pi_emergent'"),
        ("base", {"method": "cot"}, "record says method 'cot', its log 'base'"),
        ("base", {"method": "gold"}, "record says method 'gold', its log 'base'"),
        ("base", {"model": "openai/gpt-4o"}, "record says model 'openai/gpt-4o', its log 'ccpt-scripted/m'"),
        ("base", {"seed": 1}, "record says seed 1, its epoch 1 (seed 0)"),
        ("base", {"instance": "ccpt_emergent:7"}, "record says instance 'ccpt_emergent:7', its sample id"),
        ("base", {"sample": 3}, "record says sample 3 where its place says 0"),
        ("base", {"r_np": True}, "r_np True is not a number"),
        ("base", {"r_hp": "0.5"}, "r_hp '0.5' is not a number"),
        ("base", {"r_mp": [0.5]}, "r_mp [0.5] is not a number"),
        ("multi_oracle", {"r_np": False}, "r_np False is not a number"),
    ],
)
def test_a_log_whose_record_contradicts_its_header_is_named_and_set_aside(
    runs: Path, tmp_path: Path, method: str, changes: dict[str, Any], reason: str
) -> None:
    """The issue's forged records (a cancellation record in an emergence log, CoT or Gold records in a Base log,
    another model than the header's, a relevance `true`, "0.5" or [0.5]): the whole log is set aside and named,
    never partly scored; the other log of the directory is read whole."""
    edited = _edited(runs, tmp_path / "logs", method, _set(**changes))
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited) and reason in skipped.reason, skipped.reason
    assert skipped.reason.startswith("sample 'ccpt_emergent:")
    kept = "multi_oracle" if method == "base" else "base"
    assert set(frame["method"]) == {kept} and len(frame) == 2 * 2 * (2 if kept == "multi_oracle" else 1)


def test_extra_answers_of_a_one_sample_method_set_the_log_aside(runs: Path, tmp_path: Path) -> None:
    """A second member in a Base record (a one-sample method): averaged in, it would change E; the log is named."""
    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: r.append({**r[0], "sample": 1, "r_np": 1.0}))
    (skipped,) = load_results(tmp_path / "logs").attrs["unreadable"]
    assert skipped.path == str(edited) and "2 answers of method 'base', which draws 1" in skipped.reason


def test_a_log_of_another_dataset_version_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Same ids, other items: checked against the dataset given, the log is set aside naming the item; without a
    dataset there is nothing to check against (and the log is read)."""
    edited = _edited(runs, tmp_path / "logs", "base", _set(property="noisy"))
    frame = load_results(tmp_path / "logs", dataset)
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited)
    assert (
        "is 'a boat on the rocks' / 'noisy' in the log but 'a boat on the rocks' / 'strand' in the given dataset"
        in (skipped.reason)
    )
    assert load_results(tmp_path / "logs").attrs["unreadable"] == []


def test_report_names_the_set_aside_log_in_one_line_and_reports_the_rest(
    runs: Path, tmp_path: Path, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    edited = _edited(runs, tmp_path / "logs", "base", _set(r_np=True))
    assert main(["report", str(tmp_path / "logs"), "--data-dir", str(ccpt_dir)]) == 0
    out, err = capsys.readouterr()
    (line,) = [line for line in err.splitlines() if edited.name in line]
    assert "r_np True is not a number" in line and "internal error" not in err
    assert "| ccpt-scripted/m | Multi-Oracle |" in out and "| ccpt-scripted/m | Base |" not in out


# ------------------------------------------------------------------------------------------ tidy tables


def test_a_tidy_file_with_extra_samples_of_a_one_sample_method_is_refused(runs: Path, tmp_path: Path) -> None:
    """Before: a second Base sample row (r_np 1, E 1) was averaged in silently (E 0.0 → 50.0)."""
    from ccpt.results import export, from_tidy

    frame = load_results(runs)
    base = frame[frame["method"] == "base"]
    extra = base.iloc[[0]].assign(sample=1, r_np=1.0, r_hp=0.0, r_mp=0.0, score=1.0)
    path = export(pd.concat([frame, extra], ignore_index=True), tmp_path / "t.csv")
    with pytest.raises(DataError, match=r"t\.csv: row \d+: sample 1 of method 'base', which draws one answer"):
        from_tidy(path)
    assert len(from_tidy(export(frame, tmp_path / "ok.csv"))) == len(frame)  # the export itself reads back


def test_scored_rows_without_a_judge_are_not_called_unscored_and_are_kept_apart(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A tidy file whose judge cell is blank on scored rows: noted as scored rows naming no judge (before: called
    "unscored" and pooled with the judge's rows), kept apart as the report does, and `ccpt compare` does the same
    (before: it pooled them, a difference of +48.61 where it is −1.39)."""
    from ccpt.results import export

    frame = load_results(runs)
    blank = (frame["method"] == "base") & (frame["seed"] == 1)
    path = export(frame.assign(judge=frame["judge"].mask(blank, None)), tmp_path / "t.csv")
    read = load_results(path)
    (note,) = [n for n in read.attrs["notes"] if "judge" in n and "row(s)" in n]
    base_log = str(read.loc[read["method"] == "base", "source"].iloc[0])  # the export keeps each row's source
    assert note == f"2 scored row(s) name no judge ({base_log}): shown apart, under no judge"
    assert read.loc[read["method"] == "base", "judge"].isna().sum() == 2
    argv = ["compare", str(path), "--a", "ccpt-scripted/m:base", "--b", "ccpt-scripted/m:multi_oracle"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "A (ccpt-scripted/m:base) is scored by 2 judges (ccpt-scripted/j (plain); unknown)" in err
    assert main([*argv, "--judge", "ccpt-scripted/j"]) == 0  # one judge's rows: the one seed it scored


def test_a_tidy_export_without_dataset_ids_beside_its_source_is_named(
    reference_dir: Path, tmp_path: Path, dataset
) -> None:
    """The authors' file exported without --data-dir (row-position ids) beside the file read with it: one run under
    two id schemes (before: 400 instances, the answers counted twice)."""
    from ccpt.results import export, from_reference_csv

    source = reference_dir / "pi_canceled_gpt-4o_naive.csv"
    positional = export(from_reference_csv(source), tmp_path / "positional.csv")
    with pytest.raises(DataError, match=r"positional\.csv has row-position instance ids and \S*pi_canceled_gpt-4o_naive\.csv dataset ids"):
        load_results([source, positional], dataset)
