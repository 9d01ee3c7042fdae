"""`ccpt rejudge`: an Inspect run and an authors' file re-judged by the scripted judge, checked against a direct
computation of Table 3 from the stored answers; the cross-judge view; resuming asks the judge nothing.

The scripted judge (``ccpt-scripted``, a registered Inspect provider) answers the judge prompt with a pure
function of the prompt, so the expected relevances are computed here straight from that function on the
rendered judge prompt, and the table cells with plain arithmetic (mean over seeds of per-seed instance means).
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest
from inspect_ai.log import read_eval_log, write_eval_log
from scripted_provider import scripted_reply

from ccpt.cli import main
from ccpt.prompts import judge_prompt
from ccpt.protocol import get_protocol
from ccpt.report.cross_judge import cross_judge
from ccpt.results import load_results
from ccpt.results.inspect_logs import from_inspect_logs
from ccpt.spec import TASK_SPECS


@pytest.fixture(autouse=True)
def own_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))


def _scripted_relevance(concept: str, prop: str, protocol: str) -> float:
    surface = get_protocol(protocol)
    prompt = judge_prompt(
        " ".join(concept.split()), " ".join(prop.split()), surface.judge_template, surface.judge_capitalise
    )
    return (json.loads(scripted_reply(prompt, None))["relevance"] - 1) / 9


def _expected_cells(frame: pd.DataFrame) -> dict[tuple[str, str, str], float]:
    """(task, method, metric) → 100 × mean over seeds of the per-seed mean over instances, computed directly."""
    values = []
    for row in frame.to_dict("records"):
        spec = TASK_SPECS[row["task"]]
        if not row["parse_ok"]:
            continue
        modifier = row["answer_modifier"] if isinstance(row["answer_modifier"], str) else None
        concepts, prop = spec.judged_pairs(row, row["answer"], modifier)
        n, h, m = (_scripted_relevance(c, prop, row["protocol"]) for c in concepts)
        hmp = max(h, m)
        score = max(n - hmp, 0.0) if spec.kind == "emergent" else max(hmp - n, 0.0)
        values.append(
            {"task": row["task"], "method": row["method"], "seed": row["seed"], "r_np": n, "r_hmp": hmp, "score": score}
        )
    table = pd.DataFrame(values)
    cells = {}
    for (task, method), group in table.groupby(["task", "method"]):
        for metric in ("r_hmp", "r_np", "score"):
            cells[(task, method, metric)] = 100 * group.groupby("seed")[metric].mean().mean()
    return cells


def _report_cells(run_dir: Path, capsys: pytest.CaptureFixture[str]) -> dict[tuple[str, str, str], float]:
    capsys.readouterr()
    assert main(["report", str(run_dir), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    return {(r["task"], r["method"], r["metric"]): r["mean"] for r in records if r["table"] == "table3"}


def _rejudge(source: Path, out: Path, calls: Path, capsys: pytest.CaptureFixture[str]) -> str:
    args = ["rejudge", str(source), "--judge", "ccpt-scripted/rejudge", "--out", str(out), "--no-preflight"]
    assert main([*args, "--judge-arg", f"calls_file={calls}"]) == 0
    return capsys.readouterr().out


def test_rejudge_an_authors_file_matches_a_direct_computation(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The first rows of a real result file, in the authors' own format (every column kept).
    source = tmp_path / "pi_canceled_gpt-4o_naive.csv"
    pd.read_csv(reference_dir / source.name).head(6).to_csv(source, index=False)
    stored = load_results(source)
    assert (stored["protocol"] == "as-run").all()  # the judge surface the direct computation must use

    calls = tmp_path / "calls.txt"
    out = _rejudge(source, tmp_path / "rejudged", calls, capsys)
    assert "re-judged 18 answers" in out  # 6 instances × 3 seeds

    got = _report_cells(tmp_path / "rejudged", capsys)
    expected = _expected_cells(stored)
    assert got.keys() == expected.keys()
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    rejudged = load_results(tmp_path / "rejudged")
    assert set(rejudged["judge"]) == {"ccpt-scripted/rejudge (plain)"}  # as a run names it (reply format)
    key = ["instance", "seed"]
    kept = rejudged.sort_values(key)[[*key, "answer"]].reset_index(drop=True)
    assert kept.equals(stored.sort_values(key)[[*key, "answer"]].reset_index(drop=True))  # answers kept as stored

    # Resuming a finished re-judge asks the judge nothing.
    before = calls.read_text().count("\n")
    _rejudge(source, tmp_path / "rejudged", calls, capsys)
    assert calls.read_text().count("\n") == before

    # The cross-judge view: the stored GPT-4o cells against the re-judged ones.
    view = cross_judge(stored, rejudged, "gpt-4o", "scripted")
    for cell in view.cells:
        assert cell.difference == pytest.approx(cell.b - cell.a)
        assert cell.b == pytest.approx(expected[(cell.task, cell.method, cell.metric)])


def test_rejudge_an_inspect_run_matches_a_direct_computation(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = tmp_path / "run"
    args = ["run", "--model", "ccpt-scripted/solver", "--judge", "ccpt-scripted/first", "--task", "npc_emergent"]
    args += ["--task", "pi_emergent", "--method", "base", "--method", "cot", "--limit", "3", "--seeds", "2"]
    assert main([*args, "--log-dir", str(run), "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]) == 0
    stored = load_results(run)
    assert (stored["protocol"] == "ccpt").all()

    out = _rejudge(run, tmp_path / "rejudged", tmp_path / "calls.txt", capsys)
    assert "re-judged 24 answers in 4 task runs" in out  # 2 tasks × 2 methods × 3 instances × 2 seeds
    # Named as a run names its judge, reply format included (before: the bare name, another judge to the report).
    assert set(load_results(tmp_path / "rejudged")["judge"]) == {"ccpt-scripted/rejudge (plain)"}
    assert set(stored["judge"]) == {"ccpt-scripted/first (plain)"}
    # Each re-judged log records what its source log's model was sent (not "none recorded", which would read as
    # other settings than a direct run's beside them).
    source_sent = set(from_inspect_logs(run).attrs["sent"].values())
    assert len(source_sent) == 1 and set(from_inspect_logs(tmp_path / "rejudged").attrs["sent"].values()) == source_sent
    # A log's metadata is untrusted text: settings that are not a line of text are unknown, not an internal error.
    hostile = tmp_path / "hostile"
    hostile.mkdir()
    for location in sorted((tmp_path / "rejudged").glob("*.eval")):
        log = read_eval_log(str(location))
        log.eval.metadata = {"generation_settings": {"temperature": [0.7]}}
        write_eval_log(log, str(hostile / location.name))
    assert from_inspect_logs(hostile).attrs["sent"] == {}

    got = _report_cells(tmp_path / "rejudged", capsys)
    expected = _expected_cells(stored)
    assert got.keys() == expected.keys() and len(expected) == 12
    for key, value in expected.items():
        assert got[key] == pytest.approx(value, abs=1e-9), key
    # What `inspect view` shows of each re-judged log: the answers' model (never asked: Inspect's "none" provider;
    # it showed none/none) and the report's cells as its ccpt/cell metrics (they were NaN: no per-seed values).
    for location in sorted((tmp_path / "rejudged").glob("*.eval")):
        log = read_eval_log(str(location), header_only=True)
        assert log.eval.model == "none/ccpt-scripted/solver" and log.results is not None
        task, method = log.eval.task_args["task"], log.eval.task_args["method"]
        shown = {s.name: m.value for s in log.results.scores for m in s.metrics.values() if m.name.endswith("/cell")}
        for key, metric in (("E", "score"), ("R_NP", "r_np"), ("R_HMP", "r_hmp")):
            assert shown[key] == pytest.approx(got[(task, method, metric)], abs=1e-9), (location.name, key)


def test_rejudge_of_two_judges_runs_pairs_each_judges_cells(
    ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A directory holding the same answers judged by two judges: the
    re-judge prints one before/after table per original judge, each before column that judge's own report cells.
    Before, one table took one judge's cells and labelled them with both names."""
    run = tmp_path / "run"
    args = ["run", "--model", "ccpt-scripted/solver", "--task", "pi_emergent", "--method", "base", "--limit", "3"]
    args += ["--seeds", "2", "--log-dir", str(run), "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]
    assert main([*args, "--judge", "ccpt-scripted/a"]) == 0
    assert main([*args, "--judge", "ccpt-scripted/b", "--judge-arg", "fail_every=3"]) == 0
    capsys.readouterr()
    assert main(["report", str(run), "--format", "json"]) == 0
    records = [r for r in json.loads(capsys.readouterr().out)["records"] if r["table"] == "table3" and r["judge"]]
    out = _rejudge(run, tmp_path / "out", tmp_path / "calls.txt", capsys)
    names = {"R_H,M,P": "r_hmp", "R_N,P": "r_np"}
    tables = out.split("### Table 3 under two judges: ")[1:]
    assert sorted(t.splitlines()[0] for t in tables) == [
        "ccpt-scripted/rejudge (plain) − ccpt-scripted/a (plain)",
        "ccpt-scripted/rejudge (plain) − ccpt-scripted/b (plain)",
    ]  # each judge as the report names it: the new one was its bare model name (on the real server, the distilled
    # judge re-judging its own run read "ccpt-distilled/default − ccpt-distilled/default@4d1ef41822ad", two judges)
    before = {}
    for table in tables:
        judge = table.splitlines()[0].split(" − ")[1]
        for line in table.splitlines():
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == 7 and cells[2] == "pi_emergent":
                before[(judge, names.get(cells[3], "score"))] = cells[4]
    reported = {(r["judge"], r["metric"]): f"{r['mean']:.1f}" for r in records}
    assert before == reported and len(reported) == 6
    # The output reports the two source runs as two runs, each tagged with its judge. Before, their re-judged rows
    # had one identity: counted once with a warning (here, where both runs gave the same answers), and on the real
    # server, where they did not, `ccpt report OUT` refused the directory ("two runs claim to be one").
    assert main(["report", str(tmp_path / "out"), "--format", "json"]) == 0
    report, err = capsys.readouterr()
    rows = {r["model"] for r in json.loads(report)["records"] if r["table"] == "table3" and r["method"] == "base"}
    # The judge arguments its answers were judged under are told apart with their judge (seventh hostile round).
    origins = ("ccpt-scripted/a (plain)", "ccpt-scripted/b (plain), --judge-arg fail_every 3")
    assert rows == {f"ccpt-scripted/solver [re-judged from {origin}]" for origin in origins}
    assert "dropped" not in err, err


def _authors_file(reference_dir: Path, tmp_path: Path) -> Path:
    """The first 6 rows of the authors' PI-canceled GPT-4o file (as-run protocol; instance row3 answers "tiny" in
    seed 0 and "invisible" in seeds 1-2)."""
    source = tmp_path / "pi_canceled_gpt-4o_naive.csv"
    pd.read_csv(reference_dir / source.name).head(6).to_csv(source, index=False)
    return source


@pytest.mark.parametrize("where", ["same", "inside", "holding"])
def test_rejudge_refuses_an_out_that_would_mix_with_an_input(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ccpt rejudge RUN --out RUN` used to be accepted and wrote the new judge's logs into RUN."""
    run = tmp_path / "run"
    run.mkdir()
    (run / "keep.txt").write_text("a run")
    out = {"same": run, "inside": run / "rejudged", "holding": tmp_path}[where]
    code = main(["rejudge", str(run), "--judge", "ccpt-scripted/x", "--out", str(out), "--no-preflight"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "--out" in err and "choose a directory of its own" in err
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["keep.txt", "run"]  # nothing written anywhere


def test_rejudge_table_agrees_with_the_report_when_the_judge_fails(
    reference_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A judge refusing one pair (HTTP 400 for the answer "tiny"): that as-run sample is unscored, and the report
    fills it from another seed as the authors' pipeline did. The table `ccpt rejudge` prints used not to, so its
    cells and `ccpt report OUT`'s disagreed; now every cell is the same (the rows keep the source's protocol)."""
    from loopback_openai import serve

    source = _authors_file(reference_dir, tmp_path)
    monkeypatch.setenv("LOOP_API_KEY", "test-key")
    with serve(fail_when="Property: tiny\n") as loop:
        monkeypatch.setenv("LOOP_BASE_URL", loop.base_url)
        args = ["rejudge", str(source), "--judge", "openai-api/loop/j", "--out", str(tmp_path / "out")]
        assert main([*args, "--max-retries", "0"]) == 0
    printed = capsys.readouterr().out
    names = {"R_H,M,P": "r_hmp", "R_N,P": "r_np"}
    table = {}
    for line in printed.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) == 7 and cells[2] == "pi_canceled":
            table[(cells[1].lower(), names.get(cells[3], "score"))] = cells[5]  # the new judge's column
    assert main(["report", str(tmp_path / "out"), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    reported = {(r["method"], r["metric"]): f"{r['mean']:.1f}" for r in records if r["table"] == "table3"}
    assert table and table == reported
    failures = {r["metric"]: r["count"] for r in records if r["table"] == "failures"}
    # The three pairs of that one answer (noun phrase, head, modifier): the case that used to disagree.
    assert failures["judge_failures"] == 3 and failures["filled"] == 1


def test_rejudge_limit_timeout_and_max_retries(
    reference_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccpt.results.inspect_logs import read_logs

    source = _authors_file(reference_dir, tmp_path)
    args = ["rejudge", str(source), "--judge", "ccpt-scripted/r", "--out", str(tmp_path / "out"), "--no-preflight"]
    assert main([*args, "--limit", "2", "--timeout", "7", "--max-retries", "0"]) == 0
    assert "re-judged 6 answers in 1 task runs" in capsys.readouterr().out  # 2 instances × 3 seeds
    (log,) = read_logs([tmp_path / "out"], header_only=True).logs
    assert (log.plan.config.attempt_timeout, log.plan.config.max_retries) == (7, 0)
    assert sorted(load_results(tmp_path / "out")["instance"].unique()) == ["pi_canceled:row0", "pi_canceled:row1"]


def test_rejudge_ctrl_c_exits_130_without_a_table(reference_dir: Path, tmp_path: Path) -> None:
    """Ctrl-C used to exit 0 and print a complete-looking table from the few samples judged so far."""
    import os
    import signal
    import subprocess
    import sys
    import time

    source = _authors_file(reference_dir, tmp_path)
    calls = tmp_path / "calls.txt"
    args = [str(Path(sys.executable).with_name("ccpt")), "rejudge", str(source), "--judge", "ccpt-scripted/slow"]
    args += ["--out", str(tmp_path / "out"), "--no-preflight", "--max-connections", "1", "--judge-arg", "latency=0.5"]
    args += ["--judge-arg", f"calls_file={calls}"]
    env = {**os.environ, "INSPECT_CACHE_DIR": str(tmp_path / "cache")}

    def interruptible() -> None:  # SIGINT back to its default in the child (tests/test_interrupts.py says why)
        signal.signal(signal.SIGINT, signal.SIG_DFL)

    proc = subprocess.Popen(
        args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, preexec_fn=interruptible
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (not calls.exists() or len(calls.read_text().splitlines()) < 3):
        time.sleep(0.01)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr[-2000:]
    lines = [line for line in stderr.splitlines() if line.startswith("ccpt:")]
    assert len(lines) == 1 and "interrupted" in lines[0] and "of 18 samples" in lines[0], stderr[-2000:]
    assert "Table 3 under two judges" not in stdout
    resumed = subprocess.run(args, env=env, capture_output=True, text=True, timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert "Table 3 under two judges" in resumed.stdout
