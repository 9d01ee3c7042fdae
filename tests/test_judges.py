"""Judges are registered objects: a toy keyword-overlap judge, added in one file outside ccpt's source
(tests/plugins/toy_keyword_judge.py), runs through `ccpt run` (and its `--dry-run`), `ccpt rejudge`,
`ccpt judge-agreement` and `ccpt report`; its identity is stored in the logs as fields, and bumping its version
makes it another judge: two labelled rows, two agreement figures.

The toy module is registered the way a third-party package would be: a ``*.dist-info/entry_points.txt`` naming
it in the ``ccpt.judges`` group, on ``sys.path``. No ccpt source file is edited (CONTRIBUTING.md, "Adding a judge").
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

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


def test_a_bad_declaration_is_one_line_naming_its_entry_point(toy_judge: Path) -> None:
    cases = {
        "name='Key Word'": "malformed name",
        "label=' '": "has no label",
        "version=2": "declares version 2",
        "cost_per_pair=-1.0": "declares cost_per_pair=-1.0",
        "cost_per_pair=float('nan')": "declares cost_per_pair=nan",
        "cost_per_pair=1e308": "declares cost_per_pair=1e+308: a number in [0, 1,000,000]",  # was "Cost: $inf."
        "score=lambda pairs: [1.5]": "as [1.5]: one relevance in [0, 1]",
        "score=lambda pairs: 1 / 0": "score raises ZeroDivisionError",
        "score=None": "declares neither a callable score nor load",
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


def test_identity_key_and_fields_round_trip() -> None:
    distilled = JudgeIdentity("ccpt-distilled/default", version="4d1ef41822ad86e5", scale="raw", mode="expected")
    assert distilled.key == "ccpt-distilled/default@4d1ef41822ad+raw (expected)"
    llm = JudgeIdentity("openai/gpt-4o", reply_format="json_schema")
    assert llm.key == "openai/gpt-4o (json_schema)" and llm.scored.key == "openai/gpt-4o"
    for identity in (distilled, llm, V1):
        assert JudgeIdentity.from_fields(json.loads(json.dumps(identity.fields()))) == identity
    assert JudgeIdentity.from_fields({"name": 3}) is None and JudgeIdentity.from_fields("openai/gpt-4o") is None
    # The one legacy reader: an older log's distilled judge named its weights in its base URL.
    old = JudgeIdentity.legacy(
        "ccpt-distilled/default", "head-sha256:813ec7b5ca60aa+raw;weights-sha256:x", "plain", "text"
    )
    assert old.key == "ccpt-distilled/default@813ec7b5ca60+raw"
