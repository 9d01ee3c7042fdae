"""Methods are registered objects: a toy majority-vote method, added in one file outside ccpt's source, runs
through `ccpt run`, `ccpt run --dry-run` and `ccpt report` with its own call count and its own reduction.

The toy module is registered the way a third-party package would be: a ``*.dist-info/entry_points.txt`` naming
it in the ``ccpt.methods`` group, on ``sys.path``. No ccpt source file is edited (CONTRIBUTING.md, "Adding a method").
"""

from __future__ import annotations

import json
import sys
import textwrap
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

TOY = '''
"""Majority vote: three answers per instance and seed; the most common parsed answer is the one scored."""

from collections import Counter

from ccpt.methods import Cell, Method, mean_cell

VOTERS = 3


def majority(samples, kind, oracle="paper"):
    """The cells of the most common parsed answer (a tie: the one answered first)."""
    counts = Counter(s.answer for s in samples if s.answer is not None)
    if not counts:
        return Cell(None, None, None)
    winner = counts.most_common(1)[0][0]
    return mean_cell([s for s in samples if s.answer == winner], kind)


METHOD = Method(
    "vote",
    "Majority vote",
    solver="ccpt.eval.solvers:prompt_solver",  # ask the Base prompt `samples` times
    samples=lambda options: VOTERS,
    reduce=majority,
)
'''
RUN = ["--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent"]


@pytest.fixture
def toy_plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy method installed as a package would be: its module and an entry point, found on sys.path."""
    site = tmp_path / "site"
    (site / "toy_vote-0.1.dist-info").mkdir(parents=True)
    (site / "toy_vote.py").write_text(textwrap.dedent(TOY), encoding="utf-8")
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


def test_a_method_is_checked_against_the_task_in_one_line(
    toy_plugin: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert methods.parse("vote").label == "Majority vote"
    with pytest.raises(CcptError, match="'_nofilter' applies to spreading activation methods only"):
        methods.parse("vote_nofilter")
    with pytest.raises(CcptError, match="type_prediction has only the paper's single prompt"):
        methods.parse("vote", "type_prediction")
    # A method that claims Task 3 but draws three answers: Task 3 scores one label, so the run refuses.
    _plugin(toy_plugin, "toy_tp", "dataclasses.replace(VOTE, base='vote_tp', applies=lambda spec: True)")
    argv = ["run", *RUN[:4], "--task", "type_prediction", "--method", "vote_tp", "--limit", "2",
            "--data-dir", str(ccpt_dir), "--log-dir", str(tmp_path / "logs"), "--dry-run"]  # fmt: skip
    assert main(argv) == 2
    lines = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(lines) == 1 and "type_prediction scores one answer per instance and seed" in lines[0], lines
    sys.modules.pop("toy_tp", None)


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
        ("samples=lambda options: options['oracle_n']", "samples raises KeyError"),
        ("applies=lambda spec: spec.no_such_field", "applies raises AttributeError"),
        ("applies=lambda spec: 'yes'", "applies(pi_emergent) returns 'yes'"),
        ("calls=lambda method, plan: ((-1, -1), (0, 0))", "calls returns ((-1, -1), (0, 0))"),
        ("calls=lambda method, plan: ((3, 1), (0, 0))", "calls returns ((3, 1), (0, 0))"),
        ("calls=lambda method, plan: 1 / 0", "calls raises ZeroDivisionError"),
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


@pytest.mark.parametrize("value", ["5.0", "-3.0", "float('inf')", "float('nan')", "'0.5'", "True"])
def test_a_reduction_returning_no_number_in_range_is_refused_naming_the_method(toy_plugin: Path, value: str) -> None:
    """Before: a reduction returning 5.0, −3.0, inf or text printed R_H,M,P 500.0 / −300.0 / "inf" / the text."""
    from ccpt.scoring import Relevances

    _plugin(toy_plugin, "toy_reduce", f"dataclasses.replace(VOTE, base='vote3', reduce=lambda s, k, o='paper': "
            f"__import__('ccpt.methods', fromlist=['Cell']).Cell({value}, 0.5, 0.5))")  # fmt: skip
    samples = [methods.Judged("a", Relevances(0.5, 0.2, 0.3))] * 3
    assert methods.reduction("vote")(samples, "emergent", "paper").r_np is not None  # a good one passes
    with pytest.raises(CcptError, match="method 'vote3': its reduction returned Cell"):
        methods.reduction("vote3")(samples, "emergent", "paper")
    sys.modules.pop("toy_reduce", None)
