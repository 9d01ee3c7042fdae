"""ccpt.results: the authors' CSVs and real Inspect logs into the tidy table."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd
import pytest

from ccpt.errors import DataError
from ccpt.results import COLUMNS, export, from_inspect_logs, from_reference_csv, load_results


@pytest.fixture(scope="module")
def reference(reference_dir: Path, dataset) -> pd.DataFrame:
    return load_results(sorted(reference_dir.glob("*.csv")), dataset)


def test_reference_files_recognised_from_columns(reference: pd.DataFrame) -> None:
    # (The Spreading Activation files are checked in test_authors_sa.py.)
    plain = reference[reference["method_raw"].isin(["naive", "multi"])]
    sizes = plain.groupby(["task", "model", "method"]).size().to_dict()
    assert sizes == {
        ("npc_emergent", "gpt-4o", "base"): 167 * 3,
        ("pi_canceled", "gpt-4o", "base"): 167 * 3,
        ("pi_emergent", "gpt-4o", "base"): 200 * 3,
        ("pi_emergent", "gpt-4o", "multi_oracle"): 200 * 3 * 5,
        ("type_prediction", "gpt-4o", "base"): 1000,
    }
    assert list(reference.columns) == list(COLUMNS)
    assert set(reference["method_raw"]) == {
        "naive",
        "multi",
        "sa-llm",
        "sa-conceptnet",
        "sa-llm&conceptnet",
        "sa-nf-conceptnet",
    }


def test_reference_instance_ids_are_dataset_ids(reference: pd.DataFrame, dataset) -> None:
    pi = reference[(reference["task"] == "pi_emergent") & (reference["method"] == "base")]
    assert set(pi["instance"]) == {r.id for r in dataset.test("pi_emergent")}
    first = pi[pi["instance"] == "ccpt_emergent:0"].iloc[0]
    assert first["answer"] == "stranded" and first["answer_raw"] == '{"property": "stranded"}'


def test_recomputed_scores_equal_the_authors_stored_ones(reference_dir: Path, reference: pd.DataFrame) -> None:
    # The authors' own emergence / cancellation columns, recomputed here through ccpt.scoring.
    for name, task, field in (
        ("pi_emergent_gpt-4o_naive.csv", "pi_emergent", "emergence"),
        ("pi_canceled_gpt-4o_naive.csv", "pi_canceled", "cancellation"),
        ("npc_emergent_gpt-4o_naive.csv", "npc_emergent", "emergence"),
    ):
        raw = pd.read_csv(reference_dir / name)
        ours = reference[(reference["task"] == task) & (reference["seed"] == 1) & (reference["method"] == "base")][
            "score"
        ].to_numpy()
        assert ours == pytest.approx(raw[f"gpt-4o_naive_1_{field}"].to_numpy())


def test_npc_head_relevance_comes_from_the_dataset_judge(reference: pd.DataFrame, dataset) -> None:
    npc = reference[reference["task"] == "npc_emergent"].iloc[0]
    record = next(r for r in dataset.test("npc_emergent") if r.id == npc["instance"])
    assert npc["r_hp"] == pytest.approx(record.judge_head)
    assert npc["answer"] == "old lettuce" and npc["answer_modifier"] == "old"


def test_refusal_is_flagged_not_hidden(reference: pd.DataFrame) -> None:
    # Base and Multi-Oracle files (the SA files' own four are in test_authors_sa.py)
    plain = reference[reference["method_raw"].isin(["naive", "multi"])]
    bad = plain[plain["parse_ok"] != True]  # noqa: E712
    assert len(bad) == 1 and "sorry" in bad.iloc[0]["answer_raw"]


def test_without_dataset_ids_are_row_positions_with_a_note(reference_dir: Path) -> None:
    frame = from_reference_csv(reference_dir / "pi_canceled_gpt-4o_naive.csv")
    assert frame["instance"].iloc[0] == "pi_canceled:row0"
    assert any("row positions" in note for note in frame.attrs["notes"])


def test_foreign_csv_rejected_naming_missing_columns(tmp_path: Path) -> None:
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("a,b\n1,2\n")
    with pytest.raises(DataError, match="gpt-4o_naive_0_generated_"):
        from_reference_csv(foreign)
    malformed = tmp_path / "malformed.csv"
    malformed.write_text(
        "combination,root,property,m_naive_0_generated_,m_naive_0_property,m_naive_0_combination_relevance,"
        "m_naive_0_root_relevance,m_naive_0_modifier_relevance,meta.m_emergence\n"
        'a cat,cat,soft,"[\'{""property"": ""x""}\']",x,0.1,0.1,0.1,0.0\n'
    )
    with pytest.raises(DataError, match=r"missing column.*modifier"):
        from_reference_csv(malformed)


def test_export_round_trip(tmp_path: Path, reference: pd.DataFrame) -> None:
    small = reference.head(20)
    back = pd.read_parquet(export(small, tmp_path / "t.parquet"))
    assert back["score"].tolist() == pytest.approx(small["score"].tolist())
    assert pd.read_csv(export(small, tmp_path / "t.csv")).shape == small.shape


# ----------------------------------------------------------------------------------- real Inspect logs


def _write_log(
    log_dir: Path, first: dict[str, Any] | None = None, shared_changes: dict[str, Any] | None = None
) -> None:
    """A log of a stand-in ccpt scorer; ``first`` changes the first answer's record, ``shared_changes`` the shared
    keys (None removes a key)."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.model import ModelAPI, ModelOutput, modelapi
    from inspect_ai.scorer import Score, mean, scorer
    from inspect_ai.solver import generate

    @modelapi(name="ccpt-test-fake")
    def _fake():  # registered for this test only
        class Fake(ModelAPI):
            async def generate(self, input, tools, tool_choice, config):
                return ModelOutput.from_content(model=self.model_name, content='{"property": "wet"}')

        return Fake

    @scorer(metrics=[mean()])
    def fake_judge():
        async def score(state, target):
            instance = state.sample_id
            shared = {
                "task": "pi_emergent",
                "method": "multi_oracle",
                "instance": f"ccpt_emergent:{instance}",
                "combination": "a cat in the rain",
                "head": "cat",
                "modifier": "rain",
                "property": "wet",
                "judge": "fake",
            }
            for key, value in (shared_changes or {}).items():
                shared.pop(key) if value is None else shared.__setitem__(key, value)
            samples = [
                {
                    "sample": 0,
                    "answer_raw": state.output.completion,
                    "answer": "wet",
                    "parse_ok": True,
                    "r_np": 0.9,
                    "r_hp": 0.1,
                    "r_mp": 0.8,
                    **(first or {}),
                },
                {
                    "sample": 1,
                    "answer_raw": "<script>alert(1)</script>",
                    "answer": None,
                    "parse_ok": False,
                    "parse_error": "no JSON object",
                    "r_np": None,
                    "r_hp": None,
                    "r_mp": None,
                },
            ]
            return Score(value=1.0, metadata={"ccpt": {**shared, "samples": samples}})

        return score

    task = Task(dataset=[Sample(input="q", id=1), Sample(input="q", id=2)], solver=generate(), scorer=fake_judge())
    eval(task, model="ccpt-test-fake/x", epochs=2, log_dir=str(log_dir), display="none")


def test_inspect_log_multi_oracle_shape(tmp_path: Path) -> None:
    _write_log(tmp_path)
    frame = from_inspect_logs(tmp_path)
    assert len(frame) == 2 * 2 * 2  # instances × epochs × samples
    assert sorted(frame["seed"].unique()) == [0, 1]  # epoch − 1
    assert set(frame["model"]) == {"ccpt-test-fake/x"}
    ok = frame[frame["sample"] == 0].iloc[0]
    assert ok["r_hmp"] == pytest.approx(0.8) and ok["score"] == pytest.approx(0.1)
    failed = frame[frame["sample"] == 1]
    assert failed["score"].isna().all() and (failed["parse_ok"] == False).all()  # noqa: E712


def test_one_log_reader_one_newest_log_rule(tmp_path: Path) -> None:
    """The same run written twice into one directory: the reader gives both logs oldest first under one run key
    (a broken file named, not fatal), the tidy table counts each answer once, and the token accounting each call
    made once: both writes made their calls, and a copy of a log makes none."""
    from ccpt.results.inspect_logs import read_logs, run_key
    from ccpt.results.usage import read_usage

    _write_log(tmp_path)
    _write_log(tmp_path)
    (tmp_path / "broken.eval").write_bytes(b"PK\x03\x04 cut short")
    logs, unreadable = read_logs([tmp_path])
    assert [bad.path for bad in unreadable] == [str(tmp_path / "broken.eval")]
    assert len(logs) == 2 and run_key(logs[0]) == run_key(logs[1])
    assert str(logs[0].eval.created) <= str(logs[1].eval.created)
    frame = from_inspect_logs(tmp_path)
    newest = Path(str(logs[1].location).replace("file://", "")).name
    assert len(frame) == 2 * 2 * 2 and set(frame["source"]) == {newest}  # instances × epochs × samples, once
    (usage,) = read_usage([tmp_path])
    assert (usage.model, usage.role, usage.calls) == ("ccpt-test-fake/x", "solver", 2 * 2 * 2)  # × epochs × writes
    (tmp_path / f"copy-{newest}").write_bytes((tmp_path / newest).read_bytes())
    assert read_usage([tmp_path])[0].calls == 2 * 2 * 2


def _renamed_copy(source: Path, target: Path, model: str) -> None:
    """The authors' GPT-4o file under another model's name: per-run columns renamed, dataset columns kept."""
    frame = pd.read_csv(source)
    frame.columns = [c if c.startswith("meta.") else c.replace("gpt-4o_", f"{model}_", 1) for c in frame.columns]
    frame.to_csv(target, index=False)


@pytest.mark.parametrize(
    "model",
    ["Meta-Llama-3.1-70B-Instruct", "Qwen2.5-72B-Instruct", "qwen2.5:72b", "meta-llama/Llama 3.1", "meta.llama3-1"],
)
def test_reference_files_of_any_model_name(reference_dir: Path, tmp_path: Path, dataset, model: str) -> None:
    safe = model.replace("/", "_")
    for task in ("pi_emergent", "npc_emergent"):
        _renamed_copy(reference_dir / f"{task}_gpt-4o_naive.csv", tmp_path / f"{task}_{safe}_naive.csv", model)
    _renamed_copy(reference_dir / "tp_gpt-4o_naive.csv", tmp_path / f"tp_{safe}_naive.csv", model)
    frame = load_results(sorted(tmp_path.glob("*.csv")), dataset)
    original = load_results(
        [reference_dir / f"{t}_gpt-4o_naive.csv" for t in ("npc_emergent", "pi_emergent", "tp")], dataset
    )
    assert set(frame["model"]) == {model}
    assert set(frame["protocol"]) == {"as-run"}
    # The same numbers as the GPT-4o file they were copied from: only the name changed.
    assert (
        frame.groupby(["task", "method", "seed"]).size().to_dict()
        == original.groupby(["task", "method", "seed"]).size().to_dict()
    )
    pd.testing.assert_series_equal(frame["score"], original["score"])


def test_cli_report_on_a_dotted_model_file(
    reference_dir: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from ccpt.cli import main

    name = "Meta-Llama-3.1-70B-Instruct"
    target = tmp_path / f"pi_emergent_{name}_naive.csv"
    _renamed_copy(reference_dir / "pi_emergent_gpt-4o_naive.csv", target, name)
    assert main(["report", str(target), "--stat", "paper", "--data-dir", str(ccpt_dir)]) == 0
    out = capsys.readouterr().out
    base = next(line for line in out.splitlines() if name in line and "| Base |" in line)
    # The paper's GPT-4o PI-emergent Base numbers, now under the renamed model.
    assert [c.strip() for c in base.strip().strip("|").split("|")][2:5] == ["44.1 ± 0.6", "83.3 ± 0.4", "40.8 ± 0.7"]
    assert "as-run" in out  # the report names the protocol


# ------------------------------------------------------------------ what a results directory may also hold


def test_a_relevance_out_of_range_in_a_log_is_set_aside_and_counted(tmp_path: Path) -> None:
    """The issue's case: a per-sample r_np of 7.0 gave R_N,P 300.0 with 0 invalid cells. The tidy-table schema now
    sets it aside (never used), counts it in the sample's invalid_cells, and recomputes the score without it."""
    _write_log(tmp_path, first={"r_np": 7.0})
    frame = from_inspect_logs(tmp_path)
    bad = frame[frame["sample"] == 0]
    assert len(bad) == 4 and bad["r_np"].isna().all() and bad["score"].isna().all()
    assert bad["invalid_cells"].tolist() == [1, 1, 1, 1]
    assert bad["r_hmp"].tolist() == pytest.approx([0.8] * 4)  # the valid relevances are kept
    (note,) = [n for n in frame.attrs["notes"] if "invalid cell" in n]
    assert "4 invalid cells set aside" in note and "column 'r_np': should be less than or equal to 1 (got 7.0)" in note


def test_a_log_record_missing_its_instance_is_named_and_skipped(tmp_path: Path) -> None:
    """A record without its instance cannot be placed (before: two instances collapsed into one, silently)."""
    _write_log(tmp_path / "good")
    _write_log(tmp_path / "bad", shared_changes={"instance": None})
    frame = from_inspect_logs(tmp_path)
    assert len(frame) == 2 * 2 * 2  # the good log, whole
    (skipped,) = frame.attrs["unreadable"]
    assert "/bad/" in skipped.path and skipped.reason == "row 0, column 'instance': empty (got None)"
    with pytest.raises(DataError, match=r"no readable Inspect logs: .*column 'instance': empty"):
        from_inspect_logs(tmp_path / "bad")


def _foreign_log(log_dir: Path) -> Path:
    """A log of another benchmark's task, run by Inspect's mock model."""
    from inspect_ai import Task, eval
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import match
    from inspect_ai.solver import generate

    task = Task(name="hello", dataset=[Sample(input="Say hi", target="hi", id=1)], solver=generate(), scorer=match())
    (log,) = eval(task, model="mockllm/model", log_dir=str(log_dir), display="none")
    return Path(str(log.location).replace("file://", ""))


def test_a_foreign_log_and_non_regular_files_are_skipped_and_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a non-ccpt log gave `internal error: KeyError: 'nan'` (in `ccpt report` and at the end of `ccpt run`),
    and a FIFO made `ccpt report` hang. Now each is skipped and named; the ccpt log is reported, its tokens alone."""
    import os

    from ccpt.cli import main
    from ccpt.results.usage import read_usage

    _write_log(tmp_path)
    foreign = _foreign_log(tmp_path)
    os.mkfifo(tmp_path / "pipe.csv")
    os.mkfifo(tmp_path / "pipe.eval")
    frame = load_results(tmp_path)
    assert len(frame) == 2 * 2 * 2 and set(frame["model"]) == {"ccpt-test-fake/x"}
    reasons = {Path(u.path).name: u.reason for u in frame.attrs["unreadable"]}
    assert reasons == {
        foreign.name: "not a ccpt log (task 'hello')",
        "pipe.csv": "not a regular file (skipped)",
        "pipe.eval": "not a regular file (skipped)",
    }
    assert [u.model for u in read_usage([tmp_path])] == ["ccpt-test-fake/x"]
    assert main(["report", str(tmp_path)]) == 0
    out, err = capsys.readouterr()
    assert "internal error" not in err and "not a ccpt log (task 'hello')" in err and "pipe.eval" in err
    assert "| ccpt-test-fake/x | Multi-Oracle |" in out
    # `ccpt compare` names them too (before: skipped without a word), whatever it makes of the runs it has.
    main(["compare", str(tmp_path), "--a", "ccpt-test-fake/x:multi_oracle", "--b", "ccpt-test-fake/x:multi_oracle"])
    err = capsys.readouterr().err
    assert "internal error" not in err and "not a ccpt log (task 'hello')" in err and "pipe.eval" in err, err


def test_a_finished_log_that_answered_otherwise_than_its_runs_newest_log_is_named(tmp_path: Path) -> None:
    """Two finished logs of one task run: the newest is the run (a resumed run copies finished answers and redoes
    failed ones). An older log that answered a sample otherwise is another run's log under this run's identity (a
    copy from another server): its replaced rows are counted and both logs named, not passed over as repeats."""
    _write_log(tmp_path)
    _write_log(tmp_path)  # the same answers again: a plain repeat
    frame = from_inspect_logs(tmp_path)
    assert len(frame) == 2 * 2 * 2 and not any("replaced" in n for n in frame.attrs["notes"])
    _write_log(tmp_path, first={"r_np": 0.25})  # the newest log answers one record otherwise
    frame = from_inspect_logs(tmp_path)
    assert len(frame) == 2 * 2 * 2
    (note,) = [n for n in frame.attrs["notes"] if "replaced" in n]
    from ccpt.results.inspect_logs import read_logs

    newest = Path(str(read_logs([tmp_path]).logs[-1].location).replace("file://", "")).name  # by creation time
    assert "older answers the newest log replaced" in note and f"(kept: {newest})" in note, note


def test_an_attempt_inspect_retried_is_superseded_by_the_run_it_belongs_to() -> None:
    """Real logs (tests/data/retried-sa-run, `ccpt run --model gguf/qwen2.5-0.5b --protocol as-run --method sa_llm
    --limit 2 --seeds 1` on a loaded machine): the first two attempts timed out on every sample, Inspect's eval set
    retried the task run, the third finished. Before, the failed attempts' rows were another run: no sample scored,
    so no judge identity stored (read back as "ccpt-distilled/default (plain)"), and no sa_filter (an SA run's
    scored rows have True); the report showed two rows, one of 2 failed samples."""
    frame = from_inspect_logs(Path(__file__).parent / "data" / "retried-sa-run")
    assert len(frame) == 2 and frame["parse_error"].isna().all(), frame[["instance", "parse_error", "source"]]
    assert set(frame["judge"]) == {"ccpt-distilled/default@4d1ef41822ad"} and set(frame["sa_filter"]) == {True}
    assert any("older logs of the same run were ignored" in note for note in frame.attrs.get("notes", [])), frame.attrs
