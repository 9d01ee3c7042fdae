"""Screenshots of an HTML report (`ccpt report --format html`) for the docs, rendered by headless Debian chromium
through Playwright; each figure is also checked to have loaded.

Usage: .venv/bin/python scripts/report_screenshots.py REPORT.html --out docs/img/report
       (writes <out>-top.png, the warnings and tables, and <out>-figures.png, the figures)

docs/img/report-*.png show the offline default model on 3 instances beside the authors' stored GPT-4o files:
    .venv/bin/ccpt run --data-dir ../shared/data/ccpt --task pi_emergent --task type_prediction --limit 3 \
        --seeds 2 --log-dir /tmp/run1
    .venv/bin/ccpt report /tmp/run1 ../shared/data/reference-results/pi_emergent_gpt-4o_naive.csv \
        ../shared/data/reference-results/tp_gpt-4o_naive.csv --data-dir ../shared/data/ccpt --format html \
        --label gpt-4o=GPT-4o --label gguf/qwen2.5-0.5b="Qwen2.5-Coder 0.5B" --out /tmp/report.html
    .venv/bin/python scripts/report_screenshots.py /tmp/report.html --out docs/img/report
"""

from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from playwright.sync_api import sync_playwright


def main() -> None:
    """Open the report, check its images, and save two PNGs: the top (tables) and the figures."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("report", type=Path)
    parser.add_argument("--out", type=Path, default=Path("docs/img/report"), help="PNG path prefix")
    parser.add_argument("--width", type=int, default=1100)
    args = parser.parse_args()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    chromium = shutil.which("chromium")
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, args=["--no-sandbox", "--disable-background-networking"])
        page = browser.new_page(viewport={"width": args.width, "height": 900}, device_scale_factor=1)
        page.goto(args.report.resolve().as_uri())
        broken = page.eval_on_selector_all("img", "imgs => imgs.filter(i => !(i.complete && i.naturalWidth)).length")
        if broken:
            raise SystemExit(f"{broken} figure(s) did not load")
        page.screenshot(path=f"{args.out}-top.png")
        page.locator("figure").first.scroll_into_view_if_needed()
        page.screenshot(path=f"{args.out}-figures.png")
        browser.close()


if __name__ == "__main__":
    main()
