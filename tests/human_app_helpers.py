"""Helpers of the human-app tests: study directories built with ccpt's own exporters, an HTTP client with a
cookie jar (one per annotator, like one browser each), and the headless Chromium of Debian's package."""

from __future__ import annotations

import http.cookiejar
import os
import re
import shutil
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

import pytest

from ccpt.human.sheets import export_rating_sheets
from ccpt.results import load_results

HOSTILE = "<script>alert('pwned')</script>"


def rating_study(root: Path, reference_dir: Path, dataset, instances: int = 4) -> Path:
    """Figure-8 sheets for 4 stored GPT-4o answers, one of them a hostile ``<script>``, via export_rating_sheets."""
    frame = load_results([reference_dir / "pi_emergent_gpt-4o_naive.csv"], dataset)
    chosen = sorted(frame.loc[frame["parse_ok"].astype(bool), "instance"].unique())[:instances]
    frame = frame[frame["instance"].isin(chosen)].copy()
    frame.loc[frame["instance"] == chosen[0], "answer"] = HOSTILE
    export_rating_sheets(frame, root, n=instances, raters=2, seed=0)
    return root


CSRF_FIELD = re.compile(r'name="csrf" value="([^"]+)"')


@dataclass
class Reply:
    """One HTTP response."""

    status: int
    url: str
    text: str


class Client:
    """A browser-like HTTP client: keeps its cookies (the CSRF session), follows redirects."""

    def __init__(self) -> None:
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))

    def request(self, url: str, data: bytes | None = None, headers: dict[str, str] | None = None) -> Reply:
        """GET (or POST ``data``); HTTP errors are returned, not raised."""
        req = urllib.request.Request(url, data=data, headers=headers or {})
        try:
            with self.opener.open(req, timeout=30) as resp:
                return Reply(resp.status, resp.url, resp.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            return Reply(exc.code, url, exc.read().decode("utf-8"))

    def get(self, url: str) -> Reply:
        """GET a page."""
        return self.request(url)

    def post(self, url: str, fields: dict[str, str], csrf_from: str | None = None) -> Reply:
        """POST a form; ``csrf_from`` = a page URL whose CSRF token to include (as the page's form would)."""
        if csrf_from is not None:
            match = CSRF_FIELD.search(self.get(csrf_from).text)
            assert match, f"no CSRF field on {csrf_from}"
            fields = {"csrf": match.group(1), **fields}
        body = urllib.parse.urlencode(fields).encode()
        return self.request(url, body, {"Content-Type": "application/x-www-form-urlencoded"})


def chromium_path() -> str:
    """Debian's chromium; skip (fail under CCPT_REQUIRE_BROWSER=1, as CI sets) when it or Playwright is missing."""
    path = shutil.which("chromium")
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        path = None
    if path is None:
        unavailable(
            "headless Chromium not available (apt-get install chromium; pip install -e '.[human,test]')",
            "CCPT_REQUIRE_BROWSER",
        )
    return path


def unavailable(reason: str, require: str) -> NoReturn:
    """Skip a test whose system tool is missing, or fail it when ``$require`` is 1 (CI sets it: never skip)."""
    if os.environ.get(require) == "1":
        pytest.fail(reason)
    pytest.skip(reason)


def write_names(path: Path, names: list[str]) -> Path:
    """A names file."""
    path.write_text("\n".join(names) + "\n", encoding="utf-8")
    return path
