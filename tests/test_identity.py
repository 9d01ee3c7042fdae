"""Result rows have a declared identity, so runs compose: the report of several inputs is the report of each.

Property-based (hypothesis) over generated sets of runs — models whose names hold dots, colons and slashes,
methods with one sample or several (Multi-Oracle), two judges — read through the real reader path
(:func:`ccpt.results.identity.deduplicate`, what :func:`ccpt.load_results` applies to every mix of inputs) into
the real Table 3. Then the issue's cases on the shipped authors' files, through the CLI.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ccpt.benchmark import benchmark
from ccpt.cli import main
from ccpt.dataset import load_dataset
from ccpt.errors import DataError
from ccpt.io.download import CHECKSUMS, REQUIRED_FILES
from ccpt.report.cross_judge import cross_judge, markdown
from ccpt.report.tables import as_reported, table3
from ccpt.results import COLUMNS
from ccpt.results.identity import deduplicate
from ccpt.scoring import Relevances
from ccpt.spec import GENERATIVE_TASKS, TYPE_PREDICTION

MODELS = ("org/model-1.5:q4", "other.model")
METHODS = ("base", "cot", "multi_oracle")
JUDGES = ("openai/gpt-4o (json_schema)", "ccpt-distilled/default@813ec7b5a1c2")
INSTANCES = 4
SEEDS = 2

Run = tuple[str, str, str, int]  # model, method, judge, a seed for its values


def _rows(run: Run, source: str) -> list[dict[str, Any]]:
    """The PI-emergent rows of one run: every instance and seed, five samples per seed for Multi-Oracle."""
    model, method, judge, value_seed = run
    rng = np.random.default_rng(value_seed)
    out = []
    for seed in range(SEEDS):
        for i in range(INSTANCES):
            for sample in range(5 if method == "multi_oracle" else 1):
                r_np, r_hp, r_mp = (round(float(x), 2) for x in rng.uniform(size=3))
                rel = Relevances(r_np, r_hp, r_mp)
                row = dict.fromkeys(COLUMNS)
                row.update(
                    task="pi_emergent", model=model, method=method, judge=judge, protocol="ccpt", seed=seed,
                    instance=f"ccpt_emergent:{i}", sample=sample, parse_ok=True, answer=f"p{r_np}", r_np=r_np,
                    r_hp=r_hp, r_mp=r_mp, r_hmp=rel.r_hmp, score=rel.score("emergent"), judge_failures=0,
                    invalid_cells=0, source=source,
                )  # fmt: skip
                out.append(row)
    return out


def _read(*inputs: list[Run]) -> pd.DataFrame:
    """The runs as ccpt reads them from one input per list (each input its own source file)."""
    rows = [row for k, runs in enumerate(inputs) for run in runs for row in _rows(run, f"input{k}.csv")]
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame[["r_np", "r_hp", "r_mp", "r_hmp", "score"]] = frame[["r_np", "r_hp", "r_mp", "r_hmp", "score"]].astype(float)
    out, _ = deduplicate(frame)
    return out


def _cells(frame: pd.DataFrame) -> dict[tuple[Any, ...], tuple[float, float, int]]:
    """Every Table-3 cell of ``frame`` by (row key, task, metric): mean, spread and instances (ranks left out)."""
    if frame.empty:
        return {}
    table = table3(frame, n_boot=20)
    return {
        (row.key, task, metric): (round(s.mean, 9), round(s.spread or 0.0, 9), s.n_instances)
        for row in table.rows
        for (task, metric), s in row.cells.items()
    }


def _same(a: dict, b: dict) -> bool:
    return a.keys() == b.keys() and all(
        all((math.isnan(x) and math.isnan(y)) or x == y for x, y in zip(a[k], b[k], strict=True)) for k in a
    )


run_ids = st.tuples(st.sampled_from(MODELS), st.sampled_from(METHODS), st.sampled_from(JUDGES))
runs = st.lists(st.tuples(run_ids, st.integers(0, 10_000)), min_size=1, max_size=6, unique_by=lambda r: r[0]).map(
    lambda rs: [(*ids, seed) for ids, seed in rs]
)
SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@SETTINGS
@given(runs, st.data())
def test_report_of_disjoint_runs_is_the_report_of_each(all_runs: list[Run], data: st.DataObject) -> None:
    """For runs A and B with disjoint identities, each cell of report(A ∪ B) is the cell of report(A) or of B."""
    in_a = data.draw(st.lists(st.booleans(), min_size=len(all_runs), max_size=len(all_runs)))
    a = [r for r, keep in zip(all_runs, in_a, strict=True) if keep]
    b = [r for r, keep in zip(all_runs, in_a, strict=True) if not keep]
    union, alone_a, alone_b = _cells(_read(a, b)), _cells(_read(a)), _cells(_read(b))
    assert union.keys() == alone_a.keys() | alone_b.keys()
    for key, cell in union.items():
        assert cell == alone_a.get(key, alone_b.get(key))


@SETTINGS
@given(runs, st.integers(0, 10_000))
def test_a_second_judge_never_changes_a_first_judge_cell(first: list[Run], seed: int) -> None:
    """Re-judging every run with another judge adds rows; no cell of the first judge moves."""
    first = [(m, k, JUDGES[0], s) for m, k, _, s in first]
    first = list({r[:3]: r for r in first}.values())
    second = [(m, k, JUDGES[1], s + seed) for m, k, _, s in first]
    before = _cells(_read(first))
    after = _cells(_read(first, second))
    assert {k: v for k, v in after.items() if k[0][3] == JUDGES[0]} == before
    assert len(after) == 2 * len(before)


@SETTINGS
@given(runs, st.randoms(use_true_random=False))
def test_the_order_of_inputs_and_an_input_given_twice_change_nothing(all_runs: list[Run], rnd: Any) -> None:
    """Inputs in any order, or one of them given twice, give the same cells."""
    inputs = [[r] for r in all_runs]
    reference = _cells(_read(*inputs))
    shuffled = list(inputs)
    rnd.shuffle(shuffled)
    assert _same(_cells(_read(*shuffled)), reference)
    # The same file given twice: one source, read twice.
    frame = pd.concat([_read(*inputs)] * 2, ignore_index=True)
    deduped, warnings = deduplicate(frame)
    assert _same(_cells(deduped), reference) and warnings


def test_two_runs_claiming_one_identity_are_refused_naming_both_sources() -> None:
    """Two different answers under one identity (two runs of one model and judge) are never averaged or best-of-two."""
    a = _rows((MODELS[0], "base", JUDGES[0], 1), "runs-a/log.eval")
    b = _rows((MODELS[0], "base", JUDGES[0], 2), "runs-b/log.eval")
    frame = pd.DataFrame(a + b, columns=list(COLUMNS))
    with pytest.raises(DataError, match=r"runs-a/log\.eval and runs-b/log\.eval hold different answers"):
        deduplicate(frame)


# --------------------------------------------------------------------------------- the cases, real files


@pytest.fixture
def reference(shared_data: Path) -> Path:
    return shared_data / "reference-results"


def _report_json(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[dict[str, Any], str]:
    code = main(["report", *args, "--format", "json"])
    out = capsys.readouterr()
    assert code == 0, out.err
    return json.loads(out.out), out.err


def _table3(payload: dict[str, Any]) -> dict[tuple[str, str, str, str], float]:
    return {
        (r["model"], r["method"], r["judge"], f"{r['task']}:{r['metric']}"): round(r["mean"], 1)
        for r in payload["records"]
        if r["table"] == "table3" and r["model"]
    }


def test_a_file_given_twice_or_copied_beside_itself_is_counted_once(
    reference: Path, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    source = reference / "pi_emergent_gpt-4o_naive.csv"
    data = ["--data-dir", str(shared_data / "ccpt")]
    once, _ = _report_json(capsys, str(source), *data)
    twice, err = _report_json(capsys, str(source), str(source), *data)
    assert _table3(twice) == _table3(once)
    assert _table3(once)[("gpt-4o", "base", "gpt-4o", "pi_emergent:score")] == 40.8  # the paper's cell
    assert "repeats 600 row(s) with the same identity and answer: counted once, 600 dropped" in err
    copy_dir = tmp_path / "copies"
    copy_dir.mkdir()
    (copy_dir / "copy.csv").write_bytes(source.read_bytes())
    beside, err = _report_json(capsys, str(source), str(copy_dir), *data)
    assert _table3(beside) == _table3(once) and "copy.csv repeats 600 row(s) of pi_emergent_gpt-4o_naive.csv" in err


def test_duplicated_rows_inside_a_file_are_counted_once(
    reference: Path, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """100 extra copies of one Task-3 item, and 30 duplicated PI rows: the paper's numbers, n unchanged, a warning."""
    data = ["--data-dir", str(shared_data / "ccpt")]
    tp = pd.read_csv(reference / "tp_gpt-4o_naive.csv", dtype=str, keep_default_na=False)
    padded = pd.concat([tp, pd.concat([tp.iloc[[7]]] * 100)], ignore_index=True)
    padded.to_csv(tmp_path / "tp_gpt-4o_naive.csv", index=False)
    payload, err = _report_json(capsys, str(tmp_path / "tp_gpt-4o_naive.csv"), *data)
    accuracy = next(r for r in payload["records"] if r["table"] == "table5" and r["metric"] == "accuracy")
    assert (round(accuracy["mean"], 1), accuracy["count"]) == (56.4, 1000)
    assert "tp_gpt-4o_naive.csv repeats 100 row(s)" in err
    pi = pd.read_csv(reference / "pi_emergent_gpt-4o_naive.csv", dtype=str, keep_default_na=False)
    pd.concat([pi, pi.iloc[:30]], ignore_index=True).to_csv(tmp_path / "pi_emergent_gpt-4o_naive.csv", index=False)
    padded_pi, err = _report_json(capsys, str(tmp_path / "pi_emergent_gpt-4o_naive.csv"), *data)
    original, _ = _report_json(capsys, str(reference / "pi_emergent_gpt-4o_naive.csv"), *data)
    assert _table3(padded_pi) == _table3(original) and "repeats 90 row(s)" in err  # 30 rows × 3 seeds


def test_two_judges_of_one_file_are_two_rows_and_compare_refuses_to_mix_them(
    reference: Path, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A re-judged copy beside its source: two Table-3 rows (one per judge), each its judge's own numbers."""
    source = pd.read_csv(reference / "pi_emergent_gpt-4o_naive.csv", dtype=str, keep_default_na=False)
    # A second judge's file of the same answers: the judge's name is in its columns (meta.*_<judge>_relevance)
    # and every relevance moved, as another judge's would.
    other = source.rename(columns=lambda c: c.replace("gpt-4o_relevance", "judge.two_relevance"))
    for column in [c for c in other.columns if c.endswith("_combination_relevance")]:
        other[column] = (other[column].astype(float) * 0.5).astype(str)
    other.to_csv(tmp_path / "pi_emergent_gpt-4o_naive.csv", index=False)
    data = ["--data-dir", str(shared_data / "ccpt")]
    one, _ = _report_json(capsys, str(reference / "pi_emergent_gpt-4o_naive.csv"), *data)
    two, _ = _report_json(capsys, str(tmp_path / "pi_emergent_gpt-4o_naive.csv"), *data)
    both, _ = _report_json(capsys, str(reference / "pi_emergent_gpt-4o_naive.csv"), str(tmp_path), *data)
    assert _table3(both) == {**_table3(one), **_table3(two)}
    assert {k[2] for k in _table3(both)} == {"gpt-4o", "judge.two"}
    args = ["compare", str(reference / "pi_emergent_gpt-4o_naive.csv"), str(tmp_path), "--a", "gpt-4o:base"]
    assert main([*args, "--b", "gpt-4o:base", *data]) == 2  # a user error: one line
    assert "scored by 2 judges" in capsys.readouterr().err
    assert main([*args, "--b", "gpt-4o:base", "--judge-a", "gpt-4o", "--judge-b", "judge.two", *data]) == 0
    assert "judges gpt-4o vs judge.two" in capsys.readouterr().out


def test_a_csv_in_a_directory_that_is_no_result_file_is_skipped_and_named(
    reference: Path, shared_data: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The authors' Llama NPC Multi-Oracle file holds raw generations only (nothing judged): read the rest."""
    unjudged = reference / "more-models" / "npc_emergent_Meta-Llama-3.1-70B-Instruct_multi.csv"
    (tmp_path / unjudged.name).write_bytes(unjudged.read_bytes())
    (tmp_path / "pi_emergent_gpt-4o_naive.csv").write_bytes((reference / "pi_emergent_gpt-4o_naive.csv").read_bytes())
    payload, err = _report_json(capsys, str(tmp_path), "--data-dir", str(shared_data / "ccpt"))
    assert f"skipped {tmp_path / unjudged.name}: cannot tell the task" in err
    assert _table3(payload)[("gpt-4o", "base", "gpt-4o", "pi_emergent:score")] == 40.8
    assert main(["report", str(tmp_path / unjudged.name)]) == 2  # named on its own, it is an error
    assert "cannot tell the task" in capsys.readouterr().err


def test_a_rerun_with_another_judge_into_the_same_directory_keeps_both(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`ccpt run` twice into one --log-dir, the second time with another judge: two task runs, two Table-3 rows,
    each exactly what its judge gives alone."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))

    def run(judge: str, log_dir: Path) -> None:
        argv = ["run", "--model", "ccpt-scripted/m", "--judge", judge, "--task", "pi_emergent", "--method", "base",
                "--limit", "3", "--seeds", "2", "--data-dir", str(ccpt_dir), "--log-dir", str(log_dir)]  # fmt: skip
        assert main(argv) == 0
        capsys.readouterr()

    shared = tmp_path / "runs"
    for judge in ("ccpt-scripted/judge-a", "ccpt-scripted/judge-b"):
        run(judge, shared)
        run(judge, tmp_path / judge.rsplit("/", 1)[1])  # the same run alone
    both, _ = _report_json(capsys, str(shared), "--data-dir", str(ccpt_dir))
    alone_a, _ = _report_json(capsys, str(tmp_path / "judge-a"), "--data-dir", str(ccpt_dir))
    alone_b, _ = _report_json(capsys, str(tmp_path / "judge-b"), "--data-dir", str(ccpt_dir))
    assert _table3(both) == {**_table3(alone_a), **_table3(alone_b)}
    assert {k[2] for k in _table3(both)} == {"ccpt-scripted/judge-a (plain)", "ccpt-scripted/judge-b (plain)"}


def test_two_runs_of_other_seeds_in_one_directory_are_two_rows_as_when_given_apart(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a directory holding a run and a run with another ``-T seed`` (other answers, one sample identity)
    kept the newest log's rows, calling the other "older logs of the same run"; later both were refused as "two
    runs claim to be one". The run seed is part of a run's identity: both ways, two rows, tagged by the seed."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--model", "ccpt-scripted/m", "--task", "pi_emergent", "--method", "base", "--limit", "3",
            "--seeds", "2", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]  # fmt: skip
    assert main([*base, "--log-dir", str(tmp_path / "a")]) == 0
    assert main([*base, "--log-dir", str(tmp_path / "b"), "-T", "seed=5"]) == 0
    both = tmp_path / "both"
    both.mkdir()
    for log in [*(tmp_path / "a").glob("*.eval"), *(tmp_path / "b").glob("*.eval")]:
        (both / log.name).write_bytes(log.read_bytes())
    capsys.readouterr()  # the runs' own summaries
    alone = {}
    for name in ("a", "b"):
        payload, _err = _report_json(capsys, str(tmp_path / name), "--data-dir", str(ccpt_dir))
        alone[name] = {r["metric"]: r["mean"] for r in payload["records"] if r["table"] == "table3" and r["model"]}
    for inputs in ([str(both)], [str(tmp_path / "a"), str(tmp_path / "b")]):
        payload, _err = _report_json(capsys, *inputs, "--data-dir", str(ccpt_dir))
        rows = [r for r in payload["records"] if r["table"] == "table3" and r["model"]]
        assert {r["model"] for r in rows} == {"ccpt-scripted/m [seed 0]", "ccpt-scripted/m [seed 5]"}
        for model, name in (("ccpt-scripted/m [seed 0]", "a"), ("ccpt-scripted/m [seed 5]", "b")):
            assert {r["metric"]: r["mean"] for r in rows if r["model"] == model} == alone[name]  # each as alone


def test_a_rerun_naming_another_server_is_refused_not_skipped(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `ccpt run` into a --log-dir holding the same model's finished run made at another base URL printed
    that run's numbers as this one's (Inspect's eval set identifies a run without its base URL, and skipped it)."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--model", "ccpt-scripted/m", "--task", "pi_emergent", "--method", "base", "--limit", "2",
            "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none",
            "--log-dir", str(tmp_path / "runs")]  # fmt: skip
    assert main([*base, "--model-base-url", "http://127.0.0.1:9/a"]) == 0
    capsys.readouterr()
    for extra in ([], ["--dry-run"]):
        assert main([*base, "--model-base-url", "http://127.0.0.1:9/b", *extra]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1, err
        assert "holds a run of model 'ccpt-scripted/m' at http://127.0.0.1:9/a, not at http://127.0.0.1:9/b" in err[0]
    assert len(list((tmp_path / "runs").glob("*.eval"))) == 1
    assert main([*base, "--model-base-url", "http://127.0.0.1:9/a/"]) == 0  # the same server resumes (done: skipped)
    # None given first (the provider's default), one given after: as different (the default may be anywhere).
    default = [*base[:-1], str(tmp_path / "default")]
    assert main(default) == 0
    capsys.readouterr()
    assert main([*default, "--model-base-url", "http://127.0.0.1:9/a"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "at its provider's default URL, not at http://127.0.0.1:9/a" in err[0], err
    assert "or no base URL to resume that run" in err[0]


def test_runs_sent_other_generation_settings_are_rows_of_their_own(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A temperature ablation in one --log-dir: two rows, each labelled by its setting (before: one Table-3 row
    pooling both, with a warning). No setting tells apart a resumed run, Gold's rows (the model is sent nothing), nor
    an `as-run` run given on the command line the settings its protocol sends anyway. A re-judge keeps them apart."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--model", "ccpt-scripted/m", "--task", "pi_emergent", "--method", "base", "--method", "gold",
            "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none"]  # fmt: skip
    same, ablation, as_run = tmp_path / "same", tmp_path / "ablation", tmp_path / "as-run"
    runs = [
        (same, ["--limit", "2"]), (same, ["--limit", "3"]),
        (ablation, ["--limit", "3"]), (ablation, ["--limit", "3", "--temperature", "0.5"]),
        (as_run, ["--limit", "2", "--protocol", "as-run"]),
        (as_run, ["--limit", "3", "--protocol", "as-run", "--temperature", "0.71", "--max-tokens", "2048"]),
    ]  # fmt: skip
    for log_dir, extra in runs:
        assert main([*base, *extra, "--log-dir", str(log_dir)]) == 0
    capsys.readouterr()

    def rows(log_dir: Path) -> dict[tuple[str, str], int]:
        payload, err = _report_json(capsys, str(log_dir), "--data-dir", str(ccpt_dir))
        assert not [w for w in payload["warnings"] if "generation settings" in w] and "pooled" not in err
        return {(r["model"], r["method"]): r["n_instances"] for r in payload["records"] if r["table"] == "table3"
                and r["metric"] == "r_np" and r["model"]}  # fmt: skip

    # A resumed run is one row; as-run's own settings given explicitly are another Inspect run (told apart by its
    # instance set), but the same settings: no setting labels it.
    assert rows(same) == {("ccpt-scripted/m", "base"): 3, ("ccpt-scripted/m", "gold"): 3}
    assert rows(as_run) == {(f"ccpt-scripted/m [limit {n}]", m): n for n in (2, 3) for m in ("base", "gold")}
    assert rows(ablation) == {
        ("ccpt-scripted/m [temperature 0.5]", "base"): 3, ("ccpt-scripted/m [temperature 0.7]", "base"): 3,
        ("ccpt-scripted/m", "gold"): 3,
    }  # fmt: skip
    # Re-judged with another judge: each run's answers re-judged under its own settings, still two rows.
    out = tmp_path / "ablation-rejudged"
    assert main(["rejudge", str(ablation), "--judge", "ccpt-scripted/other", "--out", str(out)]) == 0
    capsys.readouterr()
    assert {m for m, method in rows(out) if method == "base"} == {
        f"ccpt-scripted/m [temperature {t}]" for t in ("0.5", "0.7")
    }


def test_a_log_copied_beside_itself_is_said_on_stderr(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A copy of a log in the run directory is counted once with the stderr warning every other answer read twice
    gets (it used to be a note in the report only)."""
    import shutil

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    base = ["run", "--model", "ccpt-scripted/m", "--task", "pi_emergent", "--method", "base", "--limit", "2",
            "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none",
            "--log-dir", str(runs)]  # fmt: skip
    assert main(base) == 0
    (log,) = runs.glob("*.eval")
    shutil.copy(log, runs / "copy.eval")
    capsys.readouterr()
    assert main(["report", str(runs), "--data-dir", str(ccpt_dir)]) == 0
    err = capsys.readouterr().err
    assert "is a copy of" in err and "copy.eval" in err and "its rows are counted once" in err, err
    # Another temperature is another run, another row: nothing to warn about before it is sent.
    assert main([*base, "--temperature", "0", "--dry-run"]) == 0 and capsys.readouterr().err == ""


# ------------------------------------------------------- a run's identity: every argument that changes a number

# The arguments two reruns of one command differ in (issue 42): Multi-Oracle's n, the split, the instance set, the
# benchmark version, the dataset's digest (a --data-dir copy with other content).
ARGUMENTS = {"oracle_n": (2, 5), "split": ("test", "train"), "limit": (2, 8), "benchmark": (1, 2),
             "dataset": ("0503194e7ee3", "9f00aa00bb11")}  # fmt: skip
variants = st.fixed_dictionaries({name: st.sampled_from(values) for name, values in ARGUMENTS.items()})


def _with_variant(run: Run, variant: dict[str, Any], source: str) -> list[dict[str, Any]]:
    """A run's rows carrying its arguments as the log reader records them (sorted JSON)."""
    rows = _rows(run, source)
    for row in rows:
        row["variant"] = json.dumps(variant, sort_keys=True)
    return rows


def _reported_cells(rows: list[dict[str, Any]]) -> dict[tuple[Any, ...], tuple[float, float, int]]:
    """Table 3's cells of ``rows`` as `ccpt report` builds them: deduplicated, runs tagged (as_reported)."""
    deduped, _ = deduplicate(_frame(rows))
    return _cells(as_reported(deduped))


def _frame(rows: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame[["r_np", "r_hp", "r_mp", "r_hmp", "score"]] = frame[["r_np", "r_hp", "r_mp", "r_hmp", "score"]].astype(float)
    return frame


@SETTINGS
@given(st.sampled_from(METHODS), st.lists(st.tuples(variants, st.integers(0, 10_000)), min_size=2, max_size=4))
def test_reruns_differing_in_one_argument_are_rows_labelled_by_the_difference(
    method: str, reruns: list[tuple[dict[str, Any], int]]
) -> None:
    """Reruns of one model and method into one directory, differing in n, split, --limit, benchmark or dataset
    version: one row per distinct set of arguments, tagged with exactly the arguments that differ, each row the
    cells of that run alone; never one average or best-of-both."""
    reruns = list({json.dumps(v, sort_keys=True): (v, s) for v, s in reruns}.values())
    runs = [((MODELS[0], method, JUDGES[0], seed), variant) for variant, seed in reruns]
    union = _reported_cells([r for k, (run, v) in enumerate(runs) for r in _with_variant(run, v, f"log{k}.eval")])
    differ = [name for name in sorted(ARGUMENTS) if len({json.dumps(v[name]) for _, v in runs}) > 1]
    expected: dict[tuple[Any, ...], tuple[float, float, int]] = {}
    for run, variant in runs:
        tag = ", ".join(f"{name} {variant[name]}" for name in differ)
        for (key, task, metric), cell in _cells(_read([run])).items():
            kind, model, *rest = key
            expected[((kind, f"{model} [{tag}]" if len(runs) > 1 else model, *rest), task, metric)] = cell
    assert union == expected


@settings(SETTINGS, max_examples=8)
@given(runs, variants, st.integers(1, INSTANCES), st.floats(-0.3, 0.3))
def test_a_rejudge_of_some_instances_is_compared_on_those_instances(
    source_runs: list[Run], variant: dict[str, Any], kept: int, shift: float
) -> None:
    """`ccpt rejudge --limit N`: the source's runs are compared on the N instances re-judged, never its whole
    split against N. A judge scoring like the source's differs by 0 in every cell; one scoring every relevance
    `shift` higher differs by what the same instances give, and the instances left out are said."""
    source_runs = list({r[:2]: (*r[:2], JUDGES[0], r[3]) for r in source_runs}.values())  # one judge's runs
    source = [r for run in source_runs for r in _with_variant(run, variant, "source.csv")]
    ids = {f"ccpt_emergent:{i}" for i in range(kept)}
    same = [{**r, "judge": "other", "source": "rejudged.eval"} for r in source if r["instance"] in ids]
    frame = {"a": _frame(source), "b": _frame(same)}
    view = cross_judge(frame["a"], frame["b"], "a", "other")
    assert view.cells and all(c.difference == 0 for c in view.cells)
    assert (view.compared, view.left_out) == (len(source_runs) * kept, len(source_runs) * (INSTANCES - kept))
    said = f"both judges scored: {len(source_runs) * kept} over {len(source_runs)} run(s), {kept} per run; "
    assert (said in markdown(view)) == (kept < INSTANCES)  # before: the sum over runs was printed as "per run"
    moved = _frame(same)
    moved[["r_np", "r_hp", "r_mp"]] = (moved[["r_np", "r_hp", "r_mp"]] + shift).clip(0, 1)
    moved["r_hmp"] = moved[["r_hp", "r_mp"]].max(axis=1)
    moved["score"] = [Relevances(*r).score("emergent") for r in moved[["r_np", "r_hp", "r_mp"]].itertuples(False)]
    restricted = frame["a"][frame["a"]["instance"].isin(ids)]
    alone = cross_judge(restricted, moved, "a", "other")
    assert [c.difference for c in cross_judge(frame["a"], moved, "a", "other").cells] == [
        c.difference for c in alone.cells
    ]


def test_a_dataset_copy_with_other_content_is_another_dataset_version(ccpt_dir: Path, tmp_path: Path) -> None:
    """The pinned files give the pinned digest (the one benchmark.toml's hashes give); one changed cell, another."""
    pinned = benchmark().dataset_sha256
    assert load_dataset(ccpt_dir).sha256 == pinned
    for name in REQUIRED_FILES:
        (tmp_path / name).write_bytes((ccpt_dir / name).read_bytes())
    emergent = tmp_path / "ccpt_emergent.csv"
    emergent.write_text(emergent.read_text(encoding="utf-8").replace("red", "blue", 1), encoding="utf-8")
    assert load_dataset(tmp_path).sha256 not in ("", pinned)


def test_the_benchmark_metadata_is_one_file_shipped_and_agreeing_with_the_data(ccpt_dir: Path) -> None:
    """benchmark.toml: the pinned hashes are the data's (SHA256SUMS), its test sizes the splits', every version has
    a changelog entry, and the package data ships it."""
    meta = benchmark()
    sums = dict(line.split()[::-1] for line in (ccpt_dir / "SHA256SUMS").read_text().splitlines() if line.strip())
    assert {name: sums[name] for name in meta.sha256} == dict(meta.sha256) == dict(CHECKSUMS)
    dataset = load_dataset(ccpt_dir)
    sizes = {task: len(dataset.test(task)) for task in GENERATIVE_TASKS}
    assert sizes | {TYPE_PREDICTION: len(dataset.type_prediction_set())} == dict(meta.test_sizes)
    assert set(meta.changelog) == set(range(1, meta.version + 1))
    assert f"## Version {meta.version}" in (Path(__file__).parents[1] / "docs/benchmark-changelog.md").read_text()


def test_reruns_of_other_arguments_in_one_directory_are_rows_of_their_own(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The issue's reruns through `ccpt run`: --oracle-n 2 beside --oracle-n 5 and -T split=train beside the test
    split, in one --log-dir, are four rows tagged by the difference, each what its log gives alone (before: best-of-5
    printed for n 2, and test and train instances pooled). A smaller --limit into the directory is one line (before:
    the report covered the abandoned run's instances); a run short of its instances is one note."""
    from inspect_ai.log import read_eval_log, write_eval_log

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    runs = tmp_path / "runs"
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--limit", "3", "--seeds", "2", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none",
            "--log-dir", str(runs)]  # fmt: skip
    reruns = (
        ["--method", "base", "--method", "multi_oracle", "--oracle-n", "5"],
        ["--method", "multi_oracle", "--oracle-n", "2"],
        ["--method", "base", "-T", "split=train"],
    )
    for extra in reruns:
        assert main([*base, *extra]) == 0
    logs = sorted(runs.glob("*.eval"))
    assert len(logs) == 4
    header = read_eval_log(str(logs[0]), header_only=True).eval
    assert header.task_version == benchmark().version
    assert header.metadata["dataset_sha256"] == benchmark().dataset_sha256
    capsys.readouterr()
    together, _ = _report_json(capsys, str(runs), "--data-dir", str(ccpt_dir))
    alone: dict[tuple[str, str, str, str], float] = {}
    for log in logs:
        payload, _ = _report_json(capsys, str(log), "--data-dir", str(ccpt_dir))
        args = read_eval_log(str(log), header_only=True).eval.task_args
        tag = f"oracle_n {args['oracle_n']}" if args["method"] == "multi_oracle" else f"split {args['split']}"
        alone |= {(f"{m} [{tag}]", *rest): v for (m, *rest), v in _table3(payload).items()}
    assert _table3(together) == alone
    assert {k[0] for k in alone} == {f"ccpt-scripted/m [{t}]" for t in
                                     ("oracle_n 2", "oracle_n 5", "split test", "split train")}  # fmt: skip

    # A smaller --limit into the directory: Inspect would take the 3-instance run for it.
    assert main([*base[:-1], str(runs), "--method", "base", "--limit", "2"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "with --limit 3, not --limit 2: Inspect would take it for this run" in err[0], err
    # An interrupted run (its log holds 2 of its 3 instances) is named as short of what its command asked for.
    short = tmp_path / "short"
    short.mkdir()
    log = read_eval_log(str(logs[-1]))
    first = log.samples[0].id
    log.samples, log.status = [s for s in log.samples if s.id != first], "started"
    write_eval_log(log, str(short / logs[-1].name))
    payload, _ = _report_json(capsys, str(short), "--data-dir", str(ccpt_dir))
    said = [n for n in payload["notes"] if "fewer instances than their command asked for" in n]
    assert said == [f"runs covering fewer instances than their command asked for: {logs[-1].name} 2 of 3"]


def test_runs_over_other_concept_graphs_are_rows_of_their_own(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seventh hostile round: S.A. w/ ConceptNet over the default graph and over another graph file (`-T
    conceptnet=`) into one directory made one identity ("two runs claim to be one"), and a built index or the
    neighbourhood cache as default gave other numbers under the same arguments. The graph file's digest is part of
    the run's identity: another graph is another row; the default graph named by its path is the same run."""
    from inspect_ai.log import read_eval_log

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCPT_CONCEPTNET_DB", str(tmp_path / "no-index.sqlite"))  # the default: the cache file
    cache = ccpt_dir / "conceptnet_adjacent.json"
    small = tmp_path / "small.json"
    small.write_text(json.dumps({k: v[:1] for k, v in json.loads(cache.read_text(encoding="utf-8")).items()}))
    runs = tmp_path / "runs"
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--method", "sa_conceptnet", "--limit", "2", "--seeds", "1", "--data-dir", str(ccpt_dir),
            "--no-preflight", "--display", "none", "--log-dir", str(runs)]  # fmt: skip
    for extra in ([], ["-T", f"conceptnet={small}"], ["-T", f"conceptnet={cache}"]):
        assert main([*base, *extra]) == 0
    digests = {read_eval_log(str(log), header_only=True).eval.metadata["graph_sha256"] for log in runs.glob("*.eval")}
    assert digests == {hashlib.sha256(p.read_bytes()).hexdigest() for p in (cache, small)}
    capsys.readouterr()
    payload, err = _report_json(capsys, str(runs), "--data-dir", str(ccpt_dir))
    models = {model for model, *_ in _table3(payload)}
    assert models == {f"ccpt-scripted/m [graph {d[:12]}]" for d in digests}, models
    assert "repeats 2 row(s)" in err  # the default graph by its path: the same answers, counted once


def test_two_directories_of_one_judge_say_its_reply_format_once(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Seventh hostile round: the "Judge reply format" note was printed once per directory read, twice for two
    directories judged by one judge; the formats of every path read now make one note."""
    from ccpt.results import load_results

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--method", "base", "--limit", "1", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight",
            "--display", "none"]  # fmt: skip
    for name in ("a", "b"):
        assert main([*base, "--log-dir", str(tmp_path / name), "-M", f"vocabulary={len(name) + 2}"]) == 0
    notes = load_results([tmp_path / "a", tmp_path / "b"]).attrs["notes"]
    said = [n for n in notes if n.startswith("Judge reply format")]
    assert said == ["Judge reply format (JSON schema, JSON object or plain prompt, as the server took): "
                    "ccpt-scripted/judge: plain."], notes  # fmt: skip


@pytest.mark.parametrize("option", ["-M", "--judge-arg"])
def test_an_argument_spelled_as_text_or_number_is_one_run(
    option: str, ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eighth hostile round: `--judge-arg fail_every=4` and `fail_every='4'` (or `-M vocabulary=…`) are two task runs
    to Inspect, but their labels read alike: both runs' rows were pooled into one row with no line (6 answers of 3
    instances). Spelled apart, the arguments are one: the same answers are one run read twice, counted once."""
    from ccpt.results import load_results

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    name = "vocabulary" if option == "-M" else "fail_every"
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--method", "base", "--limit", "3", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight",
            "--display", "none", "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    for value in ("4", "'4'"):
        assert main([*base, option, f"{name}={value}"]) == 0
    frame = load_results(tmp_path / "logs")
    assert len(frame) == 3 and frame["variant"].nunique() == 1
    assert [w for w in frame.attrs["warnings"] if "repeats 3 row(s)" in w], frame.attrs["warnings"]


def test_an_argument_spelled_as_the_absent_word_is_told_apart(ccpt_dir: Path, tmp_path: Path, capsys: Any) -> None:
    """Eighth hostile round: `--judge-arg mood=unset` beside the same run without it: both labels read
    `mood unset`, so one Table-3 row held both runs (6 answers of 3 instances) with no line."""
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--method", "base", "--limit", "2", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight",
            "--display", "none", "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    for extra in ([], ["--judge-arg", "mood=unset"]):
        assert main([*base, *extra]) == 0
    capsys.readouterr()
    assert main(["report", str(tmp_path / "logs"), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    rows = {r["model"] for r in records if r["table"] == "table3" and r["method"] == "base"}
    assert rows == {'ccpt-scripted/m [--judge-arg mood "unset"]', "ccpt-scripted/m [--judge-arg mood unset]"}


def test_task3_runs_apart_only_in_the_judge_s_arguments_are_one_run(ccpt_dir: Path, tmp_path: Path) -> None:
    """Eighth hostile round: Task 3 is not judged, yet two of its runs apart only in `--judge-arg` were two runs, two
    Table 5s labelled by an argument of a judge they never called. They are one run read twice."""
    from ccpt.results import load_results

    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "type_prediction",
            "--limit", "4", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight", "--display", "none",
            "--log-dir", str(tmp_path / "logs")]  # fmt: skip
    for extra in ([], ["--judge-arg", "fail_every=3"]):
        assert main([*base, *extra]) == 0
    frame = load_results(tmp_path / "logs")
    assert len(frame) == 4 and "judge-arg" not in frame["variant"].iloc[0]
    assert [w for w in frame.attrs["warnings"] if "repeats 4 row(s)" in w], frame.attrs["warnings"]


def test_headers_and_credentials_given_to_a_model_or_judge_label_no_row(
    ccpt_dir: Path, tmp_path: Path, capsys: Any
) -> None:
    """Eighth hostile round: `-M default_headers={"Authorization": …}`, `--judge-arg authorization=…` or
    `credentials=…` were written into the run's variant, so into every report's row label and the tidy table."""
    logs, tidy = tmp_path / "logs", tmp_path / "t.csv"
    assert main(["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
                 "--method", "base", "--limit", "1", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight",
                 "--display", "none", "--log-dir", str(logs), "-M", 'default_headers={"Authorization": "Bearer sk-1"}',
                 "--judge-arg", "authorization=Bearer sk-2", "--judge-arg", "credentials=sk-3",
                 "--judge-arg", "Cookie=s=sk-4"]) == 0  # fmt: skip
    assert main(["report", str(logs), "--tidy", str(tidy)]) == 0
    assert "sk-" not in capsys.readouterr().out + tidy.read_text()


def test_rejudge_limit_compares_the_same_instances_under_both_judges(
    reference: Path, shared_data: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: Any
) -> None:
    """`ccpt rejudge --limit 2` of an authors' file: each source cell printed is the source's cell over the 2
    instances re-judged (before: over its 200, against 2), and the instances left out are said. Seventh hostile
    round: into an --out holding a `--limit 3` re-judge of it, the table was of 3 instances with no line."""
    from ccpt.results import load_results

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    source, data = reference / "pi_emergent_gpt-4o_naive.csv", shared_data / "ccpt"
    out = tmp_path / "rejudged"
    argv = ["rejudge", str(source), "--judge", "ccpt-scripted/judge", "--limit", "2", "--out", str(out),
            "--data-dir", str(data), "--no-preflight"]  # fmt: skip
    assert main([*argv[:5], "3", *argv[6:]]) == 0  # an earlier re-judge of more instances into the same --out
    capsys.readouterr()
    assert main(argv) == 0
    printed = capsys.readouterr().out
    assert "both judges scored: 2 over 1 run(s), 2 per run; 198 scored by one judge only are in no cell" in printed
    stored = load_results(source, load_dataset(data))
    same = stored[stored["instance"].isin(list(dict.fromkeys(stored["instance"]))[:2])]
    assert same["instance"].nunique() == 2
    cells = {(task, metric): s.mean for row in table3(same).rows for (task, metric), s in row.cells.items()}
    shown = {}
    for line in printed.splitlines():
        parts = [p.strip() for p in line.strip("|").split("|")]
        if len(parts) == 7 and parts[:3] == ["gpt-4o", "base", "pi_emergent"]:
            shown[parts[3]] = float(parts[4])
    names = {"R_H,M,P": "r_hmp", "R_N,P": "r_np", "E": "score"}
    assert shown == {name: round(cells[("pi_emergent", metric)], 1) for name, metric in names.items()}


def test_an_argument_a_rerun_was_not_given_is_unset_not_unrecorded() -> None:
    """Found by the second hostile round: `-M vocabulary=3` beside the same command without it tagged the other row
    "-M vocabulary unrecorded" though its log records every -M argument given (none); a --limit likewise."""
    from ccpt.results.identity import variant_tags

    cells = [{"benchmark": 2}, {"benchmark": 2, "-M vocabulary": "3"}, {"benchmark": 2, "limit": 8}]
    frame = pd.DataFrame({"model": "m", "method": "base", "variant": [json.dumps(c, sort_keys=True) for c in cells]})
    assert variant_tags(frame).tolist() == [
        "-M vocabulary unset, limit unset",
        "-M vocabulary 3, limit unset",
        "-M vocabulary unset, limit 8",
    ]
    older = pd.DataFrame({"model": "m", "method": "base", "variant": ['{"split": "test"}', '{"benchmark": 2}']})
    assert variant_tags(older).tolist() == ["benchmark unrecorded, split test", "benchmark 2, split unrecorded"]


def test_a_rejudged_row_is_told_apart_by_the_judge_its_answers_had() -> None:
    """Re-judged rows carry their source's variant and "re-judged from" (seen on the real server: two runs of one
    model under two judges, re-judged into one directory, claimed one identity and the report refused it). The tag
    names the origin only where it differs, and a file recording no arguments stays so: the authors' file beside
    its re-judged copy is "not re-judged", not "arguments unrecorded"."""
    from ccpt.results.identity import REJUDGED_FROM, variant_tags, with_argument

    run = json.dumps({"benchmark": 2, "limit": 2}, sort_keys=True)
    variants = [run, with_argument(run, REJUDGED_FROM, "a (plain)"), with_argument(run, REJUDGED_FROM, "b")]
    frame = pd.DataFrame({"model": "m", "method": "base", "variant": variants})
    assert variant_tags(frame).tolist() == ["not re-judged", "re-judged from a (plain)", "re-judged from b"]
    stored = pd.DataFrame(
        {"model": "gpt-4o", "method": "base", "variant": [None, with_argument(None, REJUDGED_FROM, "gpt-4o")]}
    )
    assert variant_tags(stored).tolist() == ["not re-judged", "re-judged from gpt-4o"]
    alone = pd.DataFrame({"model": "m", "method": "base", "variant": variants[1:2]})
    assert variant_tags(alone).tolist() == [""]  # one run: nothing to tell apart
    split = with_argument(run.replace('"limit": 2', '"limit": 8'), REJUDGED_FROM, "a (plain)")
    both = pd.DataFrame({"model": "m", "method": "base", "variant": [variants[1], split]})
    assert variant_tags(both).tolist() == ["limit 2", "limit 8"]  # one origin: the arguments alone


def test_runs_of_other_tasks_are_not_told_apart_by_their_arguments() -> None:
    """Seen on the docs' screenshot of `ccpt run` beside the stored files: the run's Table-3 Base row was labelled
    "[judge_retries 2, split test]" and its Task-3 Base row "[judge_retries unrecorded, split unrecorded]", because
    Task 3 takes neither argument. Runs of other tasks are other columns, not variants of one run."""
    from ccpt.results.identity import variant_tags

    generative = json.dumps({"benchmark": 2, "judge_retries": 2, "split": "test"}, sort_keys=True)
    frame = pd.DataFrame(
        {
            "task": ["pi_emergent", "type_prediction", "pi_emergent"],
            "model": "m",
            "method": ["base", "base", "gold"],
            "variant": [generative, json.dumps({"benchmark": 2}), json.dumps({"benchmark": 2})],
        }
    )
    assert variant_tags(frame).tolist() == ["", "", ""]
    again = pd.concat(
        [frame, frame.iloc[[0]].assign(variant=generative.replace('"test"', '"train"'))], ignore_index=True
    )
    assert variant_tags(again).tolist() == ["split test", "", "", "split train"]  # one task's two runs: told apart


def test_a_rerun_after_an_interruption_with_another_plain_model_argument_resumes_the_run(
    ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C, then the same command with another `-M latency` (it changes no number): the rerun's answers
    supersede the interrupted log's failed one, as for an identical rerun (5th hostile round: "two runs claim to be
    one", the report refused)."""
    from inspect_ai.log import read_eval_log, write_eval_log

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    logs = tmp_path / "logs"
    base = ["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_emergent",
            "--method", "base", "--limit", "2", "--seeds", "1", "--data-dir", str(ccpt_dir), "--no-preflight",
            "--display", "none", "--log-dir", str(logs)]  # fmt: skip
    assert main([*base, "-M", "latency=0"]) == 0
    (first,) = logs.glob("*.eval")
    capsys.readouterr()
    alone, _ = _report_json(capsys, str(logs))
    # What Ctrl-C leaves: a cancelled log whose last sample has no score.
    log = read_eval_log(str(first))
    log.status, log.samples[-1].scores = "cancelled", None
    write_eval_log(log, str(first))
    assert main([*base, "-M", "latency=0.001"]) == 0
    assert len(list(logs.glob("*.eval"))) == 2
    capsys.readouterr()
    both, _ = _report_json(capsys, str(logs))
    assert _table3(both) == _table3(alone)
    # Inspect records a log's creation to the second: a short run and its rerun started in the same second (as on
    # an idle machine) tie, and the interrupted log, listed last, won with its unscored sample. The file written
    # later is the newer log.
    (rerun,) = (p for p in logs.glob("*.eval") if p != first)
    log.eval.created = read_eval_log(str(rerun), header_only=True).eval.created
    write_eval_log(log, str(first))
    before = rerun.stat().st_mtime_ns - 10**9  # the interrupted log was last written before the rerun started
    os.utime(first, ns=(before, before))
    tied, _ = _report_json(capsys, str(logs))
    assert _table3(tied) == _table3(alone)


def test_compare_of_a_run_told_apart_by_its_arguments_names_its_runs() -> None:
    """Fifth hostile round: `compare --a m:multi_oracle` beside best-of-2 and best-of-5 runs of m (and m's Base)
    said "no method 'multi_oracle' in the results (methods: base (Base))": the runs are there, as `m [oracle_n 2]`."""
    from ccpt.errors import CcptError
    from ccpt.report.compare import compare_runs

    model = MODELS[1]
    rows = _rows((model, "base", JUDGES[0], 1), "base.eval")
    for n, seed in ((2, 2), (5, 3)):
        rows += _with_variant((model, "multi_oracle", JUDGES[0], seed), {"oracle_n": n}, f"n{n}.eval")
    frame = _frame(rows)
    with pytest.raises(CcptError) as error:
        compare_runs(frame, (model, "multi_oracle"), (model, "base"), n_resamples=40)
    assert error.value.message == f"{model}:multi_oracle is 2 runs told apart by their arguments"
    assert error.value.hint == f"name one: {model} [oracle_n 2]:multi_oracle, {model} [oracle_n 5]:multi_oracle"
    (found,) = compare_runs(frame, (f"{model} [oracle_n 5]", "multi_oracle"), (model, "base"), n_resamples=40)
    assert found.result.n == INSTANCES and found.a == f"{model} [oracle_n 5]:multi_oracle"
