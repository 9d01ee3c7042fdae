"""The paper one command away: `ccpt report --paper` on the authors' stored files, and a run beside the paper's
models under the run's own judge (`--beside-paper`): the stored GPT-4o verdicts beside a GPT-4o-judged run, the
stored answers re-judged by the distilled judge beside a distilled run (checked against the judge itself, not
against the shipped store), and one line for any other judge.

GPT-4o is a paid API: the scripted provider stands in for it under the name ``ccpt-scripted/gpt-4o``, which is
all the judge match reads (the model of the judge identity), through the real `ccpt run` and `ccpt report`.
"""

from __future__ import annotations

import csv
import gzip
import itertools
import json
import shutil
from pathlib import Path

import pandas as pd
import pytest

from ccpt.cli import main
from ccpt.results import load_results

pytestmark = pytest.mark.shared_data

GPT4O_BASE = "pi_emergent_gpt-4o_naive.csv"
LLAMA_BASE = "pi_emergent_Meta-Llama-3.1-70B-Instruct_naive.csv"


@pytest.fixture
def stored(reference_dir: Path, tmp_path: Path) -> Path:
    """A stored-results directory laid out as a user's copy may be: two models' PI-emergent Base files (one in a
    subfolder) and Task 3."""
    root = tmp_path / "stored"
    (root / "more-models").mkdir(parents=True)
    for name in (GPT4O_BASE, "tp_gpt-4o_naive.csv"):
        shutil.copy(reference_dir / name, root / name)
    shutil.copy(reference_dir / "more-models" / LLAMA_BASE, root / "more-models" / LLAMA_BASE)
    return root


def _records(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[list[dict], str]:
    capsys.readouterr()
    assert main([*args, "--format", "json"]) == 0
    captured = capsys.readouterr()
    return json.loads(captured.out)["records"], captured.err


def _cell(records: list[dict], model: str, metric: str = "score", method: str = "base") -> dict:
    """The Table-3 record of ``model`` (its id, without the protocol tag a report of two protocols adds)."""
    (found,) = [
        r
        for r in records
        if r["table"] == "table3"
        and r["model"].split(" [")[0] == model
        and r["method"] == method
        and r["metric"] == metric
    ]
    return found


def _run(ccpt_dir: Path, out: Path, judge: str) -> Path:
    args = ["run", "--model", "ccpt-scripted/solver", "--judge", judge, "--task", "pi_emergent", "--limit", "2"]
    args += ["--seeds", "1", "--log-dir", str(out), "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]
    assert main(args) == 0
    return out


def test_paper_report_is_one_command(stored: Path, ccpt_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    records, _ = _records(["report", "--paper", "--results-dir", str(stored), "--data-dir", str(ccpt_dir)], capsys)
    gpt4o = _cell(records, "gpt-4o")
    assert (round(gpt4o["mean"], 1), round(gpt4o["spread"], 1)) == (40.8, 0.7)  # paper Table 3, with its ±
    assert round(_cell(records, "Meta-Llama-3.1-70B-Instruct")["mean"], 1) == 41.6  # the subfolder is read too
    accuracy = [r for r in records if r["table"].startswith("table5") and r["metric"] == "accuracy"]
    assert [round(r["mean"], 1) for r in accuracy] == [56.4]
    assert any(r["method"] == "gold_stored" for r in records)  # the Gold row: the dataset is read for it


def test_paper_report_reads_the_variable_and_refuses_what_it_cannot_use(
    stored: Path, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CCPT_RESULTS_DIR", str(stored))
    monkeypatch.setenv("CCPT_DATA_DIR", str(ccpt_dir))
    records, _ = _records(["report", "--paper"], capsys)
    assert round(_cell(records, "gpt-4o")["mean"], 1) == 40.8
    for args, said in (
        (["report", "--paper", str(stored / GPT4O_BASE)], "--paper reports the stored files alone"),
        (["report"], "no results to report"),
    ):
        assert main(args) == 2
        err = capsys.readouterr().err
        assert said in err and len(err.strip().splitlines()) == 1
    monkeypatch.setenv("CCPT_RESULTS_DIR", str(tmp_path / "nowhere"))
    assert main(["report", "--paper"]) == 2
    assert capsys.readouterr().err.strip() == (
        f"ccpt: error: results directory {tmp_path / 'nowhere'}: does not exist"
        " (check --results-dir / CCPT_RESULTS_DIR)"
    )
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["report", "--paper", "--results-dir", str(empty)]) == 2
    assert "no result files (*.csv) in" in capsys.readouterr().err


def test_a_gpt4o_judged_run_stands_beside_the_stored_verdicts_ranked_together(
    stored: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(ccpt_dir, tmp_path / "run", "ccpt-scripted/gpt-4o")
    args = ["report", str(run), "--beside-paper", "--results-dir", str(stored), "--data-dir", str(ccpt_dir)]
    records, err = _records(args, capsys)
    judge = "ccpt-scripted/gpt-4o (plain)"
    gpt4o, llama, own = (_cell(records, m) for m in ("gpt-4o", "Meta-Llama-3.1-70B-Instruct", "ccpt-scripted/solver"))
    assert {gpt4o["judge"], llama["judge"], own["judge"]} == {judge}  # one judge: one ranking
    assert round(gpt4o["mean"], 1) == 40.8 and round(llama["mean"], 1) == 41.6  # the stored verdicts, as stored
    assert gpt4o["model_label"] == "gpt-4o (paper) [as-run]"  # the authors' protocol, said beside the name
    # Ranked together: one best and one second-best per column across the three models' Base rows.
    ranks = sorted(r["rank"] for r in (gpt4o, llama, own) if r["rank"])
    assert ranks == [1, 2]
    assert "no paper rows" not in err
    markdown = capsys.readouterr() and main(["report", str(run), "--beside-paper", "--results-dir", str(stored)])
    assert markdown == 0 and "gpt-4o (paper)" in capsys.readouterr().out


def test_another_judge_gets_one_line_and_no_paper_rows(
    stored: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(ccpt_dir, tmp_path / "run", "ccpt-scripted/first")
    records, err = _records(["report", str(run), "--beside-paper", "--results-dir", str(stored)], capsys)
    lines = [line for line in err.splitlines() if "no paper rows" in line]
    assert lines == [
        "ccpt: no paper rows beside judge ccpt-scripted/first (plain): the paper's answers were judged by GPT-4o, "
        "and no store of this judge's scores of them exists (make one: ccpt judge paper-scores --judge "
        "ccpt-scripted/first; an LLM judge: ccpt rejudge the stored files, then report both)"
    ]
    assert {r["model"].split(" [")[0] for r in records if r["table"] == "table3"} == {"ccpt-scripted/solver"}


def _distilled_cell(path: Path, dataset_dir: Path) -> float:
    """E of the stored answers of ``path`` under the shipped distilled judge, computed here from the judge itself
    (its relevance for every judged pair) and plain arithmetic: 100 × mean over seeds of the instance mean."""
    from ccpt.dataset import load_dataset
    from ccpt.judging.distilled import load_judge
    from ccpt.spec import TASK_SPECS

    frame = load_results(path, load_dataset(dataset_dir))
    rows = [r for r in frame.to_dict("records") if r["parse_ok"] and isinstance(r["answer"], str) and r["answer"]]
    spec = TASK_SPECS["pi_emergent"]
    asked = [spec.judged_pairs(r, r["answer"], None) for r in rows]
    pairs = sorted({(" ".join(c.split()), " ".join(p.split())) for concepts, p in asked for c in concepts})
    score = dict(zip(pairs, load_judge().score(pairs), strict=True))
    values = []
    for row, (concepts, prop) in zip(rows, asked, strict=True):
        n, h, m = (score[(" ".join(c.split()), " ".join(prop.split()))] for c in concepts)
        values.append({"seed": row["seed"], "e": max(n - max(h, m), 0.0)})
    return 100 * pd.DataFrame(values).groupby("seed")["e"].mean().mean()


def test_a_distilled_run_stands_beside_the_stored_answers_rejudged_by_that_judge(
    stored: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    run = _run(ccpt_dir, tmp_path / "run", "distilled")
    records, err = _records(["report", str(run), "--beside-paper", "--results-dir", str(stored)], capsys)
    own = _cell(records, "ccpt-scripted/solver")
    gpt4o = _cell(records, "gpt-4o")
    assert own["judge"].startswith("ccpt-distilled/default@") and gpt4o["judge"] == own["judge"]
    expected = _distilled_cell(stored / GPT4O_BASE, ccpt_dir)
    assert gpt4o["mean"] == pytest.approx(expected, abs=0.05)  # batched scoring: within float noise
    assert abs(gpt4o["mean"] - 40.8) > 1  # not the stored GPT-4o verdicts under another name
    assert "no paper rows" not in err


def test_paper_scores_command_and_a_damaged_store(
    stored: Path, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccpt.results import paper_scores

    # The command on the file's first 12 instances (each scored pair costs the CPU judge ~0.1 s): the whole file's
    # pairs are checked against the judge itself by the test above.
    one = tmp_path / "one"
    one.mkdir()
    with (stored / GPT4O_BASE).open(newline="", encoding="utf-8") as source:
        head = list(itertools.islice(csv.reader(source), 13))
    with (one / GPT4O_BASE).open("w", newline="", encoding="utf-8") as copy:
        csv.writer(copy).writerows(head)
    out = tmp_path / "scores.json.gz"
    args = ["judge", "paper-scores", "--results-dir", str(one), "--data-dir", str(ccpt_dir), "--out", str(out)]
    assert main(args) == 0
    said = capsys.readouterr().out
    assert "of 1 stored files with ccpt-distilled/default@" in said
    mine = paper_scores.read_store(out)
    shipped = paper_scores.read_store(paper_scores.shipped_store(), paper_scores.SHIPPED_SHA256)
    assert mine.judge == shipped.judge and set(mine.files) == {GPT4O_BASE}
    assert len(mine.pairs) >= 12 and set(mine.pairs) <= set(shipped.pairs)
    assert max(abs(v - shipped.pairs[k]) for k, v in mine.pairs.items()) < 1e-4  # one judge, one score per pair

    # A damaged shipped store is refused in one line, never read.
    damaged = tmp_path / "damaged.json.gz"
    body = json.loads(gzip.decompress(paper_scores.shipped_store().read_bytes()))
    body["pairs"][0][2] = 0.5 if body["pairs"][0][2] != 0.5 else 0.25
    damaged.write_bytes(gzip.compress(json.dumps(body).encode()))
    monkeypatch.setattr(paper_scores, "shipped_store", lambda: damaged)
    run = _run(ccpt_dir, tmp_path / "run", "distilled")
    assert main(["report", str(run), "--beside-paper", "--results-dir", str(stored)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("ccpt: error: ") and "sha256 differs from the pinned one" in err and "\n" not in err
    # Not a distilled judge: paper-scores says what to use instead.
    assert main(["judge", "paper-scores", "--judge", "openai/gpt-4o", "--results-dir", str(one)]) == 2
    assert "ccpt rejudge" in capsys.readouterr().err


def test_data_path_says_where_each_copy_is_read_from(
    stored: Path, ccpt_dir: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("CCPT_RESULTS_DIR", str(stored))
    monkeypatch.setenv("CCPT_DATA_DIR", str(ccpt_dir))
    capsys.readouterr()
    assert main(["data", "path", "--results"]) == 0 and capsys.readouterr().out.strip() == str(stored)
    assert main(["data", "path"]) == 0 and capsys.readouterr().out.strip() == str(ccpt_dir)
    assert main(["data", "path", "--results", "--results-dir", str(ccpt_dir)]) == 0  # the option wins
    assert capsys.readouterr().out.strip() == str(ccpt_dir)
