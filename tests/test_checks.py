"""A result file is checked against itself and the dataset (ccpt.results.checks): every case edits a real file
(a log of a scripted run, an export of it, the authors' files) the way a damaged or forged one would differ, and
gets the right number or one line naming the culprit."""

from __future__ import annotations

import csv
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
        ("base", {"r_hp": float("nan")}, "r_hp nan is not a number"),  # fifth hostile round: left out, unsaid
        # Found by the fourth hostile round: a Base record saying sa_filter false was read as a filter-ablation row
        # (Table 7), leaving Base a sample short; a record's protocol was not checked against its log's.
        ("base", {"sa_filter": False}, "record says sa_filter False, its log's method 'base'"),
        ("multi_oracle", {"sa_filter": True}, "record says sa_filter True, its log's method 'multi_oracle'"),
        ("base", {"protocol": "as-run"}, "record says protocol 'as-run', its log 'ccpt'"),
        # Sixth hostile round: each moved samples between the Failures table's columns with no line.
        ("base", {"parse_ok": False}, "its answer did not parse, yet it holds r_np"),
        ("base", {"judge_failures": 2}, "2 judge failure(s) but 0 pair(s) without a relevance"),
        # Seventh: the text 'false' (true to Python) passed the check above and was counted a parse failure.
        ("base", {"parse_ok": "false"}, "parse_ok 'false' is not true/false"),
        ("base", {"parse_ok": 0}, "parse_ok 0 is not true/false"),
        ("base", {"r_np": None}, "record says 0 judge failure(s) but 1 pair(s)"),
        ("base", {"sa_iteration": 2}, "sa_iteration 2 on method 'base', which has no spreading activation"),
        ("base", {"sa_failed_steps": 2}, "sa_failed_steps 2 on method 'base', which has no spreading activation"),
        ("base", {"answer": None}, "but no answer"),  # no answer, yet judged (seventh hostile round)
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


def test_an_as_run_log_s_scored_answer_said_not_to_parse_is_set_aside(runs: Path, tmp_path: Path) -> None:
    """Eighth hostile round: ccpt's scorer judges parsed answers only, under either protocol; in an as-run log a
    record saying its answer did not parse yet holding relevances was counted a parse failure and averaged in (the
    exception is the authors' stored scores, in their files and tidy tables of them)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    path = tmp_path / "as-run.eval"
    log = read_eval_log(_log_of(runs, "base"))
    log.eval.task_args["protocol"] = "as-run"
    records = [r for s in log.samples for score in s.scores.values() for r in score.metadata["ccpt"]["samples"]]
    for record in records:
        record["protocol"] = "as-run"
    write_eval_log(log, path)
    assert load_results(path).attrs["unreadable"] == []  # an as-run log as such is read
    records[0]["parse_ok"] = False
    write_eval_log(log, path)
    with pytest.raises(DataError, match=r"as-run\.eval: no readable .*its answer did not parse, yet it holds r_np"):
        load_results(path)


@pytest.mark.parametrize("every_step", [True, False])
def test_a_log_s_step_answer_past_its_run_s_steps_is_set_aside(
    ccpt_dir: Path, tmp_path: Path, every_step: bool
) -> None:
    """Seventh hostile round: a step record numbered 9 in a run of 5 steps, or one in a run that answered no step,
    printed a Table-6 column with no line."""
    from inspect_ai.log import read_eval_log, write_eval_log

    logs = tmp_path / "logs"
    argv = [*RUN, "--method", "sa_llm", "-T", f"sa_answer_every_step={str(every_step).lower()}", "--seeds", "1"]
    assert main([*argv, "--data-dir", str(ccpt_dir), "--log-dir", str(logs)]) == 0
    (path,) = logs.glob("*.eval")
    log = read_eval_log(path)
    (score,) = log.samples[0].scores.values()
    records = score.metadata["ccpt"]["samples"]
    if every_step:
        records[-1]["sa_iteration"] = 9
    else:
        records.append(records[0] | {"sa_iteration": 1})
    write_eval_log(log, path)
    said = "sa_iteration 9 past the 5 steps its run records" if every_step else "step answer 1 of a run without sa_"
    with pytest.raises(DataError, match=said):
        load_results(logs)


def test_a_log_recording_another_dataset_version_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Sixth hostile round: a log whose recorded dataset digest was edited (or made on a copy with other files)
    and whose items are the given dataset's was scored with no line. Its items agree, so it is scored against the
    given dataset, and one note names it with the version it records; without a dataset nothing is compared."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    log.eval.metadata["dataset_sha256"] = "f" * 64
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs", dataset)
    (note,) = [n for n in frame.attrs["notes"] if "another dataset version" in n]
    assert f"({dataset.sha256[:12]})" in note and note.endswith(f"{edited.name} (ffffffffffff)"), note
    assert len(frame) == 2 * 2 + 2 * 2 * 2 and not frame.attrs["unreadable"]  # scored: its items are the dataset's
    assert not [n for n in load_results(runs, dataset).attrs["notes"] if "dataset version" in n]


def test_a_log_whose_samples_name_another_judge_than_its_grader_is_set_aside(runs: Path, tmp_path: Path) -> None:
    """Sixth hostile round: samples whose stored judge identity said openai/gpt-4o in a log graded by a scripted
    judge printed as a GPT-4o-judged row ("Base · judge openai/gpt-4o (plain)"), rankable beside the paper's."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    for sample in log.samples:
        (score,) = sample.scores.values()
        score.metadata["ccpt"]["judge_identity"]["name"] = "openai/gpt-4o"
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited)
    assert skipped.reason.endswith("says it was judged by 'openai/gpt-4o', its log's grader is 'ccpt-scripted/j'")
    assert set(frame["judge"]) == {"ccpt-scripted/j (plain)"}


@pytest.mark.parametrize(
    ("forged", "reason"),
    [
        ({"mode": "expected"}, "says it was judged by 'ccpt-scripted/j (plain, expected)', an earlier one by"),
        ({"version": "2"}, "says it was judged by 'ccpt-scripted/j@2 (plain)', an earlier one by"),
        ({"version": "1+raw"}, "stores a malformed judge identity"),
        ({"scale": ["raw"]}, "stores a malformed judge identity"),
    ],
)
def test_a_log_whose_samples_disagree_on_their_judge_is_set_aside(
    runs: Path, tmp_path: Path, forged: dict[str, Any], reason: str
) -> None:
    """Seventh hostile round: a log's rows take its first sample's judge identity, so a later sample naming another
    mode or version (another judge) was scored under the first one's name, and a stored version spelling another
    key's separators ("1+raw": version 1 on the raw scale) was taken as written."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    (score,) = log.samples[-1].scores.values()
    score.metadata["ccpt"]["judge_identity"].update(forged)
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited) and reason in skipped.reason, skipped.reason
    assert set(frame["method"]) == {"multi_oracle"}


@pytest.mark.parametrize("version", ["2", -1])
def test_a_log_whose_benchmark_version_is_no_whole_number_is_set_aside(
    runs: Path, tmp_path: Path, version: object
) -> None:
    """Seventh hostile round: a version "2" (text) was another run variant than 2 printing as the same label, and
    -1 labelled rows "[benchmark -1]"; each is now named and set aside."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    log.eval.task_version = version
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited)
    assert skipped.reason == f"its benchmark version (task_version) {version!r} is not a whole number ≥ 0"
    assert set(frame["method"]) == {"multi_oracle"}


def test_extra_answers_of_a_one_sample_method_set_the_log_aside(runs: Path, tmp_path: Path) -> None:
    """A second member in a Base record (a one-sample method): averaged in, it would change E; the log is named."""
    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: r.append({**r[0], "sample": 1, "r_np": 1.0}))
    (skipped,) = load_results(tmp_path / "logs").attrs["unreadable"]
    assert skipped.path == str(edited) and "2 answers of method 'base', which draws 1" in skipped.reason


def test_fewer_answers_than_the_method_draws_set_the_log_aside(runs: Path, tmp_path: Path) -> None:
    """A Multi-Oracle record missing a member (best-of-1 shown as best-of-2), and a header whose oracle_n says 5 over
    records of 2 (labelled `oracle_n 5`): before, both scored silently; now the log is named and set aside."""
    from inspect_ai.log import read_eval_log, write_eval_log

    dropped = _edited(runs, tmp_path / "dropped", "multi_oracle", lambda r, _s: r.pop())
    (skipped,) = load_results(tmp_path / "dropped").attrs["unreadable"]
    assert skipped.path == str(dropped) and "1 answers of method 'multi_oracle', which draws 2" in skipped.reason
    claimed = _edited(runs, tmp_path / "claimed", "multi_oracle", lambda r, _s: None)
    log = read_eval_log(claimed)
    log.eval.task_args["oracle_n"] = 5
    write_eval_log(log, claimed)
    frame = load_results(tmp_path / "claimed")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(claimed) and "2 answers of method 'multi_oracle', which draws 5" in skipped.reason
    assert set(frame["method"]) == {"base"}


def test_a_sample_whose_records_were_deleted_sets_the_log_aside(runs: Path, tmp_path: Path) -> None:
    """Fourth hostile round: a scored sample whose ccpt records list is empty was dropped without a line (Base R_N,P
    moved); it is no answer of the method the header names, and the log is set aside."""
    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: r.clear())
    (skipped,) = load_results(tmp_path / "logs").attrs["unreadable"]
    assert skipped.path == str(edited) and "0 answers of method 'base', which draws 1" in skipped.reason


@pytest.mark.parametrize("how", ["removed", "moved", "late epoch"])
def test_a_log_holding_other_samples_than_its_header_counts_is_set_aside(runs: Path, tmp_path: Path, how: str) -> None:
    """Fourth hostile round: a finished log with one sample removed (or its id moved onto another sample's, which
    overwrites it), or a sample of an epoch past the log's seeds, changed the cells with no line naming it."""
    import copy

    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    if how == "removed":
        log.samples = log.samples[1:]
    elif how == "moved":
        other = next(s.id for s in log.samples if s.id != log.samples[0].id)
        log.samples[0].id = other
        (score,) = log.samples[0].scores.values()
        score.metadata["ccpt"]["samples"][0]["instance"] = other
    else:
        late = copy.deepcopy(log.samples[0])
        late.epoch = 3
        (score,) = late.scores.values()
        score.metadata["ccpt"]["samples"][0]["seed"] = 2
        log.samples.append(late)
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    reason = "epoch 3, past the log's 2 epoch(s)" if how == "late epoch" else "holds 3 samples where its header says"
    assert skipped.path == str(edited) and reason in skipped.reason, skipped.reason
    assert set(frame["method"]) == {"multi_oracle"}


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        (lambda log: setattr(log.eval.config, "limit", 8), "its header says limit 8 of 200 instances but names 2"),
        (lambda log: log.eval.dataset.sample_ids.__setitem__(-1, "ccpt_emergent:7"), "is not among the instances"),
    ],
    ids=["limit", "sample ids"],
)
def test_a_log_whose_header_names_another_instance_set_is_set_aside(
    runs: Path, tmp_path: Path, edit: Callable[[Any], None], reason: str
) -> None:
    """Fifth hostile round: a header's ``config.limit`` edited from 2 to 8 only changed the row's tag (``limit 8``):
    the run was shown as one over 8 instances while it holds 2."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    edit(log)
    write_eval_log(log, edited)
    frame = load_results(tmp_path / "logs")
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited) and reason in skipped.reason, skipped.reason
    assert set(frame["method"]) == {"multi_oracle"}


def test_a_log_of_another_dataset_version_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Same ids, other items: checked against the dataset given, the log is set aside naming the item; without a
    dataset there is nothing to check against (and the log is read)."""
    edited = _edited(runs, tmp_path / "logs", "base", _set(property="noisy"))
    frame = load_results(tmp_path / "logs", dataset)
    (skipped,) = frame.attrs["unreadable"]
    assert skipped.path == str(edited)
    assert (
        "is 'a boat on the rocks' / 'noisy' in the file but 'a boat on the rocks' / 'strand' in the given dataset"
        in (skipped.reason)
    )
    assert load_results(tmp_path / "logs").attrs["unreadable"] == []


def test_a_log_whose_header_names_another_split_than_its_instances_is_named(
    runs: Path, tmp_path: Path, dataset
) -> None:
    """Fourth hostile round: a test-split log whose header was edited to say `split: train` was read as a train-split
    run (its row tagged "split train" beside a real test run) with test items; checked against the dataset's test
    split, the log is set aside. Without a dataset there is no split to check against."""
    from inspect_ai.log import read_eval_log, write_eval_log

    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: None)
    log = read_eval_log(edited)
    log.eval.task_args["split"] = "train"
    write_eval_log(log, edited)
    (skipped,) = load_results(tmp_path / "logs", dataset).attrs["unreadable"]
    assert skipped.path == str(edited) and "is not in the train split its header names" in skipped.reason
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


def test_rejudge_names_a_set_aside_log(
    runs: Path, tmp_path: Path, ccpt_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fourth hostile round: `ccpt rejudge DIR` re-judged the readable logs and passed over a set-aside one without a
    line (its run was simply missing from the comparison); now it is named, as `report` and `compare` name it."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: r.clear())
    argv = ["rejudge", str(tmp_path / "logs"), "--judge", "ccpt-scripted/j2", "--limit", "1", "--out",
            str(tmp_path / "out"), "--data-dir", str(ccpt_dir), "--no-preflight"]  # fmt: skip
    assert main(argv) == 0
    (line,) = [line for line in capsys.readouterr().err.splitlines() if edited.name in line]
    assert line.startswith("ccpt: warning: skipped 1 unreadable log file") and "0 answers of method 'base'" in line


def test_human_export_ratings_names_a_set_aside_log(
    runs: Path, tmp_path: Path, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fourth hostile round: rating sheets were made from the readable logs only, the set-aside one unsaid."""
    edited = _edited(runs, tmp_path / "logs", "base", lambda r, _s: r.clear())
    argv = ["human", "export-ratings", str(tmp_path / "logs"), "--out", str(tmp_path / "sheets"), "--n", "2",
            "--raters", "1", "--data-dir", str(ccpt_dir)]  # fmt: skip
    assert main(argv) == 0
    (line,) = [line for line in capsys.readouterr().err.splitlines() if edited.name in line]
    assert line.startswith("ccpt: warning: skipped 1 unreadable log file")


# ------------------------------------------------------------------------------------------ tidy tables


def test_a_tidy_file_with_extra_samples_of_a_one_sample_method_is_refused(runs: Path, tmp_path: Path) -> None:
    """Before: a second Base sample row (r_np 1, E 1) was averaged in silently (E 0.0 → 50.0)."""
    from ccpt.results import export, from_tidy

    frame = load_results(runs)
    base = frame[frame["method"] == "base"]
    extra = base.iloc[[0]].assign(sample=1, r_np=1.0, r_hp=0.0, r_mp=0.0, score=1.0)
    path = export(pd.concat([frame, extra], ignore_index=True), tmp_path / "t.csv")
    with pytest.raises(
        DataError, match=r"t\.csv: row \d+: sample 1 of method 'base', which draws 1 answer\(s\) per seed"
    ):
        from_tidy(path)
    assert len(from_tidy(export(frame, tmp_path / "ok.csv"))) == len(frame)  # the export itself reads back


def test_a_tidy_file_with_other_samples_than_its_recorded_oracle_n_is_refused(runs: Path, tmp_path: Path) -> None:
    """Fifth hostile round: a third Multi-Oracle sample (a best one) added to a best-of-2 run's rows made it a
    best-of-3 with no line (E 1.9 → 18.5 on a scripted run); rows of a best-of-2 run edited to say oracle_n 5 were
    read as best-of-5."""
    from ccpt.results import export

    frame = load_results(runs)
    multi = frame["method"] == "multi_oracle"
    extra = frame[multi].iloc[[0]].assign(sample=2, r_np=1.0, r_hp=0.0, r_mp=0.0, score=1.0)
    path = export(pd.concat([frame, extra], ignore_index=True), tmp_path / "t.csv")
    with pytest.raises(DataError, match=r"row \d+: sample 2 of method 'multi_oracle', which draws 2 answer"):
        load_results(path)
    five = frame.copy()
    five.loc[multi, "variant"] = five.loc[multi, "variant"].str.replace('"oracle_n": 2', '"oracle_n": 5')
    with pytest.raises(DataError, match=r"2 answer\(s\) of method 'multi_oracle', instance '\S+', seed 0: it draws 5"):
        load_results(export(five, tmp_path / "five.csv"))
    assert len(load_results(export(frame, tmp_path / "ok.csv"))) == len(frame)


@pytest.mark.parametrize(("column", "value"), [("sa_filter", False), ("sa_iteration", 2)])
def test_a_tidy_row_with_a_filter_or_step_cell_on_a_method_without_one_is_refused(
    runs: Path, tmp_path: Path, column: str, value: Any
) -> None:
    """Fourth hostile round: a Base row edited to say sa_filter false became a filter-ablation row (Table 7), one
    saying sa_iteration 2 a step of Table 6; Base was left a sample short with no line. Now one line names the row."""
    from ccpt.results import export, from_tidy

    frame = load_results(runs)
    frame[column] = frame[column].astype(object)
    frame.loc[frame.index[frame["method"] == "base"][0], column] = value
    path = export(frame, tmp_path / "t.csv")
    with pytest.raises(DataError, match=rf"t\.csv: row \d+: {column} {value} on method 'base', which has no spreading"):
        from_tidy(path)


@pytest.mark.parametrize("label", ["Base", "BASE", "Multi-Oracle"])
def test_a_tidy_row_naming_its_method_by_label_is_refused(runs: Path, tmp_path: Path, label: str) -> None:
    """Fifth hostile round: a row hand-edited to the method's label (``Base``, not ``base``) printed as a second
    Base row beside the first, each a part of the run's answers."""
    from ccpt.results import export

    frame = load_results(runs)
    frame.loc[frame.index[0], "method"] = label
    path = export(frame, tmp_path / "t.csv")
    with pytest.raises(DataError, match=rf"t\.csv: row 0: method '{label}' is no method name"):
        load_results(path)


def test_a_tidy_row_of_another_dataset_version_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Fifth hostile round: a tidy row's item was not checked against the dataset (a log's is): a row edited to
    another property under the same id was scored as that instance. Row-position ids (an export made without the
    dataset) name no item of it and are not checked."""
    from ccpt.results import export

    frame = load_results(runs)
    assert len(load_results(export(frame, tmp_path / "ok.csv"), dataset)) == len(frame)
    edited = frame.copy()
    edited.loc[edited.index[0], "property"] = "noisy"
    path = export(edited, tmp_path / "t.csv")
    with pytest.raises(DataError, match=r"t\.csv: row 0: instance '\S+' is '.+' / 'noisy' in the file but '.+' in"):
        load_results(path, dataset)
    assert len(load_results(path)) == len(frame)  # nothing to check against
    rows = {instance: f"pi_emergent:row{k}" for k, instance in enumerate(edited["instance"].unique())}
    positional = edited.assign(instance=edited["instance"].map(rows))
    assert len(load_results(export(positional, tmp_path / "rows.csv"), dataset)) == len(frame)


def _with_argument(frame: pd.DataFrame, rows: Any, **arguments: Any) -> pd.DataFrame:
    """``frame`` with the ``rows`` (a mask) recording ``arguments`` in their variant (JSON) besides their own."""
    import json

    out = frame.copy()
    out.loc[rows, "variant"] = [json.dumps(json.loads(v) | arguments, sort_keys=True) for v in out.loc[rows, "variant"]]
    return out


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # A run's rows covering more instances than the limit its variant records (a log's header is checked so).
        (
            lambda f: _with_argument(f, f["method"] == "base", limit=1),
            r"the run of model '\S+', method 'base' records limit 1 but its rows cover 2",
        ),
        # Test items under a recorded split train (Table 3 labelled them a train-split run).
        (lambda f: _with_argument(f, f.index, split="train"), r"row 0: instance '\S+' is not in the train split its"),
        # A row moved to Task 3 keeping its relevances: its PI cell was left an answer short.
        (lambda f: f.assign(task=f["task"].where(f.index != 0, "type_prediction")), "row 0: r_np .* on task 'type_"),
        # A model's answers relabelled Gold printed as the judge's upper bound, "Gold (this judge)".
        (
            lambda f: f.assign(method=f["method"].replace("base", "gold")),
            r"row \d+: Gold answer '.+' is not its item's annot",
        ),
        # A variant that is no JSON object: its oracle_n and limit were not checked.
        (lambda f: f.assign(variant="{"), "row 0: variant '{' is not the JSON object of a run's arguments"),
        # Judge failures on fully scored rows, a failed SA step on Base: the Failures table counted what never was.
        (
            lambda f: f.assign(judge_failures=f["judge_failures"].where(f["method"] != "base", 2)),
            r"row \d+: 2 judge failure\(s\) but 0 pair\(s\) without a relevance",
        ),
        (
            lambda f: f.assign(sa_failed_steps=f["sa_failed_steps"].astype(object).where(f["method"] != "base", 3)),
            r"row \d+: sa_failed_steps 3 on method 'base', which has no spreading",
        ),
        # Eighth: a run's rows relabelled as-run, a scored answer said not to parse: averaged in as the authors'
        # stored score of a reply ccpt cannot parse (their files record no run arguments; a run's rows do).
        (
            lambda f: f.assign(protocol="as-run", parse_ok=f["parse_ok"].where(f.index != 0, False)),
            "row 0: its answer did not parse, yet it holds r_np",
        ),
    ],
)
def test_a_tidy_run_contradicting_its_recorded_arguments_or_task_is_refused(
    runs: Path, tmp_path: Path, dataset, edit: Callable[[pd.DataFrame], pd.DataFrame], reason: str
) -> None:
    """Sixth hostile round: each was scored with no line (a best-of rows of limit 1 covering 2 instances, test items
    labelled split train, a generative row moved to Task 3, Base rows relabelled Gold)."""
    from ccpt.results import export

    path = export(edit(load_results(runs)), tmp_path / "t.csv")
    with pytest.raises(DataError, match=rf"t\.csv: {reason}"):
        load_results(path, dataset)


@pytest.mark.parametrize(
    ("edit", "reason"),
    [
        # Table 5's accuracy moved with no line: a gold type other than the one its id names, a predicted type
        # other than its answer's, a reply said not to parse still predicting a type (counted a parse failure).
        (
            lambda f: f.assign(gold_type=f["gold_type"].where(f["gold_type"] != "canceled", "emergent")),
            r"row \d+: gold_type 'emergent' on instance 'canceled:ccpt_canceled:\d+', an item of type 'canceled'",
        ),
        (lambda f: f.assign(pred_type=f["gold_type"]), r"row \d+: pred_type '\w+' where its answer '\w+' says"),
        (
            lambda f: f.assign(
                instance=f["instance"].str.replace("canceled:ccpt_canceled", "emergent:ccpt_canceled"),
                gold_type=f["gold_type"].replace("canceled", "emergent"),
            ),
            r"row \d+: instance 'emergent:ccpt_canceled:\d+' names type 'emergent' for an item of canceled properties",
        ),
        (lambda f: f.assign(parse_ok=False), r"row 0: its answer did not parse, yet it holds pred_type"),
        (
            lambda f: f.assign(seed=f["seed"].astype(object).where(f.index != 0, 10**20)),
            r"row 0, column 'seed': should be less than 1000",
        ),
    ],
)
def test_a_task3_tidy_row_contradicting_its_id_or_answer_is_refused(
    reference_dir: Path, tmp_path: Path, dataset, edit: Callable[[pd.DataFrame], pd.DataFrame], reason: str
) -> None:
    """Seventh hostile round, on the authors' Task-3 file exported: each edit changed Table 5 with no line (a gold
    type relabelled: 33.3 -> 50.0 accuracy; a huge seed was read as one more seed of the run)."""
    from ccpt.results import export

    frame = load_results(reference_dir / "tp_gpt-4o_naive.csv", dataset)
    frame.attrs.clear()
    assert len(load_results(export(frame, tmp_path / "ok.csv"), dataset)) == len(frame)
    with pytest.raises(DataError, match=rf"t\.csv: {reason}"):
        load_results(export(edit(frame), tmp_path / "t.csv"), dataset)


@pytest.mark.shared_data
def test_the_authors_as_run_rows_keep_their_stored_scores_through_a_tidy_table(
    reference_dir: Path, tmp_path: Path
) -> None:
    """The authors' more-models files keep their judge's score of answers ccpt's parser refuses (as run, their code
    read them): exported to a tidy table, the table was refused ("its answer did not parse, yet it holds r_np").
    Under ccpt's own protocol such a row is still refused."""
    from ccpt.results import export

    name = "pi_canceled_Meta-Llama-3.1-70B-Instruct_sa-llm.csv"
    frame = load_results(reference_dir / "more-models" / name)
    kept = (frame["parse_ok"] == False) & frame["r_np"].notna()  # noqa: E712 - a column of booleans
    assert kept.sum() == 16 and set(frame["protocol"]) == {"as-run"}
    frame.attrs.clear()
    again = load_results(export(frame, tmp_path / "t.csv"))
    columns = ["instance", "seed", "parse_ok", "r_np", "r_hmp", "score"]
    assert again[columns].equals(frame[columns])
    with pytest.raises(DataError, match=r"row \d+: its answer did not parse, yet it holds r_np"):
        load_results(export(frame.assign(protocol="ccpt"), tmp_path / "paper.csv"))


def test_report_exports_a_logs_tidy_table_as_parquet(runs: Path, tmp_path: Path) -> None:
    """Seventh hostile round: `ccpt report LOGS --tidy t.parquet` was an internal error (the reader's notes, keyed
    by tuples, went into Parquet's JSON metadata); the Parquet file reads back as the CSV does."""
    pytest.importorskip("pyarrow")
    parquet, text = tmp_path / "t.parquet", tmp_path / "t.csv"
    assert main(["report", str(runs), "--tidy", str(parquet), "--out", str(tmp_path / "r.md")]) == 0
    assert main(["report", str(runs), "--tidy", str(text), "--out", str(tmp_path / "r.md")]) == 0
    columns = ["task", "method", "seed", "instance", "sample", "r_np", "score", "variant"]
    assert load_results(parquet)[columns].equals(load_results(text)[columns])
    # In a directory it is not read (it would count its logs' answers twice), and said: before, it was dropped unsaid.
    shutil.copytree(runs, tmp_path / "dir")
    shutil.copy(parquet, tmp_path / "dir")
    read = load_results(tmp_path / "dir")
    assert len(read) == len(load_results(runs))
    assert any("t.parquet: a Parquet table in a directory is not read" in w for w in read.attrs["warnings"])


def test_a_tidy_spreading_activation_step_past_its_run_or_without_its_final_answer_is_refused(
    reference_dir: Path, tmp_path: Path, dataset
) -> None:
    """Seventh hostile round, on the authors' SA file and its step-3 file exported: a final answer relabelled a step
    left Table 3's cell an answer short (R_N,P 50.0 -> 53.7 on a scripted run), a step or failed-step count past the
    run's recorded sa_max_iterations printed a Table-6 column C_7; each with no line. Per-step rows alone still read."""
    from ccpt.results import export

    files = [reference_dir / f"pi_emergent_gpt-4o_sa-conceptnet{part}.csv" for part in ("", "-3")]
    frame = load_results(files, dataset)
    frame.attrs.clear()
    final = frame.index[frame["sa_iteration"].isna()][0]
    steps = frame[frame["sa_iteration"].notna()]
    assert len(load_results(export(steps, tmp_path / "steps.csv"), dataset)) == len(steps)  # a per-step file alone
    moved = frame.assign(sa_iteration=frame["sa_iteration"].astype(object).where(frame.index != final, 2))
    with pytest.raises(DataError, match=r"moved\.csv: row \d+: a Spreading Activation step answer \(sa_iteration\) wi"):
        load_results(export(moved, tmp_path / "moved.csv"), dataset)
    recorded = _with_argument(frame.assign(variant="{}"), frame.index, sa_max_iterations=5)
    for column, value in (("sa_iteration", 7), ("sa_failed_steps", 6)):
        late = recorded.assign(**{column: recorded[column].astype(object).where(recorded.index != final, value)})
        if column == "sa_iteration":  # the final answer stays: its step-7 copy beside it
            late = pd.concat([recorded, late.loc[[final]]], ignore_index=True)
        with pytest.raises(DataError, match=rf"row \d+: {column} {value} past the 5 steps its run records"):
            load_results(export(late, tmp_path / "late.csv"), dataset)


def test_a_tidy_row_recording_another_dataset_version_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Sixth hostile round: as for a log, rows whose variant records another dataset digest, their items agreeing
    with the given dataset's, are scored against it and named in one note."""
    from ccpt.results import export

    frame = load_results(runs)
    path = export(_with_argument(frame, frame.index, dataset="ffffffffffff"), tmp_path / "t.csv")
    read = load_results(path, dataset)
    assert len(read) == len(frame)
    (note,) = [n for n in read.attrs["notes"] if "another dataset version" in n]
    assert note.startswith("t.csv: rows recording") and note.endswith(": ffffffffffff"), note
    assert not [n for n in load_results(export(frame, tmp_path / "ok.csv"), dataset).attrs["notes"] if "version" in n]


def test_a_tidy_export_whose_variant_a_spreadsheet_rewrote_beside_its_log_is_read_once(
    runs: Path, tmp_path: Path
) -> None:
    """Eighth hostile round: a tool that rewrites the variant cells' JSON (compact, keys in another order) made the
    export another run to the reader, whose label read like its log's: both pooled into one row, every answer
    counted twice with no line. The same arguments are one run: read once, with the warning of a repeat."""
    import json

    from ccpt.results import export

    frame = load_results(runs)
    rewritten = [json.dumps(dict(reversed(json.loads(v).items())), separators=(",", ":")) for v in frame["variant"]]
    both = load_results([runs, export(frame.assign(variant=rewritten), tmp_path / "sheet.csv")])
    assert len(both) == len(frame) and both["variant"].nunique() == frame["variant"].nunique()
    import re

    repeats = [int(n) for w in both.attrs["warnings"] for n in re.findall(r"repeats (\d+) row", w)]
    assert sum(repeats) == len(frame), both.attrs["warnings"]


def test_a_tidy_export_without_its_variant_column_beside_its_log_is_read_once(runs: Path, tmp_path: Path) -> None:
    """Fifth hostile round: an export made before the ``variant`` column existed, given with its own logs, was a
    second row per run ("arguments unrecorded"), every answer counted twice. A file repeating a run's answers only
    in part (an answer edited) stays a run of its own."""
    from ccpt.report.tables import table3
    from ccpt.results import export

    frame = load_results(runs)
    path = export(frame.drop(columns="variant"), tmp_path / "old.csv")
    both = load_results([runs, path])
    assert len(both) == len(frame)
    assert any("repeat a run's answers: read as its" in n for n in both.attrs["notes"])
    assert [r.key for r in table3(both, n_boot=10).rows] == [r.key for r in table3(frame, n_boot=10).rows]
    edited = frame.drop(columns="variant")
    edited.loc[edited.index[0], "answer"] = "another answer"
    apart = load_results([runs, export(edited, tmp_path / "edited.csv")])
    assert len(apart) == len(frame) + frame["method"].eq(frame.loc[frame.index[0], "method"]).sum()


def test_the_authors_files_exported_read_back_against_the_dataset(reference_dir: Path, tmp_path: Path, dataset) -> None:
    """The item check takes the authors' text as the dataset reads it ("a beaten dog," is its item "a beaten dog"),
    and Task 3's pairs drawn by text (``type_prediction:others:…``) are no id the dataset must hold."""
    from ccpt.results import export

    files = [reference_dir / n for n in ("npc_emergent_gpt-4o_naive.csv", "tp_gpt-4o_naive.csv")]
    frame = load_results(files, dataset)
    frame.attrs.clear()
    assert frame["combination"].eq("a beaten dog,").any() and frame["instance"].str.contains(":others:").any()
    assert len(load_results(export(frame, tmp_path / "t.csv"), dataset)) == len(frame)


def test_a_tidy_row_moved_to_another_task_is_named(runs: Path, tmp_path: Path, dataset) -> None:
    """Fifth hostile round: Base's PI-emergent rows relabelled ``pi_canceled`` were scored as cancellation (a
    PI-Canceled column of emergent items) with a note on recomputed scores only."""
    from ccpt.results import export

    frame = load_results(runs)
    path = export(frame.assign(task="pi_canceled"), tmp_path / "t.csv")
    with pytest.raises(DataError, match=r"row 0: instance 'ccpt_emergent:\d+' is an item of emergent properties, not"):
        load_results(path, dataset)


def test_a_parquet_tidy_file_with_true_false_relevances_is_refused(runs: Path, tmp_path: Path) -> None:
    """Fifth hostile round: a Parquet table's boolean r_np column was read as 1/0 (a relevance ``true`` taken as
    1.0, which the issue rules out for logs), with a note saying only that scores were recomputed."""
    pytest.importorskip("pyarrow")
    frame = load_results(runs)
    frame.attrs.clear()  # notes and settings: no Parquet metadata
    frame.assign(r_np=frame["r_np"] > 0.5).to_parquet(tmp_path / "t.parquet")
    with pytest.raises(DataError, match=r"t\.parquet: column 'r_np' holds true/false, not numbers"):
        load_results(tmp_path / "t.parquet")
    frame.to_parquet(tmp_path / "ok.parquet")
    assert len(load_results(tmp_path / "ok.parquet")) == len(frame)


def test_a_tidy_row_claiming_more_judge_failures_than_its_pairs_is_set_aside(runs: Path, tmp_path: Path) -> None:
    """Fifth hostile round: ``judge_failures`` 99 on a row judged on 3 pairs was printed as 99 judge failures."""
    from ccpt.report.tables.failure_counts import failures
    from ccpt.results import export

    frame = load_results(runs)
    frame.loc[frame.index[0], "judge_failures"] = 99
    read = load_results(export(frame, tmp_path / "t.csv"))
    assert any("'judge_failures': should be less than or equal to 3 (got '99')" in n for n in read.attrs["notes"])
    assert sum(row.judge_failures for row in failures(read)) == 0


def test_a_tidy_file_cut_short_or_naming_a_column_twice_is_one_line(
    runs: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: pandas padded a row cut short with empty cells and read the first of two same-named columns."""
    from ccpt.results import export

    with export(load_results(runs), tmp_path / "t.csv").open(newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    width = len(rows[0])
    short, twice = tmp_path / "short" / "t.csv", tmp_path / "twice" / "t.csv"
    edits = {
        short: [*rows[:-1], rows[-1][: width - 3]],  # the last row's own cells, its last three lost
        twice: [[*row, "model" if i == 0 else "other"] for i, row in enumerate(rows)],
    }
    for path, edited in edits.items():
        path.parent.mkdir()
        with path.open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh).writerows(edited)
    for path, named in ((short, f"row {len(rows) - 2} has {width - 3} fields, the header {width}"),
                        (twice, "'model' appear more than once in the header")):  # fmt: skip
        assert main(["report", str(path)]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and str(path) in err[0] and named in err[0], err


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
    with pytest.raises(
        DataError,
        match=r"positional\.csv has row-position instance ids and \S*pi_canceled_gpt-4o_naive\.csv dataset ids",
    ):
        load_results([source, positional], dataset)


# ------------------------------------------------------------------------------------------ the authors' files


def test_a_per_step_file_renamed_to_another_step_is_named(reference_dir: Path, tmp_path: Path) -> None:
    """C_2's and C_4's files swapped by name: before, Table 6 swapped its C_2 and C_4 rows silently (their C_T
    columns differ in one row of 200). The content (C's step sets and C_T) names the step each file holds."""
    from ccpt.results import from_reference_csv

    run = "pi_emergent_gpt-4o_sa-conceptnet"
    for named, holds in ((2, 4), (4, 2)):
        shutil.copy(reference_dir / f"{run}-{holds}.csv", tmp_path / f"{run}-{named}.csv")
    swapped = r"-4\.csv: the file name says step 4, but its C_T column is not C_4 .* in 1 of 200 rows"
    with pytest.raises(DataError, match=swapped + r" \(its content fits step 2\)"):
        from_reference_csv(tmp_path / f"{run}-4.csv")
    with pytest.raises(DataError, match=r"says step 2, .*its content fits step 3 / 4 / 5"):
        from_reference_csv(tmp_path / f"{run}-2.csv")
    # In a directory: both named and set aside, the main file reported.
    shutil.copy(reference_dir / f"{run}.csv", tmp_path / f"{run}.csv")
    frame = load_results(tmp_path)
    assert frame["sa_iteration"].isna().all() and len(frame) == 200 * 3
    assert sum("the file name says step" in w for w in frame.attrs["warnings"]) == 2
    for step in range(6):  # the authors' own per-step files all fit their names
        assert from_reference_csv(reference_dir / f"{run}-{step}.csv")["sa_iteration"].eq(step).all()


def test_a_seed_copied_from_another_seed_is_named(reference_dir: Path, tmp_path: Path) -> None:
    """Sixth hostile round: seed 1's columns of an authors' file replaced by seed 0's scored as two independent
    seeds, its spread (±) narrowed, with no line. The authors' own seeds agree on 70% of rows at most."""
    frame = pd.read_csv(reference_dir / "pi_canceled_gpt-4o_naive.csv", dtype=str, keep_default_na=False)
    assert not load_results(reference_dir / "pi_canceled_gpt-4o_naive.csv").attrs["warnings"]
    for column in [c for c in frame.columns if c.startswith("gpt-4o_naive_1_")]:
        frame[column] = frame[column.replace("_naive_1_", "_naive_0_")]
    copied = tmp_path / "pi_canceled_gpt-4o_naive.csv"
    frame.to_csv(copied, index=False)
    (warning,) = load_results(copied).attrs["warnings"]
    assert warning.startswith(f"{copied.name}: run 'gpt-4o_naive' has seeds holding the same answers"), warning
    assert "every one of its 167 rows (0 and 1)" in warning and "counts them as independent" in warning


def _judged_by(source: Path, target: Path, judge: str) -> Path:
    """The authors' file with its metadata naming another judge (its stored relevances unchanged)."""
    text = source.read_text(encoding="utf-8")
    target.write_text(text.replace("_gpt-4o_relevance", f"_{judge}_relevance"), encoding="utf-8")
    return target


def test_judge_pairs_takes_gpt4o_verdicts_only_and_reads_a_renamed_copy_once(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A file whose metadata names claude-3 as its judge is no source of GPT-4o verdicts; a renamed copy of a file
    is named and read once (before: both counted, every pair's occurrences doubled)."""
    source = reference_dir / "pi_canceled_gpt-4o_naive.csv"
    claude = _judged_by(source, tmp_path / "pi_canceled_gpt-4o_cot.csv", "claude-3")
    copy = tmp_path / "renamed.csv"
    shutil.copy(source, copy)
    assert main(["judge", "pairs", str(source), str(claude), str(copy), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert f"skipped {claude}: its metadata names judge claude-3, not gpt-4o: not GPT-4o's verdicts" in err
    assert f"skipped {copy}: a copy of {source} (the same content): read once" in err
    alone = tmp_path / "alone.csv"
    assert main(["judge", "pairs", str(source), "--out", str(alone)]) == 0
    assert (tmp_path / "p.csv").read_bytes() == alone.read_bytes()


def test_judge_pairs_names_a_rejected_relevance_cell(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Fourth hostile round: an authors' file with one relevance edited to 1.5 gave its pair one occurrence fewer in
    `judge pairs` with no line (reports named the cell); now a warning names the file."""
    source = reference_dir / "pi_emergent_gpt-4o_naive.csv"
    with source.open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))
    rows[0][header.index("gpt-4o_naive_0_combination_relevance")] = "1.5"
    edited = tmp_path / source.name
    with edited.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh, lineterminator="\n").writerows([header, *rows])
    assert main(["judge", "pairs", str(edited), "--out", str(tmp_path / "p.csv")]) == 0
    err = capsys.readouterr().err
    assert f"{edited}: 1 cell(s) the result-file schema rejected give no pair" in err, err
    assert main(["judge", "pairs", str(source), "--out", str(tmp_path / "q.csv")]) == 0
    assert "rejected" not in capsys.readouterr().err


def test_judge_tools_key_on_run_identity(
    reference_dir: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`judge pairs` and `judge ensemble --map-runs` key the authors' rows on the run identity, as reports do: the
    same file given twice, or a copy re-saved (CRLF) or reordered under another name, is counted once with a warning
    naming it (before: every pair's occurrences doubled, the map fitted on each row twice); a copy with one answer
    edited is one line naming both files. With --data-dir, as rows reordered keep their ids only by the dataset's."""
    import csv

    from ccpt.dataset import load_dataset
    from ccpt.judging.lomo import table3_runs
    from ccpt.judging.teacher_pairs import read_frames

    source = reference_dir / "pi_canceled_gpt-4o_naive.csv"
    with source.open(newline="", encoding="utf-8") as fh:
        header, *rows = list(csv.reader(fh))

    def written(name: str, body: list[list[str]], newline: str = "\n") -> Path:
        with (tmp_path / name).open("w", newline="", encoding="utf-8") as fh:
            csv.writer(fh, lineterminator=newline).writerows([header, *body])
        return tmp_path / name

    crlf, reordered = written("resaved.csv", rows, "\r\n"), written("reordered.csv", rows[::-1])
    alone, data = tmp_path / "alone.csv", ["--data-dir", str(ccpt_dir)]
    assert main(["judge", "pairs", str(source), "--out", str(alone), *data]) == 0
    dataset = load_dataset(ccpt_dir)
    once = len(table3_runs(read_frames([source], dataset))["gpt-4o"])
    for twice in ([source, source], [source, crlf], [source, reordered]):
        out = tmp_path / "twice.csv"
        capsys.readouterr()
        assert main(["judge", "pairs", *map(str, twice), "--out", str(out), *data]) == 0
        err = capsys.readouterr().err
        assert f"{twice[1].name} repeats {len(rows) * 3} row(s)" in err and "counted once" in err, err
        assert out.read_bytes() == alone.read_bytes()
        warnings: list[str] = []
        runs = table3_runs(read_frames(twice, dataset, warnings=warnings))  # what --map-runs fits its map on
        assert [len(r) for r in runs.values()] == [once] and len(warnings) == 1
    column = header.index("gpt-4o_naive_0_combination_relevance")
    edited = written("edited.csv", [[*rows[0][:column], "0.5", *rows[0][column + 1 :]], *rows[1:]])
    assert main(["judge", "pairs", str(source), str(edited), "--out", str(tmp_path / "e.csv"), *data]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and source.name in err and edited.name in err and "two runs claim to be one" in err


# --------------------------------------------------------------------------------- stores, manifests, caches


def test_a_stored_agreement_interval_must_contain_its_estimate(tmp_path: Path) -> None:
    """Before: an inverted interval printed "0.99 [1.00, 0.10]". Now the entry is left out, named in one line."""
    import json

    from ccpt.judging.agreement import read_store

    store = tmp_path / "judge_agreement.json"
    entry = {"n": 300, "pearson": 0.99, "pearson_ci": [1.0, 0.1], "spearman": 0.8, "spearman_ci": [0.7, 0.9]}
    fine = entry | {"pearson_ci": [0.98, 1.0]}
    store.write_text(json.dumps({"bad": {"test": entry}, "good": {"test": fine}}), encoding="utf-8")
    found = read_store(store)
    assert set(found.entries) == {("good", "test")}
    assert "pearson_ci [1.0, 0.1] does not contain pearson 0.99" in found.problems["bad"]
    assert "\n" not in found.problems["bad"]
    # Found by the second hostile round: a correlation quoted over 0 pairs.
    store.write_text(json.dumps({"none": {"test": fine | {"n": 0}}, "good": {"test": fine}}), encoding="utf-8")
    found = read_store(store)
    assert set(found.entries) == {("good", "test")}
    assert "pearson 0.99 over n 0 pairs: a correlation needs 2 at least" in found.problems["none"]
    # Found by the fourth hostile round: an entry stored under `paper300` saying it was measured on `test` (1305
    # pairs) was quoted by reports as its pair set's figure.
    store.write_text(
        json.dumps({"moved": {"paper300": fine | {"pairs": "test"}}, "good": {"test": fine | {"pairs": "test"}}})
    )
    found = read_store(store)
    assert set(found.entries) == {("good", "test")}
    assert found.problems["moved"] == f"{store}: entry 'moved' / 'paper300' says pairs 'test'; ignored"
    # Found by the seventh hostile round: an expected-mode figure stored under a text-mode judge's key was quoted
    # for a run of that judge in text mode.
    store.write_text(json.dumps({"j": {"test": fine | {"mode": "expected"}}, "j (expected)": {"test": fine}}))
    found = read_store(store)
    assert not found.entries
    assert found.problems["j"] == f"{store}: entry 'j' / 'test' says mode 'expected', its key 'text'; ignored"
    assert found.problems["j (expected)"].endswith("says mode 'text', its key 'expected'; ignored")
    # Found by the fifth hostile round: `true` was read as a correlation of 1.0 ("r 1.00" quoted).
    store.write_text(json.dumps({"flag": {"test": fine | {"pearson": True, "pearson_ci": [0.9, 1.0]}}}))
    assert (
        read_store(store).problems["flag"].endswith("pearson: a number is expected, not true/false (got True); ignored")
    )


def test_a_stored_agreement_entry_counts_no_more_pairs_than_its_pair_set_holds(tmp_path: Path) -> None:
    """Sixth hostile round: an entry under `paper300` (300 pairs) saying n 5000, or under a sample of 10 rows (30
    pairs) saying n 31, was quoted "on 5000 pairs of the paper-sized sample". Now each is left out, named."""
    import json

    from ccpt.judging.agreement import read_store

    store = tmp_path / "judge_agreement.json"
    fine = {"n": 300, "pearson": 0.6, "pearson_ci": [0.5, 0.7]}
    forged = {
        "big": {"paper300": fine | {"n": 5000}},
        "missing": {"paper300": fine | {"n": 290, "n_missing": 11}},
        "sample": {"test/rows=10/seed=0": fine | {"n": 31, "rows": 10}},
        "moved": {"test/rows=10/seed=0": fine | {"n": 30, "rows": 20}},
        "test": {"test": fine | {"n": 3 * 534 + 1}},
        "good": {"paper300": fine, "test/rows=10/seed=0": fine | {"n": 30, "rows": 10}, "test": fine | {"n": 1305}},
    }
    store.write_text(json.dumps(forged), encoding="utf-8")
    found = read_store(store)
    assert set(found.entries) == {("good", "paper300"), ("good", "test/rows=10/seed=0"), ("good", "test")}
    assert found.problems["big"].endswith("5000 pairs (n and n_missing) where its pair set holds 300 at most; ignored")
    assert "301 pairs (n and n_missing) where its pair set holds 300" in found.problems["missing"]
    assert "31 pairs (n and n_missing) where its pair set holds 30 at most" in found.problems["sample"]
    assert "says rows 20 where its key says 10" in found.problems["moved"]
    assert "1603 pairs" in found.problems["test"]
    # Seventh hostile round: an entry under a text-mode judge saying mode expected (quoted for the text run as an
    # "expected mode" figure), or under a seed-3 sample saying seed 7 (quoted as "seed 7"), contradicts its key.
    contradicting = {
        "ccpt-judge/keyword@1": {"paper300": fine | {"mode": "expected"}},
        "ccpt-judge/keyword@2 (expected)": {"paper300": fine},
        "ccpt-judge/keyword@3": {"test/rows=10/seed=3": fine | {"n": 30, "rows": 10, "seed": 7}},
        "ccpt-judge/keyword@4 (expected)": {"test/rows=10/seed=3": fine | {"n": 30, "mode": "expected", "seed": 3}},
    }
    store.write_text(json.dumps(contradicting), encoding="utf-8")
    found = read_store(store)
    assert set(found.entries) == {("ccpt-judge/keyword@4 (expected)", "test/rows=10/seed=3")}
    assert found.problems["ccpt-judge/keyword@1"].endswith("'paper300' says mode 'expected', its key 'text'; ignored")
    assert found.problems["ccpt-judge/keyword@2 (expected)"].endswith(
        "'paper300' says mode 'text', its key 'expected'; ignored"
    )
    assert found.problems["ccpt-judge/keyword@3"].endswith("says seed 7 where its key says 3; ignored")
    # A correlation written as text was accepted and then an internal error in every report's judge note; a mode
    # other than text/expected was quoted as the mode of the figure; n 300.0 printed "300.0 pairs".
    edits = {"text": {"pearson": "0.6"}, "mode": {"mode": "x"}, "float": {"n": 300.0}}
    store.write_text(json.dumps({judge: {"paper300": fine | edit} for judge, edit in edits.items()}))
    found = read_store(store)
    assert (
        set(found.entries) == {("float", "paper300")}
        and " on 300 pairs " in found.entries[("float", "paper300")].text()
    )
    assert "pearson: " in found.problems["text"] and "mode: should be 'text' or 'expected'" in found.problems["mode"]


def test_an_agreement_store_that_is_no_regular_file_is_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sixth hostile round: a FIFO or a directory as the user's store was read as an empty store (the report said
    the judge was unmeasured, no line), and `judge-agreement` measured before failing to save. Now the report names
    it and the measurement is refused before any judge call."""
    import os

    from test_cli_validation import _one_line_error

    from ccpt.judging.agreement import read_store, user_store

    monkeypatch.setenv("CCPT_HOME", str(tmp_path / "home"))
    store = user_store()
    store.parent.mkdir(parents=True)
    os.mkfifo(store)
    assert read_store(store).problems == {None: f"{store}: not a regular file; ignored"}
    argv = ["judge-agreement", "--judge", "ccpt-scripted/j", "--n", "2", "--data-dir", str(ccpt_dir)]
    assert "the agreement store is not a regular file" in _one_line_error(capsys, argv)
    store.unlink()
    store.mkdir()
    assert read_store(store).problems == {None: f"{store}: not a regular file; ignored"}


@pytest.mark.parametrize(
    ("args", "said"), [(["--n", "5000"], "holds 435 rows"), (["--pairs", "paper300", "--n", "101"], "holds 100 rows")]
)
def test_judge_agreement_n_beyond_its_pair_set_is_one_line(
    args: list[str], said: str, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sixth hostile round: `--n 5000` sampled every one of the 435 test rows and was stored and quoted as "a sample
    of 5000 rows"; now it is one line saying what the pair set holds."""
    from test_cli_validation import _one_line_error

    line = _one_line_error(capsys, ["judge-agreement", "--data-dir", str(ccpt_dir), *args])
    assert said in line and "--n" in line, line


def _shipped_copy(target: Path, edit: Callable[[dict[str, Any]], None]) -> Path:
    """The shipped judge's manifest and heads copied into ``target``, the manifest edited by ``edit``."""
    import json

    from ccpt.judging.distilled import shipped_judge

    shipped = shipped_judge()
    manifest = json.loads(shipped.read_text(encoding="utf-8"))
    for member in manifest["members"]:
        shutil.copy(shipped.parent / member["file"], target / member["file"])
    edit(manifest)
    (target / "judge.json").write_text(json.dumps(manifest), encoding="utf-8")
    return target / "judge.json"


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: [x.update(weight=w) for x, w in zip(m["members"], (1e308, 1e308, 1), strict=True)],
         r"is not readable: member weights must be in \[1e-06, 1e\+06\], got \[1e\+308, 1e\+308, 1\.0\]"),
        (lambda m: m["calibration"].update(y=[*m["calibration"]["y"][:-1], 1.5]),
         r"has an unreadable calibration map: calibration knots outside \[0, 1\]"),
        (lambda m: m["calibration"].update(x=[-5.0, *m["calibration"]["x"][1:]]),
         r"has an unreadable calibration map: calibration knots outside \[0, 1\]: x -5\.0"),
        # Fifth hostile round: a member listed twice loaded, its head counted twice in the mean.
        (lambda m: m["members"].append(dict(m["members"][0])),
         r"is not readable: member head \S+ is listed twice \(the same sha256\)"),
        # Seventh hostile round: a flat map (every knot 0.5) loaded and scored every pair 0.5.
        (lambda m: m["calibration"].update(y=[0.5] * len(m["calibration"]["y"])),
         r"has an unreadable calibration map: calibration knots map every relevance to 0\.5"),
    ],
)  # fmt: skip
def test_a_manifest_with_unbounded_weights_or_a_map_outside_the_unit_interval_is_refused(
    tmp_path: Path, edit: Callable[[dict[str, Any]], None], message: str
) -> None:
    """Before: weights [1e308, 1e308, 1] (their sum overflows) or a map outside [0, 1] loaded and scored every pair
    alike. The shipped manifest, copied unedited, loads."""
    from ccpt.errors import ModelError
    from ccpt.judging.distilled import load_judge

    with pytest.raises(ModelError, match=message):
        load_judge(_shipped_copy(tmp_path, edit))
    assert load_judge(_shipped_copy(tmp_path, lambda m: None)).head_weights == (0.25, 0.25, 0.5)


def test_judge_ensemble_refuses_an_unbounded_weight(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from ccpt.judging.distilled import shipped_judge

    heads = [
        str(shipped_judge().with_name(n)) for n in ("distilled_head.safetensors", "distilled_head_mpnet.safetensors")
    ]
    argv = ["judge", "ensemble", *heads, "--weight", "1e308", "--weight", "1", "--out", str(tmp_path / "j.json")]
    assert main(argv) != 0
    err = capsys.readouterr().err.strip()
    assert "member weights must be in [1e-06, 1e+06], got [1e+308, 1.0]" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "j.json").exists()
    # Fifth hostile round: a head given twice (here a copy of it) wrote a manifest counting it twice in the mean.
    shutil.copy(heads[0], tmp_path / "copy.safetensors")
    assert main(["judge", "ensemble", heads[0], str(tmp_path / "copy.safetensors"), "--out", str(tmp_path / "j.json")])
    err = capsys.readouterr().err.strip()
    assert f"copy.safetensors is {heads[0]} again (the same bytes)" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "j.json").exists()
    # Seventh hostile round: the same path twice passed that check, and a minute later wrote a manifest (rc 0) that
    # every loader refused ("listed twice").
    assert main(["judge", "ensemble", heads[0], heads[0], "--out", str(tmp_path / "j.json")])
    err = capsys.readouterr().err.strip()
    assert f"{heads[0]} is given twice: give each once" in err and len(err.splitlines()) == 1
    assert not (tmp_path / "j.json").exists()


@pytest.mark.parametrize(
    ("setting", "message"),
    [
        ("folds=1", "folds must be ≥ 2 to hold one out for validation, got 1"),
        ("epochs=0", "epochs must be ≥ 1, got 0"),
        ("validation_fold=7", "validation_fold must be one of the 5 folds (0 to 4), got 7"),
    ],
)
def test_judge_train_refuses_settings_that_train_nothing_up_front(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], setting: str, message: str
) -> None:
    """Before: an untrained head written with rc 0. Refused before the dataset is read (no --data-dir needed)."""
    assert main(["judge", "train", "--set", setting, "--out", str(tmp_path / "h.safetensors")]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1 and not (tmp_path / "h.safetensors").exists()


def test_judge_train_refuses_a_pool_that_leaves_nothing_to_train_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], ccpt_dir: Path
) -> None:
    """Seventh hostile round: `--max-pairs 1` wrote a head trained on no pair (rc 0, a NaN validation figure); now
    one line before the encoder loads."""
    out = tmp_path / "h.safetensors"
    assert main(["judge", "train", "--max-pairs", "1", "--data-dir", str(ccpt_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "no pair to train on: the pool's 1 pair(s) all fall in validation fold 0" in err
    assert len(err.strip().splitlines()) == 1 and not out.exists()


def test_models_does_not_call_a_truncated_assembled_file_unchecked(tmp_path: Path) -> None:
    """Before: a 1,000-byte GGUF in the cache was listed "assembled, sha256 unchecked" at its pinned size."""
    from ccpt.io.embedded import ASSEMBLED, model_files
    from ccpt.io.weights import EMBEDDED_MODELS

    model = EMBEDDED_MODELS["qwen2.5-0.5b"]
    (tmp_path / model.filename).write_bytes(b"G" * 1000)
    (listed,) = [f for f in model_files(cache_dir=tmp_path) if f.name == model.name]
    assert (listed.status, listed.sha256, listed.size) == (ASSEMBLED, "mismatch", 1000)


def test_a_damaged_training_cache_is_detected_and_rebuilt(tmp_path: Path) -> None:
    """Two flipped bytes in a cached state changed the trained head silently: the cache now carries the sha256 of
    what it was written with; a file that differs is refused by the reader and recomputed or started over."""
    import random

    import torch

    from ccpt.judging.cross_encoder import DamagedCache, _atomic_save, _load, _resume

    path = tmp_path / "train-x.safetensors"
    state = {"epoch": 2, "order": [2, 0, 1], "m": {"w": torch.arange(64, dtype=torch.float32)}}
    _atomic_save(state, path)
    assert torch.equal(_load(path)["m"]["w"], state["m"]["w"])
    data = bytearray(path.read_bytes())
    data[-8] ^= 0x01
    data[-40] ^= 0x10
    path.write_bytes(bytes(data))
    with pytest.raises(DamagedCache, match="content differs from its checksum"):
        _load(path)
    order = [0, 1, 2]
    assert _resume(path, {}, random.Random(0), order) == 0 and not path.exists() and order == [0, 1, 2]
    path.write_bytes(b"garbage")
    with pytest.raises(DamagedCache, match="unreadable"):
        _load(path)


def test_a_tidy_seed_copied_from_another_is_named(reference_dir: Path, tmp_path: Path) -> None:
    """Sixth hostile round: seed 1's rows replaced by seed 0's in a tidy file were read as a second draw (the ±
    over seeds narrowed), no line. The authors' reader has its own check of its wide columns."""
    from ccpt.results import export
    from ccpt.rows import SAMPLE_CONTENT

    frame = load_results(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    assert not [w for w in frame.attrs["warnings"] if "same replies" in w]
    assert not [w for w in load_results(export(frame, tmp_path / "as_is.csv")).attrs["warnings"] if "same replies" in w]
    seeds = sorted(frame["seed"].unique())
    first = frame[frame["seed"] == seeds[0]].set_index("instance")
    copied = frame.copy()
    second = copied["seed"] == seeds[1]
    for column in SAMPLE_CONTENT:
        copied.loc[second, column] = copied.loc[second, "instance"].map(first[column]).to_numpy()
    warnings = load_results(export(copied, tmp_path / "copied.csv")).attrs["warnings"]
    named = [w for w in warnings if "same replies" in w]
    instances = f"every one of their {frame['instance'].nunique()} instances"
    assert len(named) == 1 and f"seeds {seeds[0]} and {seeds[1]}" in named[0] and instances in named[0], warnings
