"""Screenshots of every `ccpt human serve` page for docs/human.md (headless Debian chromium via Playwright).

Usage: .venv/bin/python scripts/human_screenshots.py --data-dir ../shared/data/ccpt \
           --results ../shared/data/reference-results/pi_emergent_gpt-4o_naive.csv --out docs/img
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

from ccpt.dataset import load_dataset
from ccpt.human.app.server import Server, prepare
from ccpt.human.sheets import export_rating_sheets, export_solver_sheet
from ccpt.pipeline.annotation import export_tasks
from ccpt.pipeline.candidates import CANDIDATES
from ccpt.pipeline.manifest import write_jsonl
from ccpt.results import load_results

CANDIDATE_ROWS = [  # a few hand-written candidates, one per form
    ("emergent", "tiger", "caged", "caged tiger", "pace restlessly"),
    ("canceled", "apple", "peeled", "peeled apple", "red"),
    ("component", "apple", "red", "red apple", "round"),
]


def build(root: Path, data_dir: Path, results: Path) -> dict[str, Path]:
    """One study directory per study kind."""
    ds = load_dataset(data_dir)
    solver, rating, work = root / "solver", root / "rating", root / "pipeline"
    export_solver_sheet(ds, "pi_emergent", solver, n=2, seed=0)
    export_solver_sheet(ds, "npc_emergent", solver, n=1, seed=0)
    export_solver_sheet(ds, "type_prediction", solver, n=2, seed=0)
    frame = load_results([results], ds)
    export_rating_sheets(frame, rating, n=3, raters=2, seed=0)
    rows = [
        {"type": t, "head": h, "modifier": m, "combination": c, "property": p, "sentence": "", "doc_id": ""}
        for t, h, m, c, p in CANDIDATE_ROWS
    ]
    work.mkdir(parents=True)
    write_jsonl(work / CANDIDATES, rows)
    export_tasks(work)
    return {"solver": solver, "rating": rating, "annotation": work}


def main() -> None:
    """Build the demo studies, serve each, and save one PNG per page."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument("--results", type=Path, required=True)
    parser.add_argument("--out", type=Path, default=Path("docs/img"))
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as p:
        studies = build(Path(tmp), args.data_dir, args.results)
        browser = p.chromium.launch(executable_path=shutil.which("chromium"), args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 960, "height": 700}, device_scale_factor=1)

        def shot(name: str) -> None:
            page.screenshot(path=str(args.out / f"human-{name}.png"), full_page=True)

        names = {"solver": ["Ada"], "rating": ["Ada", "Ben"], "annotation": ["Ada", "Ben", "Cy"]}
        for kind, folder in studies.items():
            prepared = prepare(folder, names[kind])
            with Server(prepared) as server:
                link = dict(server.links())["Ada"]
                if kind == "solver":
                    page.goto(link + "item/1")
                    page.fill("input[name=answer]", "striped")
                    shot("solver-pi")
                    page.goto(link + "item/3")
                    shot("solver-npc")
                    page.goto(link + "item/4")
                    page.click("summary")  # open Figure 7's instructions
                    shot("solver-type")
                elif kind == "rating":
                    page.goto(link + "item/1")
                    page.check("input[name=rating][value='7']")
                    shot("rating")
                    for value in (7, 3, 2, 8, 6):  # five answers, then the review and admin pages
                        page.check(f"input[name=rating][value='{value}']")
                        with page.expect_navigation():
                            page.click("button[type=submit]")
                    page.goto(link + "review")
                    shot("review")
                    page.goto(dict(server.links())["admin"])
                    with page.expect_navigation():
                        page.click("text=Export CSVs")
                    shot("admin")
                else:
                    items = {(i.study, i.key): i for i in prepared.study.items}
                    shown = set()
                    for (_name, token), person in zip(prepared.links, prepared.store.annotators(), strict=True):
                        for a in prepared.store.assignments(person.id):
                            item = items[(a.study, a.item)]
                            form = "component" if item.component else item.kind
                            if form not in shown:
                                shown.add(form)
                                page.goto(server.url(f"/a/{token}/item/{a.position}"))
                                shot(f"annotation-{form}")
        browser.close()


if __name__ == "__main__":
    main()
