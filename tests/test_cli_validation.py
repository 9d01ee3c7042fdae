"""Bad numbers and unwritable paths on the command line: one line naming the option, exit 2, nothing started."""

from __future__ import annotations

import io
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ccpt.cli import main


def _one_line_error(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    code = main(argv)
    _out, err = capsys.readouterr()
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, (code, err)
    assert len(lines) == 1 and lines[0].startswith("ccpt: error:"), err
    return lines[0]


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["--oracle-n", "0"], "--oracle-n"),
        (["--oracle-n", "-3"], "--oracle-n"),
        (["--limit", "-1"], "--limit"),
        (["--seeds", "0"], "--seeds"),
        (["--max-connections", "0"], "--max-connections"),
        (["--timeout", "0"], "--timeout"),
        (["--max-retries", "-1"], "--max-retries"),
        (["--seeds", "abc"], "--seeds"),
        (["--seeds", "2.5"], "--seeds"),
        (["--max-tokens", "0"], "--max-tokens"),
        (["--top-p", "1.5"], "--top-p"),
        (["--temperature", "-1"], "--temperature"),
        (["-T", "bogus=1"], "bogus"),
        # NaN and infinity pass every comparison-based range check; each would fail every request locally.
        (["--temperature", "nan"], "--temperature"),
        (["--temperature", "inf"], "--temperature"),
        (["--temperature", "70"], "--temperature"),  # a slip for 0.7: past every provider's range
        (["--top-p", "nan"], "--top-p"),
        (["--top-p", "-inf"], "--top-p"),
        (["--model-base-url", "http://a/v1", "--model-base-url", "http://b/v1"], "--model-base-url"),
        (["-M", "base_url=http://a/v1", "--model-base-url", "http://b/v1"], "base URL once"),
    ],
)
def test_run_rejects_bad_numbers_before_anything_starts(
    args: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(capsys, ["run", "--model", "ccpt-scripted/m", "--log-dir", str(tmp_path / "l"), *args])
    assert named in line
    assert not (tmp_path / "l").exists()  # nothing started, nothing written


@pytest.mark.parametrize(
    ("argv", "named"),
    [
        (["compare", "{tmp}", "--a", "m:base", "--b", "m:cot", "--resamples", "0"], "--resamples"),
        # Before: `--level nan` passed click's FloatRange and ended in an internal error.
        (["compare", "{tmp}", "--a", "m:base", "--b", "m:cot", "--level", "nan"], "--level"),
        (["compare", "{tmp}", "--a", "m:base", "--b", "m:cot", "--level", "1"], "--level"),
        (["judge-agreement", "--n", "-1"], "--n"),
        (["human", "export-ratings", "{tmp}", "--out", "{tmp}/o", "--n", "-1"], "--n"),
        (["human", "export-ratings", "{tmp}", "--out", "{tmp}/o", "--raters", "0"], "--raters"),
        (["human", "export-solver", "--task", "pi_emergent", "--out", "{tmp}/o", "--n", "0"], "--n"),
        # Seeds go to NumPy, which refuses negatives: one line, not an internal error after the work.
        (["compare", "{tmp}", "--a", "m:base", "--b", "m:cot", "--seed", "-1"], "--seed"),
        (["human", "export-solver", "--task", "pi_emergent", "--out", "{tmp}/o", "--seed", "-1"], "--seed"),
        (["human", "export-ratings", "{tmp}", "--out", "{tmp}/o", "--seed", "4294967296"], "--seed"),
        (["judge-agreement", "--seed", "-1"], "--seed"),
        (["judge-agreement", "--figure", "{tmp}/x.exe"], "--figure"),
        (["judge", "train", "--epochs", "0"], "--epochs"),
        (["judge", "train", "--max-pairs", "-5"], "--max-pairs"),
        (["judge", "train", "--set", "learning_rate=nan"], "--set"),
        (["judge", "train", "--set", "dropout=-0.1"], "--set"),
        (["pipeline", "properties", "--model", "m", "--threshold", "nan"], "--threshold"),
        (["pipeline", "properties", "--model", "m", "--threshold", "2.0"], "--threshold"),
        (["pipeline", "properties", "--model", "m", "--seed", "-3"], "--seed"),
        (["pipeline", "annotate-import", "{tmp}/a.csv", "--seed", "-1"], "--seed"),
    ],
)
def test_other_commands_reject_bad_numbers(
    argv: list[str], named: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    line = _one_line_error(capsys, [a.replace("{tmp}", str(tmp_path)) for a in argv])
    assert named in line


def test_unwritable_log_dir_is_one_line_before_any_model_call(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    line = _one_line_error(capsys, ["run", "--model", "ccpt-scripted/m", "--log-dir", str(blocker / "logs")])
    assert "--log-dir" in line and "not writable" in line


def test_a_model_name_no_provider_takes_is_one_line_without_the_preflight(
    ccpt_dir: Path, tmp_path: Path, capsys
) -> None:
    """Before: with --no-preflight, Inspect's ValueError for a name without a provider was an internal error."""
    argv = ["run", "--model", "foo.bar:baz", "--no-preflight", "--task", "type_prediction", "--limit", "1",
            "--seeds", "1", "--log-dir", str(tmp_path / "logs"), "--display", "none",
            "--data-dir", str(ccpt_dir)]  # fmt: skip
    line = _one_line_error(capsys, argv)
    assert line.startswith("ccpt: error: model 'foo.bar:baz' is not usable: ValueError: Model name"), line


def test_a_data_dir_that_is_a_file_is_named_as_such(tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    line = _one_line_error(capsys, ["run", "--model", "ccpt-scripted/m", "--data-dir", str(blocker), "--dry-run"])
    assert f"data directory {blocker}: not a directory" in line, line


def test_unwritable_figures_dir_is_one_line(reference_dir: Path, tmp_path: Path, capsys) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    csv = str(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    line = _one_line_error(capsys, ["report", csv, "--figures", str(blocker / "figs")])
    assert "--figures" in line and "not writable" in line
    line = _one_line_error(capsys, ["report", csv, "--out", str(blocker / "report.md")])
    assert "--out" in line and f"cannot create a file in {blocker}" in line


@pytest.mark.shared_data
@pytest.mark.parametrize("option", ["--out", "--tidy"])
def test_report_refuses_to_overwrite_an_input(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], option: str
) -> None:
    victim = tmp_path / "victim.csv"
    victim.write_bytes((reference_dir / "pi_emergent_gpt-4o_naive.csv").read_bytes())
    before = victim.read_bytes()
    line = _one_line_error(capsys, ["report", str(victim), option, str(victim)])
    assert option in line and "is an input" in line
    link = tmp_path / "link.csv"
    link.symlink_to(victim)  # another name for the same file is the same file
    line = _one_line_error(capsys, ["report", str(tmp_path), option, str(link)])
    assert victim.read_bytes() == before
    line = _one_line_error(capsys, ["report", str(victim), "--out", str(tmp_path / "r"), "--tidy", str(tmp_path / "r")])
    assert "same file" in line


@pytest.mark.shared_data
def test_data_export_refuses_to_overwrite_the_dataset(ccpt_dir: Path, tmp_path: Path, capsys) -> None:
    copy = tmp_path / "data"
    copy.mkdir()
    for item in ccpt_dir.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    before = (copy / "ccpt_emergent.csv").read_bytes()
    argv = ["data", "export", "--data-dir", str(copy), "--as", "csv", "--out", str(copy / "ccpt_emergent.csv")]
    line = _one_line_error(capsys, argv)
    assert "--out" in line and "ccpt_emergent.csv" in line
    assert (copy / "ccpt_emergent.csv").read_bytes() == before


@pytest.mark.shared_data
def test_outputs_never_replace_the_dataset_or_the_price_list(
    ccpt_dir: Path, reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch
) -> None:
    copy = tmp_path / "data"
    copy.mkdir()
    for item in ccpt_dir.iterdir():
        (copy / item.name).write_bytes(item.read_bytes())
    before = (copy / "ccpt_emergent.csv").read_bytes()
    run = str(reference_dir / "pi_emergent_gpt-4o_naive.csv")
    prices = tmp_path / "prices.toml"
    prices.write_text('["gpt-4o"]\ninput = 2.5\noutput = 10.0\n')
    victim = str(copy / "ccpt_emergent.csv")
    for argv in (
        ["report", run, "--data-dir", str(copy), "--out", victim],
        ["report", run, "--data-dir", str(copy), "--tidy", victim],
        ["report", run, "--prices", str(prices), "--out", str(prices)],
        ["human", "import-solver", run, "--data-dir", str(copy), "--out", victim],
    ):
        line = _one_line_error(capsys, argv)
        assert "is an input" in line, argv
    monkeypatch.setenv("CCPT_DATA_DIR", str(copy))  # the dataset the command would read, however it is given
    assert "is an input" in _one_line_error(capsys, ["report", run, "--out", str(copy / "ccpt_canceled.csv")])
    assert (copy / "ccpt_emergent.csv").read_bytes() == before and "input = 2.5" in prices.read_text()


def test_judge_score_and_solver_import_refuse_to_overwrite_their_input(tmp_path: Path, capsys) -> None:
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("concept,property\napple,red\n")
    line = _one_line_error(capsys, ["judge", "score", str(pairs), "--judge", "distilled", "--out", str(pairs)])
    assert "--out" in line and "is an input" in line
    assert pairs.read_text() == "concept,property\napple,red\n"
    line = _one_line_error(capsys, ["human", "import-solver", str(pairs), "--out", str(pairs)])
    assert "--out" in line and "is an input" in line


def test_report_outputs_inside_an_input_directory_are_refused(tmp_path: Path, capsys) -> None:
    """A CSV written into a log directory would be read as an authors' file by the next report of it."""
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "run.eval").write_bytes(b"")  # the directory holds a log
    for option, name in (("--tidy", "tidy.csv"), ("--out", "report.json"), ("--out", "nested/report.eval")):
        line = _one_line_error(capsys, ["report", str(logs), option, str(logs / name)])
        assert option in line and "would be read as a result file" in line
        assert not (logs / name).exists()


def test_dry_run_plans_and_sends_nothing(ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--dry-run`: the counts follow the sweep's structure (Gold's judge calls exactly its distinct pairs); no
    model is called, no log is written."""
    import json

    calls = tmp_path / "calls.txt"
    argv = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent",
            "--task", "type_prediction", "--method", "base", "--method", "gold", "--limit", "3", "--seeds", "2",
            "-M", f"calls_file={calls}", "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"),
            "--dry-run", "--format", "json"]  # fmt: skip
    assert main(argv) == 0
    plan = json.loads(capsys.readouterr().out)
    runs = {(r["task"], r["method"]): r for r in plan["runs"]}
    base, gold, types = runs[("pi_emergent", "base")], runs[("pi_emergent", "gold")], runs[("type_prediction", "base")]
    assert (base["seeds"], base["instances"], base["solver_calls"], base["judge_calls"]) == (2, 3, [6, 6], [9, 18])
    assert gold["solver_calls"] == [0, 0] and gold["seeds"] == 1 and 0 < gold["judge_calls"][0] <= 9
    assert gold["judge_calls"][0] == gold["judge_calls"][1]
    assert types["solver_calls"] == [6, 6] and types["judge_calls"] == [0, 0]
    assert plan["solver_calls"] == [12, 12] and plan["cost_usd"] is None
    assert not calls.exists() and not (tmp_path / "logs").exists()


def test_dry_run_counts_what_a_resume_skips(ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--dry-run` against a log directory: finished task runs are skipped, finished samples of a run with more
    to do are reused, and the calls it counts are the ones the real rerun then makes."""
    import json

    calls = tmp_path / "calls.txt"  # one line per solver call that reached the model (cache hits write none)

    def argv(limit: int, *extra: str) -> list[str]:
        return ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent",
                "--task", "type_prediction", "--method", "base", "--method", "gold", "--limit", str(limit),
                "--seeds", "1", "-M", f"calls_file={calls}", "--data-dir", str(ccpt_dir),
                "--log-dir", str(tmp_path / "logs"), "--format", "json", *extra]  # fmt: skip

    def plan(limit: int) -> dict:
        capsys.readouterr()
        assert main(argv(limit, "--dry-run")) == 0
        return json.loads(capsys.readouterr().out)

    assert main(argv(2, "--no-preflight", "--display", "none")) == 0
    first = len(calls.read_text().splitlines())
    assert first == 4  # Base's 2 instances of Task 1 and Task 3's 2; Gold asks the judge only

    same = plan(2)
    assert same["skipped_runs"] == 3 and same["solver_calls"] == [0, 0] and same["judge_calls"] == [0, 0]
    assert all(r["skipped"] and r["done_samples"] == r["planned_samples"] == 2 for r in same["runs"])

    more = plan(3)
    assert more["skipped_runs"] == 0 and more["done_samples"] == 6
    assert [(r["done_samples"], r["planned_samples"]) for r in more["runs"]] == [(2, 3)] * 3
    assert more["solver_calls"] == [2, 2]  # one remaining sample of Task 1 (Base) and one of Task 3
    assert main(argv(3, "--no-preflight", "--display", "none")) == 0
    assert len(calls.read_text().splitlines()) - first == more["solver_calls"][0]

    capsys.readouterr()
    assert main(argv(3, "--dry-run", "--format", "text")) == 0  # the last --format wins
    text = capsys.readouterr().out
    assert f"Already done in {tmp_path / 'logs'}: 3 of 3 task runs (a rerun skips them)." in text
    assert "Total: 3 task runs; solver calls 0; judge calls 0." in text
    # An API key is never logged, so it cannot tell runs apart (before: a rerun with -M api_key was planned in full
    # while the real rerun skipped it).
    assert main(argv(3, "--dry-run", "-M", "api_key=secret")) == 0
    assert json.loads(capsys.readouterr().out)["skipped_runs"] == 3


def test_dry_run_counts_the_finished_samples_of_an_interrupted_run(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A task run whose log was interrupted after one of its two samples: the dry run counts that sample as
    reused and one solver call to make, and the rerun (with a cold cache, so every call it makes reaches the
    model) makes exactly that one."""
    import json

    from inspect_ai.log import read_eval_log, write_eval_log

    from ccpt.results.inspect_logs import read_logs

    calls = tmp_path / "calls.txt"
    argv = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/j", "--task", "pi_emergent",
            "--method", "base", "--limit", "2", "--seeds", "1", "-M", f"calls_file={calls}",
            "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"), "--format", "json"]  # fmt: skip
    assert main([*argv, "--no-preflight", "--display", "none"]) == 0
    (header,) = read_logs([tmp_path / "logs"], header_only=True).logs
    log = read_eval_log(header.location)
    log.status, log.results, log.samples = "cancelled", None, (log.samples or [])[:1]  # as a Ctrl-C leaves it
    write_eval_log(log, header.location)
    first = len(calls.read_text().splitlines())

    capsys.readouterr()
    assert main([*argv, "--dry-run"]) == 0
    plan = json.loads(capsys.readouterr().out)
    (run,) = plan["runs"]
    assert (run["done_samples"], run["planned_samples"], run["skipped"]) == (1, 2, False)
    assert plan["solver_calls"] == [1, 1]

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cold-cache"))
    assert main([*argv, "--no-preflight", "--display", "none"]) == 0
    assert len(calls.read_text().splitlines()) - first == 1


def test_run_help_states_the_offline_defaults_the_sweep_uses(capsys: pytest.CaptureFixture[str]) -> None:
    from ccpt.eval.sweep import DEFAULT_LIMIT, DEFAULT_SEEDS

    assert main(["run", "--help"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert f"Default: {DEFAULT_LIMIT} for the offline default run" in text
    assert f"Default: {DEFAULT_SEEDS} (the paper's), also for the offline default run" in text


# Bad -T values and the one line each gets, by `ccpt run -T` and by `inspect eval -T` alike: the task signature's
# declared type (ccpt.schemas.run) is the only check.
BAD_TASK_ARGS = [
    # Before: `flase` is a non-empty string, so it was true: 192 toxic-free instances instead of 200.
    ("exclude_toxic=flase", "-T exclude_toxic='flase': should be a valid boolean"),
    ("sa_answer_every_step=flase", "-T sa_answer_every_step='flase': should be a valid boolean"),
    ("system_prompt=1", "-T system_prompt=1: should be a valid boolean"),
    ("judge_mode=bogus", "-T judge_mode='bogus': should be 'text' or 'expected'"),  # was stored as given
    ("split=dev", "-T split='dev': should be 'test' or 'train'"),
    ("protocol=paper", "-T protocol='paper': should be 'ccpt' or 'as-run'"),
    # Before: an internal error.
    (
        "method=[base, cot]",
        "-T method=['base', 'cot']: should be a valid string (one value per -T; several methods: "
        "ccpt run --method a --method b)",
    ),
    ("seeds=true", "-T seeds=True: a number is expected, not true/false"),
    ("seeds=0", "-T seeds=0: should be greater than or equal to 1"),  # was a traceback under `inspect eval`
    ("oracle_n=-3", "-T oracle_n=-3: should be greater than or equal to 1"),
    ("judge_retries=-1", "-T judge_retries=-1: should be greater than or equal to 0"),
    ("seed=-1", "-T seed=-1: should be greater than or equal to 0"),
    ("seed=4294967296", "-T seed=4294967296: should be less than or equal to 4294967295"),
    ("sa_max_iterations=-1", "-T sa_max_iterations=-1: should be greater than or equal to 1"),
    ("sa_max_candidates=0", "-T sa_max_candidates=0: should be greater than or equal to 1"),
    ("sa_epsilon=-0.5", "-T sa_epsilon=-0.5: should be greater than or equal to 0"),
    # NaN and infinity pass every comparison-based range check.
    ("sa_epsilon=.nan", "-T sa_epsilon=nan: should be a finite number"),
    ("sa_epsilon=.inf", "-T sa_epsilon=inf: should be a finite number"),
    ("sa_epsilon=[1]", "-T sa_epsilon=[1]: should be a valid number"),
    # Sixth hostile round: no upper bound (an ε above 1 stops every run at step 1, under another label).
    ("sa_epsilon=1e308", "-T sa_epsilon='1e308': should be less than or equal to 1"),
    ("sa_max_candidates=1000000000000", "-T sa_max_candidates=1000000000000: should be less than or equal to 10000"),
]


@pytest.mark.parametrize(("arg", "line"), BAD_TASK_ARGS)
def test_run_refuses_each_bad_task_argument_in_one_line(
    arg: str, line: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ccpt run -T`: one line naming the parameter, exit 2, before anything starts; a task argument `ccpt run` sets
    itself (the method, seeds, …) names its option instead (issue 42: -T method=cot replaced every --method)."""
    from ccpt.eval.sweep import SWEEP_SET

    argv = ["run", "--model", "ccpt-scripted/m", "--task", "pi_emergent", "--log-dir", str(tmp_path / "l")]
    got = _one_line_error(capsys, [*argv, "-T", arg])
    if (name := arg.partition("=")[0]) in SWEEP_SET:
        line = f"-T {name}: `ccpt run` sets it per task run (use {SWEEP_SET[name]} instead)"
    assert got == f"ccpt: error: {line}"
    assert not (tmp_path / "l").exists()


@pytest.mark.parametrize(("arg", "line"), BAD_TASK_ARGS)
def test_inspect_eval_refuses_each_bad_task_argument_in_the_same_line(arg: str, line: str) -> None:
    """`inspect eval ccpt/pi_emergent -T …` calls the task function with the value as YAML read it: the same line,
    raised as Inspect's PrerequisiteError (which `inspect eval` prints as one line)."""
    import yaml

    from ccpt.eval.inspect_compat import is_user_error
    from ccpt.eval.tasks import pi_emergent

    name, _, raw = arg.partition("=")
    with pytest.raises(Exception) as caught:
        pi_emergent(**{name: yaml.safe_load(raw)})
    assert is_user_error(caught.value) and str(caught.value) == line


def test_inspect_eval_prints_a_bad_task_argument_as_one_line(tmp_path: Path) -> None:
    """The `inspect eval` command itself: one line, no traceback, a failing exit code (Inspect's: 1)."""
    inspect = Path(sys.executable).with_name("inspect")
    argv = [str(inspect), "eval", "ccpt/type_prediction", "--model", "ccpt-scripted/x", "-T", "seeds=0"]
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [*argv, "--log-dir", str(tmp_path / "logs")], capture_output=True, text=True, env=env, timeout=300
    )
    lines = [line for line in (result.stdout + result.stderr).splitlines() if line.strip()]
    assert result.returncode == 1 and lines == ["-T seeds=0: should be greater than or equal to 1"], lines


def test_valid_task_arguments_are_typed_not_refused() -> None:
    from ccpt.eval.tasks import pi_emergent, typed_task_args

    typed = typed_task_args(pi_emergent, {"exclude_toxic": True, "split": "train", "data_dir": 2024, "seeds": 2})
    assert typed == {"exclude_toxic": True, "split": "train", "data_dir": "2024", "seeds": 2}
    edges = {"seeds": 1, "seed": 2**32 - 1, "judge_retries": 0, "sa_epsilon": 0, "sa_max_candidates": None}
    assert typed_task_args(pi_emergent, edges) == edges  # the ends of each range are values


def test_sweep_checks_its_options_by_the_same_declarations() -> None:
    """The Python API's boundary: a Sweep built in code is refused in the words `ccpt run` uses, and typed."""
    from ccpt.errors import CcptError
    from ccpt.eval.sweep import Sweep

    for fields, line in (
        ({"seeds": 0}, "--seeds=0: should be greater than or equal to 1"),
        ({"limit": -1}, "--limit=-1: should be greater than or equal to 0"),
        ({"timeout": 0}, "--timeout=0: should be greater than or equal to 1"),
        ({"max_connections": 0}, "--max-connections=0: should be greater than or equal to 1"),
        ({"generate": {"temperature": math.nan}}, "--temperature=nan: should be a finite number"),
        ({"generate": {"top_p": 1.5}}, "--top-p=1.5: should be less than or equal to 1"),
        ({"task_args": {"sa_epsilon": -1}}, "-T sa_epsilon=-1: should be greater than or equal to 0"),
    ):
        with pytest.raises(CcptError) as caught:
            Sweep(**fields).validate()  # type: ignore[arg-type]
        assert str(caught.value) == line
    sweep = Sweep(seeds="2", limit=None, max_connections=None, generate={"max_tokens": "64"})  # type: ignore[arg-type]
    sweep.validate()
    assert (sweep.seeds, sweep.limit, sweep.max_connections, sweep.generate) == (2, None, None, {"max_tokens": 64})


def _numeric_options() -> list[tuple[str, str, int | float | None, str]]:
    """(command, option, its upper bound or None, its help) for every integer option of every command."""
    import click

    from ccpt.cli import _register, cli
    from ccpt.cli.options import Declared
    from ccpt.cli.reference import _walk

    _register()
    found = []
    for path, command in _walk(cli, ("ccpt",)):
        for param in command.params:
            kind = param.type
            if isinstance(kind, Declared) and kind.adapter.json_schema().get("type") == "integer":
                high = kind.adapter.json_schema().get("maximum")
            elif isinstance(kind, click.IntRange):
                high = kind.max
            elif isinstance(kind, click.types.IntParamType):
                high = None
            else:
                continue
            found.append((" ".join(path), param.opts[0], high, getattr(param, "help", None) or ""))
    return found


# Bounds that are the value's domain, shown in the metavar: a seed NumPy accepts, a TCP port.
DOMAIN_BOUNDS = (2**32 - 1, 65_535)


def test_every_integer_option_has_an_upper_bound_with_its_reason_in_its_help() -> None:
    """Every integer option is bounded (a slip, an extra digit, would run away in memory or time), and its help says
    the bound and why, e.g. "at most 1,000: each seed answers every instance again" (before: `rejudge --limit` had no
    bound, and 20 options under the generic 1,000,000 cap gave no reason)."""
    import re

    options = _numeric_options()
    assert len(options) > 40  # the walk reaches every command
    unbounded = [f"{c} {o}" for c, o, high, _ in options if high is None]
    assert not unbounded, unbounded
    unexplained = [
        f"{c} {o}: {text}"
        for c, o, high, text in options
        if high not in DOMAIN_BOUNDS and not re.search(rf"at most {high:,}[:,] \w", " ".join(text.split()), re.I)
    ]
    assert not unexplained, "\n".join(unexplained)


@pytest.mark.parametrize("option", ["--limit", "--max-connections"])
def test_rejudge_refuses_a_runaway_count_before_reading_anything(
    option: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`rejudge --limit 99999999999999999999` was taken (no upper bound): now one line naming the option."""
    (tmp_path / "run").mkdir()
    argv = ["rejudge", str(tmp_path / "run"), "--judge", "ccpt-scripted/j", "--out", str(tmp_path / "o")]
    line = _one_line_error(capsys, [*argv, option, "99999999999999999999"])
    assert option in line and "99999999999999999999" in line and "less than or equal" in line, line


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full (a device that is always full)")
def test_standard_output_on_a_full_disk_is_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `ccpt models > /dev/full` (stdout redirected to a full disk) was an internal error."""
    monkeypatch.setenv("CCPT_CACHE_DIR", str(tmp_path))
    full = io.TextIOWrapper(open("/dev/full", "wb", buffering=0), encoding="utf-8", write_through=True)  # noqa: SIM115
    monkeypatch.setattr(sys, "stdout", full)
    code = main(["models"])
    monkeypatch.undo()
    full.detach().close()  # nothing buffered left to fail on close
    assert code == 2
    assert capsys.readouterr().err == "ccpt: error: standard output: cannot write (No space left on device)\n"
