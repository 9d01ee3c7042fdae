"""The pinned download: served by a real local HTTP server, verified, cached, and every failure mode."""

from __future__ import annotations

import functools
import http.server
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from ccpt.download import PINNED_COMMIT, REPO_DATA_PATH, REQUIRED_FILES, DownloadConfig, download, urllib_fetch
from ccpt.errors import DataError

pytestmark = pytest.mark.shared_data


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        super().do_GET()


@pytest.fixture
def mirror(ccpt_dir: Path, tmp_path: Path) -> Iterator[tuple[str, Path, list[str]]]:
    """A loopback HTTP server laid out like the pinned repository: <base>/<commit>/data/<file>."""
    root = tmp_path / "mirror"
    files = root / PINNED_COMMIT / REPO_DATA_PATH
    files.mkdir(parents=True)
    for name in REQUIRED_FILES:
        (files / name).write_bytes((ccpt_dir / name).read_bytes())
    handler = functools.partial(_CountingHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.requests = []  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", files, server.requests  # type: ignore[attr-defined]
    finally:
        server.shutdown()
        server.server_close()


def test_download_verifies_and_never_refetches(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, _files, requests = mirror
    target = tmp_path / "cache"
    config = DownloadConfig(base_url=base, retries=1)
    download(target=target, config=config)
    assert sorted(p.name for p in target.iterdir()) == sorted(REQUIRED_FILES)
    assert len(requests) == len(REQUIRED_FILES)
    download(target=target, config=config)
    assert len(requests) == len(REQUIRED_FILES)  # verified files are not fetched again

    from ccpt.dataset import load_dataset

    assert len(load_dataset(target).emergent) == 2500


def test_corrupt_cached_file_is_refetched(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, _files, requests = mirror
    target = tmp_path / "cache"
    config = DownloadConfig(base_url=base, retries=1)
    download(target=target, config=config)
    (target / "test_index.json").write_text("{}", encoding="utf-8")
    download(target=target, config=config)
    assert requests[-1].endswith("test_index.json") and len(requests) == len(REQUIRED_FILES) + 1


def test_checksum_mismatch_from_server(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, files, _requests = mirror
    (files / "ccpt_canceled.csv").write_text("sentence,combination\n", encoding="utf-8")
    with pytest.raises(DataError, match=r"downloaded ccpt_canceled\.csv has sha256"):
        download(target=tmp_path / "cache", config=DownloadConfig(base_url=base, retries=1))
    assert not (tmp_path / "cache" / "ccpt_canceled.csv").exists()


def test_http_404_is_a_clear_error(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, files, _requests = mirror
    (files / "test_index.json").unlink()
    with pytest.raises(DataError, match="HTTP 404"):
        download(target=tmp_path / "cache", config=DownloadConfig(base_url=base, retries=1))


def test_unreachable_host_after_bounded_retries(tmp_path: Path) -> None:
    calls: list[str] = []

    def failing(url: str, timeout: float) -> bytes:
        calls.append(url)
        raise OSError("connection refused")

    config = DownloadConfig(base_url="http://127.0.0.1:9", retries=3, backoff=0)
    with pytest.raises(DataError, match="after 3 attempts: connection refused"):
        download(target=tmp_path, config=config, fetch=failing)
    assert len(calls) == 3


def test_closed_port_through_real_urllib(tmp_path: Path) -> None:
    import socket

    with socket.socket() as s:  # a port that was free a moment ago: nothing listens there
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    config = DownloadConfig(base_url=f"http://127.0.0.1:{port}", retries=2, backoff=0, timeout=2)
    with pytest.raises(DataError, match="could not download"):
        download(target=tmp_path, config=config, fetch=urllib_fetch)
