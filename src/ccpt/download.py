"""Fetching the CCPT files from the authors' repository, pinned and checksum-verified.

The dataset is published in the authors' GitHub repository. ccpt pins one commit, knows every file's
sha256, downloads into the user's cache directory and never re-downloads a file whose checksum matches.
Network access goes through a small ``Fetcher`` callable so tests can inject failures or point at a
local HTTP server; the default uses :mod:`urllib` with a timeout and bounded retries.
"""

from __future__ import annotations

import hashlib
import os
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

from platformdirs import user_cache_dir

from ccpt.errors import DataError

PINNED_COMMIT = "dbd6c08b413b939c3f3878ffb0bd5f048f71dc50"
# raw.githubusercontent.com serves files of a commit at <base>/<commit>/<path>; CCPT_DATA_URL overrides the
# base (a mirror, or a local server in tests).
DEFAULT_BASE_URL = "https://raw.githubusercontent.com/seokwon99/CCPT"
REPO_DATA_PATH = "data"

# sha256 of every file at the pinned commit (the same values as shared/data/ccpt/SHA256SUMS).
CHECKSUMS: Mapping[str, str] = MappingProxyType(
    {
        "ccpt_emergent.csv": "3aedc874f9389668a2435f23c7b68a0402cb1b4397804c1631ae6cccb9928169",
        "ccpt_canceled.csv": "0d2353975068987f9c29a850a625e446ffdc90c24e169042e6fd7b902d0be1f9",
        "ccpt_component.csv": "d4b0266f1ed58b3a038d1117631a88b0c6bf5c8adc2ea0a575a6dc4941e66a77",
        "add_ccpt_emergent.csv": "4064f2d03d8d179b8a36fa13967bc82095c0bd8ced02b3f5040d2f918499f342",
        "test_index.json": "809e74b7bbe618e3c631723af5b362925606e8aa0763b8f54b080eea6c233d00",
        "conceptnet_adjacent.json": "49211173b55edc1353c1c9dace39fa5fbafb3f793816b878e90fdcfebdce043d",
    }
)
REQUIRED_FILES: tuple[str, ...] = (
    "ccpt_emergent.csv",
    "ccpt_canceled.csv",
    "ccpt_component.csv",
    "add_ccpt_emergent.csv",
    "test_index.json",
)

Fetcher = Callable[[str, float], bytes]
"""``fetch(url, timeout) -> bytes``; raises OSError (incl. URLError) on network failure."""


def urllib_fetch(url: str, timeout: float) -> bytes:
    """Download ``url`` with urllib (the default fetcher)."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return response.read()


@dataclass(frozen=True)
class DownloadConfig:
    """Where to download from and how persistently."""

    base_url: str = DEFAULT_BASE_URL
    commit: str = PINNED_COMMIT
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 1.0

    def url(self, name: str) -> str:
        return f"{self.base_url.rstrip('/')}/{self.commit}/{REPO_DATA_PATH}/{name}"

    @classmethod
    def from_env(cls) -> DownloadConfig:
        base = os.environ.get("CCPT_DATA_URL")
        return cls(base_url=base) if base else cls()


def cache_dir() -> Path:
    """The directory that holds verified downloads (``$CCPT_CACHE_DIR`` or the platform cache dir)."""
    root = os.environ.get("CCPT_CACHE_DIR") or user_cache_dir("ccpt")
    return Path(root) / "data" / PINNED_COMMIT[:12]


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _fetch_with_retries(url: str, config: DownloadConfig, fetch: Fetcher) -> bytes:
    last: Exception | None = None
    for attempt in range(config.retries):
        try:
            return fetch(url, config.timeout)
        except urllib.error.HTTPError as exc:
            # 4xx will not get better by retrying.
            if 400 <= exc.code < 500:
                raise DataError(f"could not download {url}: HTTP {exc.code}", "check CCPT_DATA_URL") from exc
            last = exc
        except (OSError, TimeoutError) as exc:
            last = exc
        if attempt + 1 < config.retries:
            time.sleep(config.backoff * (2**attempt))
    reason = getattr(last, "reason", None) or last
    raise DataError(
        f"could not download {url} after {config.retries} attempts: {reason}",
        "check your network connection, or pass --data-dir / CCPT_DATA_DIR to a local copy",
    )


def download(
    names: tuple[str, ...] = REQUIRED_FILES,
    *,
    target: Path | None = None,
    config: DownloadConfig | None = None,
    fetch: Fetcher = urllib_fetch,
) -> Path:
    """Ensure every file in ``names`` is present and verified in ``target`` (default: the cache dir).

    Files already present with the right checksum are not downloaded again. A download is written to a
    temporary file, verified, then renamed into place, so an interrupted or corrupt download never
    leaves a file that looks valid.
    """
    config = config or DownloadConfig.from_env()
    target = target or cache_dir()
    target.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = target / name
        if path.is_file() and sha256_file(path) == CHECKSUMS[name]:
            continue
        data = _fetch_with_retries(config.url(name), config, fetch)
        actual = hashlib.sha256(data).hexdigest()
        if actual != CHECKSUMS[name]:
            raise DataError(
                f"downloaded {name} has sha256 {actual[:12]}…, expected {CHECKSUMS[name][:12]}…",
                "the source may have changed or the transfer was corrupted; try again later or use --data-dir",
            )
        tmp = path.with_suffix(path.suffix + ".part")
        tmp.write_bytes(data)
        tmp.replace(path)
    return target
