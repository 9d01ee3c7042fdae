"""Fetching the CCPT files from the authors' GitHub repository at a pinned commit, checksum-verified: the dataset
(``data/``) and the authors' stored result files (``results/``), each pinned by its sha256 in ``benchmark.toml``.

Files go into the user's cache directory, and a cached file is hashed again on every use (one whose checksum no longer
matches is fetched again, never read). Network access goes through a ``Fetcher`` callable (tests inject failures or
a local HTTP server); the default uses :mod:`urllib` with a timeout and bounded retries.
"""

from __future__ import annotations

import hashlib
import http.client
import os
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from platformdirs import user_cache_dir
from tenacity import Retrying

from ccpt.benchmark import benchmark
from ccpt.errors import DataError
from ccpt.io.outputs import atomic_path
from ccpt.io.retry import retry_policy

# The pinned commit, repository and file hashes have one home: the benchmark's metadata (ccpt/benchmark.toml).
PINNED_COMMIT = benchmark().commit
# raw.githubusercontent.com serves files of a commit at <base>/<commit>/<path>; CCPT_DATA_URL overrides the
# base (a mirror, or a local server in tests).
DEFAULT_BASE_URL = benchmark().base_url
REPO_DATA_PATH = benchmark().path

# sha256 of every file at the pinned commit (the same values as shared/data/ccpt/SHA256SUMS).
CHECKSUMS: Mapping[str, str] = benchmark().sha256
# Every file but the ConceptNet graph, which is fetched only when a method needs it (ccpt.io.sources).
REQUIRED_FILES: tuple[str, ...] = tuple(name for name in CHECKSUMS if name not in benchmark().optional)

# The authors' stored result files (the paper's model outputs, judged by GPT-4o) at the same commit, under their
# own directory beside the dataset's, pinned in the benchmark's metadata too.
REPO_RESULTS_PATH = benchmark().results_path


def result_checksums() -> Mapping[str, str]:
    """File name → sha256 of every stored result file ccpt pins."""
    return benchmark().results_sha256


Fetcher = Callable[[str, float], Iterable[bytes]]
"""``fetch(url, timeout)`` yields the body in chunks; raises OSError (incl. URLError) or
:class:`http.client.HTTPException` (e.g. a connection dropped mid-body) on network failure."""

_CHUNK = 1 << 16


def urllib_fetch(url: str, timeout: float) -> Iterator[bytes]:
    """Stream ``url`` with urllib (the default fetcher); ``timeout`` bounds every socket read."""
    with urllib.request.urlopen(url, timeout=timeout) as response:
        # read1 returns what one socket read delivers, so a slow server cannot keep one call blocked
        # past the caller's deadline check by sending a byte at a time.
        declared = response.headers.get("Content-Length")
        received = 0
        while chunk := response.read1(_CHUNK):
            received += len(chunk)
            yield chunk
        # read1 returns b"" when the server hangs up early, without http.client's IncompleteRead check.
        if declared is not None and declared.isdigit() and received < int(declared):
            raise http.client.IncompleteRead(b"", int(declared) - received)


@dataclass(frozen=True)
class DownloadConfig:
    """Where to download from and how persistently."""

    base_url: str = DEFAULT_BASE_URL
    commit: str = PINNED_COMMIT
    timeout: float = 30.0
    retries: int = 3
    backoff: float = 1.0
    max_bytes: int = 64 << 20  # per file: the largest pinned file is under 2 MB, so 64 MiB is not the dataset
    deadline: float = 300.0  # seconds per attempt: after them, a server dripping a byte at a time is abandoned


def cache_root() -> Path:
    """ccpt's cache: ``$CCPT_CACHE_DIR`` or the platform user cache dir."""
    return Path(os.environ.get("CCPT_CACHE_DIR") or user_cache_dir("ccpt"))


def cache_dir() -> Path:
    """The directory that holds verified downloads."""
    return cache_root() / "data" / PINNED_COMMIT[:12]


def results_cache_dir() -> Path:
    """The directory that holds verified downloads of the stored result files."""
    return cache_root() / "results" / PINNED_COMMIT[:12]


def sha256_file(path: Path) -> str:
    """Hex sha256 of a file, read in chunks."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


def sha256_bytes(data: bytes) -> str:
    """Hex sha256 of bytes already read (a file checked and then parsed from the same bytes)."""
    return hashlib.sha256(data).hexdigest()


def is_verified(path: Path, name: str, checksums: Mapping[str, str] = CHECKSUMS) -> bool:
    """True if ``path`` has the pinned sha256 of ``name``, hashed now (a few ms; size and mtime would accept a file
    edited and given its old time back)."""
    try:
        return path.is_file() and sha256_file(path) == checksums[name]
    except OSError:
        return False


def _stream_to(url: str, tmp: Path, config: DownloadConfig, fetch: Fetcher) -> str:
    """One attempt: stream ``url`` into ``tmp`` under the size cap and deadline; returns the sha256."""
    digest, size, started = hashlib.sha256(), 0, time.monotonic()
    with tmp.open("wb") as out:
        for chunk in fetch(url, config.timeout):
            size += len(chunk)
            if size > config.max_bytes:
                raise DataError(
                    f"could not download {url}: more than {config.max_bytes:,} bytes", "check CCPT_DATA_URL"
                )
            if time.monotonic() - started > config.deadline:
                raise TimeoutError(f"not finished after {config.deadline:.0f}s ({size:,} bytes received)")
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest()


def _transient(exc: BaseException) -> bool:
    """Worth another attempt: a connection problem, a timeout, a dropped body or a 5xx (a 4xx will not improve)."""
    if isinstance(exc, urllib.error.HTTPError):
        return not 400 <= exc.code < 500
    return isinstance(exc, OSError | TimeoutError | http.client.HTTPException)


def download(
    names: tuple[str, ...] = REQUIRED_FILES,
    *,
    target: Path | None = None,
    config: DownloadConfig | None = None,
    fetch: Fetcher = urllib_fetch,
    checksums: Mapping[str, str] = CHECKSUMS,
    repo_path: str = REPO_DATA_PATH,
    local: str = "--data-dir / CCPT_DATA_DIR",
) -> Path:
    """Ensure every file in ``names`` is present and verified in ``target`` (default: the cache dir); a download is
    streamed to a temporary file under a size cap and a deadline and renamed into place only once verified.
    ``checksums`` and ``repo_path``: which manifest pins the files and where they sit in the repository;
    ``local``: the options that give a local copy instead (named in the errors)."""
    config = config or DownloadConfig(base_url=os.environ.get("CCPT_DATA_URL") or DEFAULT_BASE_URL)
    target = target or cache_dir()
    try:
        target.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        hint = "set CCPT_CACHE_DIR to a writable directory"
        raise DataError(f"cannot create {target}: {exc.strerror}", hint) from None
    retrying = Retrying(**retry_policy(config.retries, config.backoff, retry_on=_transient))
    for name in names:
        path = target / name
        if is_verified(path, name, checksums):
            continue
        # Names hold '&' ("sa-llm&conceptnet"): quoted, so no server reads it as a query separator.
        url = f"{config.base_url.rstrip('/')}/{config.commit}/{repo_path}/{urllib.parse.quote(name)}"
        with atomic_path(path) as tmp:
            try:
                actual = retrying(_stream_to, url, tmp, config, fetch)
            except (OSError, TimeoutError, http.client.HTTPException) as exc:  # incl. a connection dropped mid-body
                if isinstance(exc, urllib.error.HTTPError) and 400 <= exc.code < 500:
                    raise DataError(f"could not download {url}: HTTP {exc.code}", "check CCPT_DATA_URL") from exc
                reason = getattr(exc, "reason", None) or exc
                if isinstance(exc, http.client.IncompleteRead):
                    reason = f"connection dropped before the end of the body ({exc.expected:,} bytes missing)"
                raise DataError(
                    f"could not download {url} after {config.retries} attempts: {reason}",
                    f"check your network connection, or pass {local} to a local copy",
                ) from None
            if actual != checksums[name]:
                raise DataError(
                    f"downloaded {name} has sha256 {actual[:12]}…, expected {checksums[name][:12]}…",
                    f"the source may have changed or the transfer was corrupted; try again later or use {local}",
                )
    return target


def download_results(
    names: Iterable[str] | None = None,
    *,
    target: Path | None = None,
    config: DownloadConfig | None = None,
    fetch: Fetcher = urllib_fetch,
) -> Path:
    """Ensure the authors' stored result files (default: every one the manifest pins) are present and verified in
    ``target`` (default: :func:`results_cache_dir`); as :func:`download`, one file at a time, nothing half-written."""
    checksums = result_checksums()
    return download(
        tuple(names) if names is not None else tuple(checksums),
        target=target or results_cache_dir(),
        config=config,
        fetch=fetch,
        checksums=checksums,
        repo_path=REPO_RESULTS_PATH,
        local="--results-dir / CCPT_RESULTS_DIR",
    )
