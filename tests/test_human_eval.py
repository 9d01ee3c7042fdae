"""Human evaluation sheets: export → fill → import → judge / Table 4, on real files."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
import pytest

from ccpt.errors import DataError
from ccpt.human.sheets import (
    export_rating_sheets,
    export_solver_sheet,
    human_judge_report,
    import_solver_sheets,
    judge_answers,
    rating_agreement,
    read_ratings,
)
from ccpt.report import table5
from ccpt.results import load_results


def test_solver_sheet_round_trip_and_judging(dataset, tmp_path: Path) -> None:
    csv_path, html_path = export_solver_sheet(dataset, "pi_emergent", tmp_path, n=5, seed=3)
    sheet = pd.read_csv(csv_path, keep_default_na=False)
    assert len(sheet) == 5 and (sheet["answer"] == "").all()
    assert "that '" in sheet["question"].iloc[0] and "doesn't have?" in sheet["question"].iloc[0]
    assert "<pre>" in html_path.read_text()
    sheet.loc[0, "answer"] = "<b>wet</b>"
    sheet.loc[1:, "answer"] = "fragile"
    sheet.loc[4, "answer"] = ""
    sheet.to_csv(csv_path, index=False)
    rows = import_solver_sheets([csv_path], dataset)
    assert set(rows["model"]) == {"human"} and rows["parse_ok"].tolist() == [True, True, True, True, False]

    async def judge(concept: str, prop: str) -> float | None:  # any callable; async works too
        return None if concept == rows["head"].iloc[1] else 0.5 if concept == rows["combination"].iloc[0] else 0.2

    judged = judge_answers(rows, judge)
    assert judged["score"].iloc[0] == pytest.approx(0.3)  # E = 0.5 − max(0.2, 0.2)
    assert judged["judge_failures"].iloc[1] == 1 and pd.isna(judged["score"].iloc[1])
    assert pd.isna(judged["score"].iloc[4])


def test_solver_sheet_errors_name_the_problem(dataset, tmp_path: Path) -> None:
    bad = tmp_path / "bad.csv"
    bad.write_text("id,task\nx,pi_emergent\n")
    with pytest.raises(DataError, match=r"missing column.*answer"):
        import_solver_sheets([bad], dataset)
    bad.write_text("id,task,answer\nccpt_emergent:999999,pi_emergent,wet\n")
    with pytest.raises(DataError, match="unknown id"):
        import_solver_sheets([bad], dataset)


def test_a_solver_sheet_whose_question_was_edited_is_refused(dataset, tmp_path: Path) -> None:
    """Seventh hostile round: the answer was read as the answer to the id's question whatever the sheet asked."""
    csv_path, _ = export_solver_sheet(dataset, "pi_emergent", tmp_path, n=3, seed=0)
    sheet = pd.read_csv(csv_path, keep_default_na=False).assign(answer="tasty")
    # What a spreadsheet does to text (case, line breaks) is the same question.
    sheet.assign(question=sheet["question"].str.upper().str.replace("\n", "\r\n  ")).to_csv(csv_path, index=False)
    assert len(import_solver_sheets([csv_path], dataset)) == 3
    combination = sheet["combination"][1]
    sheet.loc[1, "question"] = sheet["question"][1].replace(combination, "a glass slipper")
    sheet.to_csv(csv_path, index=False)
    with pytest.raises(DataError, match=rf"row 1: the question asked is not the one exported for '{sheet['id'][1]}'"):
        import_solver_sheets([csv_path], dataset)


def test_type_prediction_sheet_scores_majority_free_labels(dataset, tmp_path: Path) -> None:
    csv_path, _ = export_solver_sheet(dataset, "type_prediction", tmp_path, n=8, seed=0)
    sheet = pd.read_csv(csv_path, keep_default_na=False)
    gold = {item.id: item.gold for item in dataset.type_prediction_set()}
    sheet["answer"] = [gold[i] for i in sheet["id"]]
    sheet.loc[0, "answer"] = "no idea"
    sheet.to_csv(csv_path, index=False)
    (result,) = table5(import_solver_sheets([csv_path], dataset), stat="sem")
    assert result.classification.n == 8 and result.accuracy.mean == pytest.approx(100 * 7 / 8)


def test_type_prediction_uses_the_raters_majority(dataset, tmp_path: Path) -> None:
    """Appendix B.4: accuracy of the majority vote of three raters; a three-way split has no majority."""
    csv_path, _ = export_solver_sheet(dataset, "type_prediction", tmp_path, n=4, seed=1)
    sheet = pd.read_csv(csv_path, keep_default_na=False)
    gold = {item.id: item.gold for item in dataset.type_prediction_set()}
    wrong = {"emergent": "others", "component": "canceled", "canceled": "emergent", "others": "component"}
    ids = list(sheet["id"])
    # item 0: 2 of 3 right; item 1: 1 of 3 right (majority wrong); item 2: three different labels; item 3: all right
    answers = {
        ids[0]: [gold[ids[0]], gold[ids[0]], wrong[gold[ids[0]]]],
        ids[1]: [gold[ids[1]], wrong[gold[ids[1]]], wrong[gold[ids[1]]]],
        ids[2]: [gold[ids[2]], wrong[gold[ids[2]]], wrong[wrong[gold[ids[2]]]]],
        ids[3]: [gold[ids[3]]] * 3,
    }
    rows = [
        {"id": i, "task": "type_prediction", "answer": a, "rater": f"r{k}"}
        for i in ids
        for k, a in enumerate(answers[i])
    ]
    pd.DataFrame(rows).to_csv(csv_path, index=False)
    frame = import_solver_sheets([csv_path], dataset)
    assert len(frame) == 4 and list(frame["parse_ok"]) == [True, True, False, True]
    assert frame.loc[2, "parse_error"] == "no majority among 3 rater(s)"
    (result,) = table5(frame, stat="sem")
    assert result.accuracy.mean == pytest.approx(100 * 2 / 4)


def test_rating_sheets_to_table4_and_agreement(reference_dir: Path, dataset, tmp_path: Path) -> None:
    frame = load_results([reference_dir / "pi_emergent_gpt-4o_naive.csv"], dataset)
    written = export_rating_sheets(frame, tmp_path, n=10, raters=2, seed=0)
    key = pd.read_csv(tmp_path / "key.csv")
    assert len(key) == 30 and {p.name for p in written} >= {"rater_1.csv", "rater_2.csv", "rater_1.html"}
    # Raters who agree exactly with the LLM judge (on the 1–10 scale) and a second one off by one point.
    for k, shift in ((1, 0), (2, 1)):
        sheet = pd.read_csv(tmp_path / f"rater_{k}.csv")
        judge = key.drop_duplicates("pair_id").set_index("pair_id")["llm_judge"]
        sheet["rating"] = [min(10, round(1 + 9 * judge[p]) + shift) for p in sheet["pair_id"]]
        sheet.to_csv(tmp_path / f"rater_{k}.csv", index=False)
    ratings = read_ratings(tmp_path / "key.csv", [tmp_path / "rater_1.csv", tmp_path / "rater_2.csv"])
    agree = rating_agreement(ratings)
    assert agree["pearson"] > 0.99 and agree["n"] == ratings["pair_id"].nunique()
    assert 0.8 < agree["krippendorff_alpha_interval"] < 1.0
    text = human_judge_report(ratings)
    assert "Table 4" in text and "Krippendorff" in text and "| gpt-4o | Base |" in text


def test_sheets_filled_for_another_exports_key_are_refused(reference_dir: Path, dataset, tmp_path: Path) -> None:
    """Seventh hostile round: every export numbers its pairs p00000, p00001, …, so sheets filled for one export
    and read with another export's key were ratings of other pairs (Pearson −0.31 became −0.13), no line."""
    frame = load_results([reference_dir / "pi_emergent_gpt-4o_naive.csv"], dataset)
    first, second = tmp_path / "first", tmp_path / "second"
    export_rating_sheets(frame, first, n=5, raters=1, seed=0)
    export_rating_sheets(frame, second, n=5, raters=1, seed=1)
    sheet = pd.read_csv(first / "rater_1.csv").assign(rating=7)
    sheet.to_csv(first / "rater_1.csv", index=False)
    own = read_ratings(first / "key.csv", [first / "rater_1.csv"])
    assert own["rating"].eq(7).all()  # with its own key
    with pytest.raises(DataError, match=r"rater_1\.csv: row \d+: pair 'p\d{5}' is (concept|property) .* in the key"):
        read_ratings(second / "key.csv", [first / "rater_1.csv"])
    # A spreadsheet's case and outer spaces are no other pair; a sheet without the text columns is read as before.
    sheet.assign(concept=" " + sheet["concept"].str.upper()).drop(columns="property").to_csv(
        first / "edited.csv", index=False
    )
    assert read_ratings(first / "key.csv", [first / "edited.csv"]).equals(own)


def test_rating_import_rejects_out_of_range(tmp_path: Path) -> None:
    (tmp_path / "key.csv").write_text(
        "pair_id,task,model,method,instance,role,llm_judge\np00000,pi_emergent,m,base,i,r_np,0.5\n"
    )
    (tmp_path / "r.csv").write_text("pair_id,rater,rating\np00000,a,11\n")
    with pytest.raises(DataError, match=r"r\.csv: row 0, column 'rating': should be less than or equal to 10"):
        read_ratings(tmp_path / "key.csv", [tmp_path / "r.csv"])


KEY = "pair_id,task,model,method,instance,role,llm_judge\n" + "".join(
    f"p{i:05d},pi_canceled,m,base,i{i},r_np,0.{i + 1}\n" for i in range(4)
)


@pytest.mark.parametrize(
    ("sheets", "message"),
    [
        # A pair row repeated in one sheet: counted twice, it moved Table 4's PI-canceled C from 12.5 to 16.2.
        ({"r1.csv": ["p00000,a,3", "p00001,a,4", "p00001,a,4"]}, r"r1\.csv: row 2 repeats row 1 \(rater × pair_id"),
        # Two sheets filled under one rater's name: every pair rated "twice" by one rater (α null, no reason).
        (
            {"r1.csv": ["p00000,a,3"], "r2.csv": ["p00000,a,5"]},
            r"r2\.csv: row 0: rater 'a' already rated .*r1\.csv row 0",
        ),
        ({"r1.csv": ["p00000,a,3", "p00009,a,4"]}, r"unknown pair id"),
        ({"r1.csv": ["p00000,,3"]}, r"row 0, column 'rater': empty"),
        ({"r1.csv": ["p00000,a,seven"]}, r"row 0, column 'rating'"),
        ({"r1.csv": ["p00000,a,5.5"]}, r"row 0, column 'rating'"),
    ],
)
def test_rating_import_rejects_duplicates_and_bad_cells(tmp_path: Path, sheets: dict, message: str) -> None:
    (tmp_path / "key.csv").write_text(KEY)
    for name, rows in sheets.items():
        (tmp_path / name).write_text("pair_id,rater,rating\n" + "".join(f"{r}\n" for r in rows))
    with pytest.raises(DataError, match=message):
        read_ratings(tmp_path / "key.csv", [tmp_path / name for name in sheets])


@pytest.mark.parametrize(
    ("key", "message"),
    [
        (KEY + "p00004,pi_canceled,m,base,i0,r_np,0.5\n", r"row 4 repeats row 0"),
        (KEY.replace("0.1", "1.5"), r"key\.csv: row 0, column 'llm_judge'"),
        (KEY.replace("r_np", "r_xx", 1), r"row 0, column 'role'"),
        (KEY.replace("pair_id,", "pair_id,pair_id,", 1), r"'pair_id' appear more than once"),
    ],
)
def test_rating_key_is_checked(tmp_path: Path, key: str, message: str) -> None:
    (tmp_path / "key.csv").write_text(key)
    (tmp_path / "r.csv").write_text("pair_id,rater,rating\np00000,a,3\n")
    with pytest.raises(DataError, match=message):
        read_ratings(tmp_path / "key.csv", [tmp_path / "r.csv"])


def test_solver_sheet_rejects_a_repeated_answer_and_explains_empty_task3_answers(dataset, tmp_path: Path) -> None:
    csv_path, _ = export_solver_sheet(dataset, "type_prediction", tmp_path, n=2, seed=0)
    ids = list(pd.read_csv(csv_path, keep_default_na=False)["id"])
    rows = [{"id": ids[0], "task": "type_prediction", "answer": "emergent", "rater": "r1"}] * 2
    pd.DataFrame(rows).to_csv(csv_path, index=False)
    with pytest.raises(DataError, match=r"row 1 repeats row 0 \(rater × id"):
        import_solver_sheets([csv_path], dataset)
    # Two raters who both left an item empty: no answer, which is not a tie.
    rows = [{"id": ids[0], "task": "type_prediction", "answer": "", "rater": f"r{k}"} for k in (1, 2)]
    rows += [{"id": ids[1], "task": "type_prediction", "answer": label, "rater": f"r{k}"} for k, label in
             ((1, "emergent"), (2, "others"))]  # fmt: skip
    pd.DataFrame(rows).to_csv(csv_path, index=False)
    frame = import_solver_sheets([csv_path], dataset)
    assert frame["parse_error"].tolist() == [
        "no valid answer from any of 2 rater(s) (empty or not a type label)",
        "no majority among 2 rater(s)",
    ]
    pd.DataFrame([{"id": ids[0], "task": "pi_whatever", "answer": "x"}]).to_csv(csv_path, index=False)
    with pytest.raises(DataError, match=r"row 0, column 'task'"):
        import_solver_sheets([csv_path], dataset)


def test_human_solver_cli_round_trip_gives_the_human_row(ccpt_dir: Path, tmp_path: Path, monkeypatch, capsys) -> None:
    """Export a sheet (no gold answer in it), fill it, import + judge it, report it as Table 3's Human row."""
    from ccpt.cli import main

    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    assert main(["human", "export-solver", "--task", "pi_canceled", "--out", str(tmp_path), "--n", "3",
                 "--data-dir", str(ccpt_dir)]) == 0  # fmt: skip
    sheet_path = tmp_path / "pi_canceled_sheet.csv"
    sheet = pd.read_csv(sheet_path, keep_default_na=False)
    assert (sheet["property"] == "").all()  # the gold property is not shown to the solver
    sheet["answer"] = ["sweet", "", "alive"]
    sheet.to_csv(sheet_path, index=False)
    judged = tmp_path / "human.csv"
    assert main(["human", "import-solver", str(sheet_path), "--out", str(judged), "--data-dir", str(ccpt_dir),
                 "--judge", "ccpt-scripted/judge"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["report", str(judged), "--data-dir", str(ccpt_dir), "--format", "json"]) == 0
    records = json.loads(capsys.readouterr().out)["records"]
    human = {r["metric"]: r for r in records if r["table"] == "table3" and r["model"] == "human"}
    assert set(human) == {"r_hmp", "r_np", "score"} and human["score"]["n_failed"] == 1
    frame = pd.read_csv(judged)
    assert frame["parse_ok"].tolist() == [True, False, True] and frame["judge_failures"].sum() == 0
    assert frame.loc[frame["parse_ok"], "r_np"].notna().all() and frame.loc[~frame["parse_ok"], "r_np"].isna().all()
    # The Human row joins a run judged by the same judge: one judge identity and protocol (before: the bare model
    # name and no protocol, so the report ranked it apart and `ccpt compare` refused the pair).
    runs = tmp_path / "runs"
    assert main(["run", "--model", "ccpt-scripted/m", "--judge", "ccpt-scripted/judge", "--task", "pi_canceled",
                 "--limit", "3", "--seeds", "1", "--data-dir", str(ccpt_dir), "--log-dir", str(runs),
                 "--no-preflight", "--display", "none"]) == 0  # fmt: skip
    capsys.readouterr()
    assert main(["report", str(runs), str(judged), "--data-dir", str(ccpt_dir), "--format", "json"]) == 0
    records = [r for r in json.loads(capsys.readouterr().out)["records"] if r["table"] == "table3"]
    judges = {(r["model"], r["judge"]) for r in records if r["method"] in ("human", "base")}
    assert judges == {(m, "ccpt-scripted/judge (plain)") for m in ("human", "ccpt-scripted/m")}, judges  # one protocol


HOSTILE = ['=HYPERLINK("http://x","y")', "+1", "-2+3", "@SUM(A1)", "\tTAB", "\rCR", "'=quoted", "plain", "'ok"]


def test_formula_like_answers_are_neutralised_in_sheets_and_read_back_unchanged(
    reference_dir: Path, dataset, tmp_path: Path
) -> None:
    """OWASP CSV injection: no cell of a sheet for people starts with = + - @ tab CR; ccpt reads the text back."""
    import csv

    from ccpt.results import export, from_tidy

    frame = load_results([reference_dir / "pi_emergent_gpt-4o_naive.csv"], dataset).head(len(HOSTILE)).copy()
    frame["answer"] = HOSTILE
    frame["answer_raw"] = HOSTILE
    export_rating_sheets(frame, tmp_path, n=len(HOSTILE), raters=1, seed=0)
    tidy = export(frame, tmp_path / "tidy.csv")
    for path in (tmp_path / "key.csv", tmp_path / "rater_1.csv", tidy):
        with path.open(newline="", encoding="utf-8") as fh:
            cells = [cell for row in csv.reader(fh) for cell in row]
        assert not [c for c in cells if c[:1] in ("=", "+", "-", "@", "\t", "\r")], path.name
    assert from_tidy(tidy)["answer"].tolist() == HOSTILE  # the tidy table reads back unchanged
    key = pd.read_csv(tmp_path / "key.csv", dtype=str, keep_default_na=False)
    assert {'\'=HYPERLINK("http://x","y")', "''=quoted", "'ok"} <= set(key["property"])
    sheet = pd.read_csv(tmp_path / "rater_1.csv", dtype=str, keep_default_na=False).assign(rating="5")
    sheet.to_csv(tmp_path / "rater_1.csv", index=False, quoting=csv.QUOTE_ALL)  # a rater fills the sheet in
    ratings = read_ratings(tmp_path / "key.csv", [tmp_path / "rater_1.csv"])
    assert set(ratings["property"]) >= set(HOSTILE)  # the import sees the answers as they were written


def test_a_constant_judge_has_undefined_agreement_not_minus_zero(tmp_path: Path) -> None:
    """A judge that gives every pair the same score: 'undefined' in text, null in JSON (never NaN, never -0.000)."""
    key = "pair_id,task,model,method,instance,role,llm_judge\n" + "".join(
        f"p{i:05d},pi_emergent,m,base,i{i},r_np,0.7\n" for i in range(4)
    )
    (tmp_path / "key.csv").write_text(key)
    (tmp_path / "r.csv").write_text("pair_id,rater,rating\n" + "".join(f"p{i:05d},a,{i + 3}\n" for i in range(4)))
    ratings = read_ratings(tmp_path / "key.csv", [tmp_path / "r.csv"])
    agree = rating_agreement(ratings)
    assert agree["pearson"] is None and agree["spearman"] is None and agree["n"] == 4
    text = human_judge_report(ratings)
    assert "Pearson undefined" in text and "-0.000" not in text and "nan" not in text
    payload = json.loads(human_judge_report(ratings, fmt="json"))
    assert payload["agreement"]["pearson"] is None
    # One rater: α is undefined, and the report says why instead of leaving "undefined" to guess.
    why = "no pair was rated by two raters"
    assert "α (interval): undefined (" + why in text
    assert why in payload["agreement"]["krippendorff_alpha_undefined_because"]
    # The same sheet given twice is refused, naming both places (it would be one person's ratings counted twice).
    with pytest.raises(DataError, match=r"r\.csv: given twice"):
        read_ratings(tmp_path / "key.csv", [tmp_path / "r.csv", tmp_path / "r.csv"])
    (tmp_path / "copy.csv").write_bytes((tmp_path / "r.csv").read_bytes())  # a copy under another name
    with pytest.raises(DataError, match=r"copy\.csv: row 0: rater 'a' already rated pair 'p00000' \(.*r\.csv row 0\)"):
        read_ratings(tmp_path / "key.csv", [tmp_path / "r.csv", tmp_path / "copy.csv"])


def _filled(dataset, tmp_path: Path, name: str, task: str, answers: list[str], rater: str | None) -> Path:
    """A solver sheet of ``task`` (the same items every time) filled with ``answers`` by ``rater``."""
    csv_path, _ = export_solver_sheet(dataset, task, tmp_path / name, n=len(answers), seed=0)
    sheet = pd.read_csv(csv_path, keep_default_na=False)
    sheet["answer"] = answers
    if rater is not None:
        sheet["rater"] = rater
    sheet.to_csv(csv_path, index=False)
    return csv_path


@pytest.mark.parametrize("rater", ["alice", None])
def test_one_rater_in_two_sheets_is_one_line_not_counted_twice(
    dataset, tmp_path: Path, rater: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `human import-solver a.csv b.csv` with one rater's name in both sheets gave her answers twice
    (seed 0 twice). Now one line names both places, exit 2, nothing written."""
    from ccpt.cli import main

    first = _filled(dataset, tmp_path, "a", "pi_emergent", ["wet", "red"], rater)
    second = _filled(dataset, tmp_path, "b", "pi_emergent", ["dry", "blue"], rater)
    out = tmp_path / "human.csv"
    argv = ["human", "import-solver", str(first), str(second), "--out", str(out)]
    assert main([*argv, "--data-dir", str(dataset.source)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    who = f"rater {rater!r}" if rater else "a sheet without a rater column"
    assert len(err) == 1 and f"{second}: row 0: {who} already answered" in err[0] and f"in {first} (row 0)" in err[0]
    assert not out.exists()


def test_one_sheet_given_twice_is_one_line_not_a_majority(
    dataset, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: `import-solver alice.csv alice.csv bob.csv` read alice's sheet twice (the check compared places, and a
    place read again is the same place): on Task 3 her label won every two-against-one vote where alice and bob
    disagree, a tie that is a counted failure. Now one line names the sheet, exit 2, nothing written."""
    from ccpt.cli import main

    alice = _filled(dataset, tmp_path, "a", "type_prediction", ["emergent"] * 4, "alice")
    bob = _filled(dataset, tmp_path, "b", "type_prediction", ["canceled"] * 4, "bob")
    out = tmp_path / "human.csv"
    argv = ["human", "import-solver", str(alice), str(alice), str(bob), "--out", str(out)]
    assert main([*argv, "--data-dir", str(dataset.source)]) == 2
    err = [line for line in capsys.readouterr().err.splitlines() if line.strip()]
    assert len(err) == 1 and f"{alice}: the same sheet is given twice" in err[0], err
    assert not out.exists()


def test_raters_of_several_sheets_are_distinct_seeds_and_vote_together(dataset, tmp_path: Path) -> None:
    """Each rater is one seed across the sheets (before, every sheet restarted at seed 0), and Task 3's majority is
    taken over the raters of all the sheets (before, per sheet: one item scored once per sheet)."""
    from ccpt.human.sheets import import_solver_sheets

    sheets = [_filled(dataset, tmp_path, n, "pi_emergent", ["wet", "red"], n) for n in ("ann", "bob")]
    rows = import_solver_sheets(sheets, dataset)
    assert rows["seed"].tolist() == [0, 0, 1, 1] and rows["instance"].nunique() == 2
    votes = {"ann": ["emergent", "component"], "bob": ["emergent", "canceled"], "cy": ["canceled", "canceled"]}
    typed = [_filled(dataset, tmp_path, f"t{n}", "type_prediction", v, n) for n, v in votes.items()]
    voted = import_solver_sheets(typed, dataset)
    assert len(voted) == 2 and voted["pred_type"].tolist() == ["emergent", "canceled"]  # 2 of 3, then 2 of 3
    assert voted["answer_raw"].tolist() == ["emergent; emergent; canceled", "component; canceled; canceled"]


def test_importing_300k_ratings_stays_under_400_mb(tmp_path: Path) -> None:
    """`ccpt human import-ratings` on 300K ratings (100K pairs × 3 raters) peaked at 763 MB: lemminflect's import
    pulled in spaCy and torch, the sheets were held as row dicts and α took a list per unit. Peak RSS of the whole
    command, from the child's VmHWM (ru_maxrss of a child starts at the large pytest parent's value)."""
    import csv
    import os
    import random
    import subprocess
    import sys

    import ccpt

    rng = random.Random(0)
    pairs = 100_000
    with (tmp_path / "key.csv").open("w", newline="") as fh:
        out = csv.writer(fh)
        out.writerow(["pair_id", "task", "model", "method", "instance", "role", "concept", "property", "llm_judge"])
        roles = ("r_np", "r_hp", "r_mp")
        out.writerows(
            [f"p{i}", "pi_emergent", f"m{i % 4}", "base", f"i{i // 12}", roles[i % 3], f"c{i}", f"q{i}", rng.random()]
            for i in range(pairs)
        )
    truth = [rng.randint(1, 10) for _ in range(pairs)]
    for k in (1, 2, 3):
        with (tmp_path / f"rater_{k}.csv").open("w", newline="") as fh:
            out = csv.writer(fh)
            out.writerow(["pair_id", "rater", "rating"])
            out.writerows([f"p{i}", f"r{k}", min(10, max(1, truth[i] + rng.randint(-2, 2)))] for i in range(pairs))
    code = (
        "import re, sys\n"
        "from ccpt.cli import main\n"
        "code = main(['human', 'import-ratings', '--key', 'key.csv', 'rater_1.csv', 'rater_2.csv', 'rater_3.csv',"
        " '--format', 'json'])\n"
        "peak = re.search(r'VmHWM:\\s+(\\d+) kB', open('/proc/self/status').read()).group(1)\n"
        "print(peak, file=sys.stderr)\n"
        "sys.exit(code)\n"
    )
    env = {**os.environ, "PYTHONPATH": str(Path(ccpt.__file__).parents[1])}  # this ccpt, whatever the cwd
    run = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300
    )
    assert run.returncode == 0, run.stderr
    agreement = json.loads(run.stdout)["agreement"]
    assert agreement["n"] == pairs and 0.8 < agreement["krippendorff_alpha_interval"] < 0.9
    peak_mib = int(run.stderr.split()[-1]) / 1024
    assert peak_mib < 400, f"peak RSS {peak_mib:.0f} MiB"


def test_why_alpha_is_undefined_reads_each_rating_with_its_own_pair(tmp_path: Path) -> None:
    """A pair on two key rows is one rating twice in the frame: the reason for an undefined α must still pair
    every rating with its own pair (both raters gave p1 a 7, so there is no variation, not "too few ratings")."""
    key = "pair_id,task,model,method,instance,role,llm_judge\n" + "".join(
        f"{p},pi_emergent,m,base,i{i},r_np,0.{i + 1}\n" for i, p in enumerate(["p0", "p0", "p1", "p2"])
    )
    (tmp_path / "key.csv").write_text(key)
    (tmp_path / "a.csv").write_text("pair_id,rater,rating\np0,a,3\np1,a,7\np2,a,2\n")
    (tmp_path / "b.csv").write_text("pair_id,rater,rating\np1,b,7\n")
    ratings = read_ratings(tmp_path / "key.csv", [tmp_path / "a.csv", tmp_path / "b.csv"])
    agree = rating_agreement(ratings)
    assert agree["krippendorff_alpha_interval"] is None
    assert agree["krippendorff_alpha_undefined_because"].startswith("every rating of the pairs rated twice")


def test_blank_ratings_and_unrated_pairs_are_counted_in_the_report(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a blank rating and a pair no one rated vanished from Table 4 and the agreement without a word."""
    from ccpt.cli import main

    (tmp_path / "key.csv").write_text(KEY)
    (tmp_path / "a.csv").write_text("pair_id,rater,rating\np00000,a,3\np00001,a,\np00002,a,8\np00003,a,\n")
    (tmp_path / "b.csv").write_text("pair_id,rater,rating\np00000,b,4\np00001,b,\np00002,b,\n")
    argv = [
        "human",
        "import-ratings",
        str(tmp_path / "a.csv"),
        str(tmp_path / "b.csv"),
        "--key",
        str(tmp_path / "key.csv"),
    ]
    assert main(argv) == 0
    # p00001 blank twice, p00003 blank once and p00002 once; p00001 and p00003 rated by no one.
    assert "Ratings: 3 filled, 4 left blank; 2 of 4 pairs rated by no one" in capsys.readouterr().out
    assert main([*argv, "--format", "json"]) == 0
    counts = json.loads(capsys.readouterr().out)["ratings"]
    assert counts == {"filled": 3, "blank": 4, "pairs": 4, "pairs_unrated": 2}
