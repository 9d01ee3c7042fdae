"""The pinned download: served by a real local HTTP server, verified, cached, and every failure mode."""

from __future__ import annotations

import functools
import hashlib
import http.server
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ccpt.errors import DataError
from ccpt.io.download import PINNED_COMMIT, REPO_DATA_PATH, REQUIRED_FILES, DownloadConfig, download, urllib_fetch

pytestmark = pytest.mark.shared_data


class _CountingHandler(http.server.SimpleHTTPRequestHandler):
    """Serves the mirror; ``server.mode`` makes the next requests misbehave (bounded in count and time):
    ``drop``: the first request for each file sends half the body and closes; ``drip``: one byte every
    0.2 s, at most 100 bytes; ``huge``: an endless body (stops after 64 MiB or when the client hangs up)."""

    def log_message(self, format: str, *args: object) -> None:  # keep test output clean
        pass

    def do_GET(self) -> None:
        self.server.requests.append(self.path)  # type: ignore[attr-defined]
        mode = self.server.mode  # type: ignore[attr-defined]
        if mode is None or (mode == "drop" and self.server.requests.count(self.path) > 1):  # type: ignore[attr-defined]
            super().do_GET()
            return
        try:
            if mode == "drop":
                body = Path(self.translate_path(self.path)).read_bytes()
                self._head(len(body))
                self.wfile.write(body[: len(body) // 2])
            elif mode == "drip":
                self._head(100)
                for _ in range(100):
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.2)
            elif mode == "huge":
                self._head(None)
                block = b"x" * (1 << 20)
                for _ in range(64):
                    self.wfile.write(block)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up, as it should
        self.close_connection = True

    def _head(self, length: int | None) -> None:
        self.send_response(200)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.end_headers()


@pytest.fixture
def served(ccpt_dir: Path, tmp_path: Path) -> Iterator[http.server.ThreadingHTTPServer]:
    """A loopback HTTP server laid out like the pinned repository: <base>/<commit>/data/<file>.

    Its ``mode`` attribute (None: behave) selects a failure of :class:`_CountingHandler`.
    """
    root = tmp_path / "mirror"
    files = root / PINNED_COMMIT / REPO_DATA_PATH
    files.mkdir(parents=True)
    for name in REQUIRED_FILES:
        (files / name).write_bytes((ccpt_dir / name).read_bytes())
    handler = functools.partial(_CountingHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    server.requests = []  # type: ignore[attr-defined]
    server.mode = None  # type: ignore[attr-defined]
    server.files = files  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture
def mirror(served: http.server.ThreadingHTTPServer) -> tuple[str, Path, list[str]]:
    """(base URL, the served data directory, the request paths so far) of :func:`served`."""
    return f"http://127.0.0.1:{served.server_address[1]}", served.files, served.requests  # type: ignore[attr-defined]


def test_download_verifies_and_never_refetches(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    base, _files, requests = mirror
    target = tmp_path / "cache"
    config = DownloadConfig(base_url=base, retries=1)
    download(target=target, config=config)
    assert sorted(p.name for p in target.iterdir() if p.is_file()) == sorted(REQUIRED_FILES)
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


def test_altered_cached_file_is_verified_and_refetched_before_use(
    mirror: tuple[str, Path, list[str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A cache file edited after download (test split cut to 10 rows) is caught by load_dataset, not used."""
    import json

    from ccpt.dataset import load_dataset
    from ccpt.io.download import cache_dir

    base, _files, requests = mirror
    monkeypatch.setenv("CCPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCPT_DATA_URL", base)
    monkeypatch.delenv("CCPT_DATA_DIR", raising=False)
    assert len(load_dataset().test("pi_emergent")) == 200
    assert len(requests) == len(REQUIRED_FILES)
    load_dataset()
    assert len(requests) == len(REQUIRED_FILES)  # hashed again, still the pinned content: no refetch
    index_path = cache_dir() / "test_index.json"
    index = json.loads(index_path.read_text())
    cut = {k: (v[:10] if isinstance(v, list) else v) for k, v in index.items()}
    index_path.write_text(json.dumps(cut))
    assert len(load_dataset().test("pi_emergent")) == 200  # the altered file was replaced, not read
    assert requests[-1].endswith("test_index.json") and len(requests) == len(REQUIRED_FILES) + 1


def test_an_edit_with_size_and_mtime_restored_is_caught(mirror: tuple[str, Path, list[str]], tmp_path: Path) -> None:
    """Cells changed in place (same length) and the old mtime put back (touch -r): still hashed, refetched."""
    import os

    from ccpt.dataset import load_dataset

    base, _files, requests = mirror
    target = tmp_path / "cache"
    config = DownloadConfig(base_url=base, retries=1)
    download(target=target, config=config)
    gold = sum(r.judge_score or 0 for r in load_dataset(target).test("pi_emergent"))
    path = target / "ccpt_emergent.csv"
    before = path.stat()
    data = bytearray(path.read_bytes())
    cells = list(re.finditer(rb",0\.(\d{15,17}),", bytes(data)))[:300]  # GPT-4o relevance cells
    for match in cells:
        start, end = match.span(1)
        data[start:end] = b"0" * (end - start)  # same length: the size does not change
    assert len(cells) == 300
    path.write_bytes(bytes(data))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.stat().st_size == before.st_size and path.stat().st_mtime_ns == before.st_mtime_ns
    download(target=target, config=config)
    assert requests[-1].endswith("ccpt_emergent.csv") and len(requests) == len(REQUIRED_FILES) + 1
    assert sum(r.judge_score or 0 for r in load_dataset(target).test("pi_emergent")) == gold


def test_connection_dropped_mid_body_is_retried(
    mirror: tuple[str, Path, list[str]], served: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    base, _files, requests = mirror
    served.mode = "drop"  # type: ignore[attr-defined]
    download(("test_index.json",), target=tmp_path / "cache", config=DownloadConfig(base_url=base, backoff=0))
    assert len(requests) == 2  # dropped once, fetched whole on the retry


def test_connection_dropped_every_time_is_one_error_line(
    mirror: tuple[str, Path, list[str]], served: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    base, _files, _requests = mirror
    served.mode = "drop"  # type: ignore[attr-defined]
    with pytest.raises(DataError, match=r"after 1 attempts: connection dropped before the end of the body"):
        download(("test_index.json",), target=tmp_path / "cache", config=DownloadConfig(base_url=base, retries=1))
    assert not list((tmp_path / "cache").iterdir())  # nothing half-written


@pytest.mark.timing  # a wall-clock bound: run beside no CPU-heavy test (tests/conftest.py)
def test_dripping_server_hits_the_deadline(
    mirror: tuple[str, Path, list[str]], served: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    base, _files, _requests = mirror
    served.mode = "drip"  # type: ignore[attr-defined]
    config = DownloadConfig(base_url=base, retries=1, timeout=5, deadline=1.0)
    start = time.monotonic()
    with pytest.raises(DataError, match=r"not finished after 1s"):
        download(("test_index.json",), target=tmp_path / "cache", config=config)
    assert time.monotonic() - start < 3
    assert not list((tmp_path / "cache").iterdir())


def test_oversized_body_is_cut_off_at_the_cap(
    mirror: tuple[str, Path, list[str]], served: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    import resource

    base, _files, _requests = mirror
    served.mode = "huge"  # type: ignore[attr-defined]
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    with pytest.raises(DataError, match=r"more than 4,194,304 bytes"):
        download(
            ("test_index.json",), target=tmp_path / "cache", config=DownloadConfig(base_url=base, max_bytes=4 << 20)
        )
    # Streamed to disk: the process did not grow by the body (ru_maxrss is in KiB on Linux).
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 32 * 1024
    assert not list((tmp_path / "cache").iterdir())


def test_an_edited_cached_concept_graph_is_refetched_not_read(
    mirror: tuple[str, Path, list[str]], ccpt_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The ConceptNet neighbourhood cache is a cached download too: an edit with its mtime restored is caught."""
    import os

    from ccpt.io.download import cache_dir
    from ccpt.io.sources import GRAPH_CACHE_NAME, graph_cache_file

    base, files, requests = mirror
    (files / GRAPH_CACHE_NAME).write_bytes((ccpt_dir / GRAPH_CACHE_NAME).read_bytes())
    monkeypatch.setenv("CCPT_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("CCPT_DATA_URL", base)
    monkeypatch.delenv("CCPT_DATA_DIR", raising=False)
    path = graph_cache_file(None)
    assert path.parent == cache_dir() and requests[-1].endswith(GRAPH_CACHE_NAME)
    fetched = len(requests)
    assert graph_cache_file(None) == path and len(requests) == fetched  # verified: not fetched again
    before = path.stat()
    original = path.read_bytes()
    path.write_bytes(original.replace(b'"vegetable"', b'"hackedveg"', 1))
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert path.read_bytes() != original and path.stat().st_size == before.st_size
    graph_cache_file(None)
    assert requests[-1].endswith(GRAPH_CACHE_NAME) and len(requests) == fetched + 1
    assert path.read_bytes() == original


# The authors' stored result files: their own manifest, under results/ beside data/ at the same commit. A few
# files stand for the 59 (one with '&' in its name, which must reach the server quoted and come back whole).
STORED = ("pi_emergent_gpt-4o_naive.csv", "pi_emergent_gpt-4o_sa-llm&conceptnet.csv", "tp_gpt-4o_naive.csv")


@pytest.fixture
def results_mirror(served: http.server.ThreadingHTTPServer, reference_dir: Path) -> tuple[str, Path]:
    """(base URL, the served results directory): :func:`served` also laid out with <commit>/results/<file>."""
    from ccpt.io.download import REPO_RESULTS_PATH

    files = served.files.parent / REPO_RESULTS_PATH  # type: ignore[attr-defined]
    files.mkdir()
    for name in STORED:
        (files / name).write_bytes((reference_dir / name).read_bytes())
    return f"http://127.0.0.1:{served.server_address[1]}", files


def _nothing_half_written(target: Path) -> None:
    leftovers = [p.name for p in target.rglob("*") if p.is_file() and p.name not in STORED] if target.exists() else []
    assert leftovers == [], f"partial files left in the cache: {leftovers}"


def test_stored_results_download_verified_into_their_own_cache(
    results_mirror: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from ccpt.io.download import download_results, result_checksums, results_cache_dir

    base, _files = results_mirror
    monkeypatch.setenv("CCPT_CACHE_DIR", str(tmp_path / "cache"))
    where = download_results(STORED, config=DownloadConfig(base_url=base, retries=1))
    assert where == results_cache_dir() and where != tmp_path / "cache" / "data"
    checksums = result_checksums()
    assert len(checksums) == 59 and all(len(v) == 64 for v in checksums.values())
    for name in STORED:
        assert hashlib.sha256((where / name).read_bytes()).hexdigest() == checksums[name]


@pytest.mark.parametrize("fault", ["mismatch", "truncated", "missing", "offline"])
def test_stored_results_download_faults_are_one_line_and_leave_nothing(
    fault: str, results_mirror: tuple[str, Path], served: http.server.ThreadingHTTPServer, tmp_path: Path
) -> None:
    from ccpt.io.download import download_results

    base, files = results_mirror
    name = "pi_emergent_gpt-4o_sa-llm&conceptnet.csv"
    expected = {
        "mismatch": r"downloaded pi_emergent_gpt-4o_sa-llm&conceptnet\.csv has sha256 .* use --results-dir",
        "truncated": r"connection dropped before the end of the body .* pass --results-dir / CCPT_RESULTS_DIR",
        "missing": r"could not download .*/results/pi_emergent_gpt-4o_sa-llm%26conceptnet\.csv: HTTP 404",
        "offline": r"could not download .* after 2 attempts: .*--results-dir / CCPT_RESULTS_DIR to a local copy",
    }[fault]
    if fault == "mismatch":
        (files / name).write_bytes((files / name).read_bytes()[:-10] + b"0123456789")
    elif fault == "truncated":
        served.mode = "drop"  # type: ignore[attr-defined]  # the first request for each file: half the body
    elif fault == "missing":
        (files / name).unlink()
    elif fault == "offline":
        base = "http://127.0.0.1:9"  # discard: nothing listens
    target = tmp_path / "cache"
    # Two attempts: a dropped body is retried once, and drops again only on the first request per file, so the
    # truncation case needs one attempt alone to fail.
    config = DownloadConfig(base_url=base, retries=1 if fault == "truncated" else 2, backoff=0, timeout=5)
    with pytest.raises(DataError, match=expected) as raised:
        download_results(STORED, target=target, config=config)
    assert "\n" not in str(raised.value)
    assert not (target / name).exists()
    _nothing_half_written(target)
