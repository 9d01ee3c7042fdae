"""Judges are registered objects: a toy keyword-overlap judge, added in one file outside ccpt's source
(tests/plugins/toy_keyword_judge.py), runs through `ccpt run` (and its `--dry-run`), `ccpt rejudge`,
`ccpt judge-agreement` and `ccpt report`; its identity is stored in the logs as fields, and bumping its version
makes it another judge: two labelled rows, two agreement figures.

The toy module is registered the way a third-party package would be: a ``*.dist-info/entry_points.txt`` naming
it in the ``ccpt.judges`` group, on ``sys.path``. No ccpt source file is edited (CONTRIBUTING.md, "Adding a judge").
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import re
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ccpt import judges
from ccpt.cli import main
from ccpt.errors import CcptError
from ccpt.judges import JudgeIdentity
from ccpt.results import load_results

pytestmark = pytest.mark.shared_data

POINTS = "toy_keyword_judge-0.1.dist-info/entry_points.txt"
V1 = JudgeIdentity("ccpt-judge/keyword", version="1")


@pytest.fixture
def toy_judge(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The toy judge installed as a package would be: an entry point naming its module (on sys.path through
    conftest.py), found on sys.path."""
    site = tmp_path / "site"
    (site / POINTS).parent.mkdir(parents=True)
    (site / POINTS).parent.joinpath("METADATA").write_text(
        "Metadata-Version: 2.1\nName: toy-keyword-judge\nVersion: 0.1\n"
    )
    (site / POINTS).write_text("[ccpt.judges]\nkeyword = toy_keyword_judge:JUDGE\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "inspect-cache"))
    judges.registered.cache_clear()
    yield site
    for name in ("toy_keyword_judge", "toy_keyword_v2", "toy_bad"):
        sys.modules.pop(name, None)
    judges.registered.cache_clear()


def _bump(site: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Release version 2 of the toy judge: same name, same scores, another version (a new package release)."""
    (site / "toy_keyword_v2.py").write_text(
        "import dataclasses\nfrom toy_keyword_judge import JUDGE as V1\nJUDGE = dataclasses.replace(V1, version='2')\n"
    )
    (site / POINTS).write_text("[ccpt.judges]\nkeyword = toy_keyword_v2:JUDGE\n")
    judges.registered.cache_clear()
    from inspect_ai.model import _model

    monkeypatch.setattr(_model, "_models", {})  # a new process would load the new release: so does this one


def _overlap(concept: str, prop: str) -> float:
    from toy_keyword_judge import keyword_overlap

    return keyword_overlap([(concept, prop)])[0]


def _stored_identities(logs: Path) -> list[dict]:
    from inspect_ai.log import list_eval_logs, read_eval_log

    found = []
    for info in list_eval_logs(str(logs)):
        for sample in read_eval_log(info).samples or []:
            (score,) = sample.scores.values()
            found.append(score.metadata["ccpt"]["judge_identity"])
    return found


def test_a_judge_added_in_one_file_runs_rejudges_measures_and_reports(
    toy_judge: Path,
    ccpt_dir: Path,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    common = ["--model", "ccpt-scripted/solver", "--task", "pi_emergent", "--limit", "3", "--seeds", "2"]
    common += ["--data-dir", str(ccpt_dir), "-M", "vocabulary=9"]
    # --dry-run: the judge is its Inspect model, and its declared cost per pair prices it (never "unpriced").
    prices = tmp_path / "prices.toml"
    prices.write_text('"ccpt-scripted/solver" = { input = 1.0, output = 1.0 }\n')
    plan = ["run", *common, "--judge", "keyword", "--log-dir", str(tmp_path / "plan"), "--dry-run", "--format", "json"]
    assert main([*plan, "--prices", str(prices)]) == 0
    planned = json.loads(capsys.readouterr().out)
    assert planned["judge"] == "ccpt-judge/keyword" and planned["cost_usd"]["unpriced"] == []

    # ccpt run: every judged pair scored in-process by the toy, its identity stored in the log as fields.
    v1 = tmp_path / "v1"
    assert main(["run", *common, "--judge", "keyword", "--log-dir", str(v1)]) == 0
    capsys.readouterr()
    rows = load_results([v1])
    assert set(rows["judge"]) == {V1.key} == {"ccpt-judge/keyword@1"}
    assert {json.dumps(i, sort_keys=True) for i in _stored_identities(v1)} == {json.dumps(V1.fields(), sort_keys=True)}
    parsed = rows[rows["parse_ok"]]
    assert len(parsed) and all(
        r.r_np == pytest.approx(_overlap(r.combination, r.answer))
        and r.r_hp == pytest.approx(_overlap(r.head, r.answer))
        for r in parsed.itertuples()
    )

    # The report's Tokens and cost table prices the judge as the dry run does, by its declared cost per judged pair
    # (7th hostile round: a price list's entry priced the words it read, $0.0145 for a free judge).
    from ccpt.results.usage import load_prices, read_usage

    prices.write_text('"ccpt-judge/keyword" = { input = 5.0, output = 1.0 }\n')
    (judged,) = [row for row in read_usage([v1], load_prices(prices)) if row.role == "judge"]
    assert judged.calls > 0 and judged.input_tokens > 0 and judged.cost == 0.0

    # ccpt rejudge: another judge's answers re-judged by the toy, the same relevances as its own run's.
    scripted = tmp_path / "scripted"
    assert main(["run", *common, "--judge", "ccpt-scripted/judge", "--log-dir", str(scripted)]) == 0
    rejudged = tmp_path / "rejudged"
    assert main(["rejudge", str(scripted), "--judge", "keyword", "--out", str(rejudged)]) == 0
    capsys.readouterr()
    again = load_results([rejudged])
    assert set(again["judge"]) == {V1.key}
    mine = again[again["parse_ok"]].set_index(["instance", "seed"])["r_np"].sort_index()
    assert mine.to_dict() == pytest.approx(parsed.set_index(["instance", "seed"])["r_np"].sort_index().to_dict())

    # ccpt judge-agreement: measured and stored under its identity, then quoted by the report.
    agreement = ["judge-agreement", "--judge", "keyword", "--pairs", "test", "--n", "20", "--format", "json"]
    assert main([*agreement, "--data-dir", str(ccpt_dir)]) == 0
    measured = json.loads(capsys.readouterr().out)
    assert measured["judge"] == V1.key and measured["n"] == 60

    # Version 2: same scores, another judge. Its run reports beside version 1's as two labelled rows.
    _bump(toy_judge, monkeypatch)
    v2 = tmp_path / "v2"
    assert main(["run", *common, "--judge", "keyword", "--log-dir", str(v2)]) == 0
    capsys.readouterr()
    assert set(load_results([v2])["judge"]) == {"ccpt-judge/keyword@2"}
    assert main(["report", str(v1), str(v2), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cells = {(r["method"], r["judge"]) for r in report["records"] if r["table"] == "table3" and r["metric"] == "r_np"}
    assert {("base", V1.key), ("base", "ccpt-judge/keyword@2")} <= cells
    # The agreement note quotes version 1's measurement for version 1 only.
    note = report["judge"]
    assert f"{V1.key}: Pearson" in note
    assert "ccpt-judge/keyword@2: agreement with human ratings on the benchmark's test concepts not measured" in note
    assert main(["report", str(v1), str(v2)]) == 0
    table = capsys.readouterr().out
    assert "| Base · judge ccpt-judge/keyword@1 |" in table and "| Base · judge ccpt-judge/keyword@2 |" in table


def test_a_judge_argument_that_changes_scores_makes_another_row(
    toy_judge: Path, ccpt_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Seventh hostile round: a plug-in judge whose `load` takes an argument that changes its scores, but keeps
    one version. Two runs apart only in `--judge-arg` were refused ("two runs claim to be one"); re-judges of one
    run likewise. The judge's arguments are part of the run's identity: two rows, labelled by the argument."""
    (toy_judge / "toy_weighted.py").write_text(
        "from ccpt.judges import Judge, Scoring\n"
        "from toy_keyword_judge import keyword_overlap\n"
        "def load(variant, args):\n"
        "    weight = float(args.get('weight', 1))\n"
        "    return Scoring(lambda pairs: [weight * (1 + s) / 2 for s in keyword_overlap(pairs)], version='1')\n"
        "JUDGE = Judge('keyword', 'Weighted keyword overlap', load=load)\n"
    )
    (toy_judge / POINTS).write_text("[ccpt.judges]\nkeyword = toy_weighted:JUDGE\n")
    judges.registered.cache_clear()
    runs, rejudged = tmp_path / "runs", tmp_path / "rejudged"
    common = ["--model", "ccpt-scripted/solver", "--task", "pi_emergent", "--limit", "3", "--seeds", "1"]
    common += ["--data-dir", str(ccpt_dir), "--judge", "keyword", "--no-preflight", "--display", "none"]
    assert main(["run", *common, "--log-dir", str(runs)]) == 0
    for extra in ([], ["--judge-arg", "weight=0.5"]):  # one run's answers re-judged twice
        assert main(["rejudge", str(runs), "--judge", "keyword", "--out", str(rejudged), *extra]) == 0
    # Eighth hostile round: its table compared "ccpt-judge/keyword@1 − ccpt-judge/keyword@1", the argument unsaid.
    assert "under two judges: ccpt-judge/keyword@1 [--judge-arg weight 0.5] − ccpt-judge/keyword@1\n" in (
        capsys.readouterr().out
    )
    assert main(["run", *common, "--log-dir", str(runs), "--judge-arg", "weight=0.5"]) == 0
    capsys.readouterr()
    assert main(["report", str(runs), "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    cells = {r["model"]: r["mean"] for r in report["records"] if r["table"] == "table3" and r["metric"] == "r_np"}
    halved, whole = (cells[f"ccpt-scripted/solver [--judge-arg weight {value}]"] for value in ("0.5", "unset"))
    assert whole > 0 and halved == pytest.approx(whole / 2)
    rows = load_results([rejudged])
    assert set(rows.groupby("method")["variant"].nunique()) == {2}
    assert not rows.duplicated(["method", "instance", "seed", "variant"]).any()
    halves = rows.groupby(rows["variant"].str.contains("weight"))["r_np"].mean()
    assert halves[True] == pytest.approx(halves[False] / 2)
    # Its agreement is keyed by the judge's identity, which the argument is not part of: measured, not stored.
    agreement = ["judge-agreement", "--judge", "keyword", "--pairs", "test", "--n", "5", "--data-dir", str(ccpt_dir)]
    assert main([*agreement, "--judge-arg", "weight=0.5"]) == 0
    out, err = capsys.readouterr()
    assert "Pearson" in out and "not stored for reports: --judge-arg weight changes scores outside" in err
    from ccpt.judging.agreement import user_store

    assert not user_store().exists()


def test_judge_arguments_in_a_runs_identity_leave_out_transport_secrets_and_what_the_identity_records() -> None:
    """`calibrated` is the distilled judge's scale (`+raw` in its key): not said twice. Where the judge is reached,
    how long it waits and its key never label a row."""
    from ccpt.results.inspect_logs import scoring_arguments

    given = {"calibrated": False, "base_url": "http://x", "api_key": "k", "timeout": 9, "weight": 0.5}
    assert scoring_arguments("ccpt-distilled/default", given) == {"--judge-arg weight": 0.5}
    assert scoring_arguments("openai/gpt-4o", given) == {"--judge-arg calibrated": False, "--judge-arg weight": 0.5}


def test_a_bad_declaration_is_one_line_naming_its_entry_point(toy_judge: Path) -> None:
    cases = {
        "name='Key Word'": "malformed name",
        "label=' '": "has the label ' ': printable text on one line",
        "version=2": "declares version 2",
        "cost_per_pair=-1.0": "declares cost_per_pair=-1.0",
        "cost_per_pair=float('nan')": "declares cost_per_pair=nan",
        "cost_per_pair=1e308": "declares cost_per_pair=1e+308: a number in [0, 1,000,000]",  # was "Cost: $inf."
        "score=lambda pairs: [1.5]": "as [1.5]: one relevance in [0, 1]",
        "score=lambda pairs: 1 / 0": "score raises ZeroDivisionError",
        "score=None": "declares neither a callable score nor load",
        # 7th hostile round: a version or label spelling another judge's key, a model that is not its own, a dict.
        "version='1+raw'": "declares version '1+raw'",
        "version='1 (expected)'": "declares version '1 (expected)'",
        "label='Keyword\\noverlap'": "printable text on one line",
        "model='openai/gpt-4o'": "declares model 'openai/gpt-4o': None, or ccpt-judge/keyword[/VARIANT]",
        "model='ccpt-judge/keywords'": "declares model 'ccpt-judge/keywords'",
        "score=lambda pairs: {0: 0.7}": "score gives {0: 0.7} for 1 pair(s)",
        "check=3": "declares a check that is not callable",
        "recorded_args='weight'": "declares recorded_args='weight': a frozenset of argument names",
    }
    for change, problem in cases.items():
        (toy_judge / "toy_bad.py").write_text(
            f"import dataclasses\nfrom toy_keyword_judge import JUDGE\nJUDGE = dataclasses.replace(JUDGE, {change})\n"
        )
        (toy_judge / POINTS).write_text("[ccpt.judges]\nbad = toy_bad:JUDGE\n")
        sys.modules.pop("toy_bad", None)
        judges.registered.cache_clear()
        with pytest.raises(CcptError, match=r"entry point 'toy_bad:JUDGE' \(ccpt.judges\)") as caught:
            judges.registered()
        assert problem in caught.value.message and "\n" not in caught.value.message
    (toy_judge / POINTS).write_text("[ccpt.judges]\nbad = toy_keyword_v2:DISTILLED\n")
    (toy_judge / "toy_keyword_v2.py").write_text("from ccpt.judges import distilled\nDISTILLED = distilled.JUDGE\n")
    judges.registered.cache_clear()
    assert judges.get("distilled") is judges.BUILTIN[0]  # the same object registered twice is no clash


def test_a_plugins_runtime_answers_are_checked_as_its_declaration(toy_judge: Path) -> None:
    """What a registered judge's score and load give at run time goes through the registration's checks: a dict
    (its keys read as relevances scored every pair 0), a load giving no Scoring, or a version spelling another key."""
    from ccpt.judges import Scoring
    from ccpt.results.paper_scores import score_pairs

    keyword = judges.get("keyword")
    assert keyword is not None
    flaky = dataclasses.replace(keyword, score=lambda pairs: {0: 0.7})
    with pytest.raises(CcptError, match=r"judge 'keyword': score gives \{0: 0.7\} for 1 pair"):
        judges.scored(flaky.name, flaky.score, [("a peeled apple", "white")])
    # `ccpt judge paper-scores`: True and "0.5" were stored as 1.0 and 0.5; None (a failure) is left unscored.
    pairs = [("a", "b"), ("c", "d"), ("e", "f")]
    assert score_pairs(pairs, lambda ps: [0.25, None, 1][: len(ps)]) == {("a", "b"): 0.25, ("e", "f"): 1.0}
    for bad in (True, "0.5", float("nan")):
        with pytest.raises(CcptError, match=r"gave .* for \('a', 'b'\): not a relevance in \[0, 1\]"):
            score_pairs(pairs[:1], lambda ps, bad=bad: [bad])
    for scoring, problem in [
        (None, "load returns None, not a ccpt.judges.Scoring"),
        (Scoring(keyword.score, "2+raw"), "load gives version '2+raw'"),
        (Scoring(keyword.score, "2", "raw (expected)"), "scale 'raw (expected)'"),
    ]:
        loader = dataclasses.replace(keyword, score=None, load=lambda variant, args, s=scoring: s)
        with pytest.raises(CcptError, match=re.escape(problem)):
            loader.ready()


@pytest.mark.parametrize(
    ("judge", "line"),
    [
        (["--judge", "ccpt-judge/nonexistent"], "--judge ccpt-judge/nonexistent: no judge of that name is registered"),
        (["--judge", "ccpt-judge/keyword/v2"], "judge 'keyword' takes no model arguments or variant (variant 'v2')"),
        (["--judge", "keyword", "--judge-arg", "x=1"], "judge 'keyword' takes no model arguments or variant (x)"),
        # Seventh hostile round: the distilled judge's head file was first read when the run started.
        (["--judge", "ccpt-distilled/no-such-head.json"], "ccpt-distilled: head no-such-head.json: file not found"),
        (["--judge", "distilled", "--judge-arg", "calibrated=maybe"], "calibrated must be true or false"),
        (["--judge", "distilled", "--judge-arg", "temperature=0"], "unknown model argument(s) temperature"),
    ],
)
def test_a_dry_run_refuses_a_declared_judge_no_run_could_start(
    toy_judge: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], judge: list[str], line: str
) -> None:
    """Seventh hostile round: the dry run planned (and priced by tokens) judge calls to an unregistered judge or to a
    judge given arguments it takes none of; the run itself then failed at its first step."""
    argv = ["run", "--model", "ccpt-scripted/solver", "--task", "pi_emergent", "--limit", "2", "--dry-run"]
    assert main([*argv, *judge, "--log-dir", str(tmp_path / "logs")]) == 2
    err = capsys.readouterr().err.strip()
    assert line in err and len(err.splitlines()) == 1, err


@given(
    st.lists(st.sampled_from(["1", "1.0", "release-2026.1", "release-2026.2", "4d1ef41822ad86e5", None]), min_size=2),
    st.sampled_from([None, "raw"]),
    st.sampled_from([None, "json_schema", "plain"]),
    st.sampled_from(["text", "expected"]),
)
def test_identities_a_field_apart_have_keys_apart(
    versions: list[str | None], scale: str | None, reply_format: str | None, mode: str
) -> None:
    """Two judges with one identity field apart never pool: their keys differ (a declared version is kept whole;
    'release-2026.1' and '…2' were both 'release-2026'), and each key reads back from its stored fields."""
    for a, b in itertools.combinations(set(versions), 2):
        one = JudgeIdentity("ccpt-judge/keyword", a, scale, reply_format, mode)
        assert one.key != replace(one, version=b).key
        for field, other in (
            ("scale", "raw" if scale is None else None),
            ("mode", "expected" if mode == "text" else "text"),
        ):
            assert one.key != replace(one, **{field: other}).key
        assert JudgeIdentity.from_fields(json.loads(json.dumps(one.fields()))) == one


def test_identity_key_and_fields_round_trip() -> None:
    distilled = JudgeIdentity("ccpt-distilled/default", version="4d1ef41822ad86e5", scale="raw", mode="expected")
    assert distilled.key == "ccpt-distilled/default@4d1ef41822ad+raw (expected)"
    llm = JudgeIdentity("openai/gpt-4o", reply_format="json_schema")
    assert llm.key == "openai/gpt-4o (json_schema)" and llm.scored.key == "openai/gpt-4o"
    for identity in (distilled, llm, V1):
        assert JudgeIdentity.from_fields(json.loads(json.dumps(identity.fields()))) == identity
    assert JudgeIdentity.from_fields({"name": 3}) is None and JudgeIdentity.from_fields("openai/gpt-4o") is None
    # A stored field spelling another key's separators, or of another type, is no identity (the log is set aside).
    for forged in ({"version": "1+raw"}, {"version": "1 (expected)"}, {"scale": 7}, {"mode": "text, expected"}):
        assert JudgeIdentity.from_fields({"name": "ccpt-judge/keyword", **forged}) is None
    # The one legacy reader: an older log's distilled judge named its weights in its base URL.
    old = JudgeIdentity.legacy(
        "ccpt-distilled/default", "head-sha256:813ec7b5ca60aa+raw;weights-sha256:x", "plain", "text"
    )
    assert old.key == "ccpt-distilled/default@813ec7b5ca60+raw"
