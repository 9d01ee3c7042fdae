"""Methods are registered objects: a toy majority-vote method, added in one file outside ccpt's source
(tests/plugins/toy_vote.py), runs through `ccpt run`, `ccpt run --dry-run` and `ccpt report` with its own call count
and its own reduction, on the generative tasks and on Task 3.

The toy module is registered the way a third-party package would be: a ``*.dist-info/entry_points.txt`` naming
it in the ``ccpt.methods`` group, on ``sys.path``. No ccpt source file is edited (CONTRIBUTING.md, "Adding a method").
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest

from ccpt import methods
from ccpt.cli import main
from ccpt.errors import CcptError
from ccpt.results import load_results

pytestmark = pytest.mark.shared_data

RUN = ["--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent"]


@pytest.fixture
def toy_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy method installed as a package would be: an entry point naming its module (tests/plugins/toy_vote.py,
    on sys.path through conftest.py), found on sys.path."""
    site = tmp_path / "site"
    (site / "toy_vote-0.1.dist-info").mkdir(parents=True)
    (site / "toy_vote-0.1.dist-info" / "METADATA").write_text("Metadata-Version: 2.1\nName: toy-vote\nVersion: 0.1\n")
    (site / "toy_vote-0.1.dist-info" / "entry_points.txt").write_text("[ccpt.methods]\nvote = toy_vote:METHOD\n")
    monkeypatch.syspath_prepend(str(site))
    methods.registered.cache_clear()
    yield site
    sys.modules.pop("toy_vote", None)
    methods.registered.cache_clear()


@pytest.fixture(autouse=True)
def isolated_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))


def _table3(capsys: pytest.CaptureFixture[str], argv: list[str]) -> dict:
    assert main(["report", *argv, "--format", "json"]) == 0
    return json.loads(capsys.readouterr().out)


def _r_np(report: dict, method: str) -> float:
    """The R_N,P cell of ``method``'s Table-3 row."""
    (record,) = [r for r in report["records"] if (r["table"], r["method"], r["metric"]) == ("table3", method, "r_np")]
    return record["mean"]


def _per_cell(rows: pd.DataFrame, pick) -> float:
    """R_N,P as the report shows it (×100): the mean over instances and seeds of ``pick`` of each cell's samples."""
    cells = [pick(group) for _, group in rows.groupby(["instance", "seed"])]
    return 100 * sum(cells) / len(cells)


def _majority(group: pd.DataFrame) -> float:
    winner = Counter(a for a in group["answer"] if isinstance(a, str)).most_common(1)[0][0]
    return float(group.loc[group["answer"] == winner, "r_np"].mean())


def test_a_method_added_in_one_file_runs_plans_and_reports_its_own_way(
    toy_plugin: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs = tmp_path / "logs"
    common = [*RUN, "--method", "vote", "--limit", "3", "--seeds", "2", "--data-dir", str(ccpt_dir)]
    # --dry-run: the method's own count, 3 instances × 2 seeds × 3 voters; three judged pairs per answer.
    assert main(["run", *common, "--log-dir", str(tmp_path / "plan"), "--dry-run", "--format", "json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)["runs"]
    assert (plan["method"], plan["solver_calls"], plan["judge_calls"]) == ("vote", [18, 18], [9, 54])

    # -M vocabulary=2: the scripted model picks from two properties, so three voters always have a majority.
    assert main(["run", *common, "-M", "vocabulary=2", "--log-dir", str(logs)]) == 0
    capsys.readouterr()
    rows = load_results([logs])
    assert (rows["method"] == "vote").all() and len(rows) == 3 * 2 * 3 and rows["parse_ok"].all()

    report = _table3(capsys, [str(logs)])
    vote, best, mean = _per_cell(rows, _majority), _per_cell(rows, lambda g: g["r_np"].max()), 100 * rows["r_np"].mean()
    assert _r_np(report, "vote") == pytest.approx(vote)
    # The scripted replies make the reductions differ: a best-of-n or a mean would show another number.
    assert round(vote, 1) not in (round(best, 1), round(mean, 1))
    assert main(["report", str(logs)]) == 0
    assert "Majority vote" in capsys.readouterr().out  # its label

    # Without the plug-in, this ccpt does not know "vote": its samples are averaged, and a note says so.
    sys.path.remove(str(toy_plugin))
    methods.registered.cache_clear()
    unknown = _table3(capsys, [str(logs)])
    assert _r_np(unknown, "vote") == pytest.approx(mean)
    assert any("'vote' is not registered" in note and "averaged" in note for note in unknown["notes"])


def _plugin(site: Path, name: str, code: str) -> None:
    """Add module ``name`` (its METHOD derived from the toy vote) to the toy package's entry points."""
    (site / f"{name}.py").write_text(f"import dataclasses\nfrom toy_vote import METHOD as VOTE\nMETHOD = {code}\n")
    points = site / "toy_vote-0.1.dist-info" / "entry_points.txt"
    points.write_text(points.read_text() + f"{name} = {name}:METHOD\n")
    methods.registered.cache_clear()


def test_a_method_is_checked_against_the_task_in_one_line(toy_plugin: Path) -> None:
    assert methods.parse("vote").label == "Majority vote"
    assert methods.parse("vote", "type_prediction").samples({}) == 3  # the toy applies to every task
    with pytest.raises(CcptError, match="'_nofilter' applies to spreading activation methods only"):
        methods.parse("vote_nofilter")
    with pytest.raises(CcptError, match="type_prediction has only the paper's single prompt"):
        methods.parse("cot", "type_prediction")


def _voted(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per instance and seed: the gold type and the most common of its three predictions (a tie: the one
    sampled first; none parsed: None)."""

    def vote(group: pd.DataFrame) -> str | None:
        counts = Counter(p for p in group.sort_values("sample")["pred_type"] if isinstance(p, str))
        return counts.most_common(1)[0][0] if counts else None

    cells = rows.groupby(["instance", "seed"])
    return pd.DataFrame({"gold": cells["gold_type"].first(), "voted": cells.apply(vote)}).reset_index()


def test_a_task3_vote_counts_each_instance_once_with_its_voted_answer(
    toy_plugin: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    logs, instances = tmp_path / "logs", 8
    common = [*RUN[:4], "--task", "type_prediction", "--method", "vote", "--limit", str(instances), "--seeds", "2",
              "--data-dir", str(ccpt_dir)]  # fmt: skip
    # --dry-run: 8 instances × 2 seeds × 3 voters, no judge.
    assert main(["run", *common, "--log-dir", str(tmp_path / "plan"), "--dry-run", "--format", "json"]) == 0
    (plan,) = json.loads(capsys.readouterr().out)["runs"]
    assert (plan["task"], plan["solver_calls"], plan["judge_calls"]) == ("type_prediction", [48, 48], [0, 0])

    # -M fail_every=5: some replies are unparsable, so a vote also counts its parsed answers only.
    assert main(["run", *common, "-M", "fail_every=5", "--log-dir", str(logs)]) == 0
    capsys.readouterr()
    rows = load_results([logs])
    assert (rows["method"] == "vote").all() and len(rows) == instances * 2 * 3 and not rows["parse_ok"].all()
    voted = _voted(rows)
    assert voted["voted"].nunique() > 1 and (rows.groupby(["instance", "seed"])["pred_type"].nunique() > 1).any()

    report = _table3(capsys, [str(logs)])
    table5 = {r["metric"]: r for r in report["records"] if r["table"] == "table5" and r["method"] == "vote"}
    # Each instance counted once (n), with one prediction per seed: the voted one.
    assert sum(table5[f"n:{t}"]["count"] for t in ("emergent", "component", "canceled", "others")) == instances
    assert table5["accuracy"]["count"] == instances
    assert table5["accuracy"]["mean"] == pytest.approx(100 * (voted["voted"] == voted["gold"]).mean())
    confusion = Counter((g, v) for g, v in zip(voted["gold"], voted["voted"], strict=True) if v is not None)
    for (gold, predicted), count in confusion.items():
        assert table5[f"confusion:{gold}->{predicted}"]["count"] == count
    assert sum(r["count"] for k, r in table5.items() if k.startswith(("confusion:", "unparsed:"))) == instances * 2
    # Inspect's own score of each sample counts the same voted answer.
    from inspect_ai.log import list_eval_logs, read_eval_log

    (log,) = [read_eval_log(info) for info in list_eval_logs(str(logs))]
    scored = {(s.metadata["instance"], s.epoch - 1): s.scores["type_match"].answer for s in log.samples or []}
    assert scored == {(i, seed): v for i, seed, v in zip(voted["instance"], voted["seed"], voted["voted"], strict=True)}

    # Without the plug-in, this ccpt counts the samples' most common answer all the same, and a note says so.
    sys.path.remove(str(toy_plugin))
    methods.registered.cache_clear()
    unknown = _table3(capsys, [str(logs)])
    assert any("'vote' is not registered" in n and "Task 3 the most common answer" in n for n in unknown["notes"])
    (accuracy,) = [r for r in unknown["records"] if (r["table"], r["metric"]) == ("table5", "accuracy")]
    assert (accuracy["mean"], accuracy["count"]) == (table5["accuracy"]["mean"], instances)


def test_a_plugin_cannot_replace_a_builtin_method(toy_plugin: Path) -> None:
    _plugin(toy_plugin, "toy_base", "dataclasses.replace(VOTE, base='base')")
    with pytest.raises(CcptError, match="method 'base' of entry point 'toy_base:METHOD' is already registered"):
        methods.registered()
    sys.modules.pop("toy_base", None)


@pytest.mark.parametrize(
    ("change", "problem"),
    [
        ("base='Vote Two'", "malformed name"),
        ("base='vote2_nofilter'", "malformed name"),
        ("seeds=0", "declares seeds=0"),
        ("samples=lambda options: 0", "declares 0 samples per instance and seed"),
        ("samples=lambda options: -2", "declares -2 samples"),
        ("samples=lambda options: 2.5", "declares 2.5 samples"),
        ("samples=lambda options: 10**9", "declares 1000000000 samples per instance and seed: an integer in [1, 100]"),
        ("seeds=10**9", "declares seeds=1000000000: an integer in [1, 1000]"),
        ("samples=lambda options: options['oracle_n']", "samples raises KeyError"),
        # Sixth hostile round: probed with no options only, 0 samples under a run's options planned "judge 6–0".
        ("samples=lambda options: 0 if options else 1", "declares 0 samples per instance and seed"),
        ("applies=lambda spec: spec.no_such_field", "applies raises AttributeError"),
        ("applies=lambda spec: 'yes'", "applies(pi_emergent) returns 'yes'"),
        ("calls=lambda method, plan: ((-1, -1), (0, 0))", "calls returns ((-1, -1), (0, 0))"),
        ("calls=lambda method, plan: ((3, 1), (0, 0))", "calls returns ((3, 1), (0, 0))"),
        ("calls=lambda method, plan: 1 / 0", "calls raises ZeroDivisionError"),
        # Seventh hostile round: a declared count had no upper bound (a trillion calls planned and priced).
        ("calls=lambda method, plan: ((1, 10**12), (0, 0))", "more than 10,000 calls per instance and seed"),
        # Fifth hostile round: a plug-in labelled like a built-in printed a second "Base" row beside ccpt's.
        ("label='Base'", "has the label 'Base' of method 'base' (reports would print both alike)"),
        ("label='majority VOTE '", "has the label 'majority VOTE ' of method 'vote'"),
        # Seventh hostile round: labels reports print besides the methods', a label breaking a table's line, and
        # parts used only when a run plans them (solver 3 was an internal error; a None reduce failed the report).
        ("label='S.A.w/ LLM (no filter)'", "of method 'sa_llm_nofilter'"),
        ("label='Gold (stored GPT-4o judge)'", "of method 'gold_stored'"),
        ("label='Majority\\nvote'", "has the label 'Majority\\nvote': printable text on one line"),
        ("base='v' * 65", "malformed name: up to 64"),
        ("solver=3", "declares solver 3: 'module:function'"),
        ("solver='prompt_solver'", "declares solver 'prompt_solver'"),
        ("reduce=None", "reduce, calls or applies that is not callable"),
        ("source='wikipedia'", "declares source 'wikipedia': one of llm, conceptnet, both"),
        ("template='no_such'", "declares template 'no_such', which pi_emergent has not: base, cot, sa"),
        ("template='cot'", "declares template 'cot', which type_prediction has not: base"),
    ],
)
def test_a_plugin_declaration_is_checked_at_registration_in_one_line(
    toy_plugin: Path, change: str, problem: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: 0 or negative counts planned negative work, and a raising calls/samples/applies was an internal error
    that did not name the plug-in."""
    named = change if change.startswith("base=") else f"base='vote2', {change}"
    _plugin(toy_plugin, "toy_bad", f"dataclasses.replace(VOTE, {named})")
    with pytest.raises(CcptError, match="entry point 'toy_bad:METHOD'") as raised:
        methods.registered()
    assert problem in str(raised.value), raised.value
    argv = ["run", *RUN[:4], "--method", "base", "--log-dir", str(tmp_path / "logs"), "--dry-run"]
    methods.registered.cache_clear()
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "entry point 'toy_bad:METHOD'" in lines[0], lines
    sys.modules.pop("toy_bad", None)


def test_a_plugin_sample_count_is_checked_under_the_run_s_options(
    toy_plugin: Path, tmp_path: Path, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Sixth hostile round: a plug-in whose samples read --oracle-n gave 0 for a large one; `--dry-run` planned
    "solver 0, judge 6–0" and the run failed with "some task runs did not finish". Now one line names the method."""
    samples = "lambda options: options.get('oracle_n', 1) if options.get('oracle_n', 1) < 50 else 0"
    _plugin(toy_plugin, "toy_reads", f"dataclasses.replace(VOTE, base='vote5', label='Vote 5', samples={samples})")
    argv = [
        "run",
        *RUN,
        "--method",
        "vote5",
        "--log-dir",
        str(tmp_path / "logs"),
        "--dry-run",
        "--data-dir",
        str(ccpt_dir),
    ]
    assert main([*argv, "--oracle-n", "7"]) == 0
    capsys.readouterr()
    assert main([*argv, "--oracle-n", "60"]) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert lines == ["ccpt: error: method 'vote5': samples gives 0 for the run's options; an integer in [1, 100]"]
    sys.modules.pop("toy_reads", None)


@pytest.mark.parametrize("value", ["5.0", "-3.0", "float('inf')", "float('nan')", "'0.5'", "True"])
def test_a_reduction_returning_no_number_in_range_is_refused_naming_the_method(toy_plugin: Path, value: str) -> None:
    """Before: a reduction returning 5.0, −3.0, inf or text printed R_H,M,P 500.0 / −300.0 / "inf" / the text."""
    from ccpt.scoring import Relevances

    cell = f"__import__('ccpt.methods', fromlist=['Cell']).Cell({value}, 0.5, 0.5)"
    _plugin(
        toy_plugin,
        "toy_reduce",
        f"dataclasses.replace(VOTE, base='vote3', label='Vote 3', reduce=lambda s, k, o='paper': {cell})",
    )
    samples = [methods.Judged("a", Relevances(0.5, 0.2, 0.3))] * 3
    assert methods.reduction("vote")(samples, "emergent", "paper").r_np is not None  # a good one passes
    with pytest.raises(CcptError, match="method 'vote3': its reduction returned Cell"):
        methods.reduction("vote3")(samples, "emergent", "paper")
    sys.modules.pop("toy_reduce", None)


@pytest.mark.parametrize("answer", ["'EMERGENT'", "'banana'", "'Others'"])
def test_a_task3_reduction_answering_no_type_label_is_refused_naming_the_method(toy_plugin: Path, answer: str) -> None:
    """Seventh hostile round: a reduction whose Task-3 answer was "EMERGENT" or "banana" printed accuracy 0.0 (every
    prediction compared with the gold label as written) with no line. A generative task's answer stays free text."""
    cell = f"__import__('ccpt.methods', fromlist=['Cell']).Cell(None, None, None, {answer})"
    _plugin(
        toy_plugin,
        "toy_label",
        f"dataclasses.replace(VOTE, base='vote6', label='Vote 6', reduce=lambda s, k, o='paper': {cell})",
    )
    samples = [methods.Judged("emergent")] * 3
    assert methods.reduction("vote")(samples, None, "paper").answer == "emergent"  # the toy's majority passes
    assert methods.reduction("vote6")(samples, "emergent", "paper").answer == answer.strip(
        "'"
    )  # free text on Tasks 1-2
    with pytest.raises(CcptError, match=r"method 'vote6': its reduction returned .*\(Task 3: a type label, emergent"):
        methods.reduction("vote6")(samples, None, "paper")
    sys.modules.pop("toy_label", None)


def test_a_bad_reduction_stops_the_run_in_one_line_and_the_fixed_plugin_resumes(
    toy_plugin: Path, tmp_path: Path, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: every sample failed the same way, Inspect retried the task run twice and printed its traceback panels
    (about 250 lines) before ccpt's line. Now the first bad result stops the run: ccpt's line alone, naming the
    method; the same command with the plug-in fixed resumes to a report."""
    broken = "dataclasses.replace(VOTE, base='vote4', label='Vote 4', reduce=lambda s, k, o='paper': 1 / 0)"
    _plugin(toy_plugin, "toy_broken", broken)
    argv = ["run", *RUN, "--method", "vote4", "--limit", "2", "--seeds", "1", "--data-dir", str(ccpt_dir),
            "--log-dir", str(tmp_path / "logs"), "--display", "plain"]  # fmt: skip
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert err.strip().splitlines() == [err.strip()] and "method 'vote4': its reduction raises ZeroDivisionError" in err
    assert "the run stopped there" in err and "Traceback" not in out + err and "retry 1" not in out, out[-2000:]
    sys.modules.pop("toy_broken", None)
    _plugin(toy_plugin, "toy_broken", "dataclasses.replace(VOTE, base='vote4', label='Vote 4')")  # the fix, same name
    assert main(argv) == 0, capsys.readouterr().err
    sys.modules.pop("toy_broken", None)
