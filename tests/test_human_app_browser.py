"""The human-study app driven in headless Chromium (Debian's package, through Playwright): two raters in parallel
with a reload midway, the admin export, and the existing importers' figures from it; a solver study to the Human row."""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd
import pytest
from human_app_helpers import HOSTILE, chromium_path, rating_study

from ccpt.human.app.server import Server, prepare
from ccpt.human.sheets import export_solver_sheet, human_judge_report, read_ratings


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for the module (--no-sandbox: CI runs as root)."""
    path = chromium_path()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=path, args=["--no-sandbox"])
        yield chromium
        chromium.close()


def cli(*args: str) -> int:
    """`ccpt ARGS` in a worker thread: Playwright's sync API keeps an event loop running in this one, and the
    judge inside import-solver starts its own with asyncio.run."""
    from ccpt.cli import main

    with ThreadPoolExecutor(1) as pool:
        return pool.submit(main, list(args)).result()


def _hand_rating(judge: float, shift: int) -> int:
    """What each rater enters: the LLM judge's score on the 1–10 scale (rater 2 one point higher)."""
    return min(10, round(1 + 9 * judge) + shift)


def test_two_raters_in_parallel_reload_export_and_agreement(browser, tmp_path: Path, dataset, reference_dir, capsys):
    study = rating_study(tmp_path / "study", reference_dir, dataset)
    key = pd.read_csv(study / "key.csv")
    judge = {(c, p): s for c, p, s in zip(key["concept"], key["property"], key["llm_judge"], strict=True)}
    prepared = prepare(study, ["rater1", "rater2"])
    n_pairs = len(prepared.study.items)
    dialogs: list[str] = []
    with Server(prepared) as server:
        links = dict(server.links())
        contexts = [browser.new_context(), browser.new_context()]
        pages = [c.new_page() for c in contexts]
        for k, page in enumerate(pages):
            page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
            page.goto(links[f"rater{k + 1}"])
            assert "Instructions" in page.content() and "1 to 10" in page.inner_text("details")
        for step in range(n_pairs):
            for k, page in enumerate(pages):  # the two raters take turns: both sessions are open at once
                if k == 0 and step == n_pairs // 2:
                    page.close()  # a lost tab: the link opened again resumes at the first unanswered item
                    page = pages[0] = contexts[0].new_page()
                    page.goto(links["rater1"])
                    assert page.url.endswith(f"/item/{step + 1}")
                    assert f"Item {step + 1} of {n_pairs} · {step} answered" in page.inner_text("nav")
                if k == 1 and step == n_pairs // 3:
                    page.reload()  # a reload shows the same unanswered item again
                    assert page.url.endswith(f"/item/{step + 1}")
                concept, prop = page.inner_text(".concept"), page.inner_text(".property")
                page.check(f"input[name=rating][value='{_hand_rating(judge[(concept, prop)], k)}']")
                with page.expect_navigation():
                    page.click("button[type=submit]")
        assert not dialogs  # the <script> answer was shown, never run
        for page in pages:
            assert page.url.endswith("/review") and "Every item is answered" in page.content()
            assert page.locator("table").inner_text().count("revise") == n_pairs
            with page.expect_navigation():
                page.click("text=Submit my answers")
            assert "Your answers are submitted" in page.content()
        admin = contexts[0].new_page()
        admin.goto(links["admin"])
        assert admin.inner_text("table").count("submitted") == 2
        with admin.expect_navigation():
            admin.click("text=Export CSVs")
        assert "rater_1.csv" in admin.content() and f"Relevance rating {2 * n_pairs} / {2 * n_pairs}" in admin.content()
        for context in contexts:
            context.close()
    # The hand-entered ratings on the printed sheets (the paper's way) give the reference figures …
    for k in (1, 2):
        sheet = pd.read_csv(study / f"rater_{k}.csv")
        pairs = key.drop_duplicates("pair_id").set_index("pair_id")
        sheet["rating"] = [_hand_rating(pairs.loc[p, "llm_judge"], k - 1) for p in sheet["pair_id"]]
        sheet.to_csv(study / f"rater_{k}.csv", index=False)
    by_hand = json.loads(
        human_judge_report(read_ratings(study / "key.csv", [study / "rater_1.csv", study / "rater_2.csv"]), "json")
    )
    # … and `ccpt human import-ratings` on the app's export gives the same ones.
    export = study / "export"
    assert cli("human", "import-ratings", str(export / "rater_1.csv"), str(export / "rater_2.csv"),
               "--key", str(export / "key.csv"), "--format", "json") == 0  # fmt: skip
    from_app = json.loads(capsys.readouterr().out)
    assert from_app["agreement"] == pytest.approx(by_hand["agreement"])
    assert from_app["table4"] == by_hand["table4"]
    assert from_app["agreement"]["pearson"] > 0.95 and from_app["agreement"]["n"] == n_pairs
    assert 0.5 < from_app["agreement"]["krippendorff_alpha_interval"] < 1.0


def test_solver_study_export_gives_the_human_row(browser, tmp_path: Path, dataset, ccpt_dir: Path, monkeypatch, capsys):
    """Task 1 answers and Task 3 labels given in the browser → `import-solver --judge` → `ccpt report`'s Human row."""
    monkeypatch.setenv("INSPECT_CACHE_DIR", str(tmp_path / "cache"))
    study = tmp_path / "study"
    export_solver_sheet(dataset, "pi_canceled", study, n=3, seed=0)
    export_solver_sheet(dataset, "type_prediction", study, n=4, seed=0)
    gold = {i.id: i.gold for i in dataset.type_prediction_set()}
    prepared = prepare(study, ["ada"])
    answers = iter(["sweet", HOSTILE, "alive"])
    with Server(prepared) as server:
        page = browser.new_page()
        page.goto(dict(server.links())["ada"])
        for position, item in enumerate(prepared.study.items, start=1):
            assert page.url.endswith(f"/item/{position}")
            if item.kind == "pi_canceled":
                assert "What is a canceled property" in page.inner_text("pre")
                page.fill("input[name=answer]", next(answers))
            else:
                # 3 of 4 right; the last one wrong on purpose (Task 3 is scored against the gold type)
                label = (
                    gold[item.key]
                    if position < len(prepared.study.items)
                    else "others"
                    if gold[item.key] != "others"
                    else "emergent"
                )
                page.check(f"input[name=answer][value={label}]")
            with page.expect_navigation():
                page.click("button[type=submit]")
        assert HOSTILE in page.inner_text("table")  # shown as text on the review page
        with page.expect_navigation():
            page.click("text=Submit my answers")
        page.close()
    assert cli("human", "serve", str(study), "--export") == 0
    export = study / "export"
    assert cli("human", "import-solver", str(export / "pi_canceled_answers.csv"),
               str(export / "type_prediction_answers.csv"), "--out", str(tmp_path / "human.csv"),
               "--data-dir", str(ccpt_dir), "--judge", "ccpt-scripted/judge") == 0  # fmt: skip
    capsys.readouterr()
    assert cli("report", str(tmp_path / "human.csv"), "--data-dir", str(ccpt_dir), "--format", "json") == 0
    records = [r for r in json.loads(capsys.readouterr().out)["records"] if r["model"] == "human"]
    table3 = {r["metric"]: r for r in records if r["table"] == "table3"}
    assert set(table3) == {"r_hmp", "r_np", "score"} and table3["score"]["n_failed"] == 0
    accuracy = [r for r in records if r["table"] == "table5" and r["metric"] == "accuracy"]
    assert len(accuracy) == 1 and accuracy[0]["mean"] == pytest.approx(75.0)
